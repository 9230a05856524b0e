"""examples/dra-gpu-pod.yaml, the workload docs/dra.md shows for allocation mode dra: valid under the
Kubernetes 1.34 schemas, claiming from a DeviceClass the dra stack creates, tolerating the GPU
taint its nodes register with, and admitted by the stack's own GPU-access admission policy (which
refuses the device plugin's habits in DRA mode, saying why)."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from gpu_platform.interface import contract
from tests.components.kubernetes.admission_cel import evaluate
from tests.release_stacks import strict_error

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dra-gpu-pod.yaml"
GUIDE = EXAMPLE.parents[1] / "docs" / "dra.md"
POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
GPU_TAINT = {
    "key": "nvidia.com/gpu",
    "value": "present",
    "effect": "NoSchedule",
}  # the pools' taint (docs/stack-file.md)


def _documents() -> tuple[dict, dict]:
    template, pod = yaml.safe_load_all(EXAMPLE.read_text())
    return template, pod


def _request(pod: dict) -> dict:
    return {
        "operation": "CREATE",
        "resource": "pods",
        "namespace": pod["metadata"]["namespace"],
        "object": pod,
        "oldObject": None,
        "userInfo": {"username": "system:serviceaccount:ml:default"},
    }


def _gpu_access(dra) -> dict:
    (policy,) = [
        p.inputs["spec"] for p in dra.of_type(POLICY) if p.inputs["metadata"]["name"] == "gpu-platform-gpu-access"
    ]
    return policy


def test_the_dra_guide_shows_the_example_as_it_is():
    assert EXAMPLE.read_text().rstrip() in GUIDE.read_text()


def test_it_is_valid_under_kubernetes_1_34():
    errors = [f"{o['kind']}: {e}" for o in _documents() if (e := strict_error(o, "1.34"))]
    assert not errors, errors


def test_its_pod_claims_one_gpu_of_a_class_the_dra_stack_creates(dra):
    template, pod = _documents()
    (claim,) = pod["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["claims"] == [{"name": claim["name"]}]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    classes = {c.inputs["metadata"]["name"] for c in dra.of_type("kubernetes:resource.k8s.io/v1:DeviceClass")}
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com" and "gpu.nvidia.com" in classes
    assert contract.tolerates(pod["spec"]["tolerations"], GPU_TAINT)


def test_the_dra_stack_admits_it(dra):
    _, pod = _documents()
    # [], not None: the policy applies to the pod and every validation holds.
    assert evaluate(_gpu_access(dra), _request(pod)) == []


def test_the_nvidia_runtime_class_on_it_is_refused_pointing_at_claims(dra):
    _, pod = _documents()
    habit = copy.deepcopy(pod)
    habit["spec"]["runtimeClassName"] = "nvidia"
    (message,) = evaluate(_gpu_access(dra), _request(habit))
    assert "runtimeClassName nvidia" in message and "ResourceClaim" in message and "no runtime class" in message
