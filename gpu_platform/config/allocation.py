"""gpu-platform:allocation: how pods get GPUs (the device plugin or Dynamic Resource Allocation), and
what mode dra needs of the rest of the stack: a release with the DRA driver, a Kubernetes with
resource.k8s.io/v1, no pool setting only the device plugin reads, an exporter that names DRA pods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import Field, StrictBool

from gpu_platform.catalog import dra, image_refs, matrix, versions
from gpu_platform.config.errors import ConfigProblem
from gpu_platform.config.section import Section

if TYPE_CHECKING:
    from gpu_platform.config.stack import StackConfig

# resource.k8s.io/v1 (DRA structured parameters) is GA, served and on by default from Kubernetes 1.34
# (KEP-4381 kep.yaml, kubernetes/enhancements keps/sig-node/4381-dra-structured-parameters); NVIDIA's
# DRA driver and the GPU Operator ask for 1.34.2 or later, past kubernetes/kubernetes#133920
# (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 docs/prerequisites.md:10-11; NVIDIA/cloud-native-docs
# gpu-operator-v26.7-1 gpu-operator/dra-intro-install.rst:193).
DRA_MIN_KUBERNETES = (1, 34)
DRA_OPERAND = "dra-driver"
# In mode dra the DCGM exporter finds which pod holds a GPU only with KUBERNETES_ENABLE_DRA (the
# kubelet names DRA devices by pool and device, not by GPU UUID), a flag the exporter has from 4.4.0
# (NVIDIA/dcgm-exporter 4.3.1-4.4.0 pkg/cmd/app.go:315, absent at 4.2.3-4.2.0; 4.5.3-4.8.2
# pkg/cmd/app.go:329-334). An older one ignores the variable and exports metrics with no pod,
# namespace or container label.
DRA_EXPORTER = "dcgm-exporter"
DRA_EXPORTER_SINCE = "4.4.0"

_OPERATOR, _ALLOCATION = "gpu-platform:operator", "gpu-platform:allocation"


class Allocation(Section):
    # One mode per cluster: AWS's EKS guide warns never to run the DRA driver and the device plugin on
    # the same node (GPUs are silently oversubscribed: docs.aws.amazon.com/eks/latest/userguide/
    # device-management-nvidia-dra-device-plugin.html), and the GPU Operator's DRA mode (GPUCluster) is
    # cluster-wide as well (NVIDIA/gpu-operator v26.7.0 controllers/nodelabeling_controller.go:253-269).
    mode: Literal["device-plugin", "dra"] = Field(
        default="device-plugin",
        description="How pods get GPUs, for the whole cluster. device-plugin: the extended resource nvidia.com/gpu. "
        "dra: Dynamic Resource Allocation (ResourceClaims on the DRA driver's DeviceClasses).",
    )
    # Passed to the driver's kubelet plugin as upstream passes them (env FEATURE_GATES).
    feature_gates: Mapping[str, StrictBool] = Field(
        default_factory=dict,
        alias="featureGates",
        description="With mode dra: the DRA driver's feature gates, by name, true or false (gpu_platform/catalog/dra.yaml "
        "lists them per driver version). Unset gates keep the driver's default.",
    )
    # The program writes the list on the operands' namespace for the pack.
    acknowledge_alpha: tuple[str, ...] = Field(
        default=(),
        alias="acknowledgeAlpha",
        description="With mode dra: the alpha gates the stack turns on knowingly. Policy "
        "dra-alpha-features-acknowledged "
        "reports any other alpha gate turned on.",
    )


def check_dra_renderable(stack: StackConfig) -> None:
    if stack.allocation.mode != "dra":
        return
    mode = "with gpu-platform:allocation.mode 'dra'"
    if DRA_OPERAND not in stack.release.images:
        shipping = [name for name, r in matrix.load().releases.items() if DRA_OPERAND in r.images]
        raise ConfigProblem(
            f"{stack.operator.release!r} {mode}: this GPU Operator release ships no DRA driver (its matrix row in "
            f"gpu_platform/catalog/matrix.yaml pins no {DRA_OPERAND} image) (valid: {', '.join(shipping)}; or allocation.mode "
            "device-plugin)",
            path=(_OPERATOR, "release"),
        )
    if versions.major_minor(stack.cluster.kubernetes_version) < DRA_MIN_KUBERNETES:
        raise ConfigProblem(
            f"{stack.cluster.kubernetes_version!r} {mode}: DRA's resource.k8s.io/v1 API (DeviceClass, ResourceClaim) "
            "is GA and on by default from Kubernetes 1.34, and NVIDIA's DRA driver asks for 1.34.2 or later "
            '(kubernetes/kubernetes#133920) (valid: "1.34" or later; or allocation.mode device-plugin)',
            path=("gpu-platform:cluster", "kubernetesVersion"),
        )
    for i, pool in enumerate(stack.node_pools):
        if pool.time_slicing:
            raise ConfigProblem(
                f"is the device plugin's setting, and {mode} no device plugin runs: nothing would share the "
                f"GPUs of pool {pool.name!r} (valid: remove it, or allocation.mode device-plugin)",
                path=("gpu-platform:nodePools", i, "timeSlicing"),
            )
        if pool.mig:
            raise ConfigProblem(
                f"is carved by the MIG manager and advertised by the device plugin, and {mode} neither runs "
                f"(the GPU Operator's DRA mode deploys no MIG manager either) (valid: remove it from pool "
                f"{pool.name!r}, or allocation.mode device-plugin)",
                path=("gpu-platform:nodePools", i, "mig"),
            )
    tag = stack.operator.overrides.get(DRA_EXPORTER)
    exporter = versions.image_tag_version(tag.partition("@")[0]).split("-")[-1] if tag else ""
    if tag and versions.is_version(exporter) and not versions.at_least(exporter, DRA_EXPORTER_SINCE):
        raise ConfigProblem(
            f"{tag!r} {mode}: exporter {exporter} has no KUBERNETES_ENABLE_DRA, so its GPU metrics would name no pod "
            "holding the GPU (the kubelet reports DRA devices by name, not UUID) (valid: a patch bump of the "
            "release's "
            f"{image_refs.tag_of(stack.release.images[DRA_EXPORTER])}, which has it, as every exporter from "
            f"{DRA_EXPORTER_SINCE} on does; or remove the override)",
            path=(_OPERATOR, "overrides", DRA_EXPORTER),
        )


def check_dra_feature_gates(stack: StackConfig) -> None:
    gates, acknowledged = stack.allocation.feature_gates, stack.allocation.acknowledge_alpha
    if stack.allocation.mode != "dra":
        for key, given in (("featureGates", gates), ("acknowledgeAlpha", acknowledged)):
            if given:
                raise ConfigProblem(
                    "are the DRA driver's, and with allocation.mode 'device-plugin' no DRA driver runs "
                    "(valid: remove it, or allocation.mode dra)",
                    path=(_ALLOCATION, key),
                )
        return
    image = stack.release.images[DRA_OPERAND]
    driver = dra.driver_of_image(image)
    if driver is None:  # a matrix row pinning a driver the table lacks: ours to fix, not the user's
        raise ConfigProblem(
            f"{stack.operator.release!r} ships the DRA driver {image}, whose version gpu_platform/catalog/dra.yaml does "
            f"not list (known: {', '.join(dra.load())}), so its feature gates cannot be "
            "checked",
            path=(_OPERATOR, "release"),
        )
    at = f"the DRA driver {driver.version} of GPU Operator {stack.operator.release}"
    for name in gates:
        if name not in driver.gates:
            raise ConfigProblem(
                f"is not a feature gate of {at} (valid: {', '.join(driver.gates)})",
                path=(_ALLOCATION, "featureGates", name),
            )
    problems = driver.problems(gates)
    if problems:
        name, wrong, valid = problems[0]
        raise ConfigProblem(f"{wrong} (valid: {valid})", path=(_ALLOCATION, "featureGates", name))
    for i, name in enumerate(acknowledged):
        path = (_ALLOCATION, "acknowledgeAlpha", i)
        if name not in driver.alpha():
            raise ConfigProblem(
                f"{name!r} is not an alpha feature gate of {at}, and only alpha gates need "
                "acknowledging "
                f"(valid: {', '.join(driver.alpha())})",
                path=path,
            )
        if name in acknowledged[:i]:
            raise ConfigProblem(f"{name!r} is listed twice (valid: once)", path=path)
        # An acknowledgement of a gate that is off would let a later change turn it on unreviewed.
        if not gates.get(name):
            raise ConfigProblem(
                f"{name!r} is not turned on (featureGates.{name}: true), and an acknowledgement is "
                "for a "
                "gate the stack turns on, reviewed with it (valid: remove it, or turn the gate "
                "on)",
                path=path,
            )
