"""The privilege ledger: every privilege the stack grants, one row each, and its hash. One
implementation for the audit report (preview/reports/audit.py), the preview's summary and JSON
report, and the policy pack (policy/audit.py), computed from resource properties alone, exactly as
the Pulumi engine hands them to a policy: the pack sees no stack config and no program objects.

A row is (subject, part, privilege), the three columns of the audit report's ledger table:

- a Kubernetes workload that keeps a privilege (`DaemonSet gpu-operator/nvidia-mig-manager`): one
  row per host namespace and weakening of the pod (part `(pod)`: `hostPID`, `hostNetwork`, `hostIPC`,
  `shareProcessNamespace`, `seccompProfile Unconfined`, `appArmorProfile Unconfined`,
  `sysctl NAME=VALUE`), per container `privileged`, `capability NAME`, `hostPath PATH rw|ro`,
  `allowPrivilegeEscalation`, `seccompProfile Unconfined`, `appArmorProfile Unconfined`,
  `procMount Unmasked`, `hostPort PORT/PROTOCOL`, and `image REF` (as rendered, digest included) for
  every container with a row of its own, or every container when the pod has one; those containers
  also get what they run as set: `command`, `args`, `env`, `envFrom`. A workload with any of these
  rows is also bound to where it runs and what it reads (gpu_platform/privileges/workload_binding.py, part
  `(pod)`): `nodeSelector KEY=VALUE` (for a key of workload_binding.NAMED_BY_OUTPUT, whose value is
  a deploy-time name, what the value names instead), `nodeName NAME`, `affinity`, or a row saying it
  runs on every node its tolerations admit; one row per toleration in words (`toleration KEY
  operator Exists, effect NoSchedule`; `toleration of EVERY taint (...)` for the one with no key and
  operator Exists); `serviceAccountName NAME`; and per ConfigMap it mounts (volume or projected
  source) or references from env/envFrom, `configMap NAME data sha256:...` over the data the stack
  sets for that namespace and name, or `configMap NAME not in the stack`, and `configMap NAME items
  ...` where a volume maps its keys to files. A JSON value (command, args, env, envFrom, affinity,
  items) is its canonical JSON (sorted keys, no spaces, integral floats as integers, the lists of an
  affinity and of items sorted since they are sets) when at most workload_binding.SHORT characters,
  else that JSON's SHA-256;
- every EKS add-on of the stack (part `(add-on)`): its version as the stack sets it (or the EKS
  default for the cluster's Kubernetes version), the SHA-256 of its configuration values and of its
  Pod Identity associations, and the privileged DaemonSets it runs where
  gpu_platform/catalog/addon_privileges.py writes them down (a row says when it does not);
- the node image bake (gpu_platform/privileges/bake_document.py): what runs as root on the build host, its
  inputs, and what it downloads with the pins that check the downloads;
- who may administer the cluster (gpu_platform/privileges/cluster_admins.py): every `cluster.admins` principal,
  every access policy association with its policy and scope, and the cluster's own access settings;
- what the stack grants and enforces (gpu_platform/privileges/grants.py): every rule of every Role and
  ClusterRole (lists sorted: a set) and every binding's role and subjects; every IAM role's trust
  policy (SHA-256, and its trusted principals), attached managed policies by ARN, inline,
  customer-managed and KMS key policies by SHA-256 (canonical JSON, every list sorted, the stack's own
  account written `(stack account)`); every ValidatingAdmissionPolicy's spec by SHA-256 and every
  binding's policy, validation actions, match resources and parameter reference;
- admin access to DRA devices (gpu_platform/privileges/device_access.py): every ResourceClaim(Template) request
  with `adminAccess: true`, and every Namespace labelled `resource.kubernetes.io/admin-access: "true"`;
- what keeps workloads apart or exposes them (gpu_platform/privileges/isolation.py): NetworkPolicies,
  RuntimeClasses, DeviceClasses, Services' exposure, security group rules to or from addresses;
- the settings that guard the nodes, the image build and the control plane
  (gpu_platform/privileges/aws_settings.py), and, from the operands' namespace, the cluster, the node image every
  GPU node boots and the approval record (gpu_platform/privileges/cluster_admins.py);
- a resource of any type none of these reads and ledger_scope.yaml does not list as holding nothing:
  its whole input by SHA-256, part `(not reviewed)` (the program makes none).

What is hashed is read with the API server's defaults (gpu_platform/privileges/server_defaults.py), so the
objects the program writes and the live ones a real preview of a deployed stack hands the pack give
the same rows; values that are outputs of other resources (unknown in a first preview) are not read.

The hash, `sha256:<64 hex>`, is SHA-256 over the canonical form (version CANONICAL_VERSION):

    gpu-platform privilege ledger v1\\n
    <subject>\\t<part>\\t<privilege>\\n      one line per distinct row

in UTF-8, rows deduplicated and sorted by their UTF-8 bytes (so neither dict order nor the order
resources arrive in matters), with `\\` written `\\\\`, a tab `\\t` and a line break `\\n` inside a
cell. A change of this form is a new version line, and every recorded hash then changes with it.
New kinds of rows are not a change of the form (the placement and configuration rows came without
one): the bytes of a given set of rows stay the same, and an audit report written before them still
reads back, so `--audit-against` shows the new rows as added, which is what the approver must see.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gpu_platform.catalog import addon_privileges, yaml_files
from gpu_platform.interface import resource_types, workloads
from gpu_platform.interface.props import dig, mapping, sequence, strings, text
from gpu_platform.interface.resource_types import EKS_ADDON as ADDON_TYPE, EKS_CLUSTER as CLUSTER_TYPE, IMAGE_COMPONENT
from gpu_platform.privileges import (
    aws_settings,
    bake_document,
    cluster_admins,
    device_access,
    grants,
    isolation,
    workload_binding,
)
from gpu_platform.privileges.canonical_form import (
    canonical as canonical_json,
    number,
    sha256,
    subject,
    without_autoname,
)

Row = tuple[str, str, str]
CANONICAL_VERSION = "gpu-platform privilege ledger v1"
HASH = re.compile(r"sha256:[0-9a-f]{64}")
# The part column for what belongs to the pod, not to one container.
POD = "(pod)"
HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")
# The part column of what belongs to an EKS add-on as a whole.
ADDON_PART = "(add-on)"


def workload_key(kind: str, namespace: str, name: str) -> str:
    """How the ledger names a workload: stable across stacks, free of Pulumi URNs."""
    return subject(kind, namespace, name)


def _unconfined(security: Mapping[str, Any]) -> list[str]:
    """The confinement profiles a securityContext turns off (Kubernetes API, SeccompProfile.type and
    AppArmorProfile.type: `Unconfined` runs without a profile)."""
    return [
        f"{key} Unconfined"
        for key in ("seccompProfile", "appArmorProfile")
        if text(dig(security, key).get("type")) == "Unconfined"
    ]


def _pod_rows(key: str, spec: Mapping[str, Any]) -> list[Row]:
    """What the pod as a whole keeps: host namespaces, and the isolation it weakens for every container
    (a shared process namespace, unconfined profiles, sysctls set on the node's kernel namespaces)."""
    security = mapping(spec.get("securityContext"))
    found = [(key, POD, ns) for ns in HOST_NAMESPACES if spec.get(ns) is True]
    if spec.get("shareProcessNamespace") is True:
        found.append((key, POD, "shareProcessNamespace"))
    found += [(key, POD, item) for item in _unconfined(security)]
    found += [
        (key, POD, f"sysctl {text(s.get('name'))}={text(s.get('value'))}")
        for s in map(mapping, sequence(security.get("sysctls")))
    ]
    return found


def _strongest(modes: set[str]) -> list[str]:
    """One row per way a container mounts one host path; a read-only mount beside a writable one
    without propagation adds nothing the writable one does not hold."""
    if "rw" in modes:
        modes = modes - {"ro"}
    return sorted(modes)


def _container_rows(key: str, name: str, c: Mapping[str, Any], volumes: Mapping[str, str]) -> list[Row]:
    security = mapping(c.get("securityContext"))
    found = []
    if security.get("privileged") is True:
        found.append((key, name, "privileged"))
    caps = {text(cap) for cap in sequence(dig(security, "capabilities").get("add"))}
    found += [(key, name, f"capability {cap}") for cap in sorted(caps)]
    # A host path's mode, and how mounts propagate across it (Kubernetes API, VolumeMount.mountPropagation:
    # HostToContainer sees the host's later mounts, Bidirectional also pushes the container's mounts
    # to the host; unset is None).
    modes: dict[str, set[str]] = {}
    for mount in map(mapping, sequence(c.get("volumeMounts"))):
        path = volumes.get(text(mount.get("name")))
        if path is not None:
            propagation = text(mount.get("mountPropagation"))
            modes.setdefault(path, set()).add(
                ("ro" if mount.get("readOnly") is True else "rw")
                + (f" mountPropagation {propagation}" if propagation not in ("", "None") else "")
            )
    found += [
        (key, name, f"hostPath {path} {mode}")
        for path, found_modes in sorted(modes.items())
        for mode in _strongest(found_modes)
    ]
    # Weakened isolation (Kubernetes API, SecurityContext and ContainerPort).
    if security.get("allowPrivilegeEscalation") is True:
        found.append((key, name, "allowPrivilegeEscalation"))
    found += [(key, name, item) for item in _unconfined(security)]
    if text(security.get("procMount")) == "Unmasked":
        found.append((key, name, "procMount Unmasked"))
    found += [
        (key, name, f"hostPort {number(p.get('hostPort'))}/{text(p.get('protocol')) or 'TCP'}")
        for p in map(mapping, sequence(c.get("ports")))
        if p.get("hostPort") not in (None, 0, 0.0)
    ]
    return found


def workload_rows(
    resource_type: str,
    resource_name: str,
    props: Mapping[str, Any],
    config_maps: workload_binding.ConfigMaps = workload_binding.NO_CONFIG_MAPS,
) -> list[Row]:
    """The rows of one Kubernetes workload; none when it keeps no privilege. Each container (init or
    main) with a row of its own, or every container when the pod has one, also gets a row with its
    image reference as rendered (tag and digest) and rows with what it runs (command, args, env): the
    approval covers the software that holds the privilege, so swapping an image changes the hash. A
    workload with rows also gets rows for where it runs and the ConfigMaps it reads, from
    `config_maps` (workload_binding.config_maps of the stack's resources)."""
    kind = workloads.kind(resource_type)
    if kind is None:
        return []
    spec = workloads.pod_spec(resource_type, props)
    meta = dig(props, "metadata")
    key = workload_key(kind, text(meta.get("namespace")), text(meta.get("name")) or resource_name)
    found = _pod_rows(key, spec)
    volumes = {
        text(v.get("name")): text(dig(v, "hostPath").get("path"))
        for v in map(mapping, sequence(spec.get("volumes")))
        if "hostPath" in v
    }
    whole_pod = bool(found)
    every = workloads.containers(spec)
    for c in every:
        name = text(c.get("name")) or "?"
        own = _container_rows(key, name, c, volumes)
        found += own
        if own or whole_pod:
            found.append((key, name, f"image {text(c.get('image')) or '(none)'}"))
            found += workload_binding.container_rows(key, name, c)
    if not found:
        return []
    return (
        found
        + workload_binding.placement_rows(key, spec)
        + workload_binding.confinement_rows(key, spec, every)
        + workload_binding.config_rows(key, text(meta.get("namespace")), spec, every, config_maps)
    )


def kubernetes_minor(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> str:
    """The Kubernetes version the stack's EKS cluster is created at, "" when it creates none (adopted)."""
    versions = sorted({text(props.get("version")) for type_, _, props in resources if type_ == CLUSTER_TYPE})
    return ", ".join(v for v in versions if v)


def _configuration(raw: Any) -> str:
    """configurationValues as canonical JSON (sorted keys, no spaces, integral floats as integers), so reformatting it changes nothing
    and any value that changes changes the hash; text that is not JSON is hashed as it is."""
    raw = text(raw)
    if not raw:
        return "{}"
    try:
        return canonical_json(json.loads(raw))
    except ValueError:
        return raw


def _associations(raw: Any) -> str:
    found = sorted(
        {(text(a.get("serviceAccount")), without_autoname(a.get("roleArn"))) for a in map(mapping, sequence(raw))}
    )
    return json.dumps([{"role": r, "serviceAccount": sa} for sa, r in found], sort_keys=True, separators=(",", ":"))


def addon_rows(props: Mapping[str, Any], kubernetes: str = "") -> list[Row]:
    """Every EKS add-on of the stack: its version as the stack sets it, the SHA-256 of its configuration
    values and of its Pod Identity associations (so a change of either changes the ledger's hash), and
    the privileged DaemonSets it runs, where gpu_platform/catalog/addon_privileges.py writes them down at that
    version; where it does not, a row says so: EKS creates those DaemonSets and no stack resource shows
    them, so the ledger cannot list their privileges."""
    name = text(props.get("addonName"))
    unpinned = strings(props.get("tags")).get(addon_privileges.VERSION_TAG) == addon_privileges.UNPINNED
    # The version is read only where the program pins it: see addon_privileges.VERSION_TAG.
    version = "" if unpinned else text(props.get("addonVersion"))
    subject = f"EKS add-on {name}"
    shown = version or (f"EKS default for Kubernetes {kubernetes}" if kubernetes else "EKS default version")
    found: list[Row] = [
        (subject, ADDON_PART, f"version {shown}"),
        (
            subject,
            ADDON_PART,
            (
                f"configurationValues {sha256(_configuration(props.get('configurationValues')))} "
                "(SHA-256 of the canonical JSON)"
            ),
        ),
        (
            subject,
            ADDON_PART,
            (
                f"podIdentityAssociations {sha256(_associations(props.get('podIdentityAssociations')))} "
                "(SHA-256 of the canonical JSON of service account and role name)"
            ),
        ),
    ]
    known = addon_privileges.workloads(name, version)
    if known is not None:
        return found + list(known)
    return [*found, (subject, ADDON_PART, "privileges of its DaemonSets unknown: none written down for this version")]


SCOPE_FILE = Path(__file__).with_name("ledger_scope.yaml")
# Types no module reads and that need no row: the program's own components (their children carry
# what they hold), providers (their configuration is a credential path, not a grant), the stack.
_NO_ROW_PREFIXES = ("gpu-platform:", "pulumi:providers:", "pulumi:pulumi:Stack")


@functools.cache
def no_privilege_types() -> frozenset[str]:
    """The types ledger_scope.yaml lists as holding no privilege of their own."""
    return frozenset(yaml_files.load(SCOPE_FILE.read_text())["no_privilege"])


def reviewed(resource_type: str) -> bool:
    """Whether the ledger knows the type: a module reads it, or it is listed as holding nothing."""
    return (
        resource_type in (ADDON_TYPE, IMAGE_COMPONENT)
        or resource_type in cluster_admins.TYPES
        or resource_type in grants.TYPES
        or resource_type in isolation.TYPES
        or resource_type in device_access.TYPES
        or resource_type in aws_settings.TYPES
        or workloads.kind(resource_type) is not None
        or resource_type in no_privilege_types()
        or resource_type.startswith(_NO_ROW_PREFIXES)
    )


def unreviewed_rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    """A resource of a type the ledger does not know (the program makes none): its whole input, so
    that adding it, or changing it, is a new approval."""
    return [
        (
            f"{resource_type} {resource_name}",
            "(not reviewed)",
            (
                f"inputs {sha256(canonical_json(props))} (SHA-256 of the canonical JSON; the ledger does not read this type: "
                f"approve it as a whole)"
            ),
        )
    ]


References = Mapping[tuple[str, str], Mapping[str, tuple[str, ...]]]
NO_REFERENCES: References = {}
_NO_PROPERTIES: Mapping[str, tuple[str, ...]] = {}


def resource_rows(
    resource_type: str,
    resource_name: str,
    props: Mapping[str, Any],
    kubernetes: str = "",
    config_maps: workload_binding.ConfigMaps = workload_binding.NO_CONFIG_MAPS,
    account: str = "",
    built_from: Mapping[str, tuple[str, ...]] = _NO_PROPERTIES,
) -> list[Row]:
    if resource_type == ADDON_TYPE:
        return addon_rows(props, kubernetes)
    if resource_type == IMAGE_COMPONENT:
        return bake_document.rows(resource_name, props)
    if resource_type in device_access.TYPES:  # a Namespace has cluster-admin rows too
        return device_access.rows(resource_type, resource_name, props) + (
            cluster_admins.rows(resource_type, props) if resource_type in cluster_admins.TYPES else []
        )
    if resource_type in cluster_admins.TYPES:
        return cluster_admins.rows(resource_type, props) + aws_settings.rows(resource_type, resource_name, props)
    if resource_type in aws_settings.TYPES:
        return aws_settings.rows(resource_type, resource_name, props, built_from)
    if resource_type in grants.TYPES:
        return grants.rows(resource_type, resource_name, props, account)
    if resource_type in isolation.TYPES:
        return isolation.rows(resource_type, resource_name, props, built_from)
    if not reviewed(resource_type):
        return unreviewed_rows(resource_type, resource_name, props)
    return workload_rows(resource_type, resource_name, props, config_maps)


# Where a row names which of the stack's resources another one uses, by the engine's record of what it
# depends on, since the value itself (an id) is an output, unknown in a first preview: (type, property)
# -> the type of resource that property takes.
REFERENCED: Mapping[tuple[str, str], str] = {
    (resource_types.EKS_NODE_GROUP, "launchTemplate"): resource_types.LAUNCH_TEMPLATE,
    (resource_types.IMAGE_INFRASTRUCTURE, "instanceProfileName"): resource_types.IAM_INSTANCE_PROFILE,
    (resource_types.SECURITY_GROUP_INGRESS, "securityGroupId"): resource_types.SECURITY_GROUP,
    (resource_types.SECURITY_GROUP_EGRESS, "securityGroupId"): resource_types.SECURITY_GROUP,
}


def references(
    resource_type: str,
    dependencies: Iterable[tuple[str, str]],
    property_dependencies: Mapping[str, Iterable[tuple[str, str]]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """property -> the names of the stack resources it is built from; for a REFERENCED property, only
    those of the type it takes. `property_dependencies` (property -> (type, name) of each resource its
    value is built from): the engine's record, which the Pulumi CLI hands AnalyzeStack; then every
    property built from another resource's output is listed (and props.unless_filled_in reads it
    strictly). None when the caller has none: then a REFERENCED property takes the resources of its
    type among `dependencies` (everything the resource depends on, depends_on included), and nothing
    else is listed."""
    if property_dependencies is None:
        everything = list(dependencies)
        property_dependencies = {prop: everything for type_, prop in REFERENCED if type_ == resource_type}
    found = {}
    for prop, deps in property_dependencies.items():
        wanted = REFERENCED.get((resource_type, prop))
        names = tuple(sorted({name for dep_type, name in deps if wanted is None or dep_type == wanted}))
        if names:
            found[prop] = names
    return found


def rows(resources: Iterable[tuple[str, str, Mapping[str, Any]]], referenced: References = NO_REFERENCES) -> list[Row]:
    """Every row of the stack, from (type, Pulumi name, properties) of each resource; sorted, distinct.
    `referenced`: (type, name) -> property -> the names of the stack's resources that property takes
    (`references()` of its dependencies), for the rows of REFERENCED."""
    resources = list(resources)
    minor = kubernetes_minor(resources)
    maps = workload_binding.config_maps(resources)
    account = grants.own_account(resources)
    return sorted(
        {
            row
            for type_, name, props in resources
            for row in resource_rows(
                type_, name, props, minor, maps, account, referenced.get((type_, name), _NO_PROPERTIES)
            )
        }
    )


def _cell(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def canonical(found: Iterable[Row]) -> bytes:
    lines = sorted({"\t".join(_cell(c) for c in row).encode() for row in found})
    return CANONICAL_VERSION.encode() + b"\n" + b"".join(line + b"\n" for line in lines)


def digest(found: Iterable[Row]) -> str:
    return sha256(canonical(found))
