"""gpu_platform/interface/resource_types.py: every type token is the one the SDK class we create writes, so a
policy or ledger row keyed on it sees the resources the program makes (a token misspelled or of
another API version would match nothing, silently)."""

from __future__ import annotations

import inspect

import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from gpu_platform.interface import resource_types

# The class the program creates for each token, named by hand.
CLASSES = {
    "EKS_CLUSTER": aws.eks.Cluster,
    "EKS_NODE_GROUP": aws.eks.NodeGroup,
    "EKS_ADDON": aws.eks.Addon,
    "ASG_TAG": aws.autoscaling.Tag,
    "EKS_ACCESS_ENTRY": aws.eks.AccessEntry,
    "EKS_ACCESS_ASSOCIATION": aws.eks.AccessPolicyAssociation,
    "LAUNCH_TEMPLATE": aws.ec2.LaunchTemplate,
    "IAM_ROLE": aws.iam.Role,
    "IAM_POLICY": aws.iam.Policy,
    "IAM_ATTACHMENT": aws.iam.RolePolicyAttachment,
    "IAM_EXCLUSIVE": aws.iam.RolePolicyAttachmentsExclusive,
    "IAM_INLINE": aws.iam.RolePolicy,
    "IAM_INSTANCE_PROFILE": aws.iam.InstanceProfile,
    "IAM_OIDC_PROVIDER": aws.iam.OpenIdConnectProvider,
    "IMAGE_COMPONENT": aws.imagebuilder.Component,
    "IMAGE": aws.imagebuilder.Image,
    "IMAGE_RECIPE": aws.imagebuilder.ImageRecipe,
    "IMAGE_INFRASTRUCTURE": aws.imagebuilder.InfrastructureConfiguration,
    "KMS_KEY": aws.kms.Key,
    "IMAGE_DISTRIBUTION": aws.imagebuilder.DistributionConfiguration,
    "SECURITY_GROUP": aws.ec2.SecurityGroup,
    "SECURITY_GROUP_INGRESS": aws.vpc.SecurityGroupIngressRule,
    "SECURITY_GROUP_EGRESS": aws.vpc.SecurityGroupEgressRule,
    "CONFIG_MAP": k8s.core.v1.ConfigMap,
    "SERVICE": k8s.core.v1.Service,
    "SERVICE_ACCOUNT": k8s.core.v1.ServiceAccount,
    "NAMESPACE": k8s.core.v1.Namespace,
    "DAEMONSET": k8s.apps.v1.DaemonSet,
    "NETWORK_POLICY": k8s.networking.v1.NetworkPolicy,
    "RUNTIME_CLASS": k8s.node.v1.RuntimeClass,
    "DEVICE_CLASS": k8s.resource.v1.DeviceClass,
    "ADMISSION_POLICY": k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    "ADMISSION_BINDING": k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
    "MUTATING_WEBHOOKS": k8s.admissionregistration.v1.MutatingWebhookConfiguration,
    "VALIDATING_WEBHOOKS": k8s.admissionregistration.v1.ValidatingWebhookConfiguration,
}


def test_every_token_has_its_class_here():
    tokens = {name for name in vars(resource_types) if name.isupper()}
    assert tokens == set(CLASSES)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_token_is_the_one_the_sdk_class_registers_with(name):
    # Each SDK class passes its token to Resource.__init__ in its _internal_init (generated code).
    assert f"'{getattr(resource_types, name)}'" in inspect.getsource(CLASSES[name])
