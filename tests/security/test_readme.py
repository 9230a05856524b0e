"""The README's "Security scan" block is generated from security/accepted.yaml."""

from security import accepted, readme
from security.accepted import Check, Resource


def test_the_readme_block_is_current_with_the_accepted_list():
    assert not readme.stale(accepted.load()), "README.md's scan block is stale: run `make scan-accept`"


def test_the_figure_counts_the_prod_daemonset_failures_only():
    checks = {
        "CKV_K8S_16": Check("privileged", "r", {"DaemonSet/ns/a": Resource(["dev", "prod"]),
                                                "DaemonSet/ns/b": Resource(["dev"])}),
        "CKV_K8S_43": Check("digest", "r", {"DaemonSet/ns/a": Resource(["prod"]),
                                            "Deployment/ns/c": Resource(["prod"])}),
    }
    text = readme.block(checks)
    assert "**2 checks failed on the prod operand DaemonSets**" in text
    assert f"**{readme.UPSTREAM_FAILED}**" in text
    assert "On every prod object (NFD's Deployments and the RBAC included): 3 failed checks" in text


def test_a_resource_failing_in_only_some_stacks_says_which():
    checks = {"CKV_K8S_16": Check("privileged", "r", {"DaemonSet/ns/a": Resource(["dev", "prod"]),
                                                      "DaemonSet/ns/b": Resource(["prod"])})}
    assert "DaemonSet a, DaemonSet b (prod)" in readme.block(checks)
