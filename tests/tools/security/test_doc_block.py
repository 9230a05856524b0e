"""The "Security scan" block of docs/ci-and-supply-chain.md is generated from tools/security/accepted.yaml."""

from tools.security import accepted, doc_block
from tools.security.accepted import Check, Resource


def test_the_docs_block_is_current_with_the_accepted_list():
    assert doc_block.PAGE.name == "ci-and-supply-chain.md"
    assert not doc_block.stale(accepted.load()), "the docs' scan block is stale: run `make scan-accept`"


def test_the_figure_counts_the_prod_daemonset_failures_only():
    checks = {
        "CKV_K8S_16": Check(
            "privileged", "r", {"DaemonSet/ns/a": Resource(["dev", "prod"]), "DaemonSet/ns/b": Resource(["dev"])}
        ),
        "CKV_K8S_43": Check(
            "digest", "r", {"DaemonSet/ns/a": Resource(["prod"]), "Deployment/ns/c": Resource(["prod"])}
        ),
    }
    text = doc_block.block(checks)
    assert "**2 checks failed on the prod operand DaemonSets**" in text
    assert f"**{doc_block.UPSTREAM_FAILED}**" in text
    assert "On every prod object (NFD's Deployments and the RBAC included): 3 failed checks" in text


def test_a_resource_failing_in_only_some_stacks_says_which():
    checks = {
        "CKV_K8S_16": Check(
            "privileged", "r", {"DaemonSet/ns/a": Resource(["dev", "prod"]), "DaemonSet/ns/b": Resource(["prod"])}
        )
    }
    assert "DaemonSet a, DaemonSet b (prod)" in doc_block.block(checks)
