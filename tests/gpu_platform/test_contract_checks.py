"""The contract checks catch what they claim to: each, run on the prod recording, passes as shipped
and reports the defect planted in one manifest (a check that cannot fail would pass every contract)."""

from __future__ import annotations

import pytest

from tests.gpu_platform import contract_checks as checks

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
VALIDATOR = "nvcr.io/nvidia/gpu-operator"


def _validator_pod(inputs: dict) -> dict:
    return inputs["spec"]["template"]["spec"]


def _container(inputs: dict, name: str) -> dict:
    spec = _validator_pod(inputs)
    return next(c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] == name)


def _drop_daemonset_rule(inputs: dict) -> None:
    inputs["rules"] = [r for r in inputs["rules"] if "daemonsets" not in r.get("resources", [])]


# (expectation, the resource to plant the defect in, the defect)
PLANTED = [
    ({"daemonset_name": "nvidia-operator-validator"}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: i["metadata"].update(name="nvidia-validator")),
    ({"rbac": {"group": "apps", "resources": ["daemonsets"], "verbs": ["get"], "scope": "namespace", "names": ["nvidia-operator-validator"]}},
     (ROLE, "gpu-validator-role"), _drop_daemonset_rule),
    ({"env": {"container": "cuda-validation", "name": "COMPONENT", "value": "cuda"}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: _container(i, "cuda-validation").update(env=[e for e in _container(i, "cuda-validation")["env"] if e["name"] != "COMPONENT"])),
    ({"mount": {"container": "plugin-validation", "path": "/run/nvidia/validations", "read_only": False}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: [m.update(readOnly=True) for m in _container(i, "plugin-validation")["volumeMounts"] if m["mountPath"] == "/run/nvidia/validations"]),
    ({"pod_label": {"app": "nvidia-operator-validator"}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: i["spec"]["template"]["metadata"]["labels"].pop("app")),
    ({"security": {"container": "driver-validation", "privileged": True}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: _container(i, "driver-validation")["securityContext"].update(privileged=False)),
    ({"pre_stop": {"container": "plugin-validation", "removes": "/run/nvidia/validations/*-ready"}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: _container(i, "plugin-validation").pop("lifecycle")),
    ({"api_token": {"container": "plugin-validation", "mounted": True}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: _validator_pod(i).update(automountServiceAccountToken=False)),
    ({"probe": {"container": "plugin-validation", "readiness": "present"}}, (DAEMONSET, "gpu-validator-ds"),
     lambda i: _container(i, "plugin-validation").pop("readinessProbe")),
]


@pytest.mark.parametrize("expectation, where, plant", PLANTED, ids=[next(iter(e)) for e, _, _ in PLANTED])
def test_a_check_passes_on_the_shipped_manifest_and_reports_a_planted_defect(prod, expectation, where, plant):
    [validator] = [ds for ds in prod.of_type(DAEMONSET) if ds.name == "gpu-validator-ds"]
    image = _validator_pod(validator.inputs)["containers"][0]["image"]
    assert image.startswith(VALIDATOR)
    assert checks.check(checks.Operand(prod, "validator"), image, expectation) == []
    broken = prod.replaced(*where, plant)
    assert checks.check(checks.Operand(broken, "validator"), image, expectation), f"{expectation} missed the planted defect"


@pytest.mark.parametrize("spec, tag, holds", [
    ("*", "v0.1.0", True), (">=v0.16.0", "v0.17.4-ubi9", True), (">=v0.16.0", "v0.14.2-ubi8", False),
    (">=v0.16.0,<v0.19.0", "v0.19.0", False), ("<4.4.1-4.6.0", "4.3.1-4.4.0-ubuntu22.04", True),
    # The DCGM pair compares as a pair: the same DCGM with a newer exporter is newer.
    (">=4.5.3-4.8.2", "4.5.3-4.8.1-distroless", False), ("==v25.10.1", "v25.10.1", True),
])
def test_applies_compares_the_numbers_of_a_tag(spec, tag, holds):
    assert checks.applies(spec, tag) is holds
