"""The Amazon VPC CNI as an EKS managed add-on on its own IAM role, through EKS Pod Identity: the
network-interface permissions (AmazonEKS_CNI_Policy: create, attach, delete and modify network
interfaces and assign addresses, on any resource) belong to the `aws-node` pods that use them, not to
the node role, which every process on a node can reach through the instance profile. AWS recommends
a separate role (EKS User Guide 4d52b4d0, latest/ug/networking/eks-networking-add-ons.adoc line 385,
under "Configure Amazon VPC CNI plugin to use IRSA" at line 371); Pod Identity gives it without an OIDC provider, with
credentials scoped to one service account (manage-access/aws-access/service-accounts.adoc lines
150-153).

Two add-ons: `eks-pod-identity-agent`, the DaemonSet that hands pods their Pod Identity credentials
on each node (service-accounts.adoc lines 194-196: required, hostNetwork, 169.254.170.23; it asks
the EKS Auth API with the node role's eks-auth:AssumeRoleForPodIdentity, so nodes without a route to
the internet need the eks-auth VPC endpoint, service-accounts.adoc line 377), and
`vpc-cni` with its Pod Identity association for kube-system/aws-node and network-policy enforcement
on (the add-on's `enableNetworkPolicy`, a string: aws/amazon-vpc-cni-k8s v1.23.0
charts/aws-vpc-cni/values.yaml line 126, rendered into the aws-node ConfigMap and the node agent's
flag at templates/configmap.yaml line 21 and templates/daemonset.yaml line 151; EKS User Guide
4d52b4d0 eks-networking-add-ons.adoc lines 1552-1571 set it as the add-on's configuration value).

Versions: neither add-on is pinned. EKS creates an add-on at the version marked default for the
cluster's Kubernetes minor (EKS User Guide 4d52b4d0, latest/ug/workloads/eks-add-ons.adoc lines
1640-1660: `aws eks describe-addon-versions --kubernetes-version <minor>`, the defaultVersion
column), which matches the minor; a pin here would have to follow cluster.kubernetesVersion by
hand. A cluster upgrade leaves installed add-ons where they are: after one, update vpc-cni and the
agent (clusters/update-cluster.adoc lines 241-244) until this module pins versions per minor.

A cluster the stack adopts keeps its own CNI: the stack installs neither add-on there (it would take
over a networking component it does not own, and EKS refuses a second Pod Identity association for
aws-node); components/aws/gpu_cluster.py warns that the cluster's aws-node must have credentials of
its own, since the node role no longer carries them.
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from components.aws.managed_role import managed_role, trust
from gpu_platform.catalog import addon_privileges

VPC_CNI = "vpc-cni"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
# The CNI's own service account, which its DaemonSet runs as: aws-node in kube-system
# (aws/amazon-vpc-cni-k8s v1.23.0 charts/aws-vpc-cni/values.yaml line 7 nameOverride aws-node, which
# names the service account, lines 159-164; EKS's vpc-cni add-on installs into kube-system).
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-node"
CNI_POLICY = "AmazonEKS_CNI_Policy"
# The principal and actions of a Pod Identity role (EKS User Guide 4d52b4d0, latest/ug/manage-access/
# aws-access/service-accounts.adoc lines 470-491: AssumeRole to fetch credentials, TagSession for the
# session tags).
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"
POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")


def configuration() -> str:
    return json.dumps({"enableNetworkPolicy": "true"}, sort_keys=True)


def pod_identity_condition(cluster_arn: str) -> dict:
    """Only aws-node of this cluster may assume the CNI's role. AWS's Pod Identity guidance restricts
    a role with the session tags EKS adds to its AssumeRole request (service-accounts.adoc lines
    868-876: eks-cluster-arn, kubernetes-namespace, kubernetes-service-account; the user guide's
    pod-id-role page conditions on aws:RequestTag/<tag>), not with aws:SourceArn/aws:SourceAccount,
    which it does not document for pods.eks.amazonaws.com: the cluster's ARN in the session tag is the
    confused-deputy guard here."""
    return {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-arn": cluster_arn,
            "aws:RequestTag/kubernetes-namespace": NAMESPACE,
            "aws:RequestTag/kubernetes-service-account": SERVICE_ACCOUNT,
        }
    }


def role_arn(partition: str, cluster_arn: str, role_name: pulumi.Input[str]) -> pulumi.Output[str]:
    """The CNI role's ARN built from its name, which pulumi-aws knows in a preview (it autonames the
    role), where the role's `arn` output is unknown until the role exists: the privilege ledger hashes
    the association (gpu_platform/privileges/ledger.py), and an unknown there would leave privilege-ledger-approved
    undecided in a stack's first preview. IAM role ARN format arn:PARTITION:iam::ACCOUNT:role/NAME
    (IAM User Guide, reference_identifiers.html "IAM ARNs"; the role's path is the default /), the
    account being the cluster's (its ARN's fifth field)."""
    account = cluster_arn.split(":")[4]
    return pulumi.Output.concat(f"arn:{partition}:iam::{account}:role/", role_name)


class VpcCni(pulumi.ComponentResource):
    # What a node group waits for: the CNI's role with its policy, and the add-on that associates it
    # with aws-node (see `ready`).
    ready: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        cluster_name: pulumi.Input[str],
        cluster_arn: str,
        partition: str,
        tags: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:aws:VpcCni", name, None, opts)
        role = managed_role(
            f"{name}-role",
            trust(POD_IDENTITY_PRINCIPAL, *POD_IDENTITY_ACTIONS, condition=pod_identity_condition(cluster_arn)),
            (CNI_POLICY,),
            partition,
            tags,
            self,
        )
        agent = aws.eks.Addon(
            f"{name}-pod-identity-agent",
            cluster_name=cluster_name,
            addon_name=POD_IDENTITY_AGENT,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags={**tags, addon_privileges.VERSION_TAG: addon_privileges.UNPINNED},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.addon = aws.eks.Addon(
            f"{name}-addon",
            cluster_name=cluster_name,
            addon_name=VPC_CNI,
            configuration_values=configuration(),
            pod_identity_associations=[
                {"role_arn": role_arn(partition, cluster_arn, role.role.name), "service_account": SERVICE_ACCOUNT}
            ],
            # EKS installs the CNI itself on a new cluster (self-managed): the add-on takes it over,
            # the stack's settings winning over what was there.
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags={**tags, addon_privileges.VERSION_TAG: addon_privileges.UNPINNED},
            # The association's role must hold its policy before aws-node asks for credentials, and
            # the agent that serves them must be installed.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*role.attachments, agent]),
        )
        self.ready = [*role.attachments, agent, self.addon]
        self.register_outputs({})
