"""The whole stack as one component: AWS first (node role, cluster, node image, GPU pools), then
Kubernetes (namespace, operands in the declared stage order)."""

from __future__ import annotations

import pulumi

from components.aws import gpu_cluster
from components.aws.discovery import Discovered
from components.kubernetes.admission import AdmissionArgs, AdmissionPolicies, privilege_warning
from components.kubernetes.dashboard import DashboardArgs, GpuDashboard, host_label
from components.kubernetes.efa_device_plugin import EfaDevicePlugin, EfaDevicePluginArgs
from components.kubernetes.namespace import NAMESPACE, GpuNamespace, NamespaceArgs
from components.kubernetes.operands import dcgm_exporter, sharing, stages
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.dcgm_exporter import DcgmExporter
from components.kubernetes.operands.spec import OperandArgs, OperandSpec
from components.kubernetes.operands.version_table import image_version
from components.kubernetes.readiness_gate import GateArgs, ReadinessGate
from gpu_platform.catalog import dra
from gpu_platform.config import StackConfig
from gpu_platform.interface import admission


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
            'with "no matches for kind ServiceMonitor"'
        )
        return None
    return dict(config.monitoring.service_monitor_labels)


def node_image_identity(config: StackConfig, found: Discovered) -> str:
    """The node image as the stack pins it (contract.NODE_IMAGE_KEY): what every GPU node boots as root."""
    image = config.node_image
    if image.source == "ami":
        return f"ami {image.ami_id}"
    if image.source == "eks-nvidia":
        return f"eks-nvidia release {image.release}"
    return f"bake from EKS AMI release {found.base_image.release if found.base_image else '?'}"


def plan_operands(
    config: StackConfig, found: Discovered, images: dict[str, str]
) -> list[tuple[stages.Stage, OperandSpec]]:
    """Every active stage with its spec, in the declared order."""
    mig_pools = []
    for pool in config.node_pools:
        model = found.gpus[pool.name].model
        if pool.mig:
            configs = model.mig.configs() if model.mig else {}
            mig_pools.append(
                MigPool(
                    pool.name,
                    model.key,
                    pool.mig.config,
                    configs.get(pool.mig.config, {}),
                    exists=pool.mig.config in configs,
                )
            )
    context = OperandContext(
        images=images,
        sharing=tuple(sharing.for_pool(p, found.gpus[p.name].model) for p in config.node_pools),
        mig_pools=tuple(mig_pools),
        toolkit_baked=config.node_image.toolkit_baked,
        toolkit_version=(
            found.eks_nvidia.ami.toolkit if found.eks_nvidia else image_version(images["container-toolkit"])
        ),
        cdi=config.release.cdi,
        dra=config.dra,
        dra_feature_gates=dict(config.allocation.feature_gates),
        service_monitor=service_monitor(config, found),
    )
    active = stages.active(
        config.node_image.toolkit_baked,
        any_mig=bool(mig_pools),
        carried=config.release.carried_operands,
        dra=config.dra,
    )
    warning = dcgm_exporter.shared_gpu_warning(context)
    if warning and any(s.operand == "dcgm-exporter" for s in active):
        pulumi.log.warn(warning)
    return [(stage, stage.spec(context)) for stage in active]


def admission_args(
    planned: list[tuple[stages.Stage, OperandSpec]],
    images: dict[str, str],
    kubernetes_version: str,
    provider,
    depends_on: list[pulumi.Resource],
    privileged_namespaces: tuple[str, ...] = (),
    privilege_actions: tuple[str, ...] = admission.DENY_ACTIONS,
) -> AdmissionArgs:
    """The admission policies' arguments: the service accounts of the operands that run."""
    specs = {spec.operand: spec for _, spec in planned}
    validator = specs.get("validator")
    writers = tuple(
        (writer, f"{specs[writer.operand].name}-{writer.part}" if writer.part else specs[writer.operand].name)
        for writer in admission.NODE_WRITERS
        if writer.operand in specs
    )
    return AdmissionArgs(
        namespace=NAMESPACE,
        kubernetes_version=kubernetes_version,
        provider=provider,
        validator_account=validator.name if validator else None,
        validator_images=(images["validator"],) if validator else (),
        node_writers=writers,
        depends_on=tuple(depends_on),
        dra=dra.OPERAND in specs,
        privileged_namespaces=privileged_namespaces,
        privilege_actions=privilege_actions,
    )


class GpuPlatform(pulumi.ComponentResource):
    # The cloud half's components (for the stack outputs); the Kubernetes half reads its handle only.
    cloud: gpu_cluster.EksGpuCluster
    operands: list[Operand]

    def __init__(
        self, name: str, config: StackConfig, found: Discovered, stack: str, opts: pulumi.ResourceOptions | None = None
    ):
        # Operand specs are plain data: build them before registering anything, so an override
        # the operands cannot render (or a node image no pool's GPUs can share) is a config error
        # with nothing created.
        images = config.release.images_with(config.operator.overrides)
        planned = plan_operands(config, found, images)
        gpu_cluster.check(config, found)
        super().__init__("gpu-platform:index:GpuPlatform", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        release = config.release
        k8s_version = config.cluster.kubernetes_version
        # Which gating labels each pool's nodes carry is the operands' business; the cloud layer
        # puts them on the nodes.
        pool_gates = {
            pool.name: stages.gates_for_pool(
                mig=pool.mig is not None,
                toolkit_baked=config.node_image.toolkit_baked,
                carried=config.release.carried_operands,
                dra=config.dra,
            )
            for pool in config.node_pools
        }
        resources = {
            pool.name: sharing.node_resources(
                pool,
                found.gpus[pool.name].model,
                found.gpus[pool.name].count,
                config.dra,
                gpu_cluster.efa_devices(found, pool.name),
            )
            for pool in config.node_pools
        }
        eks = gpu_cluster.build(name, config, found, stack, pool_gates, resources, parent=self)
        self.cloud = eks
        self.cluster, self.image, self.pools = eks.cluster, eks.image, eks.pools
        handle = eks.handle

        # From here on, only the cluster handle: no AWS detail.
        provider = handle.provider
        namespace = GpuNamespace(
            f"{name}-namespace",
            NamespaceArgs(
                k8s_version,
                release.name,
                config.workloads.cuda_versions,
                dict(config.operator.overrides),
                provider,
                config.monitoring.prometheus_namespace,
                tuple(sorted(config.monitoring.prometheus_pod_labels.items())),
                approved_ledger=config.audit.approved_ledger,
                admins=config.cluster.admins,
                allocation_mode=config.allocation.mode,
                acknowledged_alpha=config.allocation.acknowledge_alpha,
                aws_account=found.account,
                node_image=node_image_identity(config, found),
                cluster=f"{config.cluster.name} in {config.region}, {'created' if config.cluster.create else 'adopted'}",
                aws_provider=config.aws_provider,
                audit=(config.audit.owner, config.audit.approval),
            ),
            opts=child,
        )
        # Before the first operand: the validator's first workload pod and the first node patch are
        # already checked (components/kubernetes/admission.py).
        policies = AdmissionPolicies(
            f"{name}-admission",
            admission_args(
                planned,
                images,
                k8s_version,
                provider,
                [namespace],
                config.workloads.privileged_namespaces,
                config.privilege_actions,
            ),
            opts=child,
        )
        if config.privilege_actions != admission.DENY_ACTIONS:
            pulumi.log.warn(privilege_warning(by_default=config.workloads.privilege_admission is None))
        previous: list[pulumi.Resource] = [*handle.first_stage_waits_on, namespace, policies]
        self.operands = []
        for stage, spec in planned:
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
                ),
                opts=child,
            )
            self.operands.append(operand)
            previous = [operand]
        # Blue-green pools: a new node group is proven to serve GPUs before the old one goes
        # (components/aws/node_pool.py, components/kubernetes/readiness_gate.py).
        self.gates = {
            pool.name: ReadinessGate(
                f"{name}-pool-{pool.name}-gate",
                GateArgs(
                    pool=pool.name,
                    selector=pool.node_selector,
                    taints=pool.taints,
                    image=images["validator"],
                    namespace=namespace.name,
                    audit=config.audit,
                    release=release.name,
                    provider=provider,
                    depends_on=[pool.ready, *previous],
                    dra=config.dra,
                ),
                opts=child,
            )
            for pool in handle.pools.values()
            if pool.rollout == "blue-green"
        }
        # EFA pools: their interfaces as a resource pods can ask for (components/kubernetes/efa_device_plugin.py).
        efa_pools = [pool for pool in handle.pools.values() if pool.efa]
        self.efa_device_plugin = (
            EfaDevicePlugin(
                f"{name}-efa-device-plugin",
                EfaDevicePluginArgs(
                    pools=tuple(p.name for p in efa_pools),
                    taints=efa_pools[0].taints,
                    region=config.region,
                    namespace=namespace.name,
                    audit=config.audit,
                    provider=provider,
                    depends_on=[namespace, *(p.ready for p in efa_pools)],
                ),
                opts=child,
            )
            if efa_pools
            else None
        )
        # No warning for a blue-green pool that could start or shrink to no node: the configuration refuses
        # blue-green with minSize 0 (gpu_platform/config/node_pool.py NodePool._rollout), so desiredSize is at least 1 too.
        if config.monitoring.dashboard:
            # After the exporter: the dashboard only reads the series the exporter's metrics list makes.
            exporter = [op for op in self.operands if isinstance(op, DcgmExporter)]
            GpuDashboard(
                f"{name}-gpu-dashboard",
                DashboardArgs(namespace.name, provider, host_label(images["dcgm-exporter"]), exporter),
                opts=child,
            )
        self.register_outputs({"cluster": self.cluster.name, "ami_id": self.image.ami_id})
