"""The stack's aws:* provider settings as the privilege ledger records them."""

from __future__ import annotations

from typing import Any

from gpu_platform.privileges.canonical_form import canonical, sha256

# How the AWS provider's settings (pulumi-aws 7.51.1 config/vars.py) reach the namespace annotation
# the ledger reads (contract.AWS_PROVIDER_KEY), which is plain text in the cluster and in the reports:
# credentials only as "(set)"; settings that are plain facts (where calls go, which accounts, which
# files, retries, tags) as written; any other (assumeRoles and assumeRoleWithWebIdentity, which carry
# an external id or a web identity token, proxy URLs, which may carry a password, and any setting a
# later provider adds) as its SHA-256, so a change still changes the ledger.
_SECRET_PROVIDER_SETTINGS = frozenset({"accessKey", "secretKey", "token"})
_PLAIN_PROVIDER_SETTINGS = frozenset(
    {
        "allowedAccountIds",
        "customCaBundle",
        "defaultTags",
        "ec2MetadataServiceEndpoint",
        "ec2MetadataServiceEndpointMode",
        "endpoints",
        "forbiddenAccountIds",
        "ignoreTags",
        "insecure",
        "maxRetries",
        "noProxy",
        "profile",
        "retryMode",
        "s3UsEast1RegionalEndpoint",
        "s3UsePathStyle",
        "sharedConfigFiles",
        "sharedCredentialsFiles",
        "skipCredentialsValidation",
        "skipMetadataApiCheck",
        "skipRegionValidation",
        "skipRequestingAccountId",
        "stsRegion",
        "tagPolicyCompliance",
        "tokenBucketRateLimiterCapacity",
        "useDualstackEndpoint",
        "useFipsEndpoint",
        "userAgents",
    }
)


def provider_setting(name: str, value: Any) -> str:
    """`aws:<name>` as the ledger records it: `name value`, the value as canonical JSON
    (gpu_platform/privileges/canonical_form.py), a credential only as "(set)"."""
    if name in _SECRET_PROVIDER_SETTINGS:
        return f"{name} (set)"
    data = canonical(value)
    if name in _PLAIN_PROVIDER_SETTINGS:
        return f"{name} {data}"
    return f"{name} {sha256(data)} (SHA-256 of the value: it may hold a credential)"
