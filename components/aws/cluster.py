"""The EKS cluster: created (private endpoint, API access entries for the runner and the named
admins, KMS-encrypted secrets, control plane logs, a small system node pool) or adopted by name
(access entries for the named admins only); either way a Kubernetes provider for it that waits for
that access."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import cluster_access, launch_settings
from components.aws.discovery import AdoptedCluster
from components.aws.managed_role import document, managed_role, trust
from components.aws.node_role import NodeRole
from components.aws.vpc_cni import VpcCni
from gpu_platform.config.cluster import Cluster as ClusterConfig

_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
# Cluster add-ons (CoreDNS, the NFD master, the GC) need somewhere to run that is not a GPU.
_SYSTEM_INSTANCE_TYPE = "m6i.large"
_SYSTEM_ROOT_GIB = 50
SYSTEM_MAX_NODES = 4


@dataclass(frozen=True)
class ClusterArgs:
    config: ClusterConfig
    node_role: NodeRole
    tags: dict[str, str]
    adopted: AdoptedCluster | None = None  # create: false; looked up before anything registers
    partition: str = "aws"
    runner: str | None = None  # the IAM role or user running the stack: warned about when no admin
    existing_entries: dict[str, dict[str, str]] = field(default_factory=dict)  # admin -> tags of its entry
    stack: str = ""
    account: str = ""  # the stack's account: trust and key policies name it
    region: str = ""


def cluster_arn(partition: str, region: str, account: str, name: str) -> str:
    """A cluster's ARN, known before it exists (EKS API Cluster.arn: arn:<partition>:eks:<region>:
    <account>:cluster/<name>): a trust policy can name the cluster its role serves without waiting
    for it, so no cycle."""
    return f"arn:{partition}:eks:{region}:{account}:cluster/{name}"


def control_plane_trust(account: str, arn: str) -> str:
    """The cluster role is assumed by EKS for this cluster only: aws:SourceAccount and aws:SourceArn,
    as AWS recommends for the EKS cluster role ("Cross-service confused deputy prevention in Amazon
    EKS", EKS User Guide page added 2025-08-19, awsdocs/amazon-eks-user-guide commit 9fedf66: EKS
    accepts both keys in a cluster role's trust policy, and a full source ARN is the strongest form).
    sts:TagSession as before."""
    return trust(
        "eks.amazonaws.com",
        "sts:AssumeRole",
        "sts:TagSession",
        condition={"StringEquals": {"aws:SourceAccount": account}, "ArnLike": {"aws:SourceArn": arn}},
    )


# What EKS does with the secrets key through the cluster role: DescribeKey (EKS User Guide 4d52b4d0,
# latest/ug/security/iam-reference/cluster-iam-role.adoc line 48, the cluster role's minimal policy),
# and the envelope operations of the Kubernetes KMS provider, encrypting and decrypting each data
# key. Grants for the control plane are made by whoever calls CreateCluster (kms:CreateGrant and
# kms:DescribeKey, security/security-k8s.adoc lines 833-836): the deployer, through IAM, which the
# account statement allows.
CLUSTER_ROLE_KEY_ACTIONS = ("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt")


def key_policy(partition: str, account: str, role_name: str) -> str:
    """The secrets key's policy. The account (root) administers it and lets IAM policies grant its use,
    as KMS's default key policy does (AWS KMS Developer Guide, "Default key policy": without it a key
    can become unmanageable, and only AWS Support can recover it); the cluster role may use it only as
    EKS needs (CLUSTER_ROLE_KEY_ACTIONS). The role is named by its ARN built from its name, which the
    provider knows at preview (autonamed in its check step), so the policy is known before the role
    exists; IAM roles of this stack have the default path /."""
    return document(
        {
            "Sid": "AccountAdministersTheKey",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{partition}:iam::{account}:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        {
            "Sid": "ClusterRoleEncryptsSecrets",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{partition}:iam::{account}:role/{role_name}"},
            "Action": list(CLUSTER_ROLE_KEY_ACTIONS),
            "Resource": "*",
        },
    )


def _kubeconfig(name, endpoint, ca) -> pulumi.Output[str]:
    def render(args):
        cluster_name, server, ca_data = args
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": cluster_name, "cluster": {"server": server, "certificate-authority-data": ca_data}}
                ],
                "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
                "current-context": cluster_name,
                "users": [
                    {
                        "name": cluster_name,
                        "user": {
                            "exec": {
                                "apiVersion": "client.authentication.k8s.io/v1beta1",
                                "command": "aws",
                                "args": ["eks", "get-token", "--cluster-name", cluster_name, "--output", "json"],
                            }
                        },
                    }
                ],
            },
            sort_keys=True,
        )

    return pulumi.Output.all(name, endpoint, ca).apply(render)


class EksCluster(pulumi.ComponentResource):
    name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    certificate_authority: pulumi.Output[str]
    service_cidr: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    access: list[aws.eks.AccessPolicyAssociation]
    provider: k8s.Provider
    # What a node group must wait for besides its role's policies: the VPC CNI's credentials
    # (components/aws/vpc_cni.py). Empty for an adopted cluster, whose CNI the stack leaves alone.
    cni_ready: list[pulumi.Resource]

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:EksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cfg = args.config
        self.cni_ready = []
        if cfg.create:
            self._create(name, args, child)
        else:
            self._adopt(args.adopted)
        # A created cluster admits no one but these entries (bootstrap off).
        principals, kept = cluster_access.principals(cfg.admins, args.existing_entries, args.stack)
        for arn in kept:
            pulumi.log.warn(
                f"gpu-platform:cluster.admins: {arn} already has an access entry to {cfg.name} that this "
                f"stack did not create; it is left as it is (an IAM principal has one entry per cluster)"
            )
        if cluster_access.runner_without_access(args.runner, cfg.admins):
            pulumi.log.warn(
                f"gpu-platform:cluster.admins does not list {args.runner}, which runs this update: the stack gives "
                f"it no access entry, so its Kubernetes calls are refused unless it has access otherwise; add it "
                f"to cluster.admins if it deploys this stack"
            )
        self.access = cluster_access.cluster_admins(name, self.name, principals, args.partition, args.tags, self)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            # Secret: a kubeconfig is a credential path into the cluster; keep it out of logs and state.
            kubeconfig=pulumi.Output.secret(_kubeconfig(self.name, self.endpoint, self.certificate_authority)),
            enable_server_side_apply=True,
            # Every Kubernetes object goes through this provider: none may be sent before the runner's
            # access policy is associated, or the API answers Unauthorized.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(self.access)),
        )
        self.register_outputs({"name": self.name, "endpoint": self.endpoint})

    def _create(self, name: str, args: ClusterArgs, child: pulumi.ResourceOptions) -> None:
        cfg = args.config
        arn = cluster_arn(args.partition, args.region, args.account, cfg.name)
        control_plane = managed_role(
            f"{name}-control-plane",
            control_plane_trust(args.account, arn),
            ("AmazonEKSClusterPolicy",),
            args.partition,
            args.tags,
            self,
        )
        key = aws.kms.Key(
            f"{name}-secrets",
            description=f"Envelope encryption of Kubernetes secrets in {cfg.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=control_plane.role.name.apply(lambda role: key_policy(args.partition, args.account, role)),
            tags=args.tags,
            opts=child,
        )
        cluster = aws.eks.Cluster(
            name,
            name=cfg.name,
            version=cfg.kubernetes_version,
            role_arn=control_plane.role.arn,
            vpc_config={
                "subnet_ids": list(cfg.subnet_ids),
                "endpoint_private_access": True,
                "endpoint_public_access": cfg.endpoint_public_access,
                # Left out when not given: EKS's default, 0.0.0.0/0 with a public endpoint (the policy
                # cluster-endpoint-not-open refuses that), nothing without one.
                **({"public_access_cidrs": list(cfg.public_access_cidrs)} if cfg.public_access_cidrs else {}),
            },
            # No bootstrap entry for the creator: the named admins' entries are the way in, and the
            # creator among them would collide with it (one entry per principal, ResourceInUseException;
            # pulumi/pulumi-eks#2373).
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": False},
            encryption_config={"provider": {"key_arn": key.arn}, "resources": ["secrets"]},
            enabled_cluster_log_types=_LOG_TYPES,
            deletion_protection=cfg.deletion_protection,
            tags=args.tags,
            # The control plane acts through its role from the first minute: the policy must be on it.
            # The bootstrap flag is create-only (the provider replaces a cluster whose flag changes:
            # pulumi/pulumi-aws#3997, hashicorp/terraform-provider-aws#35824): a cluster created with
            # it on keeps it, and its creator's entry is left alone (cluster_access.principals).
            # protect: `pulumi destroy` then fails in its preview, before it deletes anything; EKS's own
            # protection alone fails at the cluster, after its dependents (access entries too) are gone
            # (pulumi/pulumi#8158: "Preview failed: unable to delete resource ... marked for protection").
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(control_plane.attachments),
                ignore_changes=["accessConfig.bootstrapClusterCreatorAdminPermissions"],
                protect=cfg.deletion_protection,
            ),
        )
        self.name = cluster.name
        self.endpoint = cluster.endpoint
        self.certificate_authority = cluster.certificate_authority.data
        self.service_cidr = cluster.kubernetes_network_config.service_ipv4_cidr
        self.security_group_id = cluster.vpc_config.cluster_security_group_id
        cni = VpcCni(f"{name}-vpc-cni", cluster.name, arn, args.partition, args.tags, opts=child)
        self.cni_ready = cni.ready
        template = aws.ec2.LaunchTemplate(
            f"{name}-system",
            name_prefix=f"{cfg.name}-system-",
            update_default_version=True,
            metadata_options=launch_settings.metadata_options(),
            block_device_mappings=launch_settings.encrypted_root(_SYSTEM_ROOT_GIB),
            network_interfaces=launch_settings.private_interface(self.security_group_id),
            tags=args.tags,
            opts=child,
        )
        aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster.name,
            node_group_name="system",
            node_role_arn=args.node_role.arn,
            subnet_ids=list(cfg.subnet_ids),
            ami_type="AL2023_x86_64_STANDARD",
            instance_types=[_SYSTEM_INSTANCE_TYPE],
            # On-demand and two nodes in two zones: CoreDNS and the NFD master must survive a
            # spot reclaim or a zone outage, or no GPU node can be labelled.
            capacity_type="ON_DEMAND",
            scaling_config={"min_size": 2, "desired_size": 2, "max_size": SYSTEM_MAX_NODES},
            update_config={"max_unavailable": 1},
            # The EKS AMI type stays (managed AMI); the template only hardens IMDS, disk and network.
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            labels={"gpu-platform.io/role": "system"},
            tags=args.tags,
            # A node whose aws-node has no credentials gets no pod addresses and never turns Ready (the
            # node role no longer carries the CNI policy): the CNI's role, its policy, the Pod Identity
            # agent and the add-on's association come first.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.node_role.attachments, *self.cni_ready]),
        )

    def _adopt(self, found: AdoptedCluster) -> None:
        self.name = pulumi.Output.from_input(found.name)
        self.endpoint = pulumi.Output.from_input(found.endpoint)
        self.certificate_authority = pulumi.Output.from_input(found.certificate_authority)
        self.service_cidr = pulumi.Output.from_input(found.service_cidr)
        self.security_group_id = pulumi.Output.from_input(found.security_group_id)
