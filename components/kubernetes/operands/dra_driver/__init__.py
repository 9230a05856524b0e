"""The NVIDIA DRA driver's kubelet plugin for GPUs (gpu-platform:allocation mode dra): publishes each
node's GPUs and MIG devices as ResourceSlices, and prepares the devices of the ResourceClaims the
scheduler allocates to the node's pods (CDI specs the runtime injects). The stack also creates the
DeviceClasses the claims name.

The object set is the GPU Operator v26.7.0's own (NVIDIA/gpu-operator v26.7.0, commit 10ee5b36,
manifests/state-dra-driver/), GPUs only:
- ComputeDomains (multi-node NVLink: GB200/GB300 NVL72, on AWS p6e-gb200/gb300) are off: no
  compute-domains container, no controller Deployment (0600_controller-deployment.yaml:1 renders it
  only with computeDomains.enabled), no ComputeDomain CRD, no compute-domain DeviceClasses
  (0420_deviceclass-compute-domains.yaml), none of their RBAC (0110, 0120, 0130).
- Feature gates (gpu-platform:allocation.featureGates) reach the plugin as upstream passes them: env
  FEATURE_GATES, `Name=bool` sorted by name, only when some are set (0500_daemonset.yaml:191-194;
  the format: gpu_platform/catalog/dra.py). Gates that need what is not rendered here (MPS's Role, 0140;
  PassthroughSupport's mounts of /lib/modules, /sys and /proc, 0500_daemonset.yaml:236-247, and its
  vfio.gpu.nvidia.com class) are refused by the configuration (gpu_platform/catalog/dra.yaml unsupported).
- The driver is the node image's, on the host (the AMI bakes it): driver root `/`, mounted read-only
  at /host, as the operator's validator writes it to driver-ready for a host driver (what the
  upstream container sources, 0500_daemonset.yaml:144-149: NVIDIA_DRIVER_ROOT=/,
  DRIVER_ROOT_CTR_PATH=/host; cmd/nvidia-validator/main.go:953-954). Here they are set directly, and
  upstream's driver-validation init container (0500_daemonset.yaml:85-131: the gpu-operator image,
  privileged, which lists DaemonSets through the Role of 0150, with COMPONENT=driver: the driver
  check only, :85-131) is replaced by the stage order: the plugin waits for driver-ready, which the
  validator's driver check writes on the node (validator/). Not toolkit-ready: the DRA path does
  not go through the nvidia runtime's device requests that the toolkit check exercises (containerd
  applies the plugin's CDI specs itself), so a node whose legacy runtime path fails still serves
  claims, as upstream's. That drops a privileged container and the Role.
- No metrics server: HTTP_ENDPOINT is left unset, which disables it (gpu-kubelet-plugin flag
  http-endpoint, kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 cmd/gpu-kubelet-plugin/main.go:201-205).

What the image needs from the DaemonSet, clause by clause: components/kubernetes/operands/dra_driver/contract.yaml.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes.admission import resource_slices
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import Container, HostPath, OperandSpec
from gpu_platform.catalog import dra
from gpu_platform.interface import admission

# The driver name its devices carry (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1
# cmd/gpu-kubelet-plugin/main.go:42) and the DeviceClasses that select them by type, as the operator
# defines them (0400_deviceclass-gpu.yaml:4-8, 0410_deviceclass-mig.yaml:4-8 at v26.7.0). No
# extendedResourceName on gpu.nvidia.com, as the operator's class has none (the upstream chart's
# maps nvidia.com/gpu onto it, which needs DRAExtendedResource, alpha in 1.34).
DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"  # whole GPUs: the class the DRA validator's claim names
DEVICE_CLASSES = (
    (GPU_CLASS, "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"),
    ("mig.nvidia.com", "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"),
)
NAME = "nvidia-dra-driver-kubelet-plugin"  # 0500_daemonset.yaml:4, its pods' app label :32
KUBELET_DIR = "/var/lib/kubelet"  # hostPaths.kubeletRootDir's default (0500_daemonset.yaml:186-188)
HEALTH_PORT = 51516  # the gpus container's gRPC health port: api/nvidia/v1alpha1/gpucluster_types.go:136 at v26.7.0
# Where upstream mounts the host root and the driver inside it (0500_daemonset.yaml:229-232).
HOST_ROOT = HostPath("host-root", "/", "/host", True, "", "HostToContainer")
HOST_PATHS = (
    # The kubelet's plugin registration directory: the plugin puts its registration socket there.
    HostPath("plugins-registry", f"{KUBELET_DIR}/plugins_registry", f"{KUBELET_DIR}/plugins_registry", False),
    # The plugin's DRA socket and its checkpoint of prepared claims; Bidirectional as upstream
    # (0500_daemonset.yaml:221-223), which is why the container is privileged.
    HostPath("plugins", f"{KUBELET_DIR}/plugins", f"{KUBELET_DIR}/plugins", False, "", "Bidirectional"),
    # The CDI specs of prepared devices, which containerd reads (AL2023's nodeadm lists /var/run/cdi
    # among cdi_spec_dirs: awslabs/amazon-eks-ami v20260724 nodeadm/test/e2e/cases/
    # containerdv2-runtime-config-nvidia/expected-containerd-configv2.toml:72-73).
    HostPath("cdi", "/var/run/cdi", "/var/run/cdi", False),
    HOST_ROOT,
)

# The kubelet plugin's ClusterRole: the API calls the GPU kubelet plugin's code makes, not upstream's
# role. The GPU Operator v26.7.0 grants more (manifests/state-dra-driver/0200_kubeletplugin-clusterrole.yaml:
# computedomains, node writes, list/watch on claims and nodes, get/list/watch on every pod of the
# cluster), shared with the compute-domain kubelet plugin, which this stack does not run. Every call,
# at kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (cmd/gpu-kubelet-plugin and the vendored
# k8s.io/dynamic-resource-allocation; re-read when v0.5.0 is tagged):
# - ResourceClaims: Get only, of the claim the kubelet asks it to prepare
#   (vendor/k8s.io/dynamic-resource-allocation/kubeletplugin/draplugin.go:1103) and of a checkpointed
#   claim it cleans up (cmd/gpu-kubelet-plugin/cleanup.go:223);
# - ResourceSlices: List and Watch (its informer, resourceslice/resourceslicecontroller.go:538, 552),
#   Update, Create, Delete (:836, 898, 954); no Get;
# - Nodes: Get of its own node, the slices' owner (:716);
# - Pods and Deployments: only for MPS (cmd/gpu-kubelet-plugin/sharing.go:192-441), which this stack
#   refuses (gpu_platform/catalog/dra.yaml unsupported), so none.
# The server version it reads (driver.go:581-600) is discovery, open to every authenticated user.
# Each verb left out is one a stolen plugin token cannot use: upstream's role would let it read
# every pod in the cluster, env values included, from any GPU node.
CLUSTER_RULES = (
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceslices"],
        "verbs": ["list", "watch", "create", "update", "delete"],
    },
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
)


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["dra-driver"]
    probe = {"grpc": {"port": HEALTH_PORT, "service": "liveness"}, "timeoutSeconds": 10}
    return OperandSpec(
        operand="dra-driver",
        reason=(
            "publishes the node's GPUs as DRA devices and prepares claimed ones: its sockets in the kubelet's "
            "plugin directories (/var/lib/kubelet/plugins_registry and /var/lib/kubelet/plugins, read-write, the "
            "latter with Bidirectional mount propagation, which only a privileged container may have), the CDI "
            "specs of prepared devices in /var/run/cdi (read-write), generated from the host's driver under / "
            "(read-only); privileged as NVIDIA runs it (GPU Operator v26.7.0 state-dra-driver 0500_daemonset.yaml:138-139)"
        ),
        containers=(
            Container(
                name="gpus",
                image=image,
                command=("gpu-kubelet-plugin",),
                args=("-v", "4"),
                env=(
                    ("NVIDIA_VISIBLE_DEVICES", "void"),
                    ("CDI_ROOT", "/var/run/cdi"),
                    ("NVIDIA_DRIVER_ROOT", "/"),
                    ("DRIVER_ROOT_CTR_PATH", HOST_ROOT.mount),
                    ("HOST_ROOT", HOST_ROOT.mount),
                    ("NVIDIA_MIG_CONFIG_DEVICES", "all"),
                    ("IMAGE_NAME", image),
                    ("KUBELET_REGISTRAR_DIRECTORY_PATH", f"{KUBELET_DIR}/plugins_registry"),
                    ("KUBELET_PLUGINS_DIRECTORY_PATH", f"{KUBELET_DIR}/plugins"),
                    ("HEALTHCHECK_PORT", str(HEALTH_PORT)),
                    *(
                        [(dra.FEATURE_GATES_ENV, dra.format_gates(ctx.dra_feature_gates))]
                        if ctx.dra_feature_gates
                        else []
                    ),
                ),
                field_env=(("NODE_NAME", "spec.nodeName"), ("NAMESPACE", "metadata.namespace")),
                host_paths=tuple(hp.volume for hp in HOST_PATHS),
                privileged=True,
                read_only_root=False,
                run_as_root=True,
                # Upstream sets no resources; a limit is ours, generous for a Go daemon.
                requests=("50m", "64Mi"),
                memory_limit="512Mi",
                # 0500_daemonset.yaml:199-214: up to 600 s to start, then a check every 30 s.
                startup={**probe, "failureThreshold": 600, "periodSeconds": 1},
                liveness={**probe, "failureThreshold": 3, "periodSeconds": 30},
            ),
        ),
        host_paths=HOST_PATHS,
        cluster_rules=CLUSTER_RULES,
        device_classes=DEVICE_CLASSES,
        object_name=NAME,
        app_label=NAME,
    )


class DraDriver(Operand):
    """`gpu-platform:operands:DraDriver`."""

    def _guards(self, name: str, spec: OperandSpec) -> list[pulumi.Resource]:
        # Its ClusterRole lets the plugin write every node's ResourceSlices; this policy keeps each
        # plugin to its own node's (components/kubernetes/admission.py resource_slices). It names the
        # plugin's service account, the DaemonSet's own (the operand base gives both the object name):
        # upstream's is nvidia-dra-driver-kubeletplugin (0100_kubeletplugin-service_account.yaml:4,
        # 0500_daemonset.yaml:46 at v26.7.0), but nothing in the image reads its account's name, and
        # one name per operand keeps the RBAC subjects, the DaemonSet and this policy from drifting.
        policy_name = admission.DRA_RESOURCE_SLICES
        labels = {"app.kubernetes.io/name": spec.operand, "app.kubernetes.io/part-of": "gpu-platform"}
        policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            f"{name}-resourceslices",
            metadata={"name": policy_name, "labels": labels},
            spec=pulumi.Output.from_input(self._args.namespace).apply(
                lambda ns: resource_slices(ns, spec.name, DRIVER)
            ),
            opts=self._child,
        )
        # After its policy, as the platform's other bindings (components/kubernetes/admission.py).
        binding = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-resourceslices-binding",
            metadata={"name": policy_name, "labels": labels},
            spec={"policyName": policy_name, "validationActions": ["Deny"]},
            opts=pulumi.ResourceOptions.merge(self._child, pulumi.ResourceOptions(depends_on=[policy])),
        )
        return [policy, binding]
