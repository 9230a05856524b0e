"""The plan the preview prints first: what a platform engineer checks before `pulumi up`, written out
here from the stack files by hand."""

from __future__ import annotations

from gpu_platform.catalog import operands as registry
from preview.reports.plan import plan
from preview.reports.report import operand_order
from tests.conftest import FIXTURES, record


def _plan(recording) -> list[str]:
    return plan(recording, operand_order(recording))


def test_the_dev_plan_names_cluster_image_pool_and_operands(dev):
    lines = _plan(dev)
    assert (
        lines[0]
        == "  Cluster     gpu-dev in us-west-2: new (this stack creates it), Kubernetes 1.33, private endpoint, deletion protection on"
    )
    assert (
        lines[3]
        == "  Node image  NVIDIA driver 580.105.08, baked by EC2 Image Builder on the EKS AL2023 image of release v20260714"
    )
    assert lines[4] == "  Toolkit     baked into the image (it registers the nvidia runtime)"
    assert "  l4           g6.2xlarge -> L4 x1, 0/1/4 nodes (min/desired/max), ON_DEMAND, time-sliced x4" in lines
    operands = [line for line in lines if line[:5].strip().rstrip(".").isdigit()]
    # Every operand of the registry, in its order, but the two the dev stack leaves out (below) and the
    # DRA ones (dev allocates GPUs through the device plugin).
    left_out = {"container-toolkit", "mig-manager", "dra-driver", "dra-validator"}
    assert [line.split()[1] for line in operands] == [r.component for r in registry.rows() if r.operand not in left_out]
    assert (
        "  3. DevicePlugin         on nvidia.com/gpu.deploy.device-plugin=true; on each node waits for toolkit-ready"
        in lines
    )
    # A baked toolkit leaves the toolkit DaemonSet out; no MIG pool leaves the MIG manager out.
    assert (
        "  left out: container-toolkit (the node image registers the nvidia runtime (nodeImage.toolkitBaked))" in lines
    )
    assert "  left out: mig-manager (no pool uses MIG)" in lines


def test_the_prod_plan_shows_the_mig_pool_and_the_mig_manager(prod, dev):
    lines = _plan(prod)
    assert (
        "  h100-mig     p5.48xlarge -> H100-80GB x8, 0/2/8 nodes (min/desired/max), ON_DEMAND, MIG all-balanced"
        in lines
    )
    assert "  l40s         g6e.12xlarge -> L40S x4, 1/2/10 nodes (min/desired/max), ON_DEMAND, whole GPUs" in lines
    assert (
        "  3. MigManager           on nvidia.com/gpu.deploy.mig-manager=true; on each node waits for toolkit-ready"
        in lines
    )
    assert not any("left out: mig-manager" in line for line in lines)
    # The MIG readers' own DaemonSets there.
    assert (
        "  MIG pools: own -mig DaemonSets (privileged), DevicePlugin's once nvidia.com/mig.config.state is success|failed"
        in lines
    )
    assert not any("MIG pools" in line for line in _plan(dev))


def test_the_plan_says_where_privileged_pods_on_gpu_nodes_are_refused(dev, variant):
    assert "  Workloads   CUDA 12.8; privileged pods on GPU nodes: refused outside gpu-operator, kube-system" in _plan(
        dev
    )
    adopted = variant(
        lambda c: (
            c["gpu-platform:cluster"].update(create=False),
            c["gpu-platform:workloads"].update(privilegedNamespaces=["calico-system"]),
        )
    )
    assert (
        "  Workloads   CUDA 12.8; privileged pods on GPU nodes: only WARNED outside gpu-operator, kube-system, "
        "calico-system (privilegeAdmission: warn)"
    ) in _plan(adopted)


def test_long_steps_name_the_bake_and_no_wait_for_every_node(dev):
    lines = _plan(dev)
    steps = lines[lines.index("Long steps:") + 1 :]
    assert steps[0] == "  the node image bake (EC2 Image Builder, 30-60 min; Pulumi waits up to 150 min)"
    # Pulumi does not wait for an operand on every node (stages.py), so no rollout is a long step.
    assert not any("DaemonSet" in step for step in steps)


def test_an_eks_nvidia_image_is_named_as_aws_s_with_nothing_to_bake():
    lines = _plan(record(FIXTURES / "passing" / "eks-nvidia.yaml"))
    assert lines[3] == (
        "  Node image  NVIDIA driver 580.159.03, AWS's accelerated (nvidia) EKS AL2023 AMI of release "
        "v20260714 (nothing to bake)"
    )
    assert not any("node image bake" in line for line in lines)


def test_the_validator_waits_for_the_driver_and_then_checks_toolkit_and_cuda(prod):
    # Its driver-validation init container runs with WITH_WAIT=true (retries until the driver loads);
    # toolkit and cuda validation check once.
    assert (
        "  2. Validator            on nvidia.com/gpu.deploy.operator-validator=true; on each node waits for "
        "driver, then checks toolkit, cuda"
    ) in _plan(prod)


def _pool_facts(lines: list[str], pool: str) -> str:
    """The line under a pool's line: its rollout, gate, repair, kernel modules and fabric manager."""
    at = next(i for i, line in enumerate(lines) if line.startswith(f"  {pool} "))
    return lines[at + 1].strip()


def test_each_pool_says_its_rollout_gate_repair_kernel_modules_and_fabric_manager():
    # tests/fixtures/passing/rollouts.yaml: l4 (g6, one L4) surges, h100-block (p5.48xlarge, eight
    # H100 on NVSwitch) rolls in place, l40s (g6e, four L40S, no NVSwitch) is blue-green; every pool
    # repairs (the default) and the bake takes the open modules, which all three GPUs accept. Only the
    # p5 pool has EFA (on by default for the family; moto's catalogue: 32 network cards, 32 EFA), and
    # no placement group of its own: it runs on a capacity block.
    lines = _plan(record(FIXTURES / "passing" / "rollouts.yaml"))
    assert _pool_facts(lines, "l4") == (
        "rollout surge, no readiness gate, nodeRepair on, open kernel modules, no fabric manager (no NVSwitch), no EFA"
    )
    assert _pool_facts(lines, "h100-block") == (
        "rollout in-place, no readiness gate, nodeRepair on, open kernel modules, "
        "fabric manager runs (NVSwitch), EFA x32 per node (its capacity block's placement, in subnet-0a1b2c3d4e5f60002)"
    )
    assert _pool_facts(lines, "l40s").startswith("rollout blue-green, guarded by the readiness gate ")
    assert _pool_facts(lines, "l40s").endswith(
        ", nodeRepair on, open kernel modules, no fabric manager (no NVSwitch), no EFA"
    )


def test_a_g5_pool_s_image_takes_the_proprietary_modules(tmp_path):
    from tests.conftest import stack_config, write_stack

    # The A10G takes only the proprietary modules (AWS runs it with GSP firmware off, gpu_platform/catalog/matrix.yaml).
    config = stack_config("dev")
    config["gpu-platform:nodePools"][0]["instanceType"] = "g5.2xlarge"
    assert ", proprietary kernel modules, " in _pool_facts(_plan(record(write_stack(tmp_path, config))), "l4")


def test_node_repair_off_is_said(tmp_path):
    from tests.conftest import stack_config, write_stack

    config = stack_config("dev")
    config["gpu-platform:nodePools"][0]["nodeRepair"] = False
    assert ", nodeRepair off, " in _pool_facts(_plan(record(write_stack(tmp_path, config))), "l4")


def test_long_steps_name_each_pool_s_roll_with_its_wait_and_the_blue_green_gate():
    lines = _plan(record(FIXTURES / "passing" / "rollouts.yaml"))
    steps = lines[lines.index("Long steps:") + 1 :]
    # Update timeouts: 30 min per batch, at least the provider's 60 (components/aws/node_pool.py):
    # l4 surges 25% of maxSize 4, one node a batch, 4 batches; h100-block rolls 1 of 2 at a time.
    assert (
        "    l4           surge: rolls inside the group, new nodes first, at most 25% unavailable, no GPU check; "
        "Pulumi waits up to 120 min"
    ) in steps
    assert (
        "    h100-block   in-place: rolls inside the group, old nodes first, 1 at a time, no GPU check; "
        "Pulumi waits up to 60 min"
    ) in steps
    assert (
        "    l40s         blue-green: a new node group beside the old one (both run at once), then its readiness gate "
        "(up to 45 min) before the old group and its nodes are deleted"
    ) in steps


def test_a_pinned_ami_is_declared_not_verified(tmp_path):
    from tests.conftest import stack_config, write_stack

    config = stack_config("dev")
    config["gpu-platform:nodeImage"] = {
        "source": "ami",
        "driverVersion": "580.105.08",
        "amiId": "ami-0123456789abcdef0",
    }
    lines = _plan(record(write_stack(tmp_path, config)))
    assert _pool_facts(lines, "l4").endswith(
        "kernel modules as the pinned AMI was baked, no fabric manager (no NVSwitch), no EFA, "
        "AMI ami-0123456789abcdef0 declared, not verified: run python -m preview verify-ami"
    )
    assert not any("node image bake" in line for line in lines)


def test_an_eks_nvidia_pool_s_modules_are_chosen_by_aws_s_ami():
    lines = _plan(record(FIXTURES / "passing" / "eks-nvidia.yaml"))
    pool = next(line.split()[0] for line in lines if " -> " in line)
    assert "kernel modules chosen per node at boot by AWS's AMI" in _pool_facts(lines, pool)


def test_an_adopted_cluster_s_endpoint_is_not_claimed_public_or_private(tmp_path):
    from tests.conftest import stack_config, write_stack

    # The stack does not manage an adopted cluster's endpoint, so the plan must not describe it.
    config = stack_config("dev")
    config["gpu-platform:cluster"].update({"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False})
    lines = _plan(record(write_stack(tmp_path, config)))
    assert lines[0] == (
        "  Cluster     gpu-shared in us-west-2: adopted (exists already), Kubernetes 1.32, "
        "endpoint not managed by this stack"
    )


def test_the_plan_says_what_workloads_can_request_on_each_pool(dev, prod, dra):
    # dev: 1 L4 time-sliced x4; prod l40s: 4 L40S; h100-mig: 8 H100 under all-balanced (2 x 1g.10gb,
    # 1 x 2g.20gb, 1 x 3g.40gb per GPU); dra h100: 8 GPUs as DRA devices of class gpu.nvidia.com. Both p5.48xlarge
    # pools have EFA: 32 devices a node, each a vpc.amazonaws.com/efa (EKS User Guide node-efa.adoc:138, 260).
    asks = "               workloads can request per node: "
    assert asks + "nvidia.com/gpu x4" in _plan(dev)
    lines = _plan(prod)
    assert lines.count(asks + "nvidia.com/gpu x4") == 1
    assert (
        asks + "nvidia.com/mig-1g.10gb x16, nvidia.com/mig-2g.20gb x8, nvidia.com/mig-3g.40gb x8, "
        "vpc.amazonaws.com/efa x32"
    ) in lines
    assert asks + "gpu.nvidia.com x8, vpc.amazonaws.com/efa x32" in _plan(dra)


def test_the_plan_gives_the_lifecycle_verdict(dev):
    assert (
        "  node lifecycle: 9 scenarios per pool (preview/lifecycle), every operand runs, every node offers what it should"
        in _plan(dev)
    )


def test_the_plan_shows_what_the_cluster_autoscaler_sees_of_an_empty_pool(prod, dev):
    # H100 80GB all-balanced: 2, 1 and 1 instances per GPU (NVIDIA's mig-parted default config), 8 GPUs.
    assert (
        "               cluster autoscaler from zero nodes (ASG tags): nvidia.com/gpu x0, "
        "nvidia.com/mig-1g.10gb x16, nvidia.com/mig-2g.20gb x8, nvidia.com/mig-3g.40gb x8, vpc.amazonaws.com/efa x32"
    ) in _plan(prod)
    assert "               cluster autoscaler from zero nodes (ASG tags): nvidia.com/gpu x4" in _plan(dev)


def test_the_plan_says_why_each_operand_is_left_out_and_not_of_an_opt_in_left_off(dev, dra):
    # dev (device plugin): the DRA operands are an opt-in it did not take, so no line; in allocation
    # mode dra, the device plugin and GFD are left out, naming the mode.
    assert [line for line in _plan(dev) if line.startswith("  left out:")] == [
        "  left out: container-toolkit (the node image registers the nvidia runtime (nodeImage.toolkitBaked))",
        "  left out: mig-manager (no pool uses MIG)",
    ]
    assert [line for line in _plan(dra) if line.startswith("  left out:")] == [
        "  left out: container-toolkit (the node image registers the nvidia runtime (nodeImage.toolkitBaked))",
        "  left out: mig-manager (no pool uses MIG)",
        "  left out: device-plugin (gpu-platform:allocation.mode is dra)",
        "  left out: gpu-feature-discovery (gpu-platform:allocation.mode is dra)",
    ]
