"""The operator namespace takes connections on metrics ports only, and the `nvidia` RuntimeClass
does not carry pods onto GPU nodes on its own."""

from __future__ import annotations

import json

from gpu_platform.interface import contract
from tests.components.kubernetes.conftest import DAEMONSET, DEPLOYMENT

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"


def _selects(selector: dict, labels: dict) -> bool:
    """A label selector as the API server reads one (matchLabels, and Exists/In expressions)."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, op = expression["key"], expression["operator"]
        if (op == "Exists" and key not in labels) or (op == "In" and labels.get(key) not in expression["values"]):
            return False
    return True


def _reachable(rec, namespace: str, labels: dict, port: dict) -> bool:
    """Whether a connection from another pod reaches this container port: the pod is isolated for
    ingress once any policy of its namespace selects it, and then only a rule naming the port (by
    name or number) lets it in."""
    policies = [
        p.inputs
        for p in rec.of_type(NETWORK_POLICY)
        if p.inputs["metadata"]["namespace"] == namespace
        and "Ingress" in p.inputs["spec"].get("policyTypes", [])
        and _selects(p.inputs["spec"]["podSelector"], labels)
    ]
    if not policies:
        return True
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            allowed = rule.get("ports")
            if allowed is None or any(p.get("port") in (port.get("name"), port["containerPort"]) for p in allowed):
                return True
    return False


def _listeners(rec):
    for kind in (DAEMONSET, DEPLOYMENT):
        for workload in rec.of_type(kind):
            template = workload.inputs["spec"]["template"]
            for container in template["spec"]["containers"]:
                for port in container.get("ports") or []:
                    yield workload, template["metadata"]["labels"], port


def test_only_the_metrics_ports_of_the_operator_namespace_take_connections(stack):
    seen = {}
    for workload, labels, port in _listeners(stack):
        namespace = workload.inputs["metadata"]["namespace"]
        seen[(workload.inputs["metadata"]["name"], port["containerPort"])] = _reachable(stack, namespace, labels, port)
    # The DCGM exporter's metrics (what Prometheus and the dashboard read) stay reachable.
    assert seen[("nvidia-dcgm-exporter", 9400)] is True, seen
    # NFD's master: metrics on 8081 up to 0.17, or one port for metrics and health from 0.18.
    nfd = {port: ok for (name, port), ok in seen.items() if name.startswith("nvidia-node-feature-discovery")}
    assert any(nfd.values()), nfd


def test_a_pod_of_the_namespace_that_opens_another_port_is_unreachable(stack):
    port = {"name": "debug", "containerPort": 6060}
    assert _reachable(stack, "gpu-operator", {contract.OPERAND_KEY: "device-plugin"}, port) is False
    assert _reachable(stack, "gpu-operator", {"app": "nvidia-cuda-validator"}, port) is False


def test_the_runtime_class_places_pods_on_gpu_nodes_but_does_not_tolerate_their_taint(stack):
    # A pod that only names the runtime (and inherits NVIDIA_VISIBLE_DEVICES=all from a CUDA image)
    # must not be carried past the GPU taint by the class: only a pod that tolerates it lands there.
    (runtime,) = stack.of_type(RUNTIME_CLASS)
    assert runtime.inputs["scheduling"]["nodeSelector"] == {contract.GPU_PRESENT_LABEL: "true"}
    assert "tolerations" not in runtime.inputs["scheduling"]


def _peers(rec) -> list:
    return [
        rule.get("from")
        for p in rec.of_type(NETWORK_POLICY)
        if p.inputs["metadata"]["namespace"] == "gpu-operator"
        for rule in p.inputs["spec"].get("ingress") or []
    ]


def test_the_metrics_ports_are_open_to_prometheus_only(stack):
    # kube-prometheus-stack's Prometheus pods, in the namespace its docs install it to (the defaults)
    assert _peers(stack) == [
        [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
            }
        ]
    ]


def test_which_prometheus_may_scrape_is_configurable(variant):
    rec = variant(
        lambda c: c.setdefault("gpu-platform:monitoring", {}).update(
            {"prometheusNamespace": "observability", "prometheusPodLabels": {"app": "prometheus", "team": "sre"}}
        )
    )
    assert _peers(rec) == [
        [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}},
                "podSelector": {"matchLabels": {"app": "prometheus", "team": "sre"}},
            }
        ]
    ]


def test_the_namespace_declares_the_account_the_trust_policies_are_bound_to(stack):
    # The privilege ledger masks this account only (gpu_platform/privileges/grants.py): it must be the one the
    # program put into the cluster role's confused-deputy condition, the caller's (the mock's here).
    (namespace,) = [
        n for n in stack.of_type("kubernetes:core/v1:Namespace") if n.inputs["metadata"]["name"] == "gpu-operator"
    ]
    declared = namespace.inputs["metadata"]["annotations"][contract.AWS_ACCOUNT_KEY]
    assert declared == "123456789012"  # preview/offline/outputs.py ACCOUNT, the caller identity's account
    trust = json.loads(stack.one("aws:iam/role:Role", "gpu-cluster-control-plane").inputs["assumeRolePolicy"])
    assert {s["Condition"]["StringEquals"]["aws:SourceAccount"] for s in trust["Statement"]} == {declared}


def test_the_namespace_names_the_cluster_the_node_image_and_the_approval_the_ledger_binds(dev):
    # dev: created cluster gpu-dev in us-west-2, a bake from the default EKS AMI release for 1.33
    # (gpu_platform/catalog/eks_ami_releases.yaml), audit owner ml-platform / approval from its stack file.
    (namespace,) = [
        n for n in dev.of_type("kubernetes:core/v1:Namespace") if n.inputs["metadata"]["name"] == "gpu-operator"
    ]
    notes = namespace.inputs["metadata"]["annotations"]
    assert notes[contract.CLUSTER_KEY] == "gpu-dev in us-west-2, created"
    assert notes[contract.NODE_IMAGE_KEY] == "bake from EKS AMI release v20260714"
    assert notes[contract.AUDIT_OWNER] == dev.config["gpu-platform:audit"]["owner"]


def test_a_pinned_ami_is_named_on_the_namespace_so_swapping_it_changes_the_ledger(tmp_path):
    from gpu_platform.privileges import ledger as privilege_ledger
    from preview.offline import engine
    from tests.conftest import stack_config, write_stack

    def ledger_of(ami: str) -> str:
        config = stack_config("dev")
        config["gpu-platform:nodeImage"] = {
            "source": "ami",
            "amiId": ami,
            "driverVersion": config["gpu-platform:nodeImage"]["driverVersion"],
        }
        (tmp_path / ami).mkdir()
        recording = engine.run(write_stack(tmp_path / ami, config, name="dev"))
        (ns,) = [
            n
            for n in recording.of_type("kubernetes:core/v1:Namespace")
            if n.inputs["metadata"]["name"] == "gpu-operator"
        ]
        assert ns.inputs["metadata"]["annotations"][contract.NODE_IMAGE_KEY] == f"ami {ami}"
        return privilege_ledger.digest(privilege_ledger.rows((r.type, r.name, r.inputs) for r in recording.resources))

    assert ledger_of("ami-0123456789abcdef0") != ledger_of("ami-0fedcba9876543210")
