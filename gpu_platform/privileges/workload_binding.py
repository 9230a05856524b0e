"""What binds a privileged workload besides its privileges: where it runs and what it reads. The
ledger (gpu_platform/privileges/ledger.py) adds these rows to every workload that has rows of its own, so that
an approval covers the blast radius it saw: the same privileged container run on other nodes (a
toleration of every taint puts it on system nodes), under another service account, or fed another
configuration (the MIG manager's mig-parted ConfigMap, the device plugin's sharing configs, a
command line or env run as root) is a different approval.

Readable where a value is small, a SHA-256 where it is bulky; every value goes through `canonical`,
so neither dict order nor the engine's floats (`300.0` for `300`) change a row. Lists keep their
order except where Kubernetes gives them set semantics (tolerations, every list of an affinity:
terms are ORed, expressions ANDed, values a set; Kubernetes API, NodeAffinity, PodAffinityTerm),
and env, envFrom, command and args keep theirs: a later env entry wins and `$(VAR)` sees only
earlier ones (Kubernetes API, EnvVar.value)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from gpu_platform.interface.props import dig, mapping, sequence, text
from gpu_platform.privileges import server_defaults
from gpu_platform.privileges.canonical_form import canonical, number, sha256

Row = tuple[str, str, str]
POD = "(pod)"
CONFIG_MAP_TYPES = ("kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:ConfigMapPatch")
# Longest canonical JSON a row shows as it is; longer values are shown by their SHA-256 (the audit
# report's table stays readable, the hash still covers every byte).
SHORT = 200
# ConfigMaps Kubernetes itself keeps in every namespace, which no stack creates. Source:
# kubernetes/website content/en/docs/reference/command-line-tools-reference/feature-gates/
# root-ca-config-map.md (kube-controller-manager publishes `kube-root-ca.crt`, the CA bundle that
# verifies the API server, in every namespace; GA in 1.21); the projected service account token
# volume reads it.
CLUSTER_MANAGED = {"kube-root-ca.crt": "Kubernetes publishes it in every namespace: the API server's CA bundle"}

# Node labels whose value names a resource the stack itself creates, known only once it exists: an
# output, unknown in the first preview (reading it would leave privilege-ledger-approved undecided)
# and new at every replacement (a blue-green pool's readiness gate, components/kubernetes/
# readiness_gate.py, selects its node group by the label EKS puts on every node of a managed node
# group: EKS User Guide, managed-node-update-behavior.adoc lines 44-55 at 4d52b4d0). Its row names the
# key, not the value: a nodeSelector entry only narrows where the pods run, the program sets the
# value from the node group it creates (no stack key reaches it), and the workload's other selectors
# (the pool label) are bound as they are.
NAMED_BY_OUTPUT = {
    "eks.amazonaws.com/nodegroup": "the name of a managed node group the stack creates, known once it exists"
}

ConfigMaps = Mapping[tuple[str, str], list[str]]
NO_CONFIG_MAPS: ConfigMaps = MappingProxyType({})


def shown(label: str, value: Any, sets: bool = False) -> str:
    """`label JSON` when the canonical JSON is short, else `label sha256:... (SHA-256 of ...)`."""
    data = canonical(value, sets)
    if len(data) <= SHORT:
        return f"{label} {data}"
    count = f"{len(value)} {'entry' if len(value) == 1 else 'entries'}, " if sequence(value) else ""
    return f"{label} {sha256(data)} ({count}SHA-256 of the canonical JSON{', lists sorted' if sets else ''})"


def toleration(t: Mapping[str, Any]) -> str:
    """One toleration in words. No key with operator Exists matches every taint (Kubernetes API,
    Toleration.key: "If the key is empty, operator must be Exists; this combination means to match all
    values and all keys"), and an empty effect matches every effect: both said in capitals."""
    key, value, effect = text(t.get("key")), text(t.get("value")), text(t.get("effect"))
    operator = text(t.get("operator")) or "Equal"  # the API's default
    seconds = f" for {number(t.get('tolerationSeconds'))}s" if t.get("tolerationSeconds") is not None else ""
    effects = f"effect {effect}" if effect else "EVERY effect"
    if not key and operator == "Exists":
        return f"toleration of EVERY taint ({effects}; no key, operator Exists){seconds}"
    # The value matters to every operator but Exists: Equal compares it, and Lt/Gt (alpha,
    # TaintTolerationComparisonOperators; kubernetes/api v0.35.0 core/v1 toleration.go:52-75) take it as
    # the threshold.
    taint = key if operator == "Exists" else f"{key}={value}"
    return f"toleration {taint} operator {operator}, {effects}{seconds}"


def placement_rows(key: str, spec: Mapping[str, Any]) -> list[Row]:
    """Where the pods run and as whom: nodeSelector, nodeName, affinity, tolerations, service account."""
    selector = mapping(spec.get("nodeSelector"))
    found = [
        (
            key,
            POD,
            f"nodeSelector {k}=({NAMED_BY_OUTPUT[k]}; not bound)"
            if k in NAMED_BY_OUTPUT
            else f"nodeSelector {k}={text(selector[k])}",
        )
        for k in sorted(map(str, selector))
    ]
    node = text(spec.get("nodeName"))
    if node:
        found.append((key, POD, f"nodeName {node}"))
    affinity = mapping(spec.get("affinity"))
    if affinity:
        found.append((key, POD, shown("affinity", affinity, sets=True)))
    if not (selector or node or affinity):
        found.append((key, POD, "runs on EVERY node its tolerations admit (no nodeSelector, nodeName or affinity)"))
    found += [(key, POD, toleration(mapping(t))) for t in sequence(spec.get("tolerations"))]
    # `serviceAccount` is the deprecated alias the API still accepts (PodSpec.serviceAccount). Unset,
    # the ServiceAccount admission plugin writes `default` into the pod (the live object says so), so
    # one row for both.
    account = text(spec.get("serviceAccountName")) or text(spec.get("serviceAccount")) or "default"
    found.append((key, POD, f"serviceAccountName {account}"))
    return found


def confinement_rows(key: str, spec: Mapping[str, Any], containers: Iterable[Mapping[str, Any]]) -> list[Row]:
    """The rest of what confines the pod and its containers, whole: the ledger's own rows name each
    privilege in words (privileged, a capability added, a host path), and these bind everything else
    a change could loosen without adding one of those: a container's and the pod's securityContext
    (a `drop: [ALL]` removed gives back the runtime's default capabilities, runAsUser 0, a writable
    root filesystem), the runtime handler (runtimeClassName: the nvidia handler hands a container the
    GPUs NVIDIA_VISIBLE_DEVICES names), the priority class (system-node-critical preempts other pods),
    the pod's own API-token setting (it overrides its service account's), and the DRA claims (the
    devices a container gets). Kubernetes API, PodSpec and SecurityContext. The API server defaults none
    of them into a DaemonSet's or Deployment's template, and an empty securityContext reads as unset."""
    found = []
    for field in ("runtimeClassName", "priorityClassName"):
        if text(spec.get(field)):
            found.append((key, POD, f"{field} {text(spec.get(field))}"))
    if spec.get("automountServiceAccountToken") is not None:
        found.append((key, POD, shown("automountServiceAccountToken", spec.get("automountServiceAccountToken"))))
    for field in ("securityContext", "resourceClaims"):
        if mapping(spec.get(field)) or sequence(spec.get(field)):
            found.append((key, POD, shown(field, spec.get(field), sets=True)))
    for c in containers:
        name = text(c.get("name")) or "?"
        if mapping(c.get("securityContext")):
            found.append((key, name, shown("securityContext", c.get("securityContext"), sets=True)))
        claims = sequence(dig(c, "resources").get("claims"))
        if claims:
            found.append((key, name, shown("resources.claims", claims, sets=True)))
    return found


def config_maps(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> ConfigMaps:
    """(namespace, name) -> what the stack sets as the ConfigMap's data: the SHA-256 of the canonical
    JSON of its `data` and `binaryData` (a ConfigMapPatch's marked as a patch)."""
    found: dict[tuple[str, str], list[str]] = {}
    for type_, _, props in resources:
        if type_ not in CONFIG_MAP_TYPES:
            continue
        meta = dig(props, "metadata")
        data = {"binaryData": mapping(props.get("binaryData")), "data": mapping(props.get("data"))}
        what = f"{'patch ' if type_.endswith('Patch') else ''}data {sha256(canonical(data))}"
        found.setdefault((text(meta.get("namespace")), text(meta.get("name"))), []).append(what)
    return {k: sorted(set(v)) for k, v in found.items()}


def _config_map_sources(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The configMap sources of the pod's volumes, plain or projected."""
    found = []
    for volume in map(mapping, sequence(spec.get("volumes"))):
        found += [dig(volume, "configMap")] + [
            dig(s, "configMap") for s in sequence(dig(volume, "projected").get("sources"))
        ]
    return [source for source in found if source]


def _referenced(spec: Mapping[str, Any], containers: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every ConfigMap the pod can read: volumes, projected volume sources, env and envFrom."""
    names = {text(source.get("name")) for source in _config_map_sources(spec)}
    for c in containers:
        names.update(text(dig(e, "valueFrom", "configMapKeyRef").get("name")) for e in sequence(c.get("env")))
        names.update(text(dig(e, "configMapRef").get("name")) for e in sequence(c.get("envFrom")))
    names.discard("")
    return names


def config_rows(
    key: str, namespace: str, spec: Mapping[str, Any], containers: list[Mapping[str, Any]], maps: ConfigMaps
) -> list[Row]:
    """Each ConfigMap the pod reads, by name and the SHA-256 of its data as the stack sets it, or a row
    saying the stack does not set it (its content is then not covered by the approval)."""
    found = []
    for name in sorted(_referenced(spec, containers)):
        known = maps.get((namespace, name))
        if known:
            found += [
                (key, POD, f"configMap {name} {what} (SHA-256 of the canonical JSON of data and binaryData)")
                for what in known
            ]
        else:
            why = CLUSTER_MANAGED.get(name)
            found.append((key, POD, f"configMap {name} not in the stack" + (f" ({why})" if why else "")))
    # A volume's `items` choose which key is read under which file name: remapped, the same approved data
    # feeds another file (the MIG manager reads whatever lands at config.yaml).
    for source in _config_map_sources(spec):
        if sequence(source.get("items")):
            found.append(
                (key, POD, shown(f"configMap {text(source.get('name'))} items", source.get("items"), sets=True))
            )
    return found


def container_rows(key: str, name: str, c: Mapping[str, Any]) -> list[Row]:
    """What the container runs: command, args, env and envFrom, where set (unset, the image's own
    entrypoint and env run, which the image row binds). The env one row per variable, so that a
    review sees which one changed (a feature gate turned on, a device list widened), and a row of the
    names in order (a later entry wins, and `$(VAR)` sees only earlier ones)."""
    found = [
        (key, name, shown(field, c.get(field))) for field in ("command", "args", "envFrom") if sequence(c.get(field))
    ]
    entries = [mapping(e) for e in sequence(server_defaults.env(c.get("env")))]
    for e in entries:
        var = text(e.get("name"))
        if e.get("valueFrom") is not None:
            found.append((key, name, shown(f"env {var} from", e.get("valueFrom"))))
            continue
        value = text(e.get("value"))
        data = canonical(value)  # `env NAME="value"`; a long value by its SHA-256, as shown() does
        found.append((key, name, f"env {var}={data}" if len(data) <= SHORT else shown(f"env {var}", value)))
    if entries:
        found.append((key, name, shown("env order", [text(e.get("name")) for e in entries])))
    return found
