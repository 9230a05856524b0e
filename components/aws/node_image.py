"""The GPU node image: the pinned NVIDIA driver baked into the EKS-optimized AL2023 AMI (EC2 Image
Builder in the stack), or a pinned, already baked AMI. A driver upgrade is a new image and a rolling
replacement of the node groups, never a kernel build on a live node.

The bake follows AWS's own accelerated AL2023 image (awslabs/amazon-eks-ami v20260714,
templates/al2023): see scripts/install-nvidia-driver.sh for each step and its source, and
image_component.py for the component document and its test phase. What the image needs is decided
per image from the pools it serves (image_hardware.py): the kernel module flavour, GSP firmware,
and whether the fabric manager and the NVLink subnet manager are installed. Whether they run is
decided at boot, per instance type (scripts/nvswitch-fabric.sh)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws import image_build_role, image_component
from components.aws.base_image import BaseImage
from components.aws.discovery import BuildNetwork, EksNvidiaImage
from components.aws.image_component import BUILD_INSTANCE_TYPE
from components.aws.image_hardware import ImageHardware
from components.aws.managed_role import managed_role, trust
from gpu_platform.config.node_image import NodeImage as NodeImageConfig
from gpu_platform.interface import contract

# A driver build (DKMS compile, downloads, test boot) takes 30-60 min; Image Builder's own default
# of 60 min leaves no margin.
BUILD_TIMEOUT = "150m"
ROOT_VOLUME_GIB = 100
# Tag keys the image declares about itself beyond the shared contract (gpu_platform/interface/contract.py
# holds the driver, toolkit-baked and Kubernetes keys).
ARCHITECTURE_TAG = "gpu-platform.io/architecture"
TOOLKIT_VERSION_TAG = "gpu-platform.io/toolkit-version"
# The EKS AMI release a baked image started from (an amazon-eks-ami tag): on the image resource and
# its AMI, so a base move shows in `--against` and on the AMI itself.
BASE_RELEASE_TAG = "gpu-platform.io/base-image-release"
ARCHITECTURE = "x86_64"
# botocore's ResourceName pattern for Image Builder names: 128 characters at most.
_NAME_LIMIT = 128


@dataclass(frozen=True)
class NodeImageArgs:
    config: NodeImageConfig
    kubernetes_version: str
    base_image: BaseImage | None  # the pinned EKS-optimized AL2023 release, with source: bake
    toolkit_version: str  # the release's container toolkit, baked when toolkitBaked
    hardware: ImageHardware
    tags: dict[str, str]  # stack tags plus audit tags
    declared: dict[str, str]  # stack facts for the policy pack, on the image resource only (not the AMI)
    region: str
    partition: str  # aws | aws-cn | aws-us-gov, for the builder role's policy ARNs
    # Image Builder names are unique per account and region: every name starts with the project and
    # the stack, so two stacks (dev, prod) of one account build side by side.
    project: str
    stack: str
    build_network: BuildNetwork | None = None  # with source: bake
    eks_nvidia: EksNvidiaImage | None = None  # with source: eks-nvidia
    account: str = ""  # the builder role's own policy is named in it


def image_tags(config: NodeImageConfig, kubernetes_version: str, toolkit_version: str | None = None) -> dict[str, str]:
    """What the image declares about itself; `verify-ami` checks the same keys on a pinned AMI.
    The toolkit version is declared only when the toolkit is baked (and the caller knows it)."""
    tags = {
        contract.DRIVER_VERSION_TAG: config.driver_version,
        contract.TOOLKIT_BAKED_TAG: str(config.toolkit_baked).lower(),
        contract.KUBERNETES_VERSION_TAG: kubernetes_version,
        ARCHITECTURE_TAG: ARCHITECTURE,
    }
    if config.toolkit_baked and toolkit_version:
        tags[TOOLKIT_VERSION_TAG] = toolkit_version
    return tags


# The kernel module flavour of a baked image is declared in its audit tag (contract.AUDIT_TAG_SOFTWARE,
# written by components/aws/tags.py node_software: "nvidia-driver <version> (<flavour> kernel modules)"),
# on the AMI, its launch templates and node groups; `verify-ami` and the preview's plan read it back.
_FLAVOUR_IN_SOFTWARE = re.compile(r"\bnvidia-driver \S+ \((open|proprietary) kernel modules\)")


def kernel_module_declared(software: str | None) -> str | None:
    """open | proprietary, as an image's privileged-software tag declares it; None when it names none
    (an image the stack did not bake, or no such tag)."""
    found = _FLAVOUR_IN_SOFTWARE.search(software or "")
    return found.group(1) if found else None


def _digest(*parts: object) -> str:
    return hashlib.sha256("\n".join(map(str, parts)).encode()).hexdigest()[:10]


def component_document(args: NodeImageArgs) -> str:
    return image_component.document(
        args.config.driver_version, args.toolkit_version, bool(args.config.toolkit_baked), args.hardware, args.partition
    )


def _resource_name(text: str) -> str:
    """Image Builder names allow letters, digits, '-', '_' and spaces, no dots (botocore's
    ResourceName pattern), so version numbers are written with dashes: 580-105-08. A name over the
    limit keeps its head and a digest of the whole, which still differs wherever the text does."""
    name = re.sub(r"[^A-Za-z0-9_ -]", "-", text)
    if len(name) > _NAME_LIMIT:
        name = f"{name[: _NAME_LIMIT - 11]}-{_digest(text)}"
    return name


def stack_scope(project: str, stack: str) -> str:
    """`<project>-<stack>`, unique as Image Builder compares names. Pulumi stack names may hold dots,
    which Image Builder names may not, and Image Builder holds names that differ only in case,
    spaces or underscores to be the same name (botocore imagebuilder 2019-12-02 service-2.json,
    CreateComponent/CreateInfrastructureConfiguration/CreateDistributionConfiguration `name`): a
    stack whose name had to change gets a digest of its real name, so `team.dev`, `team_dev`,
    `Team-Dev` and `team-dev` never share a scope."""
    scope = f"{project}-{stack}"
    cleaned = re.sub(r"[^a-z0-9-]", "-", scope.lower())
    return cleaned if cleaned == scope else f"{cleaned}-{_digest(scope)[:6]}"


_AMI_PREFIX_LIMIT = 100


def ami_name_prefix(scope: str, name: str, kubernetes_version: str, driver: str) -> str:
    """The AMI name before the build date; a long stack name keeps its head and a digest."""
    prefix = f"{scope}-{name}-k8s{kubernetes_version}-nvidia-{driver}"
    return prefix if len(prefix) <= _AMI_PREFIX_LIMIT else f"{prefix[: _AMI_PREFIX_LIMIT - 11]}-{_digest(prefix)}"


def declared_tags(args: NodeImageArgs) -> dict[str, str]:
    """What the image declares about itself, and what every launch template and node group booting it
    repeats: with source: eks-nvidia, the facts of AWS's AMI as its release's CHANGELOG records them
    (gpu_platform/catalog/matrix.yaml eksNvidiaAmis), so the policies check AWS's driver as they check ours."""
    if args.eks_nvidia is not None:
        ami = args.eks_nvidia.ami
        return {**image_tags(args.config, args.kubernetes_version, ami.toolkit), BASE_RELEASE_TAG: ami.release}
    return image_tags(args.config, args.kubernetes_version, args.toolkit_version)


def generation(args: NodeImageArgs) -> str:
    """A digest of what a node boots, from the configuration alone (a baked AMI's id is unknown until
    it is built): a driver, toolkit, base or AWS release, pinned AMI or kernel module flavour that
    changes is a new generation. A kubelet label (contract.GENERATION_LABEL) and a valid label value."""
    base = args.base_image.release if args.base_image else ""
    return "g" + _digest(
        args.config.source,
        sorted(declared_tags(args).items()),
        base,
        args.config.ami_id or "",
        args.hardware.kernel_module or "",
    )


class NodeImage(pulumi.ComponentResource):
    ami_id: pulumi.Output[str]
    declares: dict[str, str]  # the image's facts, for the resources that boot it
    generation: str

    def __init__(self, name: str, args: NodeImageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:NodeImage", name, None, opts)
        self.declares = declared_tags(args)
        self.generation = generation(args)
        tags = {**args.tags, **self.declares}
        if args.config.source == "ami":
            # Pinned by id, never "latest": `python -m preview verify-ami` checks its tags first.
            self.ami_id = pulumi.Output.from_input(args.config.ami_id)
        elif args.config.source == "eks-nvidia":
            # AWS's AMI of the pinned release, read from its release-specific SSM parameter (discovery).
            self.ami_id = pulumi.Output.from_input(args.eks_nvidia.ami_id)
        else:
            self.ami_id = self._bake(name, args, tags)
        self.register_outputs({"ami_id": self.ami_id})

    def _bake(self, name: str, args: NodeImageArgs, tags: dict[str, str]) -> pulumi.Output[str]:
        child = pulumi.ResourceOptions(parent=self)
        driver = args.config.driver_version
        # The build's helpers (IAM) do not run the privileged software: they carry the stack's tags
        # without the audit list, so a driver upgrade does not touch them.
        helper_tags = {k: v for k, v in args.tags.items() if k != contract.AUDIT_TAG_SOFTWARE}
        # A component or recipe is immutable and unique by name and version, and Pulumi replaces
        # create-before-delete: any change (document, toolkit, base AMI) must come with a new name, or
        # the replacement collides with the old one. The name carries a digest of what it builds.
        version = "1.0.0"
        scope = stack_scope(args.project, args.stack)
        base = args.base_image
        document = component_document(args)
        component = aws.imagebuilder.Component(
            f"{name}-driver",
            name=_resource_name(f"{scope}-{name}-nvidia-driver-{driver}-{_digest(document)}"),
            platform="Linux",
            version=version,
            data=document,
            supported_os_versions=["Amazon Linux 2023"],
            tags=tags,
            opts=child,
        )
        recipe = aws.imagebuilder.ImageRecipe(
            f"{name}-recipe",
            name=_resource_name(
                f"{scope}-{name}-k8s{args.kubernetes_version}-{base.release}-driver{driver}-"
                f"{_digest(document, base.ami_id, ROOT_VOLUME_GIB)}"
            ),
            parent_image=base.ami_id,
            version=version,
            components=[{"component_arn": component.arn}],
            block_device_mappings=[
                {
                    "device_name": "/dev/xvda",
                    "ebs": {
                        "volume_size": ROOT_VOLUME_GIB,
                        "volume_type": "gp3",
                        "encrypted": "true",
                        "delete_on_termination": "true",
                    },
                }
            ],
            tags=tags,
            opts=child,
        )
        # Report to Image Builder and take its commands through SSM, nothing more (image_build_role.py).
        builder = managed_role(
            f"{name}-builder",
            trust("ec2.amazonaws.com", "sts:AssumeRole"),
            image_build_role.MANAGED_POLICIES,
            args.partition,
            helper_tags,
            self,
            own_policies=(image_build_role.ssm_agent_policy(scope, name, args.account),),
        )
        profile = aws.iam.InstanceProfile(f"{name}-builder", role=builder.role.name, tags=helper_tags, opts=child)
        network = args.build_network
        # Egress only (HTTPS for NVIDIA's downloads, the package repositories and SSM; HTTP for
        # repositories that still serve it); nothing may connect to a build instance.
        build_group = aws.ec2.SecurityGroup(
            f"{name}-build",
            description="GPU node image build: egress only",
            vpc_id=network.vpc_id,
            egress=[
                {
                    "protocol": "tcp",
                    "from_port": port,
                    "to_port": port,
                    "cidr_blocks": ["0.0.0.0/0"],
                    "description": what,
                }
                for port, what in ((443, "https downloads, repositories, SSM"), (80, "http repositories"))
            ],
            tags=helper_tags,
            opts=child,
        )
        infrastructure = aws.imagebuilder.InfrastructureConfiguration(
            f"{name}-infrastructure",
            name=_resource_name(f"{scope}-{name}-gpu-build"),
            instance_types=[BUILD_INSTANCE_TYPE],
            instance_profile_name=profile.name,
            # IMDSv2 only, one hop: the build runs downloaded installers, which must not reach the
            # instance credentials through a container or a proxy.
            instance_metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 1},
            subnet_id=network.subnet_id,
            security_group_ids=[build_group.id],
            terminate_instance_on_failure=True,
            tags=args.tags,
            opts=child,
        )
        distribution = aws.imagebuilder.DistributionConfiguration(
            f"{name}-distribution",
            name=_resource_name(f"{scope}-{name}-distribution"),
            distributions=[
                {
                    "region": args.region,
                    "ami_distribution_configuration": {
                        # AMI names are unique per account and region too, 3-128 characters with the
                        # build date (about 24) filled in.
                        "name": f"{ami_name_prefix(scope, name, args.kubernetes_version, driver)}-{{{{ imagebuilder:buildDate }}}}",
                        "ami_tags": {**tags, BASE_RELEASE_TAG: base.release},
                    },
                }
            ],
            tags=args.tags,
            opts=child,
        )
        image = aws.imagebuilder.Image(
            f"{name}-image",
            image_recipe_arn=recipe.arn,
            infrastructure_configuration_arn=infrastructure.arn,
            distribution_configuration_arn=distribution.arn,
            image_tests_configuration={"image_tests_enabled": True, "timeout_minutes": 90},
            tags={**tags, BASE_RELEASE_TAG: base.release, **args.declared},
            # The build instance runs as the builder role: without its policies it cannot reach SSM
            # or report to Image Builder, and the build fails after its timeout.
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(builder.attachments),
                custom_timeouts=pulumi.CustomTimeouts(create=BUILD_TIMEOUT),
            ),
        )
        return image.output_resources.apply(lambda resources: resources[0].amis[0].image)
