"""The admission facts: every node label an operand's contract says it writes falls in that
operand's writable keys, the keys that place operands stay out of NFD's reach, and the policies are
asked for only where Kubernetes serves them."""

from __future__ import annotations

import re

import pytest
import yaml

from components.kubernetes import operands as operand_folders
from gpu_platform.interface import admission

# The contract clauses whose node label the operand itself writes (others only read theirs, e.g.
# mm-watches-mig-config-label): picked by hand from the statements.
WRITES = {
    "mig-manager": ("mm-mig-config-state-label", "mm-pauses-operand-gates", "mm-pauses-gpu-client-gate"),
    "node-feature-discovery": ("nfd-worker-pci-vendor-label", "nfd-master-label-namespaces"),
}


def _written_keys(operand: str) -> list[str]:
    clauses = {c["id"]: c for c in yaml.safe_load(operand_folders.contract_file(operand).read_text())["clauses"]}
    keys = []
    for clause in WRITES[operand]:
        key = clauses[clause]["label"]["key"].split(" ")[0]  # "nvidia.com/* from features.d"
        choices = re.fullmatch(r"(.*)<([^>]+)>(.*)", key)
        keys += [choices.group(1) + c + choices.group(3) for c in choices.group(2).split("|")] if choices else [key]
    return [k.replace("*", "gpu.product") for k in keys]


def _writer(operand: str) -> admission.NodeWriter:
    return next(w for w in admission.NODE_WRITERS if w.operand == operand)


@pytest.mark.parametrize("operand", sorted(WRITES))
def test_every_label_an_operand_writes_is_writable_for_it(operand):
    writer = _writer(operand)
    keys = _written_keys(operand)
    assert keys
    reserved = admission.reserved_pattern(writer.reserved_labels)
    for key in keys:
        assert re.match(admission.key_pattern(writer.label_namespaces), key), key
        assert reserved is None or not re.match(reserved, key), key


def test_nfd_may_not_write_the_keys_that_place_operands():
    writer = _writer("node-feature-discovery")
    reserved = admission.reserved_pattern(writer.reserved_labels)
    for key in (
        "nvidia.com/gpu.deploy.container-toolkit",
        "nvidia.com/gpu.present",
        "nvidia.com/mig.config",
        "nvidia.com/device-plugin.config",
    ):
        assert re.match(admission.key_pattern(writer.label_namespaces), key) and re.match(reserved, key), key
    # look-alikes stay writable: only the exact keys (and the gate prefix) are reserved
    assert not re.match(reserved, "nvidia.com/mig.config.state") and not re.match(
        reserved, "nvidia.com/gpu.present.count"
    )


@pytest.mark.parametrize(
    "key, ok",
    [
        ("feature.node.kubernetes.io/cpu-model.id", True),
        ("cpu.feature.node.kubernetes.io/avx", True),
        ("profile.node.kubernetes.io/x", True),
        ("node.kubernetes.io/exclude-from-external-load-balancers", False),
        ("evilfeature.node.kubernetes.io/x", False),
        ("kubernetes.io/hostname", False),
        ("nvidia.com.evil.io/x", False),
    ],
)
def test_nfd_label_namespaces_and_their_sub_domains_only(key, ok):
    assert bool(re.match(admission.key_pattern(_writer("node-feature-discovery").label_namespaces), key)) is ok


@pytest.mark.parametrize(
    "version, served", [("1.25", False), ("1.29", False), ("1.30", True), ("1.33", True), ("1.35", True)]
)
def test_the_policies_are_asked_for_from_kubernetes_1_30(version, served):
    assert admission.supported(version) is served
