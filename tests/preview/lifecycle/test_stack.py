"""What the model reads of a rendered DaemonSet: its gate, tolerations, waits, checks and pre-stop
deletions, from manifests written here by hand."""

import pytest

from preview.lifecycle import stack

DAEMONSET = {
    "metadata": {"name": "nvidia-thing", "labels": {"gpu-platform.io/operand": "thing"}},
    "spec": {
        "template": {
            "spec": {
                "nodeSelector": {"nvidia.com/gpu.deploy.thing": "true"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "initContainers": [
                    {
                        "name": "wait-for-toolkit-ready",
                        "image": "v:v25.10.1",
                        "command": ["sh", "-c"],
                        "args": ["until [ -f /run/nvidia/validations/toolkit-ready ]; do sleep 5; done"],
                    },
                    {
                        "name": "plugin-validation",
                        "image": "v:v25.10.1",
                        "env": [{"name": "COMPONENT", "value": "plugin"}, {"name": "WITH_WORKLOAD", "value": "true"}],
                    },
                ],
                "containers": [
                    {
                        "name": "thing",
                        "image": "nvcr.io/nvidia/thing:v0.18.1",
                        "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                        "lifecycle": {
                            "preStop": {"exec": {"command": ["sh", "-c", "rm -f /run/nvidia/validations/*-ready"]}}
                        },
                    },
                ],
            }
        }
    },
}
GPU_TAINT = ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)


def test_a_wait_container_waits_for_the_marker_its_loop_tests():
    template = stack.pod_template(DAEMONSET)
    assert template.init[0].wait_for == "toolkit-ready" and template.init[0].check is None


def test_a_validator_container_is_the_check_its_component_names_with_its_workload_setting():
    check = stack.pod_template(DAEMONSET).init[1]
    assert (check.check, check.with_workload, check.wait_for) == ("plugin", True, None)


def test_the_pre_stop_hook_deletes_the_markers_it_removes():
    assert stack.pod_template(DAEMONSET).deletes == ("*-ready",)


def test_privileges_and_image_version_are_read_from_the_container():
    template = stack.pod_template(DAEMONSET)
    assert template.main[0].privileged and template.main[0].capabilities == ("SYS_ADMIN",)
    assert template.image_version == "0.18.1" and template.operand == "thing"


def test_the_image_version_is_the_tags_when_a_digest_pins_the_image():
    # An operator.overrides value may be `tag@sha256:...`; the validator's marker names follow the tag.
    spec = DAEMONSET["spec"]["template"]["spec"]
    main = {**spec["containers"][0], "image": "nvcr.io/nvidia/thing:v0.18.1@sha256:" + "3a" * 32}
    pinned = {**DAEMONSET, "spec": {"template": {"spec": {**spec, "containers": [main]}}}}
    assert stack.pod_template(pinned).image_version == "0.18.1"


def test_a_pod_lands_only_where_its_gate_is_true_and_it_tolerates_the_gpu_taint():
    template = stack.pod_template(DAEMONSET)
    assert template.selects({"nvidia.com/gpu.deploy.thing": "true"}, GPU_TAINT)
    assert not template.selects({"nvidia.com/gpu.deploy.thing": "paused-for-mig-change"}, GPU_TAINT)
    intolerant = {
        **DAEMONSET,
        "spec": {"template": {"spec": {**DAEMONSET["spec"]["template"]["spec"], "tolerations": []}}},
    }
    assert not stack.pod_template(intolerant).selects({"nvidia.com/gpu.deploy.thing": "true"}, GPU_TAINT)


def test_a_toleration_without_a_key_tolerates_every_taint():
    spec = {**DAEMONSET["spec"]["template"]["spec"], "nodeSelector": {}, "tolerations": [{"operator": "Exists"}]}
    assert stack.pod_template({**DAEMONSET, "spec": {"template": {"spec": spec}}}).selects({}, GPU_TAINT)


def test_a_readiness_probe_on_a_marker_is_what_the_pod_is_ready_on():
    spec = DAEMONSET["spec"]["template"]["spec"]
    probed = {
        **spec["containers"][0],
        "readinessProbe": {"exec": {"command": ["test", "-f", "/run/nvidia/validations/plugin-ready"]}},
    }
    template = stack.pod_template({**DAEMONSET, "spec": {"template": {"spec": {**spec, "containers": [probed]}}}})
    assert template.main[0].ready_marker == "plugin-ready"
    assert stack.pod_template(DAEMONSET).main[0].ready_marker is None


def _with_pod(extra: dict, containers=None) -> dict:
    spec = {**DAEMONSET["spec"]["template"]["spec"], **extra}
    if containers is not None:
        spec["containers"] = containers
    return {**DAEMONSET, "spec": {"template": {"metadata": {"labels": {"app": "nvidia-thing"}}, "spec": spec}}}


def test_a_pod_leaves_within_its_grace_period_or_the_default_30_seconds():
    plain = {"name": "thing", "image": "x:v1"}
    assert stack.pod_template(_with_pod({}, [plain])).leaves_within == 30  # Kubernetes' default when unset
    assert stack.pod_template(_with_pod({"terminationGracePeriodSeconds": 600}, [plain])).leaves_within == 600


def test_a_pre_stop_hook_that_uses_the_whole_grace_period_gets_two_more_seconds():
    # kubelet killContainer: after the hook, at least minimumGracePeriodInSeconds (2) before SIGKILL.
    assert stack.pod_template(_with_pod({"terminationGracePeriodSeconds": 299})).leaves_within == 301


def test_the_pod_template_app_label_is_read():
    assert stack.pod_template(_with_pod({})).app == "nvidia-thing"
    assert stack.pod_template(DAEMONSET).app == ""


def _with(container: dict, volumes: list[dict] | None = None) -> dict:
    """DAEMONSET with one container and, when given, these volumes."""
    spec = {**DAEMONSET["spec"]["template"]["spec"], "initContainers": [], "containers": [container]}
    return {**DAEMONSET, "spec": {"template": {"spec": {**spec, **({"volumes": volumes} if volumes else {})}}}}


MARKERS_VOLUME = [{"name": "validations", "hostPath": {"path": "/run/nvidia/validations", "type": "Directory"}}]


def test_a_wait_on_the_marker_directory_mounted_elsewhere_is_read_there():
    waiting = {
        "name": "thing",
        "image": "x:v1.0.0",
        "command": ["sh", "-c", "until [ -f /validations/toolkit-ready ]; do sleep 5; done"],
        "volumeMounts": [{"name": "validations", "mountPath": "/validations"}],
    }
    assert stack.pod_template(_with(waiting, MARKERS_VOLUME)).main[0].wait_for == "toolkit-ready"


def test_a_mount_of_a_parent_directory_is_followed_to_the_markers():
    deleting = {
        "name": "thing",
        "image": "x:v1.0.0",
        "volumeMounts": [{"name": "run", "mountPath": "/host-run"}],
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "rm -f /host-run/validations/*-ready"]}}},
    }
    volumes = [{"name": "run", "hostPath": {"path": "/run/nvidia"}}]
    assert stack.pod_template(_with(deleting, volumes)).deletes == ("*-ready",)


@pytest.mark.parametrize(
    "command",
    [
        "rm -f /tmp/x && find /run/nvidia/validations -name toolkit-ready -delete",
        "rm -f /tmp/x; cd /run/nvidia/validations && rm -f toolkit-ready",
        "rm -f /tmp/x && find /run/nvidia/validations/ -delete",
    ],
)
def test_a_pre_stop_hook_that_deletes_markers_in_another_form_is_refused(command):
    # Any rm -f elsewhere in the command used to let the rest through unread.
    hook = {
        "name": "thing",
        "image": "x:v1.0.0",
        "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", command]}}},
    }
    with pytest.raises(ValueError, match="pre-stop hook refers to the marker directory"):
        stack.pod_template(_with(hook))


def test_a_readiness_probe_on_a_marker_in_another_form_is_refused():
    probed = {
        "name": "thing",
        "image": "x:v1.0.0",
        "readinessProbe": {"exec": {"command": ["sh", "-c", "test -f /run/nvidia/validations/plugin-ready"]}},
    }
    with pytest.raises(ValueError, match="readiness probe refers to the marker directory"):
        stack.pod_template(_with(probed))
