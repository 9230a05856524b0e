"""The whole stack as one component: AWS first (node role, cluster, node image, GPU pools), then
Kubernetes (namespace, operands in the declared stage order)."""

from __future__ import annotations

import pulumi

from components.aws import tags as aws_tags
from components.aws.cluster import SYSTEM_MAX_NODES, ClusterArgs, EksCluster
from components.aws.discovery import Discovered
from components.aws.node_health import NodeMonitoringAgent
from components.aws.node_image import NodeImage, NodeImageArgs, image_hardware
from components.aws.node_pool import ClusterEndpoint, GpuNodePool, NodePoolArgs
from components.aws.node_role import NodeRole
from components.kubernetes.dashboard import DashboardArgs, GpuDashboard
from components.kubernetes.namespace import GpuNamespace, NamespaceArgs
from components.kubernetes.readiness_gate import GateArgs, ReadinessGate
from components.kubernetes.operands import sharing, stages
from components.kubernetes.operands.base import Operand, OperandArgs, OperandSpec
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.dcgm_exporter import DcgmExporter
from gpu_platform import contract
from gpu_platform.config import StackConfig


def service_monitor(config: StackConfig, found: Discovered) -> dict[str, str] | None:
    """The ServiceMonitor's labels, or None for none. A ServiceMonitor is an object of the Prometheus
    operator's CRD: a cluster this update creates cannot have it yet (creating one there fails with
    "no matches for kind"), so it waits for the first `pulumi up` after the cluster exists."""
    if not config.monitoring.service_monitor:
        return None
    if not found.cluster_exists:
        pulumi.log.warn(
            f"gpu-platform:monitoring.serviceMonitor: cluster {config.cluster.name!r} does not exist yet, so it has no "
            "Prometheus operator CRDs; the DCGM exporter's ServiceMonitor is left out of this update and created by the "
            "next `pulumi up`: install kube-prometheus-stack in the cluster before that run, or the ServiceMonitor fails "
            "with \"no matches for kind ServiceMonitor\""
        )
        return None
    return dict(config.monitoring.service_monitor_labels)


def plan_operands(config: StackConfig, found: Discovered, images: dict[str, str]) -> list[tuple[stages.Stage, OperandSpec]]:
    """Every active stage with its spec, in the declared order."""
    mig_pools = []
    for pool in config.node_pools:
        model = found.gpus[pool.name].model
        if pool.mig:
            configs = model.mig.configs() if model.mig else {}
            mig_pools.append(MigPool(pool.name, model.key, pool.mig.config, configs.get(pool.mig.config, {}),
                                     exists=pool.mig.config in configs))
    context = OperandContext(
        images=images,
        sharing=tuple(sharing.for_pool(p, found.gpus[p.name].model) for p in config.node_pools),
        mig_pools=tuple(mig_pools),
        toolkit_baked=config.node_image.toolkit_baked,
        cdi=config.release.cdi,
        service_monitor=service_monitor(config, found),
    )
    active = stages.active(config.node_image.toolkit_baked, any_mig=bool(mig_pools))
    return [(stage, stage.spec(context)) for stage in active]


class GpuPlatform(pulumi.ComponentResource):
    cluster: EksCluster
    image: NodeImage
    pools: dict[str, GpuNodePool]
    operands: list[Operand]

    def __init__(self, name: str, config: StackConfig, found: Discovered, stack: str,
                 opts: pulumi.ResourceOptions | None = None):
        # Operand specs are plain data: build them before registering anything, so an override
        # the operands cannot render is a config error with nothing created.
        images = config.release.images_with(config.operator.overrides)
        planned = plan_operands(config, found, images)
        hardware = image_hardware(
            {i: p.instance_type for i, p in enumerate(config.node_pools)},
            {i: found.gpus[p.name].model for i, p in enumerate(config.node_pools)},
            bake=config.node_image.source == "bake",
        )
        super().__init__("gpu-platform:index:GpuPlatform", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        release = config.release
        node_image = config.node_image
        k8s_version = config.cluster.kubernetes_version
        base_tags = aws_tags.stack_tags(stack, config.audit)
        privileged_tags = {
            **base_tags,
            **aws_tags.audit_tags(
                config.audit,
                aws_tags.node_software(node_image.driver_version, node_image.toolkit_baked, hardware.fabric_manager,
                                       hardware.kernel_module, hardware.nvlink_subnet_manager),
            ),
        }

        declared = aws_tags.declared_facts(release.name, config.workloads.cuda_versions, node_image.source)

        node_role = NodeRole(f"{name}-node-role", base_tags, found.partition, opts=child)
        self.cluster = EksCluster(
            f"{name}-cluster",
            ClusterArgs(config.cluster, node_role, base_tags, found.adopted, partition=found.partition, runner=found.runner,
                        existing_entries=found.existing_entries, stack=stack),
            opts=child,
        )
        # The image needs nothing from the cluster: it builds while the control plane comes up.
        self.image = NodeImage(
            f"{name}-node-image",
            NodeImageArgs(
                config=node_image,
                kubernetes_version=k8s_version,
                base_image=found.base_image,
                toolkit_version=release.toolkit_version,
                hardware=hardware,
                tags=privileged_tags,
                declared={**declared, contract.GPU_MODELS_TAG: contract.join_values(
                    sorted({found.gpus[p.name].model.key for p in config.node_pools}))},
                region=config.region,
                build_network=found.build_network,
                partition=found.partition,
                project=pulumi.get_project(),
                stack=stack,
                eks_nvidia=found.eks_nvidia,
            ),
            opts=child,
        )
        endpoint = ClusterEndpoint(
            name=self.cluster.name,
            endpoint=self.cluster.endpoint,
            certificate_authority=self.cluster.certificate_authority,
            service_cidr=self.cluster.service_cidr,
            security_group_id=self.cluster.security_group_id,
        )
        pool_gates = {
            pool.name: stages.gates_for_pool(mig=pool.mig is not None, toolkit_baked=node_image.toolkit_baked)
            for pool in config.node_pools
        }
        self.pools = {}
        for pool in config.node_pools:
            gpu = found.gpus[pool.name]
            gates = pool_gates[pool.name]
            self.pools[pool.name] = GpuNodePool(
                f"{name}-pool-{pool.name}",
                NodePoolArgs(
                    pool=pool,
                    gpu=gpu,
                    ami_id=self.image.ami_id,
                    cluster=endpoint,
                    node_role=node_role,
                    subnet_ids=config.cluster.subnet_ids,
                    labels=contract.pool_labels(pool.name, gpu.model.key, gates, pool.mig.config if pool.mig else None),
                    tags={**privileged_tags, **self.image.declares},
                    generation=self.image.generation,
                    declared=declared,
                ),
                opts=child,
            )

        # Node auto repair acts on the GPU conditions only the node monitoring agent reports.
        self.node_health = (
            NodeMonitoringAgent(f"{name}-node-monitoring", self.cluster.name, base_tags,
                                depends_on=[self.cluster, *self.pools.values()], opts=child)
            if any(pool.node_repair for pool in config.node_pools) else None
        )

        provider = self.cluster.provider
        namespace = GpuNamespace(
            f"{name}-namespace",
            NamespaceArgs(k8s_version, release.name, config.workloads.cuda_versions, dict(config.operator.overrides), provider),
            opts=child,
        )
        # The first stage waits for the GPU nodes: a DaemonSet that matches no node is "ready" at
        # once, which would make every later wait meaningless.
        previous: list[pulumi.Resource] = [*self.pools.values(), namespace]
        self.operands = []
        for stage, spec in planned:
            # The most nodes this stage's DaemonSet may cover: the GPU pools carrying its gate, or
            # for an ungated stage (NFD's worker) every pool and the system nodes.
            nodes = sum(p.max_size for p in config.node_pools if stage.gate is None or stage.gate in pool_gates[p.name])
            nodes += SYSTEM_MAX_NODES if stage.gate is None else 0
            operand = stage.component(
                f"{name}-{stage.operand}",
                OperandArgs(
                    spec=spec,
                    namespace=namespace.name,
                    gate=stage.gate,
                    waits_for=stage.waits_for,
                    wait_image=images["validator"],
                    audit=config.audit,
                    release=release.name,
                    provider=provider,
                    overrides=dict(config.operator.overrides),
                    depends_on=previous,
                    nodes=nodes,
                ),
                opts=child,
            )
            self.operands.append(operand)
            previous = [operand]
        # Blue-green pools: a new generation is proven to serve GPUs before the old one goes
        # (components/aws/node_pool.py, components/kubernetes/readiness_gate.py).
        self.gates = {
            pool.name: ReadinessGate(
                f"{name}-pool-{pool.name}-gate",
                GateArgs(pool=pool.name, selector=self.pools[pool.name].generation_selector, nodes=pool.desired_size,
                         image=images["validator"], namespace=namespace.name, audit=config.audit, release=release.name,
                         provider=provider, depends_on=[self.pools[pool.name].node_group, *previous]),
                opts=child,
            )
            for pool in config.node_pools if pool.rollout == "blue-green"
        }
        if config.monitoring.dashboard:
            # After the exporter: the dashboard only reads the series the exporter's metrics list makes.
            exporter = [op for op in self.operands if isinstance(op, DcgmExporter)]
            GpuDashboard(f"{name}-gpu-dashboard", DashboardArgs(namespace.name, provider, exporter), opts=child)
        self.register_outputs({"cluster": self.cluster.name, "ami_id": self.image.ami_id})
