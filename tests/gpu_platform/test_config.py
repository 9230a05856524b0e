"""The config model: bad stack files each exit 2 with an error naming their key and register nothing;
what a stack gets when it leaves a key out."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform import config as config_model
from gpu_platform.config.node_image import NodeImage
from preview.offline import engine
from preview.__main__ import main
from tests import fixture_stacks
from tests.conftest import SHIPPED_STACKS

# tests/fixtures/bad_stacks.yaml: one broken stack a row, with the error it must print.
BAD_STACKS = fixture_stacks.rows("bad_stacks")


def test_there_are_at_least_twenty_distinct_bad_stacks():
    assert len(BAD_STACKS) >= 20
    assert len({row.expect["error"] for row in BAD_STACKS}) == len(BAD_STACKS)


@pytest.mark.parametrize("row", BAD_STACKS, ids=lambda row: row.name)
def test_bad_stack_exits_2_naming_its_file_and_the_key(row: fixture_stacks.Row, capsys):
    assert main(["--config", str(row.path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {row.path}: ")
    assert row.expect["error"] in captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize("row", BAD_STACKS, ids=lambda row: row.name)
def test_bad_stack_registers_nothing(row: fixture_stacks.Row):
    registered: list = []
    with pytest.raises(config_model.ConfigError):
        engine.run(row.path, sink=registered)
    assert registered == []


@pytest.mark.parametrize("path", SHIPPED_STACKS, ids=lambda p: p.stem)
def test_shipped_stacks_are_valid(path: Path):
    parsed = config_model.parse(engine.read_stack_file(path))
    assert parsed.node_pools


def test_every_problem_is_reported_at_once():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:operator"] = {"release": "v0.0.0"}
    raw["gpu-platform:audit"] = {"owner": "ml-platform"}
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    assert "gpu-platform:operator.release" in str(error.value)
    assert "gpu-platform:audit.approval: required key is missing" in str(error.value)


def test_config_from_pulumi_reads_json_objects_as_the_engine_passes_them():
    import json

    import pulumi

    raw = engine.read_stack_file(engine.stack_file("dev"))
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()})
    parsed = config_model.from_pulumi()
    assert parsed.cluster.kubernetes_version == "1.33"
    assert parsed.node_pools[0].time_slicing.replicas == 4


def test_cluster_admins_and_a_pinned_base_release_are_read_as_written():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"]["admins"] = ["arn:aws:iam::123456789012:role/ops/platform-admins", "arn:aws-us-gov:iam::123456789012:user/alice"]
    raw["gpu-platform:nodeImage"]["baseImageRelease"] = "v20260625"
    parsed = config_model.parse(raw)
    assert parsed.cluster.admins == ("arn:aws:iam::123456789012:role/ops/platform-admins", "arn:aws-us-gov:iam::123456789012:user/alice")
    assert parsed.node_image.base_image_release == "v20260625"


def test_without_them_no_admins_and_the_default_base_release():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"] = {**raw["gpu-platform:cluster"], "create": False}
    raw["gpu-platform:cluster"].pop("admins")
    parsed = config_model.parse(raw)
    assert parsed.cluster.admins == ()
    assert parsed.node_image.base_image_release is None  # the minor's row of gpu_platform/catalog/eks_ami_releases.yaml


@pytest.mark.parametrize("labels, fragment", [
    ({"release\n": "x"}, "is not a Kubernetes label key"),
    ({"release": "kps\n"}, "is not a Kubernetes label value"),
    ({"a" * 254 + "/release": "x"}, "is not a Kubernetes label key"),
    ({"app.kubernetes.io/name": "evil"}, "is the ServiceMonitor's own label"),
])
def test_service_monitor_labels_kubernetes_would_refuse_or_that_clash_are_errors(labels, fragment):
    raw = engine.read_stack_file(engine.stack_file("prod"))
    raw["gpu-platform:monitoring"] = {"serviceMonitor": True, "serviceMonitorLabels": labels}
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    assert "gpu-platform:monitoring.serviceMonitorLabels" in str(error.value) and fragment in str(error.value)


def _message_for(change) -> str:
    raw = engine.read_stack_file(engine.stack_file("dev"))
    change(raw)
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    return str(error.value)


def test_a_quoted_but_unknown_cuda_version_is_not_told_to_quote_itself():
    message = _message_for(lambda raw: raw["gpu-platform:workloads"].update(cudaVersions=["99.9"]))
    assert "gpu-platform:workloads.cudaVersions[0]: '99.9' is not a CUDA toolkit version the matrix knows (valid: 11.8, " in message
    assert "quote" not in message


def test_an_unknown_quoted_kubernetes_version_is_not_told_to_quote_itself():
    message = _message_for(lambda raw: raw["gpu-platform:cluster"].update(kubernetesVersion="1.3x"))
    assert "gpu-platform:cluster.kubernetesVersion: '1.3x' is not a Kubernetes minor version" in message
    assert "quote" not in message


def test_a_merge_entry_in_the_cuda_list_is_named_a_mapping_not_told_to_quote_itself():
    message = _message_for(lambda raw: raw["gpu-platform:workloads"].update(cudaVersions=[{"a": "b"}]))
    assert 'cudaVersions[0]: {"a": "b"} is a mapping, not a CUDA toolkit version' in message
    assert "write it quoted" not in message and "read as a number" not in message


# Each key, and the whole answer when it is required (what to give, nothing after it); a key with a
# default (None here) may also be removed, and its answer says so.
@pytest.mark.parametrize("key, place, required_answer", [
    ("aws:region", lambda raw, v: raw.update({"aws:region": v}), "a region (e.g. us-west-2)"),
    ("gpu-platform:cluster", lambda raw, v: raw.update({"gpu-platform:cluster": v}),
     "a mapping with keys name, kubernetesVersion, create, subnetIds, endpointPublicAccess, publicAccessCidrs, admins"),
    ("gpu-platform:nodePools", lambda raw, v: raw.update({"gpu-platform:nodePools": v}),
     "a list of pools (mappings with name, instanceType, minSize, desiredSize, maxSize)"),
    ("gpu-platform:cluster.name", lambda raw, v: raw["gpu-platform:cluster"].update(name=v), "a name"),
    ("gpu-platform:nodePools[0].instanceType", lambda raw, v: raw["gpu-platform:nodePools"][0].update(instanceType=v),
     "an EC2 instance type (e.g. g6.2xlarge)"),
    ("gpu-platform:nodePools[0].timeSlicing", lambda raw, v: raw["gpu-platform:nodePools"][0].update(timeSlicing=v), None),
    ("gpu-platform:nodePools[0].rollout", lambda raw, v: raw["gpu-platform:nodePools"][0].update(rollout=v), None),
    ("gpu-platform:nodeImage.toolkitBaked", lambda raw, v: raw["gpu-platform:nodeImage"].update(toolkitBaked=v), None),
    ("gpu-platform:audit.owner", lambda raw, v: raw["gpu-platform:audit"].update(owner=v),
     "a team that owns the privileged software"),
])
@pytest.mark.parametrize("nothing", [None, ""], ids=["null", "empty"])
def test_every_key_given_nothing_gets_the_same_answer(key, place, required_answer, nothing):
    message = _message_for(lambda raw: place(raw, nothing))
    line = next(line for line in message.splitlines() if line.startswith(f"  {key}: "))
    assert line.startswith(f"  {key}: has no value (null or empty): give ")
    assert "(got" not in message and "is not a region" not in message
    if required_answer is None:
        assert ", or remove the key for the default" in line
    else:
        assert line == f"  {key}: has no value (null or empty): give {required_answer}"


@pytest.mark.parametrize("pool_key, given, says", [
    ("rootVolumeGiB", 99, "must be at least 100 (got 99)"),
    ("rootVolumeGiB", 16385, "must be at most 16384 (got 16385)"),
    ("maxSize", 0, "must be at least 1 (got 0)"),
])
def test_a_number_outside_its_bounds_is_refused_naming_the_bound(pool_key, given, says):
    message = _message_for(lambda raw: raw["gpu-platform:nodePools"][0].update({pool_key: given}))
    assert f"\n  gpu-platform:nodePools[0].{pool_key}: {says}" in message


@pytest.mark.parametrize("sizes, valid", [
    ((0, 4, 4), True), ((4, 4, 4), True), ((0, 5, 4), False), ((2, 1, 4), False), ((0, 0, 1), True)])
def test_a_pools_sizes_hold_min_le_desired_le_max_at_the_boundaries(sizes, valid):
    lo, desired, hi = sizes
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:nodePools"][0].update(minSize=lo, desiredSize=desired, maxSize=hi)
    if valid:
        assert config_model.parse(raw).node_pools[0].desired_size == desired
    else:
        with pytest.raises(config_model.ConfigError, match=rf"minSize <= desiredSize <= maxSize \(got {lo}, {desired}, {hi}\)"):
            config_model.parse(raw)


@pytest.mark.parametrize("given, shown", [(2.5, "2.5"), (2.0, "2.0"), ("3", "'3'"), (True, "true")])
def test_a_count_given_anything_but_a_whole_number_is_refused_naming_what_was_given(given, shown):
    message = _message_for(lambda raw: raw["gpu-platform:nodePools"][0].update(maxSize=given))
    assert f"\n  gpu-platform:nodePools[0].maxSize: expected a whole number (got {shown})" in message


@pytest.mark.parametrize("given, shown", [(5, "5"), ("prod", "'prod'"), ([1], "[1]")])
def test_a_section_given_a_value_that_is_not_a_mapping_is_refused_naming_it(given, shown):
    message = _message_for(lambda raw: raw.update({"gpu-platform:cluster": given}))
    # (the keys it takes, in the order the README's config reference gives them)
    assert (f"\n  gpu-platform:cluster: expected a mapping with keys name, kubernetesVersion, create, subnetIds, "
            f"endpointPublicAccess, publicAccessCidrs, admins (got {shown})") in message


@pytest.mark.parametrize("minor", ["1.25", "1.36"])
def test_the_config_model_accepts_every_minor_from_1_25(minor):
    # 1.24 is refused (tests/fixtures/bad_stacks.yaml, kubernetes-1-24); 1.25 is the first the model accepts (what
    # a release supports is the policies' question, not the model's).
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"]["kubernetesVersion"] = minor
    assert config_model.parse(raw).cluster.kubernetes_version == minor


def test_a_baked_image_bakes_the_toolkit_unless_told_otherwise():
    assert NodeImage.model_validate({"source": "bake", "driverVersion": "580.105.08"}).toolkit_baked is True
    assert NodeImage.model_validate({"source": "bake", "driverVersion": "580.105.08", "toolkitBaked": False}).toolkit_baked is False


def test_a_pinned_ami_gets_the_toolkit_daemonset_unless_it_says_it_has_the_toolkit():
    pinned = {"source": "ami", "amiId": "ami-0123456789abcdef0", "driverVersion": "580.105.08"}
    assert NodeImage.model_validate(pinned).toolkit_baked is False
    assert NodeImage.model_validate({**pinned, "toolkitBaked": True}).toolkit_baked is True


@pytest.mark.parametrize("key, value, fragment", [
    ("prometheusPodLabels", {"app kubernetes": "prometheus"}, "is not a Kubernetes label key"),
    ("prometheusPodLabels", {"app.kubernetes.io/name": "prom etheus"}, "is not a Kubernetes label value"),
    ("prometheusNamespace", "Monitoring", "is not a Kubernetes namespace name"),
])
def test_prometheus_selectors_kubernetes_would_refuse_are_errors(key, value, fragment):
    raw = engine.read_stack_file(engine.stack_file("prod"))
    raw["gpu-platform:monitoring"] = {key: value}
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    assert f"gpu-platform:monitoring.{key}" in str(error.value) and fragment in str(error.value), str(error.value)


@pytest.mark.parametrize("value, path, fragment", [
    (["GPU-Monitoring"], "[0]", "is not a Kubernetes namespace name"),
    (["gpu-monitoring", "gpu-monitoring"], "[1]", "is listed twice"),
    (["kube-system"], "[0]", "is exempt already"),
    (["ml", "gpu-operator"], "[1]", "is exempt already"),
    (["default"], "[0]", "'default' is where pods without a namespace land"),
])
def test_privileged_namespaces_kubernetes_would_refuse_or_that_repeat_are_errors(value, path, fragment):
    raw = engine.read_stack_file(engine.stack_file("prod"))
    raw["gpu-platform:workloads"]["privilegedNamespaces"] = value
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    message = str(error.value)
    assert f"gpu-platform:workloads.privilegedNamespaces{path}" in message and fragment in message, message


@pytest.mark.parametrize("create, value, actions", [
    (True, None, ("Deny",)), (False, None, ("Warn", "Audit")),
    (False, "deny", ("Deny",)), (True, "warn", ("Warn", "Audit")),
])
def test_privilege_admission_denies_on_a_created_cluster_and_warns_on_an_adopted_one(create, value, actions):
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"]["create"] = create
    if value:
        raw["gpu-platform:workloads"]["privilegeAdmission"] = value
    assert config_model.parse(raw).privilege_actions == actions


def test_an_unknown_privilege_admission_names_the_valid_values():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:workloads"]["privilegeAdmission"] = "audit"
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    message = str(error.value)
    assert "gpu-platform:workloads.privilegeAdmission" in message and "'deny'" in message and "'warn'" in message, message


def test_prometheus_selectors_default_to_kube_prometheus_stack():
    monitoring = config_model.parse(engine.read_stack_file(engine.stack_file("dev"))).monitoring
    assert (monitoring.prometheus_namespace, dict(monitoring.prometheus_pod_labels)) == ("monitoring", {"app.kubernetes.io/name": "prometheus"})


def test_the_quota_of_public_access_cidrs_is_accepted_whole():
    # 40 blocks is EKS's quota L-93A74D60 (one more: bad_stacks.yaml, public-access-cidrs-above-quota).
    raw = engine.read_stack_file(engine.stack_file("dev"))
    blocks = [f"203.0.{i}.0/24" for i in range(40)]
    raw["gpu-platform:cluster"] = {**raw["gpu-platform:cluster"], "endpointPublicAccess": True, "publicAccessCidrs": blocks}
    assert len(config_model.parse(raw).cluster.public_access_cidrs) == 40


def test_an_adopted_cluster_takes_no_endpoint_keys_but_a_private_endpoint_is_no_claim():
    # endpointPublicAccess: false is the default the stack would not act on either way: not refused.
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"] = {**raw["gpu-platform:cluster"], "create": False, "endpointPublicAccess": False}
    assert config_model.parse(raw).cluster.endpoint_public_access is False
