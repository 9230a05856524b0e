"""Answers to the program's AWS invokes, offline.

Instance types come from moto's copy of AWS's instance catalogue (the data behind moto's
DescribeInstanceTypes), read directly: starting moto costs seconds and answers nothing more. What
moto does not serve comes from data: the EKS public SSM parameters from what AWS published
(preview/offline/eks_ami_answers.py), existing clusters, the partition and who runs the stack from
recorded fixtures.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpu_platform.catalog import aws_limits, yaml_files

FIXTURES = Path(__file__).with_name("fixtures") / "aws.yaml"


class InvokeError(Exception):
    """What AWS would answer with an error; the program turns it into a config error."""


@functools.cache
def _fixtures() -> dict[str, Any]:
    return yaml_files.load(FIXTURES.read_text())


@functools.cache
def instance_catalogue() -> dict[str, Any]:
    # Located, not imported: importing moto pulls in boto3 and its server machinery for nothing.
    spec = importlib.util.find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        raise InvokeError("moto is not installed; the offline preview reads its copy of the instance catalogue")
    data = Path(spec.submodule_search_locations[0]) / "ec2" / "resources" / "instance_types.json.gz"
    return json.loads(gzip.decompress(data.read_bytes()))


def _instance_type(args: dict, config: dict) -> dict:
    name = args.get("instanceType")
    row = instance_catalogue().get(name)
    if row is None:
        raise InvokeError(
            f"not in the offline instance catalogue, moto's copy of AWS's; if AWS offers {name!r} "
            f"in the region, only the offline preview cannot show it"
        )
    gpus = (row.get("GpuInfo") or {}).get("Gpus", [])
    return {
        "id": name,
        "instanceType": name,
        "defaultVcpus": row["VCpuInfo"]["DefaultVCpus"],
        "memorySize": row["MemoryInfo"]["SizeInMiB"],
        "supportedArchitectures": row["ProcessorInfo"]["SupportedArchitectures"],
        "gpuses": [
            {
                "count": gpu["Count"],
                "manufacturer": gpu["Manufacturer"],
                "memorySize": gpu["MemoryInfo"]["SizeInMiB"],
                "name": gpu["Name"],
            }
            for gpu in gpus
        ],
        "totalGpuMemory": (row.get("GpuInfo") or {}).get("TotalGpuMemoryInMiB", 0),
        # What the provider's getInstanceType returns of NetworkInfo (not the per-card interface types).
        "efaSupported": bool(row["NetworkInfo"].get("EfaSupported")),
        "efaMaximumInterfaces": (row["NetworkInfo"].get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0),
        "maximumNetworkCards": row["NetworkInfo"].get("MaximumNetworkCards", 1),
    }


def _ssm_parameter(args: dict, config: dict) -> dict:
    """The EKS AMI parameters AWS publishes, answered from preview/offline/fixtures/eks_ami_parameters.yaml
    (generated from gpu_platform/catalog/eks_amis.yaml); any other parameter is not found."""
    from preview.offline import eks_ami_answers

    name = args.get("name", "")
    ami = eks_ami_answers.answers().get(name)
    if ami:
        return {"id": name, "name": name, "type": "String", "value": ami, "version": 1}
    raise InvokeError(
        f"ParameterNotFound: {name} (offline, the answers come from gpu_platform/catalog/eks_amis.yaml, the EKS AMI "
        f"releases amazon-eks-ami's CHANGELOG lists; pulumi preview asks AWS itself)"
    )


def _cluster(args: dict, config: dict) -> dict:
    name = args.get("name")
    if name in _fixtures().get("missingClusters", []):
        # DescribeCluster's error for a name the account does not have in the region.
        raise InvokeError(f"ResourceNotFoundException: No cluster found for name: {name}.")
    known = _fixtures()["clusters"].get(name)
    if known is None:
        configured = config.get("gpu-platform:cluster") or {}
        known = {
            "version": configured.get("kubernetesVersion", "1.33"),
            "endpoint": f"https://{name.upper()}.gr7.us-west-2.eks.amazonaws.com",
            "serviceIpv4Cidr": "172.20.0.0/16",
            "clusterSecurityGroupId": "sg-0a1b2c3d4e5f60718",
        }
    return {
        "id": name,
        "name": name,
        "arn": f"arn:{_fixtures()['partition']}:eks:us-west-2:{_fixtures()['account']}:cluster/{name}",
        "version": known["version"],
        "endpoint": known["endpoint"],
        "certificateAuthorities": [{"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="}],
        "kubernetesNetworkConfigs": [{"serviceIpv4Cidr": known["serviceIpv4Cidr"], "ipFamily": "ipv4"}],
        "vpcConfig": {"clusterSecurityGroupId": known["clusterSecurityGroupId"]},
        "accessConfigs": [{"authenticationMode": known.get("authenticationMode", "API_AND_CONFIG_MAP")}],
        "status": "ACTIVE",
    }


def _subnet(args: dict, config: dict) -> dict:
    """Any well-formed subnet id exists offline, in a VPC named after the stack's first subnet (so
    every subnet of a stack shares one VPC); the fixtures' `missingSubnets` do not exist."""
    subnet = args.get("id", "")
    if not subnet.startswith("subnet-") or subnet in _fixtures().get("missingSubnets", []):
        raise InvokeError(f"InvalidSubnetID.NotFound: the subnet ID '{subnet}' does not exist")
    first = ((config.get("gpu-platform:cluster") or {}).get("subnetIds") or [subnet])[0]
    vpc = "vpc-" + hashlib.sha256(first.encode()).hexdigest()[:17]
    return {
        "id": subnet,
        "vpcId": vpc,
        "availabilityZone": "us-west-2a",
        "mapPublicIpOnLaunch": False,
        "state": "available",
    }


def partition_of(region: str) -> str:
    """The partition of the stack's region (gpu_platform/catalog/aws_limits.py): a stack in cn-north-1 runs
    in aws-cn, as its account does."""
    return aws_limits.partition_of(region) or _fixtures()["partition"]


def _caller_identity(args: dict, config: dict) -> dict:
    fixtures = _fixtures()
    account = fixtures["account"]
    partition = partition_of(config.get("aws:region", "us-west-2"))
    arn = f"arn:{partition}:sts::{account}:assumed-role/{fixtures['callerRole']}/preview"
    return {"id": account, "accountId": account, "arn": arn, "userId": "AROAPREVIEW:preview"}


def _session_context(args: dict, config: dict) -> dict:
    """What IAM answers for an ARN: an assumed-role session's source role (IAM would add the role's
    path; the fixtures' role has none), any other ARN passed through."""
    arn = args.get("arn", "")
    session = re.fullmatch(r"arn:([a-z-]+):sts::(\d{12}):assumed-role/([^/]+)/(.+)", arn)
    if session is None:
        return {"id": arn, "arn": arn, "issuerArn": arn, "issuerId": "", "issuerName": "", "sessionName": ""}
    partition, account, role, name = session.groups()
    return {
        "id": arn,
        "arn": arn,
        "issuerArn": f"arn:{partition}:iam::{account}:role/{role}",
        "issuerId": "AROAPREVIEW",
        "issuerName": role,
        "sessionName": name,
    }


_DNS_SUFFIXES = {"aws": "amazonaws.com", "aws-cn": "amazonaws.com.cn", "aws-us-gov": "amazonaws.com"}


def _partition(args: dict, config: dict) -> dict:
    partition = partition_of(config.get("aws:region", "us-west-2"))
    return {"id": partition, "partition": partition, "dnsSuffix": _DNS_SUFFIXES[partition]}


def _access_entry(args: dict, config: dict) -> dict:
    """An existing cluster's access entry (the fixtures' `accessEntries`), or AWS's not-found."""
    cluster, principal = args.get("clusterName"), args.get("principalArn")
    entries = (_fixtures()["clusters"].get(cluster) or {}).get("accessEntries") or {}
    if principal not in entries:
        raise InvokeError(
            f"ResourceNotFoundException: The specified access entry resource is not found (cluster {cluster}, principal {principal})"
        )
    return {
        "id": f"{cluster}:{principal}",
        "clusterName": cluster,
        "principalArn": principal,
        "tags": dict(entries[principal].get("tags") or {}),
        "type": "STANDARD",
    }


def _region(args: dict, config: dict) -> dict:
    region = config.get("aws:region", "us-west-2")
    return {"id": region, "name": region, "region": region}


def _clusters(args: dict, config: dict) -> dict:
    """The EKS clusters the account has in the region: the fixtures' (a stack that creates its
    cluster finds it missing, as on its first `pulumi up`)."""
    names = sorted(_fixtures()["clusters"])
    return {"id": config.get("aws:region", "us-west-2"), "names": names}


_ANSWERS: dict[str, Callable[[dict, dict], dict]] = {
    "aws:ec2/getInstanceType:getInstanceType": _instance_type,
    "aws:ssm/getParameter:getParameter": _ssm_parameter,
    "aws:eks/getCluster:getCluster": _cluster,
    "aws:eks/getClusters:getClusters": _clusters,
    "aws:eks/getAccessEntry:getAccessEntry": _access_entry,
    "aws:ec2/getSubnet:getSubnet": _subnet,
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:iam/getSessionContext:getSessionContext": _session_context,
    "aws:index/getPartition:getPartition": _partition,
    "aws:index/getRegion:getRegion": _region,
}


def answer(token: str, args: dict, config: dict) -> tuple[dict, list[tuple[str, str]]]:
    """(result, failures): an AWS error comes back as an invoke failure, as the engine reports
    one, so the program can catch it where it made the call."""
    handler = _ANSWERS.get(token)
    if handler is None:
        raise InvokeError(
            f"the offline preview has no answer for invoke {token}; add one to preview/offline/aws_answers.py"
        )
    try:
        return handler(args, config), []
    except InvokeError as exc:
        return {}, [("", str(exc))]
