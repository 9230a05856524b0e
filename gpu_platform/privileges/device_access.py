"""Admin access to DRA devices, as the privilege ledger (gpu_platform/privileges/ledger.py) reads it from
resource properties alone. A ResourceClaim request with `adminAccess: true` gets its devices whatever
other claims hold them, without holding them itself (Kubernetes API, resource.k8s.io/v1
ExactDeviceRequest.adminAccess); the API server admits one only in a namespace labelled
`resource.kubernetes.io/admin-access: "true"` (kubernetes/kubernetes pkg/registry/resource/utils.go
AuthorizedForAdmin, called from the ResourceClaim and ResourceClaimTemplate strategies' Validate).
So both are privileges: the request, and the label, which opens admin access to every device of the
cluster to any ResourceClaim anyone may create in that namespace.

Rows (subject, part, privilege):

- every ResourceClaimTemplate and ResourceClaim (`ResourceClaimTemplate NS/NAME`) of any
  resource.k8s.io version, part `request NAME` (a subrequest of firstAvailable:
  `request NAME/SUB`): `adminAccess to devices of class CLASS, allocationMode MODE[ COUNT]`, one per
  request asking for admin access (none for the others: an ordinary claim is what a user's pod gets);
- every Namespace labelled `resource.kubernetes.io/admin-access: "true"` (`Namespace NAME`), part
  `(namespace)`: the label, said as what it allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpu_platform.interface.props import dig, mapping, sequence, text
from gpu_platform.interface.resource_types import NAMESPACE
from gpu_platform.privileges.canonical_form import number, subject

Row = tuple[str, str, str]
# kubernetes/kubernetes pkg/apis/resource/types.go DRAAdminNamespaceLabelKey (1.34 on; 1.33 had
# resource.k8s.io/admin-access).
ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
_RESOURCE = "kubernetes:resource.k8s.io/"
# The program writes v1; the beta versions 1.34 still knows are as strong, whoever adds one.
VERSIONS = ("v1", "v1beta2", "v1beta1", "v1alpha3")
CLAIM_TYPES = {f"{_RESOURCE}{v}:{kind}": kind for v in VERSIONS for kind in ("ResourceClaimTemplate", "ResourceClaim")}
TYPES = (*CLAIM_TYPES, NAMESPACE)


def _requests(claim_spec: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """(name, what it asks for) of every request: v1's `exactly` and `firstAvailable` subrequests, and
    v1beta1's fields on the request itself."""
    for request in map(mapping, sequence(dig(claim_spec, "devices").get("requests"))):
        name = text(request.get("name"))
        if "exactly" in request:
            yield name, mapping(request.get("exactly"))
        for sub in map(mapping, sequence(request.get("firstAvailable"))):
            yield f"{name}/{text(sub.get('name'))}", sub
        if "deviceClassName" in request:
            yield name, request


def claim_rows(kind: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    meta = dig(props, "metadata")
    key = subject(kind, text(meta.get("namespace")), text(meta.get("name")) or resource_name)
    claim_spec = dig(props, "spec", "spec") if kind == "ResourceClaimTemplate" else dig(props, "spec")
    found = []
    for name, asked in _requests(claim_spec):
        if asked.get("adminAccess") is True:
            mode = text(asked.get("allocationMode")) or "ExactCount"
            count = f" {number(asked.get('count'))}" if mode == "ExactCount" and asked.get("count") is not None else ""
            found.append(
                (
                    key,
                    f"request {name}",
                    f"adminAccess to devices of class {text(asked.get('deviceClassName'))}, allocationMode {mode}{count}",
                )
            )
    return found


def namespace_rows(resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    meta = dig(props, "metadata")
    if text(dig(meta, "labels").get(ADMIN_NAMESPACE_LABEL)) != "true":
        return []
    return [
        (
            subject("Namespace", "", text(meta.get("name")) or resource_name),
            "(namespace)",
            f"label {ADMIN_NAMESPACE_LABEL}=true: any ResourceClaim created in it may take admin access to devices",
        )
    ]


def rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    if resource_type == NAMESPACE:
        return namespace_rows(resource_name, props)
    kind = CLAIM_TYPES.get(resource_type)
    return claim_rows(kind, resource_name, props) if kind else []
