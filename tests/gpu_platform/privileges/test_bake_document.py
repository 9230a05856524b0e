"""The node image bake in the privilege ledger (gpu_platform/privileges/bake_document.py): read from the Image
Builder component's document as the policy pack sees it. Expected rows and digests are written out
here, or hashed from the bytes the test itself packed."""

from __future__ import annotations

import base64
import gzip
import hashlib

from gpu_platform.interface.resource_types import IMAGE_COMPONENT
from gpu_platform.privileges import ledger


def _script(text: str) -> str:
    packed = base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()
    return "\n".join(packed[i : i + 60] for i in range(0, len(packed), 60))


SCRIPT = (
    "#!/usr/bin/env bash\n"
    'readonly BASE="https://downloads.example/${CHANNEL}"\n'
    'readonly TOOL_SHA256="%s"\n'
    '# curl "https://not.a/download" in a comment is no download\n'
    'curl -fsSL -o "${tmp}" "${BASE}/tool.tar.gz"\n'
)


def _component(checksum: str = "ab" * 32) -> dict:
    script = SCRIPT % checksum
    commands = (
        'set -euo pipefail\nexport CHANNEL=stable\nunpack() { base64 -d | gunzip; }\nwork="$(mktemp -d)"\n'
        f"unpack <<'GPU_PLATFORM_INSTALL' >\"${{work}}/install.sh\"\n{_script(script)}\nGPU_PLATFORM_INSTALL\n"
        'bash "${work}/install.sh"\n'
    )
    document = (
        "phases:\n- name: build\n  steps:\n  - name: Install\n    action: ExecuteBash\n    inputs:\n      commands:\n"
        "      - |\n" + "".join(f"        {line}\n" for line in commands.splitlines())
    )
    return {"data": document, "name": "x"}


def test_the_bake_rows_name_what_runs_as_root_its_inputs_downloads_and_pins():
    props = _component()
    script = (SCRIPT % ("ab" * 32)).encode()
    subject = "node image bake img-driver"
    assert ledger.rows([(IMAGE_COMPONENT, "img-driver", props)]) == sorted(
        [
            (
                subject,
                "(build step)",
                "component document sha256:" + hashlib.sha256(props["data"].encode()).hexdigest(),
            ),
            (subject, "(build step)", "input CHANNEL=stable"),
            (subject, "install.sh", "runs as root on the build instance, sha256:" + hashlib.sha256(script).hexdigest()),
            (subject, "install.sh", "pin TOOL_SHA256 " + "ab" * 32),
            (subject, "install.sh", "download https://downloads.example/stable/tool.tar.gz"),
        ]
    )


def test_a_changed_download_checksum_changes_the_hash():
    before = ledger.digest(ledger.rows([(IMAGE_COMPONENT, "img-driver", _component("ab" * 32))]))
    after = ledger.digest(ledger.rows([(IMAGE_COMPONENT, "img-driver", _component("cd" * 32))]))
    assert before != after


def test_the_shipped_bake_pins_nvidias_repository_key_by_its_fingerprint(prod):
    from preview.reports import ledger as report_ledger

    bake = [row for row in report_ledger.of(prod) if row[0].startswith("node image bake ")]
    # NVIDIA's CUDA repository key (components/aws/scripts/install-nvidia-driver.sh) and where it comes from.
    assert (
        "node image bake gpu-node-image-driver",
        "install-nvidia-driver.sh",
        "pin REPO_KEY_FINGERPRINT 610C7B14E068A878070DA4E99CD0A493D42D0685",
    ) in bake
    assert (
        "node image bake gpu-node-image-driver",
        "install-nvidia-driver.sh",
        "download https://developer.download.nvidia.com/compute/cuda/repos/amzn2023/x86_64/D42D0685.pub",
    ) in bake
    assert ("node image bake gpu-node-image-driver", "(build step)", "input DRIVER_VERSION=580.105.08") in bake
