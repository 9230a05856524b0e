"""The audit report's Kubernetes guards: every admission policy with its binding's actions and what
it requires, and who may reach the operator namespace."""

from __future__ import annotations

from preview.reports import audit


def test_prod_report_shows_the_admission_policies_and_who_may_reach_the_operator_namespace(prod):
    text = audit.report(prod)
    guards = text[text.index("## Kubernetes guards") : text.index("## AWS")]
    for name in (
        "gpu-platform-validator-pods",
        "gpu-platform-mig-manager-nodes",
        "gpu-platform-nfd-master-nodes",
        "gpu-platform-gpu-access",
    ):
        block = guards[guards.index(f"`{name}`") :].split("\n\n", 2)[1]
        assert "bound with: Deny (failurePolicy Fail)" in block, block
    assert "system:serviceaccount:gpu-operator:nvidia-operator-validator" in guards
    assert "| `gpu-operator/default-deny-ingress` | every pod | Ingress | none |" in guards
    assert "from namespace kubernetes.io/metadata.name=monitoring, pods app.kubernetes.io/name=prometheus" in guards
