"""What the platform's admission policies allow, as data with its sources: read by the component that
builds the ValidatingAdmissionPolicies (components/kubernetes/admission.py), by the policy pack that
requires them (policy/admission.py) and by the tests that evaluate their CEL.

ValidatingAdmissionPolicy is served as admissionregistration.k8s.io/v1 from Kubernetes 1.30 (GA,
KEP-3488); before that only as v1beta1, off by default, so an older cluster gets none (the program
warns, docs/privileges.md "Admission policies").

Own-node checks read the node a service-account token was issued for: the API server puts it in the
request's `userInfo.extra["authentication.kubernetes.io/node-name"]` for tokens bound to a pod
(kubernetes/apiserver v0.30.0 pkg/authentication/serviceaccount/util.go:54-59 NodeNameKey, :161-169
set when the token's claims name a node), which it does under the ServiceAccountTokenPodNodeInfo
feature gate: alpha (off) in 1.29, beta and on by default in 1.30-1.31, GA and locked on from 1.32
(kubernetes/website content/en/docs/reference/command-line-tools-reference/feature-gates/
ServiceAccountTokenPodNodeInfo.md at 02e08b9e; KEP-4193). So every cluster that serves the v1 policy
also fills the key (EKS exposes no feature-gate switch); a request without it is denied, not waved through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpu_platform.catalog import addon_privileges, versions
from gpu_platform.interface import contract

# The first Kubernetes minor that serves admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy.
MIN_KUBERNETES = (1, 30)
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"

# Policy names, one per rule; the pack requires each whose operand runs (None: always).
VALIDATOR_PODS = "gpu-platform-validator-pods"
MIG_MANAGER_NODES = "gpu-platform-mig-manager-nodes"
NFD_MASTER_NODES = "gpu-platform-nfd-master-nodes"
GPU_ACCESS = "gpu-platform-gpu-access"
# The privilege rule has a policy of its own so that an adopted cluster can bind it with Warn first
# (WARN_ACTIONS): other agents there may run privileged on every node (a CNI, a security agent).
GPU_PRIVILEGE = "gpu-platform-gpu-privilege"
DENY_ACTIONS = ("Deny",)
# Admitted, with a warning to the client and an audit-log annotation per pod that would be refused
# (kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/#validation-actions).
WARN_ACTIONS = ("Warn", "Audit")
# Policies a stack may bind with WARN_ACTIONS (gpu-platform:workloads.privilegeAdmission); every other
# one denies.
MAY_WARN = (GPU_PRIVILEGE,)
# Owned by the DRA driver's component (components/kubernetes/operands/dra_driver/), required by
# policy/dra.py (dra-kubelet-plugin-slices-own-node), not by REQUIRED_FOR: it exists only in mode dra.
DRA_RESOURCE_SLICES = "gpu-platform-dra-resourceslices"
# A refused write shows in the plugin's log as the ResourceSlice controller's "processing ResourceSlice
# objects" error (kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 vendor/k8s.io/dynamic-resource-
# allocation/resourceslice/resourceslicecontroller.go:652-654, "create resource slice: %w" :898-900)
# wrapping the API server's "ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
# request: <message>" (kubernetes/apiserver v0.34.0 pkg/admission/plugin/policy/validating/dispatcher.go:294).
REQUIRED_FOR = {
    VALIDATOR_PODS: "validator",
    MIG_MANAGER_NODES: "mig-manager",
    NFD_MASTER_NODES: "node-feature-discovery",
    GPU_ACCESS: None,
    GPU_PRIVILEGE: None,
}

# The validator's CUDA workload pod is privileged by upstream design (an init container running
# `vectorAdd` and a container echoing success, both `privileged: true`): NVIDIA/gpu-operator v23.9.0
# and v25.3.4 validator/cuda-workload-validation.yaml:16-34, v26.7.0
# validator/manifests/cuda-workload-validation.yaml:18-36. Denying privilege outright would fail the
# cuda check on every node; the policy admits a privileged container only with exactly these
# commands and no other environment than NVIDIA_VISIBLE_DEVICES (line 22-24 / 24-26 there).
PRIVILEGED_COMMAND = ("sh", "-c")
PRIVILEGED_ARGS = (("vectorAdd",), ("echo cuda workload validation is successful",))
PRIVILEGED_ENV = ("NVIDIA_VISIBLE_DEVICES",)
# Every container of both workload pods (cuda-workload-validation.yaml and
# plugin-workload-validation.yaml at v23.9.0, v25.3.4 and v25.10.1 :14-32, v26.7.0 :14-35) runs
# `sh -c` with one of these arguments and sets nothing else that runs code or mounts files: no
# lifecycle hooks, probes, workingDir, envFrom or volumes of its own. cmd/nvidia-validator/main.go
# (v25.10.1 :1155-1200, v26.7.0 :1300-1328, 1564-1592) fills in only namespace, image, pull policy
# and secrets, runtimeClassName, owner references, tolerations, nodeName and the GPU limit.
WORKLOAD_ARGS = (*PRIVILEGED_ARGS, ("echo device-plugin workload validation is successful",))
# Both pods set serviceAccountName: nvidia-operator-validator (cuda-workload-validation.yaml:16 at
# v26.7.0, :14 at v25.10.1 and v23.9.0; plugin-workload-validation.yaml:14), which main.go keeps
# (operand contract validator-workload-pod-service-account): the created pod runs with the
# validator's own token, never another account's (NFD master's token may label any node).
# The one volume such a pod has is the token the API server's ServiceAccount admission plugin adds
# before validating admission runs (kubernetes/kubernetes plugin/pkg/admission/serviceaccount/
# admission.go: DefaultAPITokenMountPath, mounted read-only in every container, and TokenVolumeSource,
# a projected volume of a serviceAccountToken, the kube-root-ca.crt ConfigMap and the namespace by
# downwardAPI).
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_CA_CONFIGMAP = "kube-root-ca.crt"
# The runtime class the validator gives its workload pods: the one the stack creates
# (cmd/nvidia-validator/main.go:1564-1604 at v26.7.0 sets the pod's runtimeClassName from its config,
# components/kubernetes/namespace.py creates `nvidia`).
VALIDATOR_RUNTIME_CLASS = "nvidia"
# Upstream's validator pods name no priority class, but the Priority admission plugin (mutating, so
# before any validating policy) writes the cluster's globalDefault PriorityClass name into a pod that
# names none (kubernetes plugin/pkg/admission/priority/admission.go, Admit: pod.Spec.PriorityClassName =
# pcName): a cluster with a default class must still get its CUDA check. Refused are the classes that
# preempt system pods, whose names Kubernetes reserves with this prefix (system-node-critical,
# system-cluster-critical; pkg/apis/scheduling SystemPriorityClassPrefix).
SYSTEM_PRIORITY_PREFIX = "system-"

# The DRA kubelet plugin publishes its node's devices as ResourceSlices, and its ClusterRole lets it
# create, update and delete every node's (GPU Operator v26.7.0 manifests/state-dra-driver/
# 0200_kubeletplugin-clusterrole.yaml:22-32): a compromised plugin could advertise devices on other
# nodes, or delete theirs. Upstream narrows it with a ValidatingAdmissionPolicy (0700_resourceslices-
# policy.yaml at v26.7.0, 10ee5b36; the same CEL as the driver's chart at v0.4.1 and at main 95932046,
# v0.5.0-dev, as no v0.5.0 tag exists: deployments/helm/dra-driver-nvidia-gpu/templates/
# validatingadmissionpolicy.yaml:1-36 and validatingadmissionpolicybinding.yaml). Lines of 0700:
# failurePolicy Fail (:6); resource.k8s.io resourceslices, versions v1, v1beta1, v1beta2,
# CREATE/UPDATE/DELETE (:7-12); only for the user
# system:serviceaccount:<namespace>:nvidia-dra-driver-kubeletplugin (:13-16); the node from the token's
# extra authentication.kubernetes.io/node-name, '' without it (:18-20); the slice is oldObject on
# DELETE, else object (:21-29); a write is refused without a node (:31-33) and admitted when the
# slice's spec.nodeName is that node, or when it is a cluster slice (allNodes true or a nodeSelector,
# :34-36); bound with validationActions [Deny] (:38-44).
# Ours is narrower on three points, each a write the GPU plugin never makes: its slices are all node
# slices (every pool it publishes is keyed by its NODE_NAME, and the kubeletplugin helper owns them by
# that Node, which sets spec.nodeName: kubernetes-sigs/dra-driver-nvidia-gpu main 95932046
# cmd/gpu-kubelet-plugin/driver.go:247-250, 302-305, 489-491, 556-558;
# vendor/k8s.io/dynamic-resource-allocation/kubeletplugin/draplugin.go:900-913;
# vendor/k8s.io/dynamic-resource-allocation/resourceslice/resourceslicecontroller.go:244-247, 877-880),
# so a cluster slice (allNodes, nodeSelector, perDeviceNodeSelection) is refused, not waved through;
# they all carry its driver name (resourceslicecontroller.go:878 Driver: c.driverName), so another
# driver's name is refused; and an UPDATE is judged on the slice before and after (spec.nodeName is
# immutable, kubernetes/api v0.34.0 resource/v1/types.go:124, so this only costs an expression).
# Every API version: the rule names "*" (the plugin picks what the cluster serves).
RESOURCE_SLICE_RULE = {
    "apiGroups": ["resource.k8s.io"],
    "apiVersions": ["*"],
    "operations": ["CREATE", "UPDATE", "DELETE"],
    "resources": ["resourceslices"],
}


@dataclass(frozen=True)
class NodeWriter:
    """An operand that patches Node objects, and which keys of them it may change."""

    operand: str
    part: str | None  # the Deployment suffix (NFD's master) or None for the operand's DaemonSet
    own_node: bool  # only the node its pod runs on
    label_namespaces: tuple[str, ...]  # a namespace with a leading "*." also admits its sub-namespaces
    annotation_namespaces: tuple[str, ...]
    resource_namespaces: tuple[str, ...]  # extended resources in status.capacity/allocatable
    policy: str
    reserved_labels: tuple[str, ...] = ()  # keys (a trailing "*": prefixes) it may not change in those namespaces


NODE_WRITERS = (
    # mig-parted writes only nvidia.com/ labels on its own node (NODE_NAME): nvidia.com/mig.config.state
    # and the nvidia.com/gpu.deploy.* pauses (components/kubernetes/operands/mig_manager/contract.yaml
    # mm-node-label-writes, mm-mig-config-state-label, mm-pauses-operand-gates: NVIDIA/mig-parted v0.13.1
    # pkg/mig/reconfigure/reconfigure.go:246-268, 577-589), never taints or annotations.
    NodeWriter("mig-manager", None, True, ("nvidia.com",), (), (), MIG_MANAGER_NODES),
    # nfd-master labels every node (a Deployment, not on the node it labels): feature labels in
    # feature.node.kubernetes.io and profile.node.kubernetes.io and their sub-namespaces, and the labels
    # the workers publish for GFD in nvidia.com (kubernetes-sigs/node-feature-discovery v0.18.2
    # api/nfd/v1alpha1/annotations_labels.go:21,27; pkg/apis/nfd/validate/validate.go:95-113); its own
    # annotations in nfd.node.kubernetes.io and feature annotations in feature.node.kubernetes.io
    # (annotations_labels.go:39-73; v0.14.2 pkg/apis/nfd/v1alpha1/annotations_labels.go:39-60);
    # extended resources in feature.node.kubernetes.io (annotations_labels.go:42). Taints only with
    # -enable-taints (TaintNs, annotations_labels.go:33), which the master does not get here.
    NodeWriter(
        "node-feature-discovery",
        "master",
        False,
        ("*.feature.node.kubernetes.io", "*.profile.node.kubernetes.io", "nvidia.com"),
        ("nfd.node.kubernetes.io", "*.feature.node.kubernetes.io"),
        ("*.feature.node.kubernetes.io",),
        NFD_MASTER_NODES,
        # What places operands and their settings on a node is the pools' (kubelet labels) and the
        # MIG manager's, never a discovered feature: GFD publishes no such key (`git grep` of
        # NVIDIA/k8s-device-plugin v0.18.1 internal/lm finds none of them), so NFD may not put a
        # gating label on a system node. Its own PCI labels (feature.node.kubernetes.io/pci-10de.present)
        # place nothing here: the GPU Operator's state manager turns them into gpu.present and the
        # gating labels (NVIDIA/gpu-operator v25.10.1 controllers/state_manager.go:112-116, 508-541),
        # but this stack runs no operator controller, and no operand selects on them.
        reserved_labels=(
            f"{contract.GATE_PREFIX}*",
            contract.GPU_PRESENT_LABEL,
            contract.MIG_CONFIG_LABEL,
            contract.DEVICE_PLUGIN_CONFIG_LABEL,
        ),
    ),
)

# The variables nvidia-container-toolkit reads to choose devices for a container
# (NVIDIA/nvidia-container-toolkit v1.18.1 internal/config/image/envvars.go:23-28, the same at v1.17.0,
# v1.19.1, v1.20.0; used by internal/config/image/cuda_image.go:250, 442-452 and
# cmd/nvidia-container-runtime-hook/container_config.go:136-140).
# Admission sees only the pod: a variable set through envFrom (a ConfigMap's keys) or by the image itself
# (CUDA base images set NVIDIA_VISIBLE_DEVICES=all) passes it. The boundary for those is the node: the
# toolkit there takes the variable from privileged containers only (accept-nvidia-visible-devices-
# envvar-when-unprivileged = false, components/aws/image_component.py and the toolkit DaemonSet), and
# the policy refuses privileged containers on GPU nodes (PRIVILEGE_CAPABILITY below). It refuses the
# requests a pod spells out, early and with a message, not every way to make one.
DEVICE_ENV = (
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_IMEX_CHANNELS",
)
# NVIDIA_VISIBLE_DEVICES set to exactly one of these selects no GPU: cuda_image.go:173-176 turns
# "void" (and an empty value) into no device, and internal/config/image/devices.go:36-47
# NewVisibleDevices maps "none" to none{} (no device; the driver's utilities only) and "void" to
# void{} (v1.18.1). A list ("none,0") is not admitted: its elements are read one by one.
NO_DEVICE_VALUES = ("void", "none")
# With accept-nvidia-visible-devices-as-volume-mounts on, a mount of /dev/null under this root is a
# device request (cuda_image.go:34 DeviceListAsVolumeMountsRoot, :265-270 read before the
# environment, :359-372 requestsFromMounts; v1.18.1). Any mount path naming it is refused: the
# toolkit cleans the path (filepath.Clean) so `//` or `/./` spellings reach it too.
DEVICE_MOUNT_ROOT = "/var/run/nvidia-container-devices"
DEVICE_MOUNT_NAME = "nvidia-container-devices"
# CDI device requests by annotation: the runtime reads `cdi.k8s.io/` (internal/config/config.go:127,
# the CDI library's AnnotationPrefix) and the prefixes configured in modes.cdi.annotation-prefixes
# (the GPU Operator adds nvidia.cdi.k8s.io/): any key in cdi.k8s.io or a sub-domain of it.
CDI_ANNOTATION_DOMAIN = "cdi.k8s.io"
# The resources a pod that runs under the nvidia RuntimeClass must ask for: the device plugin's
# nvidia.com/gpu, and nvidia.com/mig-<profile> of pools with the mixed MIG strategy
# (components/kubernetes/operands/sharing.py).
GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"

# The toolkit counts a container as privileged when CAP_SYS_ADMIN is in its bounding set
# (NVIDIA/nvidia-container-toolkit v1.18.1 and v1.20.0 internal/config/image/privileged.go:23-25,
# 35-47, 56-62; cuda_image.go:66-74 reads the OCI spec's process env, the image's included), and then
# honours its device variables whatever accept-nvidia-visible-devices-envvar-when-unprivileged says
# (cuda_image.go:279-282 VisibleDevices, 435-438 ImexChannelRequests): every GPU of the node, around the device
# plugin and DRA. `privileged: true` puts every capability in that set, and also every host device node
# in the container. So on a GPU node, outside the operator namespace, no container is privileged or adds
# one of these. The kubelet hands capabilities.add to the runtime as written (pkg/kubelet/kuberuntime/
# security_context.go convertToRuntimeCapabilities); containerd upper-cases each and prefixes CAP_, and
# takes ALL in any case (containerd v2.2.4 internal/cri/opts/spec_opts.go:208-222, internal/cri/util/
# strings.go:27-34 EqualFold); CRI-O also takes the CAP_ spelling. So any case, with or without CAP_.
PRIVILEGE_CAPABILITY = "(?i)^(CAP_)?(SYS_ADMIN|ALL)$"
# Where a pod can land on a GPU node: it tolerates the GPU taint (a toleration of its key with a NoSchedule
# or empty effect, whatever the value; or one with no key and operator Exists, which tolerates every taint:
# k8s.io/api core/v1 toleration.go ToleratesTaint), or it names its node: a pod with spec.nodeName bypasses
# the scheduler and is bound there even past NoSchedule taints (kubernetes.io/docs/concepts/scheduling-
# eviction/taint-and-toleration/), and admission cannot tell a GPU node's name from another's. Selecting GPU
# nodes without tolerating the taint lands nowhere. Tolerations may be added to a pending pod by update
# (pkg/apis/core/validation ValidatePodUpdate: spec.tolerations, additions only), so that update is checked.
# Namespaces whose pods may nevertheless run privileged there: kube-system, where EKS runs its add-ons'
# privileged DaemonSets that tolerate every taint (kube-proxy, aws-node's init container, the EBS CSI node
# plugin, the node monitoring agent: addon_privileges.py), and where creating a pod already means holding
# any of the namespace's service accounts, the controllers' among them (kubernetes.io/docs/concepts/security/
# rbac-good-practices/, "Workload creation"). Its pod creators can take every GPU of any node: a named
# bypass (docs/privileges.md "Admission policies"). Users add their own with gpu-platform:workloads.privilegedNamespaces.
PRIVILEGED_NAMESPACES = ("kube-system",)

# Pods outside the operator namespace that select devices by environment by design, admitted by
# name: the EKS node monitoring agent add-on's DCGM server (aws/eks-node-monitoring-agent v1.7.0
# charts/eks-node-monitoring-agent/templates/dcgm-daemonset.yaml:1-8 DaemonSet dcgm-server labelled
# k8s-app: dcgm-server, :57-63 NVIDIA_VISIBLE_DEVICES=all), in the add-on's namespace
# (gpu_platform/catalog/addon_privileges.py NAMESPACE).
EXEMPT_PODS = ((addon_privileges.NAMESPACE, "k8s-app", "dcgm-server"),)


def supported(kubernetes_version: str) -> bool:
    return versions.major_minor(kubernetes_version) >= MIN_KUBERNETES


def key_pattern(namespaces: tuple[str, ...]) -> str:
    """An RE2 pattern for keys (`<namespace>/<name>`) in one of the namespaces."""
    alternatives = []
    for namespace in namespaces:
        if namespace.startswith("*."):
            alternatives.append(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*" + re.escape(namespace[2:]))
        else:
            alternatives.append(re.escape(namespace))
    return "^(" + "|".join(alternatives) + ")/"


def reserved_pattern(keys: tuple[str, ...]) -> str | None:
    """An RE2 pattern for the keys (a trailing "*": any key with that prefix), or None for none."""
    if not keys:
        return None
    return "^(" + "|".join(re.escape(k[:-1]) if k.endswith("*") else re.escape(k) + "$" for k in keys) + ")"


def shown(namespaces: tuple[str, ...]) -> str:
    """The namespaces as a reader says them ("*.x" is x and its sub-domains)."""
    return ", ".join(f"{n[2:]} (and sub-domains)" if n.startswith("*.") else n for n in namespaces)
