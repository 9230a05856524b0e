"""Privileged-software audit. The program always audits what it creates, so the failing inputs here
are resource inputs built directly (no valid stack file produces them)."""

from __future__ import annotations

import pytest

from gpu_platform.interface import contract
from policy.audit import addon_left_to_eks_pins_no_version, privileged_software_tagged, privileged_workloads_audited
from tests.policy.resources import launch_template, node_group, node_image, resource, workload
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("privileged-workloads-audited", "resource", "mandatory"),
    ("privileged-software-tagged", "resource", "mandatory"),
    ("addon-left-to-eks-pins-no-version", "resource", "mandatory"),
    ("privilege-ledger-approved", "stack", "mandatory"),
    ("privilege-ledger-recorded", "stack", "advisory"),
    ("cluster-access-declared", "stack", "mandatory"),
]


UNPRIVILEGED = {"containers": [{"name": "app", "image": "busybox"}], "volumes": []}


def test_a_privileged_workload_with_truthful_annotations_passes():
    assert violations(privileged_workloads_audited, [workload(), workload(kind="Deployment", name="nfd-master")]) == []


def test_an_unprivileged_workload_needs_no_annotations():
    plain = resource(
        "kubernetes:apps/v1:Deployment",
        "app",
        {"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": {"spec": UNPRIVILEGED}}},
    )
    assert violations(privileged_workloads_audited, [plain]) == []


@pytest.mark.parametrize(
    "kind, pod, privilege",
    [
        ("Pod", {"hostPID": True}, "hostPID"),
        ("Job", {"hostNetwork": True}, "hostNetwork"),
        ("CronJob", {"hostIPC": True}, "hostIPC"),
        ("StatefulSet", {}, "capabilities SYS_ADMIN"),
    ],
)
def test_a_privileged_workload_of_any_kind_without_annotations_fails(kind, pod, privilege):
    found = violations(privileged_workloads_audited, [workload(kind=kind, name="rogue", annotations={}, pod=pod)])
    assert len(found) == 1
    message, _ = found[0]
    assert kind in message and "rogue" in message and privilege in message and contract.AUDIT_APPROVAL in message


def test_a_privileged_container_with_an_empty_owner_fails():
    notes = {
        contract.AUDIT_REASON: "x",
        contract.AUDIT_HOST_PATHS: "/run/nvidia/validations:ro,/var/lib/kubelet/device-plugins:rw",
        contract.AUDIT_OWNER: " ",
        contract.AUDIT_APPROVAL: "SEC-1",
    }
    found = violations(
        privileged_workloads_audited,
        [workload(annotations=notes, main_container={"securityContext": {"privileged": True}})],
    )
    assert len(found) == 1 and contract.AUDIT_OWNER in found[0][0] and "privileged" in found[0][0]


@pytest.mark.parametrize(
    "declared",
    [
        "/run/nvidia/validations:ro,/var/lib/kubelet/device-plugins:ro",  # claims read-only, mounts read-write
        "/var/lib/kubelet/device-plugins:rw",  # leaves a host path out
    ],
)
def test_declared_host_paths_that_differ_from_the_mounts_fail_naming_both(declared):
    notes = {
        contract.AUDIT_REASON: "x",
        contract.AUDIT_HOST_PATHS: declared,
        contract.AUDIT_OWNER: "o",
        contract.AUDIT_APPROVAL: "SEC-1",
    }
    found = violations(privileged_workloads_audited, [workload(annotations=notes)])
    assert len(found) == 1
    assert declared in found[0][0] and "/run/nvidia/validations:ro,/var/lib/kubelet/device-plugins:rw" in found[0][0]


def test_aws_resources_running_the_driver_with_audit_tags_pass():
    system = resource(
        "aws:eks/nodeGroup:NodeGroup", "gpu-cluster-system", {"tags": {"gpu-platform.io/owner": "ml-platform"}}
    )
    assert violations(privileged_software_tagged, [node_group(), launch_template(), node_image(), system]) == []


@pytest.mark.parametrize("build", [lambda: node_group(audit=False), lambda: node_image(audit=False)])
def test_aws_resources_running_the_driver_without_audit_tags_fail(build):
    found = violations(privileged_software_tagged, [build()])
    assert len(found) == 1 and contract.AUDIT_TAG_APPROVAL in found[0][0] and "580.105.08" in found[0][0]


@pytest.mark.parametrize(
    "build, fact",
    [
        (lambda: node_image(release=""), contract.OPERATOR_RELEASE_KEY),
        (lambda: launch_template(cuda=""), contract.CUDA_VERSIONS_KEY),
        (lambda: node_group(kubernetes=""), contract.KUBERNETES_VERSION_TAG),
    ],
)
def test_a_gpu_resource_that_declares_no_version_fact_fails_instead_of_passing_unchecked(build, fact):
    # Without the fact, the version policies checked on it would have nothing to compare.
    found = violations(privileged_software_tagged, [build()])
    assert len(found) == 1 and fact in found[0][0] and "cannot check" in found[0][0]


def _untagged(resource):
    resource.props["tags"] = {}
    return resource


@pytest.mark.parametrize(
    "build",
    [
        lambda: resource("aws:eks/nodeGroup:NodeGroup", "rogue-ng", {"instanceTypes": ["p5.48xlarge"], "tags": {}}),
        lambda: resource(
            "aws:eks/nodeGroup:NodeGroup",
            "rogue-ng",
            {"amiType": "AL2023_x86_64_NVIDIA", "instanceTypes": ["g4dn.xlarge"]},
        ),
    ],
)
def test_a_gpu_node_group_is_known_by_what_it_launches_not_by_its_tags(build):
    # Without tags it would otherwise look like no GPU resource at all, and pass unchecked.
    found = violations(privileged_software_tagged, [build()])
    assert any(contract.AUDIT_TAG_APPROVAL in message for message, _ in found)
    assert any(contract.DRIVER_VERSION_TAG in message and "cannot check" in message for message, _ in found)


@pytest.mark.parametrize(
    "build, fragments",
    [
        (lambda: node_image(driver="latest"), ["'latest' is not an NVIDIA driver version"]),
        (lambda: node_image(release="v99.1"), ["'v99.1' is not a GPU Operator release"]),
        (lambda: node_image(cuda="12.8 13.9"), ["13.9 not a CUDA toolkit version"]),
        (lambda: node_image(kubernetes="1.33.2"), ["'1.33.2' is not a Kubernetes minor"]),
        (lambda: node_group(gpu_model="X100"), ["'X100' not a GPU of the matrix"]),
        (lambda: node_image(gpu_models="L4 X100"), ["gpu-models 'X100' not a GPU of the matrix"]),
        (lambda: launch_template(source="latest"), ["image-source 'latest' is not one of bake, ami"]),
    ],
)
def test_a_malformed_or_unknown_fact_fails_instead_of_being_skipped(build, fragments):
    found = violations(privileged_software_tagged, [build()])
    assert len(found) == 1 and all(f in found[0][0] for f in fragments), found


def test_a_declared_gpu_model_that_its_instance_type_contradicts_fails():
    group = node_group(gpu_model="L4")
    group.props["instanceTypes"] = ["p5.48xlarge"]
    found = violations(privileged_software_tagged, [group])
    assert (
        len(found) == 1
        and "declares gpu-platform.io/gpu-model 'L4'" in found[0][0]
        and "carries H100-80GB" in found[0][0]
    )


def test_an_nvidia_node_group_of_a_family_the_matrix_lacks_fails():
    group = node_group(gpu_model="L4")
    group.props["instanceTypes"] = ["g4dn.xlarge"]
    found = violations(privileged_software_tagged, [group])
    assert len(found) == 1 and "g4dn.xlarge is of no GPU family the matrix covers" in found[0][0]


def _addon(**props) -> object:
    return resource(
        "aws:eks/addon:Addon", "gpu-cluster-vpc-cni-addon", {"addonName": "vpc-cni", "clusterName": "gpu", **props}
    )


def test_an_add_on_tagged_as_left_to_eks_that_pins_a_version_is_refused():
    left = {"tags": {"gpu-platform.io/addon-version": "eks-default"}}
    assert violations(addon_left_to_eks_pins_no_version, [_addon(**left)]) == []
    # Pinned and untagged: the ledger reads the version.
    assert violations(addon_left_to_eks_pins_no_version, [_addon(addonVersion="v1.12.0-eksbuild.1")]) == []
    found = violations(addon_left_to_eks_pins_no_version, [_addon(addonVersion="v1.12.0-eksbuild.1", **left)])
    assert len(found) == 1 and "pins addonVersion v1.12.0-eksbuild.1" in found[0][0]
    assert "gpu-platform.io/addon-version=eks-default" in found[0][0]
