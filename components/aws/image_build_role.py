"""The IAM role of the Image Builder build and test instances: what Image Builder needs of them and
no more. The bake runs NVIDIA's and the distribution's installers as root on that instance, so
whatever the role may do, a compromised download may do too.

Image Builder documents two AWS-managed policies for the instance profile (Image Builder User Guide,
"Image Builder prerequisites", the instance profile's required policies):
EC2InstanceProfileForImageBuilder (report to Image Builder, fetch its components and the TOE
binary), kept, and AmazonSSMManagedInstanceCore, replaced here: its v2 (AWS Managed Policy
Reference, AmazonSSMManagedInstanceCore, edited 2019-05-23) also grants ssm:GetParameter and
ssm:GetParameters on every parameter of the account, State Manager, inventory, patching and
compliance calls that a build instance does not make. What Image Builder uses SSM for is Run Command
(it sends the build and test documents to the instance's SSM agent): the agent registering itself
and taking and answering commands, the statements below, each from that policy's v2.

Not verified on a real account here: ssm:GetDocument and ssm:DescribeDocument (in that policy) are
left out on the reading that Run Command hands the agent the document's content with the command
(the agent fetches documents itself for State Manager associations and the aws:runDocument plugin,
which a build does not use). If that reading is wrong, the symptom is a build that stalls before its
first step with Image Builder reporting the SSM agent unavailable or the command failing at once;
the fix is those two actions on the AWS-owned documents only (arn:<partition>:ssm:<region>::document/*).

The bake reads no SSM parameter on the instance (components/aws/scripts/install-nvidia-driver.sh:
the base AMI is looked up by the program, not on the host), so no parameter is granted at all; one
it needed would be granted by its own ARN here.
"""

from __future__ import annotations

from components.aws.managed_role import OwnPolicy, document

# Kept: what Image Builder itself needs of its instances.
MANAGED_POLICIES = ("EC2InstanceProfileForImageBuilder",)

# The SSM agent's own actions, from AmazonSSMManagedInstanceCore v2. None of them takes a resource
# ARN narrower than "*" (Service Authorization Reference, AWS Systems Manager, Amazon Message Delivery
# Service and Amazon Message Gateway Service: no resource types for these actions).
SSM_AGENT_STATEMENTS = (
    # The agent registers the instance as a managed node and reports its status: without it Image
    # Builder never sees the instance and the build times out.
    ("RegisterAsManagedNode", ("ssm:UpdateInstanceInformation",)),
    # Run Command's delivery: the agent polls for the build's and test's commands, acknowledges
    # them and sends back their results.
    (
        "TakeRunCommands",
        (
            "ec2messages:AcknowledgeMessage",
            "ec2messages:DeleteMessage",
            "ec2messages:FailMessage",
            "ec2messages:GetEndpoint",
            "ec2messages:GetMessages",
            "ec2messages:SendReply",
        ),
    ),
    # The agent's control channel (SSM agent 3.x takes commands through it when it can) and the data
    # channel of a session someone opens to debug a failed build.
    (
        "AgentChannels",
        (
            "ssmmessages:CreateControlChannel",
            "ssmmessages:CreateDataChannel",
            "ssmmessages:OpenControlChannel",
            "ssmmessages:OpenDataChannel",
        ),
    ),
)


def ssm_agent_policy(scope: str, name: str, account: str) -> OwnPolicy:
    """The customer-managed policy that stands in for AmazonSSMManagedInstanceCore. `scope`: the stack's
    Image Builder scope (`<project>-<stack>`), so two stacks of one account never share it."""
    return OwnPolicy(
        key="ssm-agent",
        name=f"{scope}-{name}-ssm-agent"[:128],
        description="Image Builder build instance: the SSM agent's own actions only (no parameters, no State Manager)",
        document=document(
            *(
                {"Sid": sid, "Effect": "Allow", "Action": list(actions), "Resource": "*"}
                for sid, actions in SSM_AGENT_STATEMENTS
            )
        ),
        account=account,
    )
