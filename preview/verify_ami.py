"""`python -m preview verify-ami`: the pre-flight check of a pinned node image (`nodeImage.source: ami`).

    python -m preview verify-ami [--stack NAME | --config FILE]

Asks EC2 (boto3, the stack's `aws:region`, the caller's credentials) whether the AMI exists and
whether its tags declare what the stack expects: the driver version, the Kubernetes version, the
architecture, whether the toolkit is baked (and which, when it is). The keys are the ones a baked image
carries (`components.aws.node_image.image_tags`), so a pinned AMI is held to the same record.

Exit 0: the AMI matches; 1: missing or a tag mismatch (each named with both values); 2: a
configuration error, or `source: bake` (nothing pinned, nothing to verify); 3: AWS could not be
asked (no credentials, no network, access denied): no verdict either way.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from components.aws.node_image import ARCHITECTURE_TAG, TOOLKIT_VERSION_TAG, image_tags
from gpu_platform import contract

EXIT_OK, EXIT_MISMATCH, EXIT_CONFIG, EXIT_UNASKED = 0, 1, 2, 3

# Which stack key each declared tag comes from, so a mismatch says what to change on either side.
_SOURCE_KEYS = {
    contract.DRIVER_VERSION_TAG: "gpu-platform:nodeImage.driverVersion",
    contract.KUBERNETES_VERSION_TAG: "gpu-platform:cluster.kubernetesVersion",
    contract.TOOLKIT_BAKED_TAG: "gpu-platform:nodeImage.toolkitBaked",
    TOOLKIT_VERSION_TAG: "the container toolkit of gpu-platform:operator.release",
    ARCHITECTURE_TAG: "the node image architecture (x86_64 only)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m preview verify-ami", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", default=None, help="stack name: reads stacks/Pulumi.<NAME>.yaml (default: dev)")
    source.add_argument("--config", type=Path, help="any stack file (Pulumi.<stack>.yaml format)")
    return parser


def expected_tags(config: Any) -> dict[str, str]:
    """The tags a node image for this stack declares (the same function the bake tags with)."""
    return image_tags(config.node_image, config.cluster.kubernetes_version, config.release.toolkit_version)


def problems(image: Optional[dict[str, Any]], ami_id: str, expected: dict[str, str]) -> list[str]:
    """Every way the AMI (as DescribeImages returns it, or None) falls short of the stack."""
    key = "gpu-platform:nodeImage.amiId"
    if image is None:
        return [f"{key}: {ami_id} does not exist in this region or is not visible to this account"]
    found: list[str] = []
    if image.get("Architecture") and image["Architecture"] != expected.get(ARCHITECTURE_TAG):
        found.append(
            f"{key}: {ami_id} is an {image['Architecture']} image; the stack expects "
            f"{expected.get(ARCHITECTURE_TAG)!r}"
        )
    tags = {t["Key"]: t["Value"] for t in image.get("Tags") or []}
    for tag, want in expected.items():
        source = _SOURCE_KEYS.get(tag, tag)
        if tag not in tags:
            found.append(f"{key}: {ami_id} has no tag {tag}; the stack expects {want!r} ({source})")
        elif tags[tag] != want:
            found.append(f"{key}: {ami_id} tag {tag} is {tags[tag]!r}; the stack expects {want!r} ({source})")
    return found


def describe(ec2: Any, ami_id: str) -> Optional[dict[str, Any]]:
    from botocore.exceptions import ClientError

    try:
        images = ec2.describe_images(ImageIds=[ami_id])["Images"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "").startswith("InvalidAMIID"):
            return None
        raise
    return images[0] if images else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from gpu_platform.config import ConfigError, parse
    from preview import stack_file

    shown = str(args.config or f"stacks/Pulumi.{args.stack or 'dev'}.yaml")
    try:
        path, shown = stack_file.resolve_stack(args.stack, args.config)
        config = parse(stack_file.read_stack_file(path, shown))
    except ConfigError as exc:
        print(f"error: {shown}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    image = config.node_image
    if image.source != "ami":
        print(
            f"error: {shown}: gpu-platform:nodeImage.source is {image.source!r}: the stack bakes its own "
            "image, there is no pinned AMI to verify (verify-ami is for source: ami)",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    expected = expected_tags(config)
    try:
        found = describe(boto3.client("ec2", region_name=config.region), image.ami_id)
    except (BotoCoreError, ClientError) as exc:
        print(f"error: {shown}: could not ask EC2 about {image.ami_id} in {config.region}, so nothing is verified: {exc}",
              file=sys.stderr)
        return EXIT_UNASKED
    wrong = problems(found, image.ami_id, expected)
    if wrong:
        print(f"{shown}: {image.ami_id} in {config.region} does not match the stack:", file=sys.stderr)
        for line in wrong:
            print(f"  {line}", file=sys.stderr)
        return EXIT_MISMATCH
    declared = ", ".join(f"{k}={v}" for k, v in sorted(expected.items()))
    print(f"{shown}: {image.ami_id} in {config.region} exists and declares {declared}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
