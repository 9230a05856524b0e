"""Who can administer the cluster: an EKS access entry with cluster-wide AmazonEKSClusterAdminPolicy
for each named admin (`cluster.admins`, required when the stack creates the cluster); no bootstrap
permission for the creator; an admin that already has an entry this stack did not make keeps it;
nothing Kubernetes before that access exists; whoever runs an update without being an admin is
warned about."""

from __future__ import annotations

import copy

from preview.offline import aws_answers, engine
from preview.reports import ledger
from tests.conftest import stack_config, write_stack

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# The offline caller is an assumed-role session of this role (preview/offline/fixtures/aws.yaml); the shipped
# stacks name it as their admin.
RUNNER_ROLE = "arn:aws:iam::123456789012:role/gpu-platform-deployer"
ADMINS = ["arn:aws:iam::123456789012:role/platform/platform-admins", "arn:aws:iam::123456789012:user/alice"]
# gpu-shared's creator, whose bootstrap entry exists (preview/offline/fixtures/aws.yaml).
CREATOR = "arn:aws:iam::123456789012:role/cluster-creator"
ADOPT = {"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False}


def principals(recording: engine.Recording) -> list[str]:
    return sorted(e.inputs["principalArn"] for e in recording.of_type(ENTRY))


def test_the_named_admin_gets_cluster_admin_over_the_whole_cluster(shipped):
    assert principals(shipped) == [RUNNER_ROLE]
    (association,) = shipped.of_type(ASSOCIATION)
    assert association.inputs["principalArn"] == RUNNER_ROLE
    assert association.inputs["policyArn"] == CLUSTER_ADMIN
    assert association.inputs["accessScope"] == {"type": "cluster"}
    assert association.inputs["clusterName"] == shipped.config["gpu-platform:cluster"]["name"]


def test_the_creator_gets_no_bootstrap_permission_and_a_cluster_made_with_one_is_not_replaced(shipped):
    # Its bootstrap entry and an admin's explicit one would be the same principal twice; the flag is
    # create-only, so a cluster created with it on keeps it rather than being replaced.
    cluster = shipped.one("aws:eks/cluster:Cluster", "gpu-cluster")
    assert cluster.inputs["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": False,
    }
    assert "accessConfig.bootstrapClusterCreatorAdminPermissions" in cluster.ignore_changes


def test_every_kubernetes_object_waits_for_the_admins_access(shipped):
    provider = shipped.one("pulumi:providers:kubernetes", "gpu-cluster-k8s")
    runner_access = [a.urn for a in shipped.of_type(ASSOCIATION) if a.inputs["principalArn"] == RUNNER_ROLE]
    assert runner_access and set(runner_access) <= set(provider.dependencies)
    kubernetes = [r for r in shipped.resources if r.type.startswith("kubernetes:")]
    assert kubernetes and all(r.provider.startswith(provider.urn + "::") for r in kubernetes)


def test_named_admins_are_exactly_who_gets_an_entry(record_variant):
    def change(config):
        config["gpu-platform:cluster"]["admins"] = [*ADMINS, RUNNER_ROLE]

    recording = record_variant("named-admins", change)
    assert principals(recording) == sorted([*ADMINS, RUNNER_ROLE])
    assert {a.inputs["policyArn"] for a in recording.of_type(ASSOCIATION)} == {CLUSTER_ADMIN}
    # No access warning (dev's one warning is its time-sliced pool's per-pod metrics).
    assert [w for w in recording.warnings if "nodePools" not in w] == []


def test_a_runner_who_is_no_admin_gets_no_entry_and_a_warning(record_variant):
    # Were it added, an update by another identity would replace the entry of the one before.
    def change(config):
        config["gpu-platform:cluster"]["admins"] = ADMINS

    recording = record_variant("admins-without-runner", change)
    assert principals(recording) == sorted(ADMINS)
    assert any(RUNNER_ROLE in w and "refused" in w for w in recording.warnings)


def test_an_adopted_cluster_gets_entries_for_its_admins_but_not_one_that_already_has_an_entry(record_variant):
    def change(config):
        config["gpu-platform:cluster"].update({**ADOPT, "admins": [*ADMINS, CREATOR]})

    adopted = record_variant("adopted-with-admins", change)
    # The creator's bootstrap entry exists and is not this stack's: creating another would fail.
    assert principals(adopted) == sorted(ADMINS)
    assert {e.inputs["clusterName"] for e in adopted.of_type(ENTRY)} == {"gpu-shared"}
    assert any(CREATOR in w and "left as it is" in w for w in adopted.warnings)


def test_an_entry_this_stack_made_earlier_stays_managed(monkeypatch, tmp_path):
    fixtures = copy.deepcopy(aws_answers._fixtures())
    fixtures["clusters"]["gpu-shared"]["accessEntries"][ADMINS[0]] = {"tags": {"gpu-platform.io/stack": "dev"}}
    monkeypatch.setattr(aws_answers, "_fixtures", lambda: fixtures)
    config = stack_config("dev")
    config["gpu-platform:cluster"].update({**ADOPT, "admins": ADMINS})
    assert principals(engine.run(write_stack(tmp_path, config, name="dev"))) == sorted(ADMINS)


def test_an_adopted_cluster_without_admins_gets_no_entry(record_variant):
    def change(config):
        config["gpu-platform:cluster"].update(ADOPT)
        config["gpu-platform:cluster"].pop("admins")

    assert record_variant("adopt-gpu-shared-without-admins", change).of_type(ENTRY) == []


def _runner_is(monkeypatch, arn: str) -> None:
    def caller(args, config):
        return {"id": "123456789012", "accountId": "123456789012", "arn": arn, "userId": "AIDAPREVIEW"}

    answers = copy.copy(aws_answers._ANSWERS)
    answers["aws:index/getCallerIdentity:getCallerIdentity"] = caller
    monkeypatch.setattr(aws_answers, "_ANSWERS", answers)


def test_a_root_runner_is_only_warned_about(monkeypatch, tmp_path):
    _runner_is(monkeypatch, "arn:aws:iam::123456789012:root")
    recording = engine.run(write_stack(tmp_path, stack_config("dev"), name="dev"))
    assert principals(recording) == [RUNNER_ROLE]


def test_the_offline_session_context_turns_a_session_into_its_role():
    session = "arn:aws:sts::123456789012:assumed-role/deployer/ci-run-42"
    answer, _ = aws_answers.answer("aws:iam/getSessionContext:getSessionContext", {"arn": session}, {})
    assert answer["issuerArn"] == "arn:aws:iam::123456789012:role/deployer"
    user = "arn:aws:iam::123456789012:user/alice"
    answer, _ = aws_answers.answer("aws:iam/getSessionContext:getSessionContext", {"arn": user}, {})
    assert answer["issuerArn"] == user


def test_an_admin_left_with_its_existing_entry_is_still_in_the_privilege_ledger(record_variant):
    # No resource of the stack is its entry: the namespace's admin list is what names it.
    def change(config):
        config["gpu-platform:cluster"].update({**ADOPT, "admins": [*ADMINS, CREATOR]})

    rows = ledger.of(record_variant("adopted-with-admins", change))
    access = sorted(row for row in rows if row[0] == "EKS cluster access")
    assert access == [
        ("EKS cluster access", "(cluster)", "cluster gpu-shared in us-west-2, adopted"),
        (
            "EKS cluster access",
            "arn:aws:iam::123456789012:role/cluster-creator",
            "AmazonEKSClusterAdminPolicy (cluster scope)",
        ),
        (
            "EKS cluster access",
            "arn:aws:iam::123456789012:role/platform-admins",
            "AmazonEKSClusterAdminPolicy (cluster scope)",
        ),
        ("EKS cluster access", "arn:aws:iam::123456789012:user/alice", "AmazonEKSClusterAdminPolicy (cluster scope)"),
    ]


def test_adopting_a_cluster_that_reads_aws_auth_warns_that_the_ledger_does_not_show_its_mappings(
    record_variant, monkeypatch, tmp_path
):
    # gpu-shared (preview/offline/fixtures/aws.yaml) authenticates with API_AND_CONFIG_MAP.
    adopted = record_variant(
        "adopt-gpu-shared-without-admins-aws-auth",
        lambda c: (c["gpu-platform:cluster"].update(ADOPT), c["gpu-platform:cluster"].pop("admins")),
    )
    assert any("API_AND_CONFIG_MAP" in w and "aws-auth" in w and "privilege ledger" in w for w in adopted.warnings)
    # The same cluster switched to API admits through access entries only: nothing to warn about.
    fixtures = copy.deepcopy(aws_answers._fixtures())
    fixtures["clusters"]["gpu-shared"]["authenticationMode"] = "API"
    monkeypatch.setattr(aws_answers, "_fixtures", lambda: fixtures)
    config = stack_config("dev")
    config["gpu-platform:cluster"].update(ADOPT)
    config["gpu-platform:cluster"].pop("admins")
    assert not any("aws-auth" in w for w in engine.run(write_stack(tmp_path, config, name="dev")).warnings)
