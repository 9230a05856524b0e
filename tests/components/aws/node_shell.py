"""Runs the node image's shell scripts as a node would, on a scratch root with the system's commands
(dnf, rpm, gpg, curl, systemctl, modprobe, modinfo, uname, nvidia-ctk) replaced by stubs that log
their arguments. What the scripts write lands under the scratch root (their ROOT variable)."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

# The key fingerprint NVIDIA publishes for its CUDA RPM repositories (github.com/NVIDIA/cuda-repo-management
# SIGNATURES.md, "RPM repo"), typed here from that page, not taken from the script.
NVIDIA_KEY_FINGERPRINT = "610C7B14E068A878070DA4E99CD0A493D42D0685"
KERNEL_6_12 = "6.12.94-123.180.amzn2023.x86_64"  # amazon-eks-ami CHANGELOG v20260714, kernel6.12 row

_STUB = """#!/usr/bin/env bash
printf '%s' "$(basename "$0")" >>"$STUB_LOG"
printf ' %q' "$@" >>"$STUB_LOG"
printf '\\n' >>"$STUB_LOG"
"""

# What some stubs answer, beyond logging.
_ANSWERS = {
    "uname": 'echo "$STUB_KERNEL"',
    "curl": 'while [[ $# -gt 0 ]]; do if [[ "$1" == "-o" ]]; then echo "public key" >"$2"; fi; shift; done',
    "gpg": 'echo "pub:-:4096:1:9CD0A493D42D0685:1650000000:::-:::scSC::::::23::0:"; echo "fpr:::::::::${STUB_FINGERPRINT}:"',
    "modinfo": 'case "$*" in *version*) echo "$STUB_MODULE_VERSION" ;; *license*) echo "$STUB_MODULE_LICENSE" ;; esac',
    # The toolkit package puts the runtime binary where nodeadm looks for it.
    "dnf": 'case "$*" in *nvidia-container-toolkit-[0-9]*) mkdir -p "$ROOT/usr/bin"; : >"$ROOT/usr/bin/nvidia-container-runtime"; '
           'chmod +x "$ROOT/usr/bin/nvidia-container-runtime" ;; esac',
}
COMMANDS = ("dnf", "rpm", "gpg", "curl", "systemctl", "modprobe", "modinfo", "uname", "nvidia-ctk", "nvidia-smi")


@dataclass
class Run:
    returncode: int
    calls: list[list[str]]  # every stubbed command with its arguments, in order
    root: Path
    output: str

    def of(self, command: str) -> list[list[str]]:
        return [c[1:] for c in self.calls if c[0] == command]

    def dnf_installed(self) -> list[str]:
        """Every package spec passed to `dnf install`."""
        return [a for args in self.of("dnf") if "install" in args for a in args if not a.startswith("-") and a != "install"]

    def locked(self) -> list[str]:
        return [a for args in self.of("dnf") if args[:2] == ["versionlock", "add"] for a in args[2:]]

    def systemctl(self, verb: str) -> list[str]:
        return [args[1] for args in self.of("systemctl") if args and args[0] == verb]


def run_bash(script: str, tmp: Path, env: dict[str, str] | None = None) -> Run:
    bin_dir, root, log = tmp / "bin", tmp / "root", tmp / "calls.log"
    bin_dir.mkdir(parents=True, exist_ok=True)
    root.mkdir(exist_ok=True)
    log.write_text("")
    for name in COMMANDS:
        stub = bin_dir / name
        stub.write_text(_STUB + _ANSWERS.get(name, "") + "\n")
        stub.chmod(0o755)
    full_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp),
        "ROOT": str(root),
        "STUB_LOG": str(log),
        "STUB_KERNEL": KERNEL_6_12,
        "STUB_FINGERPRINT": NVIDIA_KEY_FINGERPRINT,
        **(env or {}),
    }
    done = subprocess.run(["bash", "-c", script], env=full_env, capture_output=True, text=True, timeout=60)
    calls = [shlex.split(line) for line in log.read_text().splitlines() if line]
    return Run(done.returncode, calls, root, done.stdout + done.stderr)


def build_step(document: str) -> str:
    """The build phase's bash commands of an Image Builder component document, as Image Builder runs them."""
    (build,) = [p for p in yaml.safe_load(document)["phases"] if p["name"] == "build"]
    (step,) = build["steps"]
    assert step["action"] == "ExecuteBash"
    return "\n".join(step["inputs"]["commands"])


def exported(commands: str) -> dict[str, str]:
    """The `export NAME=value` lines at the top of the build step."""
    found = {}
    for line in commands.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            found[name] = value
    return found


def module_answers(driver: str, license_: str) -> dict[str, str]:
    return {"STUB_MODULE_VERSION": driver, "STUB_MODULE_LICENSE": license_}
