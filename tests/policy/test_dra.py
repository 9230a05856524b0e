"""DRA mode's policies through the real analyzer, on resources built here: the config refuses these
stacks (exit 2), so only resources made another way (or a real `pulumi preview` of them) reach the
pack. The expectations are restated from upstream (NVIDIA's v26.7 docs: Kubernetes 1.34+, driver
580+; nodeadm: CDI on for kubelet 1.32+; dra-driver-nvidia-gpu featuregates.go: which gates are
alpha), never read from gpu_platform/catalog/dra.yaml. The kubelet plugin's ResourceSlice policy is judged on the
dra stack's own recording, with its admission policy or binding taken away or spoilt."""

from __future__ import annotations

import copy

import pytest

from gpu_platform.interface import contract
from policy.dra import dra_alpha_features_acknowledged, dra_kubelet_plugin_slices_own_node, dra_mode_supported
from tests.policy import resources as rs
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("dra-mode-supported", "stack", "mandatory"),
    ("dra-alpha-features-acknowledged", "stack", "advisory"),
    ("dra-kubelet-plugin-slices-own-node", "stack", "mandatory"),
]


RELEASE = "v26.7.0"
DRIVER = "580.173.02"
PLUGIN_IMAGE = "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0"


def namespace(
    release: str = RELEASE, kubernetes: str = "1.34", mode: str | None = "dra", acknowledged: str | None = None
):
    found = rs.namespace(release=release, kubernetes=kubernetes)
    notes = found.props["metadata"]["annotations"]
    if mode:
        notes[contract.ALLOCATION_MODE_KEY] = mode
    if acknowledged is not None:
        notes[contract.ACKNOWLEDGED_ALPHA_KEY] = acknowledged
    return found


def plugin(env: dict | None = None, args: list | None = None):
    """The DRA kubelet plugin's DaemonSet as the program writes it, with these env and args."""
    container = {"env": [{"name": k, "value": v} for k, v in (env or {}).items()], **({"args": args} if args else {})}
    return rs.workload(
        name="gpu-dra-driver-ds",
        operand="dra-driver",
        image=PLUGIN_IMAGE,
        gate="dra-driver",
        release=RELEASE,
        main_container=container,
    )


def pool_resources(driver: str = DRIVER, kubernetes: str = "1.34", release: str = RELEASE):
    return [
        rs.node_image(driver=driver, release=release, kubernetes=kubernetes, gpu_models="H100"),
        rs.node_group(
            pool="h100", gpu_model="H100", driver=driver, release=release, kubernetes=kubernetes, gates=("dra-driver",)
        ),
    ]


def supported(*found):
    return [message for message, _ in violations(dra_mode_supported, found)]


def test_a_dra_stack_on_1_34_with_v26_7_0_and_driver_580_passes():
    assert supported(namespace(), plugin(), *pool_resources()) == []


def test_a_device_plugin_stack_is_not_judged_by_dra_requirements():
    # Kubernetes 1.33 and driver 535 are fine for the device plugin.
    assert (
        supported(namespace(kubernetes="1.33", mode=None), *pool_resources(driver="535.309.01", kubernetes="1.33"))
        == []
    )


def test_a_cluster_below_1_34_fails_naming_both_versions():
    found = supported(namespace(kubernetes="1.33"), plugin(), *pool_resources())
    assert len(found) == 1
    assert "Kubernetes 1.33" in found[0] and "1.34 or later" in found[0]


def test_a_release_without_the_dra_driver_fails_naming_the_one_that_ships_it():
    found = supported(namespace(release="v26.3.3"), *pool_resources(release="v26.3.3"))
    assert len(found) == 1
    assert "v26.3.3" in found[0] and "ships no DRA driver" in found[0] and "v26.7.0" in found[0]


def test_a_driver_below_branch_580_fails_on_the_node_image():
    # 535 is a branch v26.7.0 supports for the device plugin, but not for its DRA driver.
    found = supported(namespace(), plugin(), *pool_resources(driver="535.309.01"))
    assert len(found) == 1
    assert "node image" in found[0] and "535.309.01" in found[0] and "branch 580 or later" in found[0]
    # The plugin runs the driver the table lists (v0.5.0): named as such, not as a stand-in for an unknown one;
    # so is the driver of the release when no plugin is in the stack yet (read from the release's images).
    for message in (found, supported(namespace(), *pool_resources(driver="535.309.01"))):
        assert (
            "the DRA driver v0.5.0 needs branch 580" in message[0]
            and "the newest gpu_platform/catalog/dra.yaml lists" not in message[0]
        )


@pytest.mark.parametrize(
    "driver, fails", [("575.64.05", True), ("579.99.99", True), ("580.65.06", False), ("590.44.01", False)]
)
def test_the_driver_branch_boundary_is_580(driver, fails):
    # The DRA driver v0.5.0 row asks for branch 580 (gpu_platform/catalog/dra.yaml driverBranch, from the
    # operator's docs): the last 57x release fails, the first 580 passes.
    found = supported(namespace(), plugin(), *pool_resources(driver=driver))
    assert bool([f for f in found if "branch 580 or later" in f]) == fails, found


def test_a_pool_whose_kubelet_is_below_1_32_fails_for_kubernetes_and_cdi():
    found = supported(
        namespace(),
        plugin(),
        rs.node_image(driver=DRIVER, release=RELEASE, kubernetes="1.34"),
        rs.node_group(pool="h100", gpu_model="H100", driver=DRIVER, release=RELEASE, kubernetes="1.31"),
    )
    assert len(found) == 1
    assert "GPU pool 'h100'" in found[0] and "kubelet 1.31" in found[0] and "CDI" in found[0]


def test_a_pool_on_1_33_fails_for_kubernetes_but_has_cdi():
    found = supported(
        namespace(),
        plugin(),
        rs.node_group(pool="h100", gpu_model="H100", driver=DRIVER, release=RELEASE, kubernetes="1.33"),
    )
    assert len(found) == 1
    assert "kubelet 1.33" in found[0] and "CDI" not in found[0]


def test_a_kubelet_plugin_made_another_way_puts_the_stack_in_dra_mode():
    # No allocation-mode annotation, but the DRA kubelet plugin runs: judged all the same.
    found = supported(namespace(kubernetes="1.33", mode=None), plugin(), *pool_resources())
    assert len(found) == 1 and "Kubernetes 1.33" in found[0]


# The kubelet plugin's start-up check between gates (kubernetes-sigs/dra-driver-nvidia-gpu 95932046
# pkg/featuregates/featuregates.go:252-279): ComputeDomainCliques (on by default) needs
# IMEXDaemonsWithDNSNames; DynamicMIG excludes MPSSupport. MPS is refused outright here: its control
# daemons would be privileged workloads the plugin creates at run time.
def test_a_gate_its_default_partner_needs_turned_off_fails_naming_the_gate():
    (message,) = supported(
        namespace(), plugin(env={"FEATURE_GATES": "IMEXDaemonsWithDNSNames=false"}), *pool_resources()
    )
    assert "IMEXDaemonsWithDNSNames off" in message and "ComputeDomainCliques on by default" in message
    assert (
        "exits on every node" in message and "gpu-platform:allocation.featureGates.IMEXDaemonsWithDNSNames" in message
    )
    # Both off: nothing to refuse.
    assert (
        supported(
            namespace(),
            plugin(env={"FEATURE_GATES": "ComputeDomainCliques=false,IMEXDaemonsWithDNSNames=false"}),
            *pool_resources(),
        )
        == []
    )


def test_gates_that_exclude_each_other_fail_and_mps_is_refused_whatever_else():
    found = supported(
        namespace(acknowledged="DynamicMIG,MPSSupport"),
        plugin(env={"FEATURE_GATES": "DynamicMIG=true,MPSSupport=true"}),
        *pool_resources(),
    )
    assert len(found) == 2
    assert [m for m in found if "DynamicMIG on and MPSSupport on" in m and "excludes" in m]
    assert [m for m in found if "turns on MPSSupport, which this stack does not support" in m and "privileged" in m]
    # An acknowledged alpha gate alone is fine for this policy (the advisory one judges acknowledgements).
    assert (
        supported(
            namespace(acknowledged="DynamicMIG"), plugin(env={"FEATURE_GATES": "DynamicMIG=true"}), *pool_resources()
        )
        == []
    )


def alpha(*found):
    return [message for message, _ in violations(dra_alpha_features_acknowledged, found)]


def test_an_alpha_gate_turned_on_without_acknowledgement_is_reported():
    found = alpha(namespace(), plugin(env={"FEATURE_GATES": "DynamicMIG=true,IMEXDaemonsWithDNSNames=true"}))
    # IMEXDaemonsWithDNSNames is beta (on by default): only DynamicMIG is reported.
    assert len(found) == 1
    assert "DynamicMIG" in found[0] and "IMEXDaemonsWithDNSNames" not in found[0] and "gpu-dra-driver-ds" in found[0]


def test_each_alpha_gate_is_reported_on_its_own():
    found = alpha(namespace(), plugin(env={"FEATURE_GATES": "MPSSupport=true,TimeSlicingSettings=true"}))
    assert len(found) == 2
    assert "MPSSupport" in found[0] and "TimeSlicingSettings" in found[1]


def test_an_acknowledged_alpha_gate_passes():
    assert (
        alpha(
            namespace(acknowledged="DynamicMIG TimeSlicingSettings"),
            plugin(env={"FEATURE_GATES": "DynamicMIG=true,TimeSlicingSettings=true"}),
        )
        == []
    )


def test_acknowledging_one_gate_leaves_the_other_reported():
    found = alpha(
        namespace(acknowledged="DynamicMIG"), plugin(env={"FEATURE_GATES": "DynamicMIG=true,MPSSupport=true"})
    )
    assert len(found) == 1 and "MPSSupport" in found[0]


def test_an_alpha_gate_turned_off_needs_no_acknowledgement():
    assert alpha(namespace(), plugin(env={"FEATURE_GATES": "DynamicMIG=false"})) == []


def test_the_feature_gates_flag_counts_as_the_env_does():
    assert len(alpha(namespace(), plugin(args=["-v", "4", "--feature-gates=TimeSlicingSettings=true"]))) == 1
    assert len(alpha(namespace(), plugin(args=["--feature-gates", "MPSSupport=true"]))) == 1


def test_a_driver_version_the_table_lacks_is_judged_by_the_newest_it_has():
    # An override's patch release (v0.5.1) still needs Kubernetes 1.34: judged, not skipped.
    other = rs.workload(
        name="gpu-dra-driver-ds",
        operand="dra-driver",
        image="nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.1",
        gate="dra-driver",
        release=RELEASE,
    )
    found = supported(namespace(kubernetes="1.33"), other, *pool_resources())
    assert len(found) == 1 and "Kubernetes 1.33" in found[0] and "v0.5.1" in found[0]
    assert supported(namespace(), other, *pool_resources()) == []


# ---------------------------------------------------------------- the kubelet plugin's ResourceSlices

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
SLICES_POLICY = "gpu-platform-dra-resourceslices"
# The username the API server gives the dra stack's kubelet plugin: its DaemonSet's account in the
# operator namespace (nvidia-dra-driver-kubelet-plugin, the name of every object of the operand).
PLUGIN_USER = "system:serviceaccount:gpu-operator:nvidia-dra-driver-kubelet-plugin"


def slices(*found):
    return [message for message, _ in violations(dra_kubelet_plugin_slices_own_node, found)]


def _recorded(dra_recording, change=None):
    """The dra stack's resources as the preview hands them over, `change(type, props)` applied to each."""
    found = []
    for r in dra_recording.resources:
        if not r.custom:
            continue
        props = copy.deepcopy(r.inputs)
        if change is not None:
            props = change(r.type, props)
            if props is None:
                continue
        found.append(rs.resource(r.type, r.name, props))
    return found


def _slices_policy(type_, props, edit):
    if type_ == POLICY and props["metadata"]["name"] == SLICES_POLICY:
        return edit(props)
    return props


def test_the_dra_stacks_kubelet_plugin_is_held_to_its_node(dra):
    assert slices(*_recorded(dra)) == []


def test_a_dra_stack_without_the_slices_policy_fails_naming_the_plugins_user(dra):
    found = slices(*_recorded(dra, lambda t, p: _slices_policy(t, p, lambda _: None)))
    assert len(found) == 1
    assert PLUGIN_USER in found[0] and "gpu-dra-driver-ds" in found[0] and "every node's ResourceSlices" in found[0]


def test_a_slices_policy_naming_another_account_fails(dra):
    # Upstream's account name, which this stack's plugin does not run as.
    def rename(props):
        for c in props["spec"]["matchConditions"]:
            c["expression"] = c["expression"].replace(
                "nvidia-dra-driver-kubelet-plugin", "nvidia-dra-driver-kubeletplugin"
            )
        return props

    found = slices(*_recorded(dra, lambda t, p: _slices_policy(t, p, rename)))
    assert len(found) == 1 and PLUGIN_USER in found[0] and repr(SLICES_POLICY) in found[0] and "other users" in found[0]


def test_a_dra_stack_without_the_slices_binding_fails(dra):
    found = slices(
        *_recorded(dra, lambda t, p: None if t == BINDING and p["spec"]["policyName"] == SLICES_POLICY else p)
    )
    assert len(found) == 1 and "no binding with validationActions Deny" in found[0] and repr(SLICES_POLICY) in found[0]


def test_a_slices_binding_that_only_audits_fails(dra):
    def audit(t, p):
        if t == BINDING and p["spec"]["policyName"] == SLICES_POLICY:
            p["spec"]["validationActions"] = ["Audit", "Warn"]
        return p

    found = slices(*_recorded(dra, audit))
    assert len(found) == 1 and "no binding with validationActions Deny" in found[0]


def test_a_binding_that_names_another_policy_does_not_count(dra):
    def elsewhere(t, p):
        if t == BINDING and p["spec"]["policyName"] == SLICES_POLICY:
            p["spec"]["policyName"] = "gpu-platform-gpu-access"
        return p

    found = slices(*_recorded(dra, elsewhere))
    assert len(found) == 1 and "no binding with validationActions Deny" in found[0]


def test_a_slices_policy_that_ignores_its_errors_fails(dra):
    found = slices(
        *_recorded(
            dra, lambda t, p: _slices_policy(t, p, lambda q: {**q, "spec": {**q["spec"], "failurePolicy": "Ignore"}})
        )
    )
    assert len(found) == 1 and "failurePolicy Ignore" in found[0]


def test_a_slices_policy_that_never_reads_the_tokens_node_fails(dra):
    def blind(props):
        props["spec"]["variables"] = []
        props["spec"]["validations"] = [
            {"expression": "object.spec.driver == 'gpu.nvidia.com'", "message": "driver only"}
        ]
        return props

    found = slices(*_recorded(dra, lambda t, p: _slices_policy(t, p, blind)))
    assert len(found) == 1 and "authentication.kubernetes.io/node-name" in found[0]


def test_a_slices_policy_on_pods_does_not_count(dra):
    def on_pods(props):
        props["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = ["pods"]
        return props

    found = slices(*_recorded(dra, lambda t, p: _slices_policy(t, p, on_pods)))
    assert len(found) == 1 and PLUGIN_USER in found[0]


def test_a_stack_without_the_kubelet_plugin_needs_no_slices_policy(prod):
    assert slices(*_recorded(prod)) == []
