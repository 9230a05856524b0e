"""The privilege ledger's hash (gpu_platform/ledger.py): what an approver records. Every expected
hash here is SHA-256 over canonical bytes written out by hand, never over the code's own output."""

from __future__ import annotations

import copy
import hashlib

import pytest

from gpu_platform import ledger

WORKLOAD = "DaemonSet gpu-operator/plugin"
# The canonical form, by hand: the version line, then one line per row, sorted by bytes, cells
# separated by tabs.
TINY = (b"gpu-platform privilege ledger v1\n"
        b"DaemonSet gpu-operator/plugin\t(pod)\thostPID\n"
        b"DaemonSet gpu-operator/plugin\tmain\tcapability SYS_ADMIN\n"
        b"DaemonSet gpu-operator/plugin\tmain\thostPath /var/lib/kubelet/device-plugins rw\n"
        b"DaemonSet gpu-operator/plugin\twait\thostPath /run/nvidia/validations ro\n")
TINY_HASH = "sha256:" + hashlib.sha256(TINY).hexdigest()


def _daemonset(reverse: bool = False) -> dict:
    """A DaemonSet with hostPID, SYS_ADMIN, one rw and one ro host path; `reverse` builds every mapping
    and list of volumes in the opposite order (what the engine may hand over)."""
    def ordered(d: dict) -> dict:
        return dict(reversed(list(d.items()))) if reverse else d

    volumes = [{"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
               {"name": "validations", "hostPath": ordered({"path": "/run/nvidia/validations", "type": "DirectoryOrCreate"})}]
    spec = ordered({
        "hostPID": True,
        "initContainers": [ordered({"name": "wait", "volumeMounts": [{"name": "validations", "mountPath": "/v", "readOnly": True}]})],
        "containers": [ordered({"name": "main", "image": "x",
                                "securityContext": ordered({"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}}),
                                "volumeMounts": [{"name": "plugins", "mountPath": "/p"}]})],
        "volumes": volumes[::-1] if reverse else volumes,
    })
    return ordered({"kind": "DaemonSet", "metadata": ordered({"name": "plugin", "namespace": "gpu-operator"}),
                    "spec": {"template": {"spec": spec}}})


def _rows(props: dict) -> list:
    return ledger.rows([("kubernetes:apps/v1:DaemonSet", "plugin-ds", props)])


def test_a_tiny_ledger_hashes_to_the_sha256_of_its_canonical_form_written_by_hand():
    rows = [(WORKLOAD, "wait", "hostPath /run/nvidia/validations ro"), (WORKLOAD, "main", "capability SYS_ADMIN"),
            (WORKLOAD, "(pod)", "hostPID"), (WORKLOAD, "main", "hostPath /var/lib/kubelet/device-plugins rw"),
            (WORKLOAD, "(pod)", "hostPID")]  # a duplicate counts once
    assert ledger.canonical(rows) == TINY
    assert ledger.digest(rows) == TINY_HASH


def test_the_hash_is_the_same_whatever_order_the_properties_arrive_in():
    assert ledger.digest(_rows(_daemonset())) == TINY_HASH
    assert ledger.digest(_rows(_daemonset(reverse=True))) == TINY_HASH


def test_a_tab_or_line_break_inside_a_cell_cannot_forge_another_row():
    forged = [("a", "b", "c\td\ne\\")]
    assert ledger.canonical(forged) == b"gpu-platform privilege ledger v1\na\tb\tc\\td\\ne\\\\\n"


def _set(props: dict, path: tuple, value) -> dict:
    changed = copy.deepcopy(props)
    node = changed["spec"]["template"]["spec"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


@pytest.mark.parametrize("path, value", [
    (("containers", 0, "securityContext", "privileged"), True),
    (("containers", 0, "securityContext", "capabilities", "add"), ["SYS_ADMIN", "NET_ADMIN"]),
    (("initContainers", 0, "volumeMounts", 0, "readOnly"), False),  # ro -> rw
    (("hostNetwork",), True),
    (("hostIPC",), True),
    (("volumes", 0, "hostPath", "path"), "/"),
    (("initContainers", 0, "securityContext"), {"privileged": True}),
], ids=["privileged", "capability", "ro-to-rw", "hostNetwork", "hostIPC", "other-host-path", "privileged-init"])
def test_any_added_privilege_changes_the_hash(path, value):
    assert ledger.digest(_rows(_set(_daemonset(), path, value))) != TINY_HASH


def test_an_unprivileged_workload_adds_no_row():
    plain = {"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": {"spec": {"containers": [{"name": "app"}]}}}}
    assert ledger.rows([("kubernetes:apps/v1:Deployment", "app", plain)]) == []
