"""The checks an operand contract's clauses ask of the rendered stack (components/kubernetes/operands/<module>/contract.yaml).

A clause's `expect` is a list of checks, each a one-key mapping; `when` limits a clause to stacks with
the given facts (`cdi`, `toolkit_baked`, `mig`, `time_slicing`). This module reads only the recorded
registrations of a real program run (preview/offline/engine.py), never a spec or a test-side copy of
the operand wiring, so a check sees what `pulumi up` would send. The vocabulary is in
docs/operand-contracts.md; every check returns the problems it found, in words that
name the object, so a failure reads with its clause id and source.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpu_platform.interface import contract, workloads
from preview.recording import Recording, Registration

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
NAMESPACE = "kubernetes:core/v1:Namespace"
ROLES = {
    "Role": "kubernetes:rbac.authorization.k8s.io/v1:Role",
    "ClusterRole": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
}
BINDINGS = (
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
)

_VERSION_PART = re.compile(r"^\d+(?:\.\d+)*$")


def version_key(tag: str) -> tuple[tuple[int, ...], ...]:
    """An image tag made comparable: `v0.17.4-ubi9` -> ((0, 17, 4),), DCGM exporter's
    `4.1.1-4.0.4-ubuntu22.04` -> ((4, 1, 1), (4, 0, 4)): the dash-separated numeric parts before the
    first flavour suffix."""
    parts = []
    for piece in tag.lstrip("v").split("-"):
        if not _VERSION_PART.match(piece.lstrip("v")):
            break
        parts.append(tuple(int(n) for n in piece.lstrip("v").split(".")))
    if not parts:
        raise ValueError(f"tag {tag!r} has no version")
    return tuple(parts)


def _cmp(a: tuple, b: tuple) -> int:
    width = max(len(a), len(b))
    pad = lambda t: tuple(p + (0,) * (4 - len(p)) for p in t) + ((0, 0, 0, 0),) * (width - len(t))  # noqa: E731
    return (pad(a) > pad(b)) - (pad(a) < pad(b))


def applies(spec: str, tag: str) -> bool:
    """Whether a clause's `applies` range (`*`, `>=a`, `<b`, `>=a,<b`, `==a`) holds for an image tag."""
    if str(spec).strip() == "*":
        return True
    have = version_key(tag)
    for term in str(spec).split(","):
        term = term.strip()
        op = re.match(r"^(>=|<=|==|>|<)", term)
        if not op:
            raise ValueError(f"applies {spec!r}: {term!r} has no comparison")
        c = _cmp(have, version_key(term[len(op.group(1)) :].strip()))
        if not {">=": c >= 0, "<=": c <= 0, "==": c == 0, ">": c > 0, "<": c < 0}[op.group(1)]:
            return False
    return True


@dataclass(frozen=True)
class Facts:
    """What a clause's `when` may ask of the stack (`mig`: of the DaemonSet, that it runs on MIG pools)."""

    cdi: bool
    toolkit_baked: bool
    mig: bool
    time_slicing: bool
    # The nodes' toolkit hands MIG's capability devices to a CAP_SYS_ADMIN container that sets
    # NVIDIA_MIG_MONITOR_DEVICES (its legacy hook, `auto`'s mode before 1.18.0); from 1.18.0 none does.
    toolkit_mig_by_env: bool

    def match(self, when: dict | None) -> bool:
        return all(getattr(self, key) == value for key, value in (when or {}).items())


class Operand:
    """One operand's objects in a recording, found the way the cluster would find them."""

    def __init__(self, rec: Recording, operand: str):
        self.rec, self.operand = rec, operand
        found = [
            r
            for r in rec.of_type(DAEMONSET)
            if (r.inputs.get("metadata", {}).get("labels") or {}).get(contract.OPERAND_KEY) == operand
        ]
        # The operand's own DaemonSet first, then its variants' (mig_access.by_pool), by name.
        found.sort(
            key=lambda r: (
                r.inputs["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] != operand,
                r.inputs["metadata"]["name"],
            )
        )
        self.daemonset: Registration | None = found[0] if found else None
        self.daemonsets = found

    def each(self) -> list[Operand]:
        """A view per DaemonSet of the operand (a MIG reader has one for the MIG pools, mig_access.by_pool)."""
        views = []
        for found in self.daemonsets:
            view = Operand.__new__(Operand)
            view.rec, view.operand, view.daemonset, view.daemonsets = self.rec, self.operand, found, [found]
            views.append(view)
        return views

    @property
    def on_mig_pools(self) -> bool:
        """The DaemonSet may run on a MIG pool's node (one carrying nvidia.com/mig.config): no term of
        its required node affinity excludes that label."""
        absent = {"key": contract.MIG_CONFIG_LABEL, "operator": "DoesNotExist"}
        return any(absent not in term for term in workloads.required_node_terms(self.pod) or [()])

    def part(self, suffix: str) -> Operand:
        """The operand's cluster-wide Deployment part (NFD's `master`, `gc`), seen through the same
        checks: its pod, containers, service account and bound rules stand in for the DaemonSet's."""
        view = Operand.__new__(Operand)
        view.rec, view.operand = self.rec, self.operand
        found = [
            r
            for r in self.rec.of_type(DEPLOYMENT)
            if (r.inputs.get("metadata", {}).get("labels") or {}).get(contract.OPERAND_KEY) == self.operand
            and (r.inputs["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == f"{self.operand}-{suffix}"
        ]
        view.daemonset = found[0] if found else None
        return view

    @property
    def name(self) -> str:
        return self.daemonset.inputs["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.daemonset.inputs["metadata"]["namespace"]

    @property
    def pod(self) -> dict:
        return self.daemonset.inputs["spec"]["template"]["spec"]

    @property
    def pod_metadata(self) -> dict:
        return self.daemonset.inputs["spec"]["template"]["metadata"]

    def containers(self, which: str, image: str) -> list[dict]:
        """`*`: every container (init and main) running the operand's image; else the one named."""
        every = [*self.pod.get("initContainers", []), *self.pod["containers"]]
        if which == "*":
            return [c for c in every if c["image"] == image]
        return [c for c in every if c["name"] == which]

    def rules(self, scope: str) -> list[dict]:
        """The RBAC rules bound to the DaemonSet's service account, namespace-wide ('namespace':
        a Role in its namespace or any ClusterRole) or cluster-wide ('cluster': ClusterRoles)."""
        account = self.pod.get("serviceAccountName", "default")
        bound: list[dict] = []
        for binding_type in BINDINGS:
            for binding in self.rec.of_type(binding_type):
                subjects = binding.inputs.get("subjects") or []
                if not any(
                    s.get("kind") == "ServiceAccount"
                    and s.get("name") == account
                    and s.get("namespace") == self.namespace
                    for s in subjects
                ):
                    continue
                ref = binding.inputs["roleRef"]
                if binding_type.endswith("RoleBinding") and not binding_type.endswith("ClusterRoleBinding"):
                    if binding.inputs["metadata"].get("namespace") != self.namespace:
                        continue
                    if scope == "cluster":
                        continue
                for role in self.rec.of_type(ROLES[ref["kind"]]):
                    meta = role.inputs["metadata"]
                    if meta["name"] == ref["name"] and (
                        ref["kind"] == "ClusterRole" or meta.get("namespace") == self.namespace
                    ):
                        bound += role.inputs.get("rules") or []
        return bound


def _grants(rules: list[dict], group: str, resource: str, verb: str, name: str | None) -> bool:
    for rule in rules:
        if not ({group, "*"} & set(rule.get("apiGroups") or [])):
            continue
        if not ({resource, "*"} & set(rule.get("resources") or [])):
            continue
        if not ({verb, "*"} & set(rule.get("verbs") or [])):
            continue
        names = rule.get("resourceNames") or []
        if names and (name is None or name not in names):
            continue
        return True
    return False


def _env(container: dict) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in container.get("env") or []:
        if "value" in item:
            found[item["name"]] = item["value"]
        else:
            ref = (item.get("valueFrom") or {}).get("fieldRef") or {}
            found[item["name"]] = {"fieldPath": ref.get("fieldPath")}
    return found


def _volumes(op: Operand) -> dict[str, dict]:
    return {v["name"]: v for v in op.pod.get("volumes") or []}


# --- the checks: (operand, image, argument) -> problems ------------------------------------------


def _daemonset_name(op: Operand, image: str, want: str) -> list[str]:
    return [] if op.name == want else [f"the DaemonSet is named {op.name!r}, the image looks up {want!r}"]


def _service_account(op: Operand, image: str, want: str) -> list[str]:
    accounts = [
        r
        for r in op.rec.of_type(SERVICE_ACCOUNT)
        if r.inputs["metadata"]["name"] == want and r.inputs["metadata"].get("namespace") == op.namespace
    ]
    return [] if accounts else [f"no ServiceAccount {want!r} in namespace {op.namespace!r}"]


def _rbac(op: Operand, image: str, want: dict) -> list[str]:
    resources = want.get("resources") or [want["resource"]]
    names = want.get("names") or [None]
    rules = op.rules(want["scope"])
    missing = [
        f"{v} {want.get('group') or 'core'}/{r}{'/' + n if n else ''}"
        for r in resources
        for v in want["verbs"]
        for n in names
        if not _grants(rules, want.get("group", ""), r, v, n)
    ]
    where = "cluster-wide" if want["scope"] == "cluster" else f"in namespace {op.namespace}"
    return (
        [f"service account {op.pod.get('serviceAccountName')!r} may not {', '.join(missing)} {where}"]
        if missing
        else []
    )


def _no_api_token(op: Operand, image: str, want: bool) -> list[str]:
    account = op.pod.get("serviceAccountName", "default")
    pod_says = op.pod.get("automountServiceAccountToken")
    sa = [
        r
        for r in op.rec.of_type(SERVICE_ACCOUNT)
        if r.inputs["metadata"]["name"] == account and r.inputs["metadata"].get("namespace") == op.namespace
    ]
    sa_says = sa[0].inputs.get("automountServiceAccountToken") if sa else None
    mounted = pod_says if pod_says is not None else (sa_says if sa_says is not None else True)
    return [f"an API token is mounted into its pods (service account {account!r})"] if mounted == want else []


def _env_check(op: Operand, image: str, want: dict) -> list[str]:
    problems = []
    containers = op.containers(want.get("container", "*"), image)
    if not containers:
        return [f"no container {want.get('container', 'running ' + image)!r}"]
    for c in containers:
        env = _env(c)
        name = want["name"]
        if want.get("absent"):
            if name in env:
                problems.append(f"container {c['name']!r} sets {name}={env[name]!r}; the image must see it unset")
        elif "field" in want:
            if env.get(name) != {"fieldPath": want["field"]}:
                problems.append(
                    f"container {c['name']!r}: {name} is {env.get(name)!r}, wants the downward API field {want['field']}"
                )
        elif "value" in want:
            if env.get(name) != str(want["value"]):
                problems.append(
                    f"container {c['name']!r}: {name} is {env.get(name, '(unset)')!r}, wants {str(want['value'])!r}"
                )
        elif "one_of" in want:
            # A null in one_of admits the variable unset (the image's default).
            if env.get(name) not in [None if v is None else str(v) for v in want["one_of"]]:
                problems.append(
                    f"container {c['name']!r}: {name} is {env.get(name, '(unset)')!r}, wants one of {want['one_of']}"
                )
        elif name not in env:
            problems.append(f"container {c['name']!r} does not set {name}")
    return problems


def _mount(op: Operand, image: str, want: dict) -> list[str]:
    problems = []
    volumes = _volumes(op)
    for c in op.containers(want.get("container", "*"), image) or [{"name": want.get("container"), "volumeMounts": []}]:
        mounts = [m for m in c.get("volumeMounts") or [] if m["mountPath"] == want["path"]]
        if not mounts:
            problems.append(f"container {c['name']!r} mounts nothing at {want['path']}")
            continue
        mount, volume = mounts[0], volumes.get(mounts[0]["name"], {})
        if "host_path" in want and (volume.get("hostPath") or {}).get("path") != want["host_path"]:
            problems.append(
                f"container {c['name']!r}: {want['path']} is {volume.get('hostPath') or volume}, wants host path {want['host_path']}"
            )
        if "read_only" in want and bool(mount.get("readOnly", False)) != want["read_only"]:
            problems.append(
                f"container {c['name']!r}: {want['path']} is {'read-only' if mount.get('readOnly') else 'read-write'}, "
                f"wants {'read-only' if want['read_only'] else 'read-write'}"
            )
        for kind in ("configMap", "emptyDir"):
            key = {"configMap": "config_map", "emptyDir": "empty_dir"}[kind]
            if want.get(key) and kind not in volume:
                problems.append(f"container {c['name']!r}: {want['path']} is not a {kind} volume")
    return problems


def _pod_label(op: Operand, image: str, want: dict) -> list[str]:
    labels = op.pod_metadata.get("labels") or {}
    return [
        f"its pods carry {k}={labels.get(k, '(none)')!r}, wants {v!r}" for k, v in want.items() if labels.get(k) != v
    ]


def _security(op: Operand, image: str, want: dict) -> list[str]:
    problems = []
    for c in op.containers(want.get("container", "*"), image):
        ctx = c.get("securityContext") or {}
        checks = {
            "privileged": bool(ctx.get("privileged", False)),
            "run_as_user": ctx.get("runAsUser"),
            "read_only_root": bool(ctx.get("readOnlyRootFilesystem", False)),
            "capabilities_add": sorted((ctx.get("capabilities") or {}).get("add") or []),
        }
        for key, have in checks.items():
            if key in want and have != (sorted(want[key]) if key == "capabilities_add" else want[key]):
                problems.append(f"container {c['name']!r}: {key} is {have!r}, wants {want[key]!r}")
    return problems


def _pod(op: Operand, image: str, want: dict) -> list[str]:
    defaults = {"hostPID": False, "hostIPC": False, "hostNetwork": False, "shareProcessNamespace": False}
    return [
        f"pod {k} is {op.pod.get(k, defaults.get(k))!r}, wants {v!r}"
        for k, v in want.items()
        if op.pod.get(k, defaults.get(k)) != v
    ]


def _probe(op: Operand, image: str, want: dict) -> list[str]:
    problems = []
    for c in op.containers(want.get("container", "*"), image):
        for kind in ("liveness", "readiness", "startup"):
            if kind in want:
                present = f"{kind}Probe" in c
                if present != (want[kind] == "present"):
                    problems.append(
                        f"container {c['name']!r} {'has' if present else 'has no'} {kind} probe, wants it {want[kind]}"
                    )
    return problems


def _command(op: Operand, image: str, want: dict) -> list[str]:
    problems = []
    for c in op.containers(want.get("container", "*"), image):
        if "command" in want and c.get("command") != want["command"]:
            problems.append(f"container {c['name']!r}: command is {c.get('command')!r}, wants {want['command']!r}")
    return problems


def _namespace_label(op: Operand, image: str, want: dict) -> list[str]:
    """The operand's namespace carries the labels (e.g. the Pod Security level that admits the pods
    an image creates there itself)."""
    found = [r for r in op.rec.of_type(NAMESPACE) if r.inputs["metadata"]["name"] == op.namespace]
    labels = (found[0].inputs["metadata"].get("labels") or {}) if found else {}
    return [
        f"namespace {op.namespace!r} carries {k}={labels.get(k, '(none)')!r}, wants {v!r}"
        for k, v in want.items()
        if labels.get(k) != v
    ]


def _can_signal(op: Operand, image: str, want: dict) -> list[str]:
    """The sender sees the receiver's processes (one PID namespace) and may signal them (same UID,
    root with CAP_KILL, or privileged)."""
    senders, receivers = op.containers(want["from"], image), op.containers(want["to"], image)
    if not senders or not receivers:
        return [f"no container {want['from']!r} or {want['to']!r}"]
    if not op.pod.get("shareProcessNamespace") and not op.pod.get("hostPID"):
        return [f"{want['from']!r} cannot see {want['to']!r}'s processes: the pod shares no process namespace"]
    s, r = senders[0].get("securityContext") or {}, receivers[0].get("securityContext") or {}
    if s.get("privileged") or (s.get("runAsUser") == r.get("runAsUser") and s.get("runAsUser") is not None):
        return []
    if s.get("runAsUser") == 0 and "KILL" in ((s.get("capabilities") or {}).get("add") or []):
        return []
    return [
        f"{want['from']!r} (uid {s.get('runAsUser')}) may not signal {want['to']!r} (uid {r.get('runAsUser')}) without CAP_KILL"
    ]


def _api_token(op: Operand, image: str, want: dict) -> list[str]:
    """Whether a container can read the pod's API token: every container when the pod automounts it
    (the pod's flag, else its service account's), else one that mounts the token directory itself."""
    account = op.pod.get("serviceAccountName", "default")
    sa = [
        r
        for r in op.rec.of_type(SERVICE_ACCOUNT)
        if r.inputs["metadata"]["name"] == account and r.inputs["metadata"].get("namespace") == op.namespace
    ]
    pod_says = op.pod.get("automountServiceAccountToken")
    automount = (
        pod_says if pod_says is not None else (sa[0].inputs.get("automountServiceAccountToken", True) if sa else True)
    )
    problems = []
    for c in op.containers(want["container"], image) or [{"name": want["container"]}]:
        own = any(
            m["mountPath"] == "/var/run/secrets/kubernetes.io/serviceaccount" for m in c.get("volumeMounts") or []
        )
        if bool(automount or own) != want["mounted"]:
            problems.append(
                f"container {c['name']!r} {'can' if automount or own else 'cannot'} read the API token; "
                f"wants it {'mounted' if want['mounted'] else 'not mounted'}"
            )
    return problems


def _pre_stop(op: Operand, image: str, want: dict) -> list[str]:
    """The container's preStop hook runs a shell that removes the given glob."""
    problems = []
    for c in op.containers(want["container"], image) or [{"name": want["container"]}]:
        command = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
        if not (command[:2] == ["sh", "-c"] and f"rm -f {want['removes']}" in " ".join(command[2:])):
            problems.append(
                f"container {c['name']!r} has no preStop hook that removes {want['removes']} (has {command or 'none'})"
            )
    return problems


CHECKS: dict[str, Callable[[Operand, str, Any], list[str]]] = {
    "daemonset_name": _daemonset_name,
    "service_account": _service_account,
    "rbac": _rbac,
    "no_api_token": _no_api_token,
    "env": _env_check,
    "mount": _mount,
    "pod_label": _pod_label,
    "security": _security,
    "pod": _pod,
    "probe": _probe,
    "command": _command,
    "can_signal": _can_signal,
    "namespace_label": _namespace_label,
    "pre_stop": _pre_stop,
    "api_token": _api_token,
}


def _runtime_class(op: Operand, image: str, want: str) -> list[str]:
    have = op.pod.get("runtimeClassName")
    return [] if have == want else [f"pod runtimeClassName is {have!r}, wants {want!r}"]


CHECKS["runtime_class"] = _runtime_class


def _peer_pods(op: Operand, image: str, want: dict) -> list[str]:
    """Another operand's pods, as this image finds them: in this operand's namespace (where it looks
    them up by label), with these pod labels and this nodeSelector."""
    peer = Operand(op.rec, want["operand"])
    if peer.daemonset is None:
        return [f"{want['operand']} (whose pods this image looks up) is not in the stack"]
    problems = []
    if peer.namespace != op.namespace:
        problems.append(f"{want['operand']} runs in namespace {peer.namespace!r}, this image looks in {op.namespace!r}")
    labels = peer.pod_metadata.get("labels") or {}
    problems += [
        f"{want['operand']}'s pods carry {k}={labels.get(k, '(none)')!r}, wants {v!r}"
        for k, v in (want.get("labels") or {}).items()
        if labels.get(k) != v
    ]
    selector = peer.pod.get("nodeSelector") or {}
    problems += [
        f"{want['operand']}'s pods select nodes on {k}={selector.get(k, '(none)')!r}, wants {v!r}"
        for k, v in (want.get("node_selector") or {}).items()
        if selector.get(k) != v
    ]
    return problems


CHECKS["peer_pods"] = _peer_pods


def _crd(op: Operand, image: str, want: str) -> list[str]:
    found = [
        r
        for r in op.rec.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
        if r.inputs.get("metadata", {}).get("name") == want
    ]
    return [] if found else [f"no CustomResourceDefinition {want} in the stack"]


def _flag(arg: str) -> str:
    return arg.split("=", 1)[0]


def _args(op: Operand, image: str, want: dict) -> list[str]:
    """`has`: these exact arguments are passed; `lacks`: no argument is this flag (with or without
    `=value`), e.g. a flag the image's version no longer defines."""
    problems = []
    for c in op.containers(want.get("container", "*"), image):
        args = list(c.get("args") or [])
        problems += [f"container {c['name']!r} does not pass {a}" for a in want.get("has") or [] if a not in args]
        problems += [
            f"container {c['name']!r} passes {a}, a flag this image does not take"
            for a in args
            if _flag(a) in (want.get("lacks") or [])
        ]
    return problems


CHECKS["crd"] = _crd
CHECKS["args"] = _args


def _signal_target(op: Operand, image: str, want: dict) -> list[str]:
    """config-manager signals the process whose argv[0] is exactly its PROCESS_TO_SIGNAL: the
    receiver's command[0], as the container runtime passes it on."""
    senders, receivers = op.containers(want["from"], image), op.containers(want["to"], image)
    if not senders or not receivers:
        return [f"no container {want['from']!r} or {want['to']!r}"]
    target = _env(senders[0]).get("PROCESS_TO_SIGNAL")
    argv0 = (receivers[0].get("command") or [None])[0]
    return (
        []
        if target is not None and target == argv0
        else [f"{want['from']!r} signals the process named {target!r}; {want['to']!r} starts as {argv0!r}"]
    )


def _container_image(op: Operand, image: str, want: dict) -> list[str]:
    """The named container runs an image of this repository (the part before the tag)."""
    found = op.containers(want["container"], image)
    if not found:
        return [f"no container {want['container']!r}"]
    have = found[0]["image"].rsplit(":", 1)[0]
    return (
        []
        if have == want["repository"]
        else [f"container {want['container']!r} runs {have!r}, wants {want['repository']!r}"]
    )


CHECKS["signal_target"] = _signal_target
CHECKS["container_image"] = _container_image


CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
# A ResourceClaimTemplate request's fields under `exactly` (resource.k8s.io/v1), by the clause's key.
_REQUEST_FIELDS = {
    "device_class": "deviceClassName",
    "allocation_mode": "allocationMode",
    "count": "count",
    "admin_access": "adminAccess",
}


def _resource_claim(op: Operand, image: str, want: dict) -> list[str]:
    """The pod's claim `claim` is made from the ResourceClaimTemplate `template` in the operand's
    namespace, whose request `request` asks for exactly these fields (an unset one is absent); with
    `container`, that container lists the claim in resources.claims (else the kubelet gives it none
    of the claim's devices)."""
    claims = {c.get("name"): c.get("resourceClaimTemplateName") for c in op.pod.get("resourceClaims") or []}
    if claims.get(want["claim"]) != want["template"]:
        return [
            f"the pod's claim {want['claim']!r} is made from {claims.get(want['claim'])!r}, wants {want['template']!r}"
        ]
    templates = [
        r.inputs
        for r in op.rec.of_type(CLAIM_TEMPLATE)
        if r.inputs["metadata"]["name"] == want["template"] and r.inputs["metadata"].get("namespace") == op.namespace
    ]
    if not templates:
        return [f"no ResourceClaimTemplate {want['template']!r} in namespace {op.namespace!r}"]
    requests = {r["name"]: r.get("exactly") or {} for r in templates[0]["spec"]["spec"]["devices"]["requests"]}
    if "request" in want and want["request"] not in requests:
        return [
            f"ResourceClaimTemplate {want['template']!r} has no request {want['request']!r} (has {sorted(requests)})"
        ]
    problems = []
    if "request" in want:
        exactly = requests[want["request"]]
        problems += [
            f"request {want['request']!r}: {field} is {exactly.get(field)!r}, wants {want[key]!r}"
            for key, field in _REQUEST_FIELDS.items()
            if key in want and exactly.get(field) != want[key]
        ]
    if "container" in want:
        found = op.containers(want["container"], image)
        listed = [c.get("name") for c in ((found[0].get("resources") or {}).get("claims") or [])] if found else []
        if want["claim"] not in listed:
            problems.append(f"container {want['container']!r} lists claims {listed}, not {want['claim']!r}")
    return problems


CHECKS["resource_claim"] = _resource_claim


def check(op: Operand, image: str, expectation: dict) -> list[str]:
    """One expectation; a mapping argument with `part: <suffix>` is checked against the operand's
    Deployment part of that suffix (NFD's master and gc) instead of its DaemonSet."""
    ((kind, argument),) = expectation.items()
    if isinstance(argument, dict) and "part" in argument:
        argument = dict(argument)
        view = op.part(argument.pop("part"))
        if view.daemonset is None:
            return [f"no Deployment {op.operand}-{expectation[kind]['part']} in the stack"]
        op = view
        if set(argument) == {"value"}:  # a scalar check with a part: {part: master, value: false}
            argument = argument["value"]
    return CHECKS[kind](op, image, argument)
