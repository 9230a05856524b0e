"""The plan the preview prints first: what a platform engineer checks before `pulumi up`, written out
here from the stack files by hand."""

from __future__ import annotations

from preview.reports.plan import plan
from preview.reports.report import operand_order
from tests.conftest import FIXTURES, record


def _plan(recording) -> list[str]:
    return plan(recording, operand_order(recording))


def test_the_dev_plan_names_cluster_image_pool_and_operands(dev):
    lines = _plan(dev)
    assert lines[0] == "  Cluster     gpu-dev in us-west-2: new (this stack creates it), Kubernetes 1.33, private endpoint"
    assert lines[3] == "  Node image  NVIDIA driver 580.105.08, baked by EC2 Image Builder on the EKS AL2023 image of release v20260714"
    assert lines[4] == "  Toolkit     baked into the image (it registers the nvidia runtime)"
    assert "  l4           g6.2xlarge -> L4 x1, 0/1/4 nodes (min/desired/max), ON_DEMAND, time-sliced x4" in lines
    operands = [line for line in lines if line[:5].strip().rstrip(".").isdigit()]
    assert [line.split()[1] for line in operands] == [
        "NodeFeatureDiscovery", "Validator", "DevicePlugin", "GpuFeatureDiscovery", "DcgmExporter"]
    assert "  3. DevicePlugin         on nvidia.com/gpu.deploy.device-plugin=true; on each node waits for toolkit-ready" in lines
    # A baked toolkit leaves the toolkit DaemonSet out; no MIG pool leaves the MIG manager out.
    assert "  left out: container-toolkit (the node image registers the nvidia runtime (nodeImage.toolkitBaked))" in lines
    assert "  left out: mig-manager (no pool uses MIG)" in lines


def test_the_prod_plan_shows_the_mig_pool_and_the_mig_manager(prod):
    lines = _plan(prod)
    assert "  h100-mig     p5.48xlarge -> H100-80GB x8, 0/2/8 nodes (min/desired/max), ON_DEMAND, MIG all-balanced" in lines
    assert "  l40s         g6e.12xlarge -> L40S x4, 1/2/10 nodes (min/desired/max), ON_DEMAND, whole GPUs" in lines
    assert "  3. MigManager           on nvidia.com/gpu.deploy.mig-manager=true; on each node waits for toolkit-ready" in lines
    assert not any("left out: mig-manager" in line for line in lines)


def test_long_steps_name_the_bake_and_no_wait_for_every_node(dev):
    lines = _plan(dev)
    steps = lines[lines.index("Long steps:") + 1:]
    assert steps[0] == "  the node image bake (EC2 Image Builder, 30-60 min; Pulumi waits up to 150 min)"
    # Pulumi does not wait for an operand on every node (stages.py), so no rollout is a long step.
    assert not any("DaemonSet" in step for step in steps)


def test_an_eks_nvidia_image_is_named_as_aws_s_with_nothing_to_bake():
    lines = _plan(record(FIXTURES / "passing" / "eks-nvidia.yaml"))
    assert lines[3] == ("  Node image  NVIDIA driver 580.159.03, AWS's accelerated (nvidia) EKS AL2023 AMI of release "
                        "v20260714 (nothing to bake)")
    assert not any("node image bake" in line for line in lines)


def test_the_validator_waits_for_the_driver_and_then_checks_toolkit_and_cuda(prod):
    # Its driver-validation init container runs with WITH_WAIT=true (retries until the driver loads);
    # toolkit and cuda validation check once.
    assert ("  2. Validator            on nvidia.com/gpu.deploy.operator-validator=true; on each node waits for "
            "driver, then checks toolkit, cuda") in _plan(prod)
