"""Who can administer the cluster: an EKS access entry with cluster-wide AmazonEKSClusterAdminPolicy
for each named admin, or, when the stack names none, for the identity running the stack that creates
the cluster (its role, never its session); no bootstrap permission for the creator; nothing
Kubernetes before that access exists."""

from __future__ import annotations

import copy

import pytest

from gpu_platform.config import ConfigError
from preview import aws_answers, engine
from tests.conftest import stack_config, write_stack

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# The offline caller is an assumed-role session of this role (preview/fixtures/aws.yaml).
RUNNER_ROLE = "arn:aws:iam::123456789012:role/gpu-platform-deployer"
ADMINS = ["arn:aws:iam::123456789012:role/platform/platform-admins", "arn:aws:iam::123456789012:user/alice"]


def principals(recording: engine.Recording) -> list[str]:
    return sorted(e.inputs["principalArn"] for e in recording.of_type(ENTRY))


def test_the_runner_gets_cluster_admin_as_its_role_not_its_session(shipped):
    assert principals(shipped) == [RUNNER_ROLE]
    (association,) = shipped.of_type(ASSOCIATION)
    assert association.inputs["principalArn"] == RUNNER_ROLE
    assert association.inputs["policyArn"] == CLUSTER_ADMIN
    assert association.inputs["accessScope"] == {"type": "cluster"}
    assert association.inputs["clusterName"] == shipped.config["gpu-platform:cluster"]["name"]


def test_the_creator_gets_no_bootstrap_permission(shipped):
    # Its bootstrap entry and the runner's explicit one would be the same principal twice.
    access = shipped.one("aws:eks/cluster:Cluster", "gpu-cluster").inputs["accessConfig"]
    assert access == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}


def test_every_kubernetes_object_waits_for_the_runners_access(shipped):
    provider = shipped.one("pulumi:providers:kubernetes", "gpu-cluster-k8s")
    runner_access = [a.urn for a in shipped.of_type(ASSOCIATION) if a.inputs["principalArn"] == RUNNER_ROLE]
    assert runner_access and set(runner_access) <= set(provider.dependencies)
    kubernetes = [r for r in shipped.resources if r.type.startswith("kubernetes:")]
    assert kubernetes and all(r.provider.startswith(provider.urn + "::") for r in kubernetes)


@pytest.fixture(scope="module")
def with_admins(record_variant) -> engine.Recording:
    def change(config):
        # The runner listed again: it must still get one entry only.
        config["gpu-platform:cluster"]["admins"] = [*ADMINS, RUNNER_ROLE]

    return record_variant("named-admins", change)


def test_named_admins_get_cluster_admin_and_a_listed_runner_is_not_repeated(with_admins):
    assert principals(with_admins) == sorted([*ADMINS, RUNNER_ROLE])
    associations = with_admins.of_type(ASSOCIATION)
    assert sorted(a.inputs["principalArn"] for a in associations) == sorted([*ADMINS, RUNNER_ROLE])
    assert {a.inputs["policyArn"] for a in associations} == {CLUSTER_ADMIN}


def test_an_adopted_cluster_gets_entries_for_the_named_admins_only(record_variant):
    def change(config):
        config["gpu-platform:cluster"].update(
            {"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False, "admins": ADMINS}
        )

    adopted = record_variant("adopted-with-admins", change)
    assert principals(adopted) == sorted(ADMINS)
    assert {e.inputs["clusterName"] for e in adopted.of_type(ENTRY)} == {"gpu-shared"}


def test_an_adopted_cluster_without_admins_gets_no_entry(record_variant):
    def change(config):
        config["gpu-platform:cluster"].update({"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False})

    assert record_variant("adopt-gpu-shared", change).of_type(ENTRY) == []


def _runner_is(monkeypatch, arn: str) -> None:
    def caller(args, config):
        return {"id": "123456789012", "accountId": "123456789012", "arn": arn, "userId": "AIDAPREVIEW"}

    answers = copy.copy(aws_answers._ANSWERS)
    answers["aws:index/getCallerIdentity:getCallerIdentity"] = caller
    monkeypatch.setattr(aws_answers, "_ANSWERS", answers)


def test_an_iam_user_running_the_stack_gets_its_own_arn(monkeypatch, tmp_path):
    _runner_is(monkeypatch, "arn:aws:iam::123456789012:user/ci")
    recording = engine.run(write_stack(tmp_path, stack_config("dev"), name="dev"))
    assert principals(recording) == ["arn:aws:iam::123456789012:user/ci"]


def test_a_runner_that_cannot_have_an_access_entry_is_a_config_error(monkeypatch, tmp_path):
    _runner_is(monkeypatch, "arn:aws:iam::123456789012:root")
    registered: list = []
    with pytest.raises(ConfigError) as error:
        engine.run(write_stack(tmp_path, stack_config("dev"), name="dev"), sink=registered)
    assert str(error.value).startswith(
        "gpu-platform:cluster.create: the identity running the stack (arn:aws:iam::123456789012:root) is not an IAM role or user"
    )
    assert registered == []


def test_the_offline_session_context_turns_a_session_into_its_role():
    session = "arn:aws:sts::123456789012:assumed-role/deployer/ci-run-42"
    answer, _ = aws_answers.answer("aws:iam/getSessionContext:getSessionContext", {"arn": session}, {})
    assert answer["issuerArn"] == "arn:aws:iam::123456789012:role/deployer"
    user = "arn:aws:iam::123456789012:user/alice"
    answer, _ = aws_answers.answer("aws:iam/getSessionContext:getSessionContext", {"arn": user}, {})
    assert answer["issuerArn"] == user


def test_named_admins_are_the_whole_list_and_a_runner_outside_it_is_warned(record_variant):
    # Were the runner added too, an update by another identity would replace the entry of the one
    # before and lock it out of the cluster.
    def change(config):
        config["gpu-platform:cluster"]["admins"] = ADMINS

    recording = record_variant("admins-without-runner", change)
    assert principals(recording) == sorted(ADMINS)
    assert any(RUNNER_ROLE in w and "cluster.admins" in w and "refused" in w for w in recording.warnings)


def test_a_runner_that_cannot_have_an_entry_is_fine_when_admins_are_named(monkeypatch, tmp_path):
    _runner_is(monkeypatch, "arn:aws:iam::123456789012:root")
    config = stack_config("dev")
    config["gpu-platform:cluster"]["admins"] = ADMINS
    recording = engine.run(write_stack(tmp_path, config))
    assert principals(recording) == sorted(ADMINS)
