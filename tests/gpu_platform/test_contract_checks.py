"""The contract checks catch what they claim to: each, run on the prod recording, passes as shipped
and reports the defect planted in one manifest (a check that cannot fail would pass every contract).
Every kind of check the contracts use has at least one planted defect here (the last test says so)."""

from __future__ import annotations

import pytest
import yaml

from components.kubernetes import operands as operand_folders
from gpu_platform.catalog import operands
from tests.gpu_platform import contract_checks as checks

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
NAMESPACE = "kubernetes:core/v1:Namespace"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"

# The container running each operand's own image in the prod stack (what `container: '*'` means).
OWN_CONTAINER = {
    "validator": "plugin-validation",
    "device-plugin": "nvidia-device-plugin",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "dcgm-exporter": "nvidia-dcgm-exporter",
    "mig-manager": "nvidia-mig-manager",
    "node-feature-discovery": "worker",
}


def _pod(inputs: dict) -> dict:
    return inputs["spec"]["template"]["spec"]


def _container(inputs: dict, name: str) -> dict:
    spec = _pod(inputs)
    return next(c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] == name)


def _drop_daemonset_rule(inputs: dict) -> None:
    inputs["rules"] = [r for r in inputs["rules"] if "daemonsets" not in r.get("resources", [])]


def _set_env(inputs: dict, container: str, name: str, value: str) -> None:
    for item in _container(inputs, container)["env"]:
        if item["name"] == name:
            item["value"] = value


# (operand, expectation, the resource to plant the defect in, the defect)
PLANTED = [
    (
        "validator",
        {"daemonset_name": "nvidia-operator-validator"},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: i["metadata"].update(name="nvidia-validator"),
    ),
    (
        "validator",
        {"service_account": "nvidia-operator-validator"},
        (SERVICE_ACCOUNT, "gpu-validator-sa"),
        lambda i: i["metadata"].update(name="validator"),
    ),
    (
        "validator",
        {
            "rbac": {
                "group": "apps",
                "resources": ["daemonsets"],
                "verbs": ["get"],
                "scope": "namespace",
                "names": ["nvidia-operator-validator"],
            }
        },
        (ROLE, "gpu-validator-role"),
        _drop_daemonset_rule,
    ),
    (
        "validator",
        {"env": {"container": "cuda-validation", "name": "COMPONENT", "value": "cuda"}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: _container(i, "cuda-validation").update(
            env=[e for e in _container(i, "cuda-validation")["env"] if e["name"] != "COMPONENT"]
        ),
    ),
    (
        "validator",
        {"mount": {"container": "plugin-validation", "path": "/run/nvidia/validations", "read_only": False}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: [
            m.update(readOnly=True)
            for m in _container(i, "plugin-validation")["volumeMounts"]
            if m["mountPath"] == "/run/nvidia/validations"
        ],
    ),
    (
        "validator",
        {"pod_label": {"app": "nvidia-operator-validator"}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: i["spec"]["template"]["metadata"]["labels"].pop("app"),
    ),
    (
        "validator",
        {"security": {"container": "driver-validation", "privileged": True}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: _container(i, "driver-validation")["securityContext"].update(privileged=False),
    ),
    (
        "validator",
        {"pre_stop": {"container": "plugin-validation", "removes": "/run/nvidia/validations/*-ready"}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: _container(i, "plugin-validation").pop("lifecycle"),
    ),
    (
        "validator",
        {"api_token": {"container": "plugin-validation", "mounted": True}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: _pod(i).update(automountServiceAccountToken=False),
    ),
    (
        "validator",
        {"probe": {"container": "plugin-validation", "readiness": "present"}},
        (DAEMONSET, "gpu-validator-ds"),
        lambda i: _container(i, "plugin-validation").pop("readinessProbe"),
    ),
    # The validator creates privileged pods in its own namespace: a baseline namespace rejects them.
    (
        "validator",
        {"namespace_label": {"pod-security.kubernetes.io/enforce": "privileged"}},
        (NAMESPACE, "gpu-namespace"),
        lambda i: i["metadata"]["labels"].update({"pod-security.kubernetes.io/enforce": "baseline"}),
    ),
    (
        "dcgm-exporter",
        {"no_api_token": True},
        (DAEMONSET, "gpu-dcgm-exporter-ds"),
        lambda i: _pod(i).update(automountServiceAccountToken=True),
    ),
    # Through the image's entrypoint instead of the binary (the entrypoint's setcap then runs).
    (
        "dcgm-exporter",
        {"command": {"container": "nvidia-dcgm-exporter", "command": ["/usr/bin/dcgm-exporter"]}},
        (DAEMONSET, "gpu-dcgm-exporter-ds"),
        lambda i: _container(i, "nvidia-dcgm-exporter").update(command=["/usr/local/dcgm/dcgm-exporter-entrypoint.sh"]),
    ),
    (
        "dcgm-exporter",
        {"runtime_class": "nvidia"},
        (DAEMONSET, "gpu-dcgm-exporter-ds"),
        lambda i: _pod(i).pop("runtimeClassName"),
    ),
    (
        "device-plugin",
        {"pod": {"shareProcessNamespace": True}},
        (DAEMONSET, "gpu-device-plugin-ds"),
        lambda i: _pod(i).pop("shareProcessNamespace"),
    ),
    # config-manager as the non-root user the init container runs as: kill(2) on the root plugin is EPERM.
    (
        "device-plugin",
        {"can_signal": {"from": "config-manager", "to": "nvidia-device-plugin"}},
        (DAEMONSET, "gpu-device-plugin-ds"),
        lambda i: _container(i, "config-manager")["securityContext"].update(runAsUser=65532),
    ),
    (
        "device-plugin",
        {"can_signal": {"from": "config-manager", "to": "nvidia-device-plugin"}},
        (DAEMONSET, "gpu-device-plugin-ds"),
        lambda i: _pod(i).pop("shareProcessNamespace"),
    ),
    # argv[0] is compared exactly: a path never matches the plugin's bare command.
    (
        "device-plugin",
        {"signal_target": {"from": "config-manager", "to": "nvidia-device-plugin"}},
        (DAEMONSET, "gpu-device-plugin-ds"),
        lambda i: _set_env(i, "config-manager", "PROCESS_TO_SIGNAL", "/usr/bin/nvidia-device-plugin"),
    ),
    (
        "gpu-feature-discovery",
        {"container_image": {"container": "config-manager", "repository": "nvcr.io/nvidia/k8s-device-plugin"}},
        (DAEMONSET, "gpu-gpu-feature-discovery-ds"),
        lambda i: _container(i, "config-manager").update(image="nvcr.io/nvidia/gpu-feature-discovery:v0.8.2"),
    ),
    (
        "mig-manager",
        {"peer_pods": {"operand": "device-plugin", "node_selector": {"nvidia.com/gpu.deploy.device-plugin": "true"}}},
        (DAEMONSET, "gpu-device-plugin-ds"),
        lambda i: _pod(i)["nodeSelector"].pop("nvidia.com/gpu.deploy.device-plugin"),
    ),
    (
        "mig-manager",
        {"peer_pods": {"operand": "device-plugin", "labels": {"app": "nvidia-device-plugin-daemonset"}}},
        (DAEMONSET, "gpu-device-plugin-ds"),
        lambda i: i["spec"]["template"]["metadata"]["labels"].update(app="device-plugin"),
    ),
    (
        "node-feature-discovery",
        {"crd": "nodefeatures.nfd.k8s-sigs.io"},
        (CRD, "gpu-node-feature-discovery-crd-nodefeatures"),
        lambda i: i["metadata"].update(name="nodefeatures.nfd.example.com"),
    ),
    (
        "node-feature-discovery",
        {"args": {"container": "worker", "lacks": ["-feature-gates"]}},
        (DAEMONSET, "gpu-node-feature-discovery-ds"),
        lambda i: _container(i, "worker")["args"].append("-feature-gates=NodeFeatureGroupAPI=true"),
    ),
    (
        "node-feature-discovery",
        {"args": {"container": "worker", "has": ["-port=8080"]}},
        (DAEMONSET, "gpu-node-feature-discovery-ds"),
        lambda i: _container(i, "worker").update(
            args=["-port=8081" if a == "-port=8080" else a for a in _container(i, "worker")["args"]]
        ),
    ),
    # A part's check reads the Deployment, not the DaemonSet.
    (
        "node-feature-discovery",
        {"args": {"part": "master", "lacks": ["-feature-gates"]}},
        (DEPLOYMENT, "gpu-node-feature-discovery-master"),
        lambda i: _container(i, "master")["args"].append("-feature-gates=NodeFeatureGroupAPI=true"),
    ),
]


CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
_CLAIM = {"claim": "validation-gpu", "template": "nvidia-dra-validator-gpu"}

# The same, on the dra stack's recording (the DRA-only operands and their claims render nowhere else).
DRA_PLANTED = [
    # The init container that runs nvidia-smi no longer lists the claim: the kubelet injects nothing into it.
    (
        "dra-validator",
        {"resource_claim": {**_CLAIM, "container": "gpu-validation"}},
        (DAEMONSET, "gpu-dra-validator-ds"),
        lambda i: _container(i, "gpu-validation")["resources"].pop("claims"),
    ),
    (
        "dra-validator",
        {"resource_claim": {**_CLAIM, "request": "validation-gpu", "allocation_mode": "ExactCount", "count": 1}},
        (CLAIM_TEMPLATE, "gpu-dra-validator-claim-gpu"),
        lambda i: i["spec"]["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="All"),
    ),
    (
        "dra-validator",
        {"resource_claim": _CLAIM},
        (DAEMONSET, "gpu-dra-validator-ds"),
        lambda i: _pod(i)["resourceClaims"][0].update(resourceClaimTemplateName="nvidia-dcgm-exporter-admin"),
    ),
]
DRA_OWN_CONTAINER = {"dra-validator": "gpu-validation"}


@pytest.mark.parametrize(
    "operand, expectation, where, plant", DRA_PLANTED, ids=[f"{o}-{n}" for n, (o, _, _, _) in enumerate(DRA_PLANTED)]
)
def test_a_check_passes_on_the_dra_stack_and_reports_a_planted_defect(dra, operand, expectation, where, plant):
    op = checks.Operand(dra, operand)
    image = next(
        c["image"]
        for c in [*op.pod.get("initContainers", []), *op.pod["containers"]]
        if c["name"] == DRA_OWN_CONTAINER[operand]
    )
    assert checks.check(op, image, expectation) == []
    broken = dra.replaced(*where, plant)
    assert broken.one(*where).inputs != dra.one(*where).inputs, "the plant changed nothing"
    assert checks.check(checks.Operand(broken, operand), image, expectation), f"{expectation} missed the planted defect"


@pytest.mark.parametrize(
    "operand, expectation, where, plant", PLANTED, ids=[f"{o}-{next(iter(e))}" for o, e, _, _ in PLANTED]
)
def test_a_check_passes_on_the_shipped_manifest_and_reports_a_planted_defect(prod, operand, expectation, where, plant):
    op = checks.Operand(prod, operand)
    image = next(
        c["image"]
        for c in [*op.pod.get("initContainers", []), *op.pod["containers"]]
        if c["name"] == OWN_CONTAINER[operand]
    )
    assert checks.check(op, image, expectation) == []
    broken = prod.replaced(*where, plant)
    assert broken.one(*where).inputs != prod.one(*where).inputs, "the plant changed nothing"
    assert checks.check(checks.Operand(broken, operand), image, expectation), f"{expectation} missed the planted defect"


def test_every_kind_of_check_the_contracts_use_has_a_planted_defect():
    used = {
        next(iter(item))
        for path in map(operand_folders.contract_file, operands.names())
        for clause in yaml.safe_load(path.read_text())["clauses"]
        for item in clause.get("expect") or []
    }
    planted = {next(iter(e)) for _, e, _, _ in PLANTED + DRA_PLANTED}
    assert used <= planted, f"checks no planted defect exercises: {sorted(used - planted)}"
    assert set(checks.CHECKS) == used, f"checks no contract uses: {sorted(set(checks.CHECKS) - used)}"


@pytest.mark.parametrize(
    "spec, tag, holds",
    [
        ("*", "v0.1.0", True),
        (">=v0.16.0", "v0.17.4-ubi9", True),
        (">=v0.16.0", "v0.14.2-ubi8", False),
        (">=v0.16.0,<v0.19.0", "v0.19.0", False),
        ("<4.4.1-4.6.0", "4.3.1-4.4.0-ubuntu22.04", True),
        # The DCGM pair compares as a pair: the same DCGM with a newer exporter is newer.
        (">=4.5.3-4.8.2", "4.5.3-4.8.1-distroless", False),
        ("==v25.10.1", "v25.10.1", True),
    ],
)
def test_applies_compares_the_numbers_of_a_tag(spec, tag, holds):
    assert checks.applies(spec, tag) is holds
