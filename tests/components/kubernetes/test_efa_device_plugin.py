"""The EFA device plugin (components/kubernetes/efa_device_plugin.py) against AWS's chart at the
commit gpu_platform/catalog/aws_limits.yaml cites (aws/eks-charts 5239609, stable/aws-efa-k8s-device-plugin:
values.yaml image and securityContext, templates/daemonset.yaml pod spec), stated here by hand."""

from __future__ import annotations

import pytest

from components.kubernetes import efa_device_plugin
from gpu_platform.config import ConfigError
from preview.offline import engine
from tests.conftest import stack_config, write_stack

DAEMONSET = "kubernetes:apps/v1:DaemonSet"


def _plugin(rec):
    found = [r for r in rec.of_type(DAEMONSET) if r.inputs["metadata"].get("name") == "aws-efa-k8s-device-plugin"]
    return found[0] if found else None


def _pod(rec) -> dict:
    return _plugin(rec).inputs["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    "region, image",
    [
        # EKS User Guide add-ons-images.adoc: the region's add-on registry; chart appVersion v0.5.20.
        ("us-west-2", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"),
        ("eu-south-1", "590381155156.dkr.ecr.eu-south-1.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"),
        ("cn-north-1", "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn/eks/aws-efa-k8s-device-plugin:v0.5.20"),
    ],
)
def test_the_image_is_awss_from_the_regions_add_on_registry(region, image):
    assert efa_device_plugin.image(region) == image


def test_the_prod_h100_pool_gets_the_plugin_as_the_chart_runs_it(prod):
    pod = _pod(prod)
    (container,) = pod["containers"]
    assert container["image"] == "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"
    assert container["securityContext"]["privileged"] is True and container["securityContext"]["runAsUser"] == 0
    assert pod["hostNetwork"] is True and pod["automountServiceAccountToken"] is False
    assert pod["priorityClassName"] == "system-node-critical"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    # Every host path the chart mounts (eks-charts 5239609 stable/aws-efa-k8s-device-plugin/templates/
    # daemonset.yaml:74-91) at the same place: the kubelet's device-plugin socket directory and the EFA
    # devices read-write, the Neuron tools read-only and created where absent (empty on a GPU node).
    assert {m["mountPath"]: (volumes[m["name"]], bool(m.get("readOnly"))) for m in mounts.values()} == {
        "/var/lib/kubelet/device-plugins": ("/var/lib/kubelet/device-plugins", False),
        "/dev/infiniband/": ("/dev/infiniband/", False),
        "/opt/aws/neuron/": ("/opt/aws/neuron/", True),
    }
    (neuron,) = [v for v in pod["volumes"] if v["hostPath"]["path"] == "/opt/aws/neuron/"]
    assert neuron["hostPath"]["type"] == "DirectoryOrCreate"


def test_it_runs_only_on_efa_pools_tolerating_their_taint(prod):
    pod = _pod(prod)
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "gpu-platform.io/pool", "operator": "In", "values": ["h100-mig"]}]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]


def test_it_waits_for_the_efa_node_groups_and_declares_its_privileges(prod):
    plugin = _plugin(prod)
    (h100_group,) = [r for r in prod.of_type("aws:eks/nodeGroup:NodeGroup") if r.name == "gpu-pool-h100-mig-ng"]
    assert h100_group.urn in prod.waits_for(plugin.urn)
    notes = plugin.inputs["metadata"]["annotations"]
    assert (
        notes["audit.gpu-platform.io/host-paths"]
        == "/dev/infiniband/:rw,/opt/aws/neuron/:ro,/var/lib/kubelet/device-plugins:rw"
    )
    assert "vpc.amazonaws.com/efa" in notes["audit.gpu-platform.io/reason"]
    assert notes["pulumi.com/waitFor"] == "jsonpath={.status.observedGeneration}"


def test_a_stack_without_efa_pools_has_no_plugin(dev, tmp_path):
    assert _plugin(dev) is None
    config = stack_config("prod")
    config["gpu-platform:nodePools"][0]["efa"] = False
    assert _plugin(engine.run(write_stack(tmp_path, config, name="prod"))) is None


def test_an_efa_pool_in_a_region_without_a_recorded_registry_is_an_error_naming_the_key(tmp_path):
    config = stack_config("prod")
    config["aws:region"] = "mx-central-1"  # a region EKS's add-on registry table (4d52b4d0) does not list
    with pytest.raises(ConfigError) as error:
        engine.run(write_stack(tmp_path, config, name="prod"))
    assert str(error.value).startswith("gpu-platform:nodePools[0].efa: the EFA device plugin's image comes from")
