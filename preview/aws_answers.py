"""Answers to the program's AWS invokes, offline.

Instance types come from moto's copy of AWS's instance catalogue (the data behind moto's
DescribeInstanceTypes), read directly: starting moto costs seconds and answers nothing more. What
moto does not serve (the EKS public SSM parameters, existing clusters) comes from recorded fixtures.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any, Callable

import yaml

FIXTURES = Path(__file__).with_name("fixtures") / "aws.yaml"
_EKS_AMI_PREFIX = "/aws/service/eks/optimized-ami/"


class InvokeError(Exception):
    """What AWS would answer with an error; the program turns it into a config error."""


@functools.lru_cache(maxsize=None)
def _fixtures() -> dict[str, Any]:
    return yaml.load(FIXTURES.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.lru_cache(maxsize=None)
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
        raise InvokeError(f"no EC2 instance type {name!r} in the instance catalogue")
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
    }


def _ssm_parameter(args: dict, config: dict) -> dict:
    name = args.get("name", "")
    if name.startswith(_EKS_AMI_PREFIX) and name.endswith("/standard/recommended/image_id"):
        minor = name[len(_EKS_AMI_PREFIX):].split("/", 1)[0]
        ami = _fixtures()["eksOptimizedAmis"].get(minor)
        if ami:
            return {"id": name, "name": name, "type": "String", "value": ami, "version": 1}
    raise InvokeError(f"ParameterNotFound: {name}")


def _cluster(args: dict, config: dict) -> dict:
    name = args.get("name")
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
        "arn": f"arn:aws:eks:us-west-2:{_fixtures()['account']}:cluster/{name}",
        "version": known["version"],
        "endpoint": known["endpoint"],
        "certificateAuthorities": [{"data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="}],
        "kubernetesNetworkConfigs": [{"serviceIpv4Cidr": known["serviceIpv4Cidr"], "ipFamily": "ipv4"}],
        "vpcConfig": {"clusterSecurityGroupId": known["clusterSecurityGroupId"]},
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
    return {"id": subnet, "vpcId": vpc, "availabilityZone": "us-west-2a", "mapPublicIpOnLaunch": False, "state": "available"}


def _caller_identity(args: dict, config: dict) -> dict:
    account = _fixtures()["account"]
    return {"id": account, "accountId": account, "arn": f"arn:aws:iam::{account}:user/preview", "userId": "AIDAPREVIEW"}


def _partition(args: dict, config: dict) -> dict:
    return {"id": "aws", "partition": "aws", "dnsSuffix": "amazonaws.com"}


def _region(args: dict, config: dict) -> dict:
    region = config.get("aws:region", "us-west-2")
    return {"id": region, "name": region, "region": region}


_ANSWERS: dict[str, Callable[[dict, dict], dict]] = {
    "aws:ec2/getInstanceType:getInstanceType": _instance_type,
    "aws:ssm/getParameter:getParameter": _ssm_parameter,
    "aws:eks/getCluster:getCluster": _cluster,
    "aws:ec2/getSubnet:getSubnet": _subnet,
    "aws:index/getCallerIdentity:getCallerIdentity": _caller_identity,
    "aws:index/getPartition:getPartition": _partition,
    "aws:index/getRegion:getRegion": _region,
}


def answer(token: str, args: dict, config: dict) -> tuple[dict, list[tuple[str, str]]]:
    """(result, failures): an AWS error comes back as an invoke failure, as the engine reports
    one, so the program can catch it where it made the call."""
    handler = _ANSWERS.get(token)
    if handler is None:
        raise InvokeError(f"the offline preview has no answer for invoke {token}; add one to preview/aws_answers.py")
    try:
        return handler(args, config), []
    except InvokeError as exc:
        return {}, [("", str(exc))]
