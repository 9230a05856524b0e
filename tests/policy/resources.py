"""Small resources with the properties the program records (engine-side names), as plain data:
`tests/policy/verdict.py` hands them to the pack through the real analyzer, which wraps them in its
proxies exactly as under the CLI."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_platform.interface import contract

RELEASE = "v25.10.1"
DRIVER = "580.105.08"
CUDA = "12.8"
KUBERNETES = "1.33"


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    props: dict[str, Any] = field(hash=False)
    # property -> the resources it was built from, as the engine hands them to stack policies
    property_dependencies: dict[str, tuple[Resource, ...]] = field(default_factory=dict, hash=False)

    @property
    def urn(self) -> str:
        parent = {
            "aws:eks/nodeGroup:NodeGroup": "gpu-platform:aws:GpuNodePool$",
            "aws:ec2/launchTemplate:LaunchTemplate": "gpu-platform:aws:GpuNodePool$",
            "aws:imagebuilder/image:Image": "gpu-platform:aws:NodeImage$",
        }.get(self.type, "")
        return f"urn:pulumi:test::gpu-platform::{parent}{self.type}::{self.name}"


def resource(type_: str, name: str, props: dict) -> Resource:
    return Resource(type_, name, props)


def cluster(minor: str = KUBERNETES, **vpc) -> Resource:
    props: dict[str, Any] = {"name": "gpu-test", "version": minor}
    if vpc:
        props["vpcConfig"] = vpc
    return resource("aws:eks/cluster:Cluster", "gpu-cluster", props)


def namespace(release: str = RELEASE, cuda: str = CUDA, kubernetes: str = KUBERNETES, overrides: str = "") -> Resource:
    """The operands' namespace as the program annotates it (CUDA versions and overrides space-separated)."""
    notes = {
        contract.OPERATOR_RELEASE_KEY: release,
        contract.CUDA_VERSIONS_KEY: cuda,
        contract.KUBERNETES_VERSION_TAG: kubernetes,
        contract.OVERRIDES_KEY: overrides,
    }
    return resource(
        "kubernetes:core/v1:Namespace", "gpu-namespace", {"metadata": {"name": "gpu-operator", "annotations": notes}}
    )


def audit_tags(driver: str = DRIVER) -> dict[str, str]:
    return {
        contract.AUDIT_TAG_SOFTWARE: f"nvidia-driver {driver} (kernel modules)",
        contract.AUDIT_TAG_OWNER: "ml-platform",
        contract.AUDIT_TAG_APPROVAL: "SEC-1042",
    }


def facts(
    driver: str = DRIVER,
    release: str = RELEASE,
    cuda: str = CUDA,
    kubernetes: str = KUBERNETES,
    source: str = "bake",
    toolkit_baked: bool = False,
) -> dict[str, str]:
    """The version facts every GPU resource declares in its tags."""
    return {
        contract.DRIVER_VERSION_TAG: driver,
        contract.OPERATOR_RELEASE_KEY: release,
        contract.CUDA_VERSIONS_KEY: cuda,
        contract.KUBERNETES_VERSION_TAG: kubernetes,
        contract.IMAGE_SOURCE_TAG: source,
        contract.TOOLKIT_BAKED_TAG: str(toolkit_baked).lower(),
    }


def node_image(driver: str = DRIVER, audit: bool = True, gpu_models: str = "L4", **declared) -> Resource:
    """The baked node image: its facts, the GPU models of the pools it is built for, the audit tags."""
    tags = {
        **facts(driver=driver, **declared),
        contract.GPU_MODELS_TAG: gpu_models,
        **(audit_tags(driver) if audit else {}),
    }
    return resource("aws:imagebuilder/image:Image", "gpu-node-image-image", {"tags": tags})


def launch_template(
    driver: str = DRIVER,
    pool: str = "l4",
    gpu_model: str = "L4",
    audit: bool = True,
    props: dict | None = None,
    **declared,
) -> Resource:
    """A GPU pool's launch template with the inputs the program records (strings where the schema says so)."""
    tags = {
        **facts(driver=driver, **declared),
        contract.GPU_MODEL_TAG: gpu_model,
        contract.POOL_LABEL: pool,
        **(audit_tags(driver) if audit else {}),
    }
    body = {
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
            "instanceMetadataTags": "disabled",
        },
        "blockDeviceMappings": [
            {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "volumeSize": 200, "volumeType": "gp3"}}
        ],
        "networkInterfaces": [{"associatePublicIpAddress": "false", "deleteOnTermination": "true"}],
        "tags": tags,
        **(props or {}),
    }
    return resource("aws:ec2/launchTemplate:LaunchTemplate", f"gpu-pool-{pool}-lt", body)


def node_group(
    pool: str = "l4",
    gpu_model: str = "L4",
    driver: str = DRIVER,
    gates: tuple[str, ...] = ("device-plugin",),
    mig_config: str | None = None,
    toolkit_baked: bool = False,
    audit: bool = True,
    taint_effect: str = "NO_SCHEDULE",
    **declared,
) -> Resource:
    """A GPU pool's node group as the program records it (EKS spells taint effects NO_SCHEDULE)."""
    tags = {
        **facts(driver=driver, toolkit_baked=toolkit_baked, **declared),
        contract.GPU_MODEL_TAG: gpu_model,
        contract.POOL_LABEL: pool,
        **(audit_tags(driver) if audit else {}),
    }
    tags.pop(contract.IMAGE_SOURCE_TAG)
    labels = contract.pool_labels(pool, gpu_model, gates, mig_config, whole_gpus=False)
    taints = [{"key": contract.GPU_TAINT_KEY, "value": contract.GPU_TAINT_VALUE, "effect": taint_effect}]
    return resource(
        "aws:eks/nodeGroup:NodeGroup", f"gpu-pool-{pool}-ng", {"tags": tags, "labels": labels, "taints": taints}
    )


def workload(
    kind: str = "DaemonSet",
    name: str = "gpu-device-plugin-ds",
    operand: str | None = "device-plugin",
    image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
    wait_image: str | None = "nvcr.io/nvidia/gpu-operator:v25.10.1",
    annotations: dict | None = None,
    pod: dict | None = None,
    main_container: dict | None = None,
    gate: str | None = "device-plugin",
    tolerations: list | None = None,
    release: str | None = RELEASE,
    overrides: str = "",
) -> Resource:
    """A workload manifest in the program's shape: the operand's container mounting the device-plugin
    socket directory read-write with SYS_ADMIN, a wait init container reading the validations; the
    workload declares the release (and overrides) it follows, as the program's do."""
    container = {
        "name": "main",
        "image": image,
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}},
        "volumeMounts": [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins", "readOnly": False}],
        **(main_container or {}),
    }
    spec = {
        "containers": [container],
        "tolerations": tolerations
        if tolerations is not None
        else [{"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}},
            {"name": "run-nvidia-validations", "hostPath": {"path": "/run/nvidia/validations"}},
        ],
        **({"nodeSelector": {contract.gate_label(gate): "true"}} if gate else {}),
        **(pod or {}),
    }
    if wait_image:
        spec["initContainers"] = [
            {
                "name": "wait-for-toolkit-ready",
                "image": wait_image,
                "volumeMounts": [
                    {"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations", "readOnly": True}
                ],
            }
        ]
    notes = (
        annotations
        if annotations is not None
        else {
            contract.AUDIT_REASON: "registers nvidia.com/gpu with the kubelet",
            contract.AUDIT_HOST_PATHS: "/run/nvidia/validations:ro,/var/lib/kubelet/device-plugins:rw",
            contract.AUDIT_OWNER: "ml-platform",
            contract.AUDIT_APPROVAL: "SEC-1042",
        }
    )
    if operand and release:
        notes = {
            **notes,
            contract.OPERATOR_RELEASE_KEY: release,
            **({contract.OVERRIDES_KEY: overrides} if overrides else {}),
        }
    metadata = {"name": name, "labels": {contract.OPERAND_KEY: operand} if operand else {}, "annotations": notes}
    api = {"Pod": "core/v1", "Job": "batch/v1", "CronJob": "batch/v1"}.get(kind, "apps/v1")
    if kind == "Pod":
        props = {"kind": kind, "metadata": metadata, "spec": spec}
    elif kind == "CronJob":
        props = {"kind": kind, "metadata": metadata, "spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}}
    else:
        props = {"kind": kind, "metadata": metadata, "spec": {"template": {"metadata": {}, "spec": spec}}}
    return resource(f"kubernetes:{api}:{kind}", name, props)
