"""The Pulumi type tokens of the resources the program creates and the pack, the ledger and the
reports read, each once: a token is how a resource is known in the engine's recording, the
analyzer's arguments and the state file (`<package>:<module>/<name>:<Type>`, written in each
class of the pulumi-aws and pulumi-kubernetes SDKs; tests/gpu_platform/interface/test_resource_types.py
checks every one against the SDK version we pin)."""

from __future__ import annotations

# AWS (pulumi-aws)
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
EKS_ADDON = "aws:eks/addon:Addon"
EKS_ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
EKS_ACCESS_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
IAM_ROLE = "aws:iam/role:Role"
IAM_POLICY = "aws:iam/policy:Policy"
IAM_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
IAM_EXCLUSIVE = "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive"
IAM_INLINE = "aws:iam/rolePolicy:RolePolicy"
IAM_INSTANCE_PROFILE = "aws:iam/instanceProfile:InstanceProfile"
IAM_OIDC_PROVIDER = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
IMAGE_COMPONENT = "aws:imagebuilder/component:Component"
IMAGE = "aws:imagebuilder/image:Image"
IMAGE_RECIPE = "aws:imagebuilder/imageRecipe:ImageRecipe"
IMAGE_DISTRIBUTION = "aws:imagebuilder/distributionConfiguration:DistributionConfiguration"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SECURITY_GROUP_EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
IMAGE_INFRASTRUCTURE = "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"
KMS_KEY = "aws:kms/key:Key"

# Kubernetes (pulumi-kubernetes)
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SERVICE = "kubernetes:core/v1:Service"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"
DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
ADMISSION_POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
ADMISSION_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
MUTATING_WEBHOOKS = "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration"
VALIDATING_WEBHOOKS = "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration"
