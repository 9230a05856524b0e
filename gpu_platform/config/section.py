"""What every section of the stack file shares: unknown keys refused, values frozen, and a key given
null refused as a required one is, never read as the key left out."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from gpu_platform.config.errors import NoValue
from gpu_platform.config.kubernetes_names import NAMESPACE_FORM

# What the fields' patterns mean, for people: a regular expression is not an explanation.
PATTERN_MEANINGS: dict[str, str] = {}


def pattern(regex: str, meaning: str) -> str:
    """A field's pattern, registered with what it means (`meaning` reads after "is": "not a ...")."""
    PATTERN_MEANINGS[regex] = meaning
    return regex


# What to give instead of nothing, where the error kind alone does not say it.
GIVE = {
    "aws:region": "a region (e.g. us-west-2)",
    "kubernetesVersion": 'a Kubernetes minor version, quoted (e.g. "1.33")',
    "driverVersion": 'an NVIDIA driver version, quoted (e.g. "580.105.08")',
    "release": "a release",
    "owner": "a team that owns the privileged software",
    "approval": "the approval record (e.g. SEC-1042)",
    "approvedLedger": "the privilege ledger hash the approval covered (sha256:..., printed by python -m preview)",
    "instanceType": "an EC2 instance type (e.g. g6.2xlarge)",
    "name": "a name",
    "gpu-platform:nodePools": "a list of pools (mappings with name, instanceType, minSize, desiredSize, maxSize)",
    "cudaVersions": 'a list of quoted CUDA versions (e.g. ["12.8"])',
    "subnetIds": "a list of subnet ids (two zones or more)",
    "admins": "a list of IAM role or user ARNs",
    "publicAccessCidrs": "a list of CIDR blocks (e.g. [203.0.113.0/24])",
    "timeSlicing": "a mapping with key replicas",
    "mig": "a mapping with key config",
    "amiId": "an AMI id (e.g. ami-0123456789abcdef0)",
    "toolkitBaked": "true or false",
    "baseImageRelease": "an EKS AMI release (e.g. v20260714)",
    "capacityReservationId": "a capacity reservation id (cr- and 17 hex digits)",
    "prometheusNamespace": "the namespace of the Prometheus pods (" + NAMESPACE_FORM + ")",
}
# What to give for a key whose meaning differs by section (a pool's subnets are not the cluster's).
_GIVE_IN = {("NodePool", "subnetIds"): "a list of one or more subnet ids (exactly one with EFA or a Capacity Block)"}

# Optional keys whose own validator answers a null, with the key's default in the message.
_NULL_SAID_BY_VALIDATOR = ("rollout", "nodeRepair", "efa")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_not_absent(cls, data: Any) -> Any:
        # `timeSlicing:` with nothing after it is a YAML null. An optional key given null is refused as
        # a required one is, never read as the key left out (its default), which the file does not say.
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                key = field.alias or name
                if (
                    key in data
                    and (data[key] is None or data[key] == "")
                    and not field.is_required()
                    and field.default is None
                    and key not in _NULL_SAID_BY_VALIDATOR
                ):
                    give = _GIVE_IN.get((cls.__name__, key)) or GIVE.get(key, "a value")
                    raise NoValue(
                        f"has no value (null or empty): give {give}, or remove the key for the default", path=(key,)
                    )
        return data
