"""What keeps workloads apart or hands them devices, as the privilege ledger (gpu_platform/ledger.py)
reads it: NetworkPolicies (an allow-all policy beside the default-deny one opens the namespace:
policies are additive), RuntimeClasses (the handler a pod's runtimeClassName selects: `nvidia`
injects GPUs) and DRA DeviceClasses (which devices a claim of the class may get, and with what
configuration).

Rows, part by kind:
- `NetworkPolicy NS/NAME`, `(network)`: `spec sha256:...` over the spec with the API server's
  defaults (gpu_platform/server_defaults.py: a port's protocol TCP, policyTypes from the rules);
- `RuntimeClass NAME`, `(runtime)`: `handler H` and `scheduling ...` / `overhead ...` where set;
- `DeviceClass NAME`, `(devices)`: `spec sha256:...` (selectors, config, extendedResourceName).
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_platform import server_defaults
from gpu_platform.canonical_form import canonical, sha256, subject
from gpu_platform.props import dig, text
from gpu_platform.resource_types import DEVICE_CLASS, NETWORK_POLICY, RUNTIME_CLASS

Row = tuple[str, str, str]
TYPES = (NETWORK_POLICY, RUNTIME_CLASS, DEVICE_CLASS)
_HASHED = "(SHA-256 of the canonical JSON)"


def rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    meta = dig(props, "metadata")
    name = text(meta.get("name")) or resource_name
    if resource_type == NETWORK_POLICY:
        who = subject("NetworkPolicy", text(meta.get("namespace")), name)
        return [(who, "(network)", f"spec {sha256(canonical(server_defaults.network_policy_spec(dig(props, 'spec'))))} {_HASHED}")]
    if resource_type == RUNTIME_CLASS:
        who = subject("RuntimeClass", "", name)
        found = [(who, "(runtime)", f"handler {text(props.get('handler'))}")]
        found += [(who, "(runtime)", f"{key} {canonical(props.get(key))}") for key in ("scheduling", "overhead") if key in props]
        return found
    if resource_type == DEVICE_CLASS:
        return [(subject("DeviceClass", "", name), "(devices)", f"spec {sha256(canonical(dig(props, 'spec')))} {_HASHED}")]
    return []
