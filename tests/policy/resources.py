"""Small PolicyResource builders with the inputs the program records (engine-side names)."""

from __future__ import annotations

from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions

from gpu_platform import contract


def resource(type_: str, name: str, props: dict) -> PolicyResource:
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    urn = f"urn:pulumi:test::gpu-platform::{type_}::{name}"
    return PolicyResource(type_, props, urn, name, options, None, None, [], {})


def cluster(minor: str) -> PolicyResource:
    return resource("aws:eks/cluster:Cluster", "gpu-cluster", {"name": "gpu-test", "version": minor})


def namespace(release: str, cuda: str = "12.8") -> PolicyResource:
    return resource(
        "kubernetes:core/v1:Namespace",
        "gpu-namespace",
        {"metadata": {"name": "gpu-operator", "annotations": {contract.OPERATOR_RELEASE_KEY: release, contract.CUDA_VERSIONS_KEY: cuda}}},
    )


def launch_template(kubernetes: str = "1.33", driver: str = "580.105.08", **extra) -> PolicyResource:
    tags = {contract.KUBERNETES_VERSION_TAG: kubernetes, contract.DRIVER_VERSION_TAG: driver}
    return resource("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt", {"tags": tags, **extra})


def node_group(
    pool: str = "l4",
    gpu_model: str = "L4",
    driver: str = "580.105.08",
    gates: tuple[str, ...] = ("device-plugin",),
    mig_config: str | None = None,
    toolkit_baked: bool = False,
    audit: bool = True,
    taint_effect: str = "NO_SCHEDULE",
) -> PolicyResource:
    """A GPU pool's node group as the program records it (EKS spells taint effects NO_SCHEDULE)."""
    tags = {
        contract.DRIVER_VERSION_TAG: driver,
        contract.GPU_MODEL_TAG: gpu_model,
        contract.POOL_LABEL: pool,
        contract.TOOLKIT_BAKED_TAG: str(toolkit_baked).lower(),
        **(audit_tags(driver) if audit else {}),
    }
    labels = contract.pool_labels(pool, gpu_model, gates, mig_config)
    taints = [{"key": contract.GPU_TAINT_KEY, "value": contract.GPU_TAINT_VALUE, "effect": taint_effect}]
    return resource("aws:eks/nodeGroup:NodeGroup", f"gpu-pool-{pool}-ng", {"tags": tags, "labels": labels, "taints": taints})


def audit_tags(driver: str = "580.105.08") -> dict[str, str]:
    return {
        contract.AUDIT_TAG_SOFTWARE: f"nvidia-driver {driver} (kernel modules)",
        contract.AUDIT_TAG_OWNER: "ml-platform",
        contract.AUDIT_TAG_APPROVAL: "SEC-1042",
    }


def hardened_launch_template(driver: str = "580.105.08", **overrides) -> PolicyResource:
    """A GPU launch template with the inputs the program records (strings where the schema says so)."""
    props = {
        "metadataOptions": {"httpEndpoint": "enabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"},
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true", "volumeSize": 200, "volumeType": "gp3"}}],
        "networkInterfaces": [{"associatePublicIpAddress": "false", "deleteOnTermination": "true"}],
        "tags": {contract.DRIVER_VERSION_TAG: driver, contract.GPU_MODEL_TAG: "L4", **audit_tags(driver)},
    }
    props.update(overrides)
    return resource("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt", props)


def node_image(driver: str = "580.105.08", audit: bool = True) -> PolicyResource:
    tags = {contract.DRIVER_VERSION_TAG: driver, **(audit_tags(driver) if audit else {})}
    return resource("aws:imagebuilder/image:Image", "gpu-node-image-image", {"tags": tags})


def namespace_with(release: str, cuda: str = "12.8", overrides: str = "") -> PolicyResource:
    notes = {contract.OPERATOR_RELEASE_KEY: release, contract.CUDA_VERSIONS_KEY: cuda, contract.OVERRIDES_KEY: overrides}
    return resource("kubernetes:core/v1:Namespace", "gpu-namespace", {"metadata": {"name": "gpu-operator", "annotations": notes}})


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
) -> PolicyResource:
    """A workload manifest in the program's shape: the operand's container mounting the device-plugin
    socket directory read-write with SYS_ADMIN, a wait init container reading the validations."""
    container = {
        "name": "main", "image": image,
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}},
        "volumeMounts": [{"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins", "readOnly": False}],
        **(main_container or {}),
    }
    spec = {
        "containers": [container],
        "tolerations": tolerations if tolerations is not None else [{"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}},
            {"name": "run-nvidia-validations", "hostPath": {"path": "/run/nvidia/validations"}},
        ],
        **({"nodeSelector": {contract.gate_label(gate): "true"}} if gate else {}),
        **(pod or {}),
    }
    if wait_image:
        spec["initContainers"] = [{
            "name": "wait-for-toolkit-ready", "image": wait_image,
            "volumeMounts": [{"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations", "readOnly": True}],
        }]
    notes = annotations if annotations is not None else {
        contract.AUDIT_REASON: "registers nvidia.com/gpu with the kubelet",
        contract.AUDIT_HOST_PATHS: "/run/nvidia/validations:ro,/var/lib/kubelet/device-plugins:rw",
        contract.AUDIT_OWNER: "ml-platform",
        contract.AUDIT_APPROVAL: "SEC-1042",
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
