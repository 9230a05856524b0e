"""What the lifecycle model reads of a recording: each GPU pool's node (labels, taints, GPUs) and each
operand DaemonSet's pod (where it runs, its init waits and checks, its containers, what its pre-stop
hooks delete), as the program registered them."""

from __future__ import annotations

import base64
import email
import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from gpu_platform.catalog import image_refs, yaml_files
from gpu_platform.catalog.addon_privileges import ADDON, ADDON_VERSION
from gpu_platform.config import StackConfig, parse
from gpu_platform.interface import contract, workloads
from gpu_platform.interface.props import dig, mapping, sequence
from gpu_platform.interface.resource_types import CONFIG_MAP, DAEMONSET, EKS_ADDON, EKS_NODE_GROUP, LAUNCH_TEMPLATE
from preview.lifecycle import rules as lifecycle_rules
from preview.recording import Recording

OPERAND_LABEL = "gpu-platform.io/operand"
# A blue-green pool's readiness gate (components/kubernetes/readiness_gate.py), by its name label.
GATE_NAME = "gpu-readiness-gate"
_WAIT = re.compile(r"\[ -f (?P<dir>/\S+)/(?P<marker>[\w.-]+) \]")
# The paths of an `rm -f`, up to the next shell operator.
_REMOVE = re.compile(r"rm -f (?P<paths>(?:[^\s;&|]+ ?)+)")
# Node groups spell taint effects as EKS does; the kubelet registers them in Kubernetes spelling.
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True)
class Step:
    """One container of a pod: a wait for a marker, a validator check, or an operand's process."""

    container: str
    wait_for: str | None = None  # a marker file name the container loops on
    check: str | None = None  # the validator's COMPONENT
    with_workload: bool = False
    privileged: bool = False
    capabilities: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    ready_marker: str | None = None  # the marker its readiness probe tests for


@dataclass(frozen=True)
class PodTemplate:
    daemonset: str
    operand: str
    selector: dict[str, str]
    tolerations: tuple[dict[str, Any], ...]
    init: tuple[Step, ...]
    main: tuple[Step, ...]
    deletes: tuple[str, ...]  # marker globs its pre-stop hooks remove
    image_version: str  # the tag's version of its first container's image
    app: str  # the pods' `app` label, which the MIG manager finds GPU clients by
    grace: int  # its terminationGracePeriodSeconds as rendered, else the Kubernetes default (rules.yaml)
    pre_stop: bool  # a container has a pre-stop hook
    # Required node affinity: nodeSelectorTerms (any one matches), each a tuple of matchExpressions.
    affinity: tuple[tuple[dict[str, Any], ...], ...] = ()
    # A long-running process that holds every GPU while it runs (an nv-hostengine), whatever its app label.
    holds_gpus: bool = False

    @property
    def leaves_within(self) -> int:
        """The longest a deleted pod of it stays on the node: its grace period, which its pre-stop hooks
        run inside, and the kubelet's floor before SIGKILL after a hook that used it all."""
        return self.grace + (lifecycle_rules.load().pre_stop_floor if self.pre_stop else 0)

    def tolerates(self, taints: tuple[dict[str, str], ...]) -> bool:
        def covered(taint: dict[str, str]) -> bool:
            for t in self.tolerations:
                if t.get("operator") == "Exists" and not t.get("key"):
                    return True
                if (
                    t.get("key") == taint["key"]
                    and t.get("effect") in (None, "", taint["effect"])
                    and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
                ):
                    return True
            return False

        return all(covered(t) for t in taints if t["effect"] in ("NoSchedule", "NoExecute"))

    def selects(self, labels: dict[str, str], taints: tuple[dict[str, str], ...]) -> bool:
        return (
            all(labels.get(k) == v for k, v in self.selector.items())
            and (not self.affinity or any(all(_matches(e, labels) for e in term) for term in self.affinity))
            and self.tolerates(taints)
        )


def _matches(expression: dict[str, Any], labels: dict[str, str]) -> bool:
    """A node selector requirement (k8s.io/api core/v1 NodeSelectorOperator): NotIn and DoesNotExist
    match a node without the key."""
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or ()
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError(
        f"node affinity operator {operator!r} is not one the lifecycle model reads (In, NotIn, Exists, DoesNotExist)"
    )


@dataclass(frozen=True)
class Pool:
    name: str
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...]
    gpus: int
    gpu_model: str
    # The runtime binaries containerd's boot config (nodeadm's, merged with the pool's NodeConfig
    # spec.containerd.config) names for handler `nvidia`: registered from boot when installed.
    boot_runtime: str | None = None


@dataclass(frozen=True)
class StackView:
    config: StackConfig
    pools: tuple[Pool, ...]
    pods: tuple[PodTemplate, ...]  # in creation (stage) order
    plugin_configs: dict[str, dict[str, Any]]  # the device plugin's config files, by name
    mig_configs: dict[str, dict[str, int]]  # MIG layouts per GPU, by config name ({} = MIG off)
    toolkit_mode: str  # the runtime mode the node's toolkit resolves `auto` to

    def pool(self, name: str) -> Pool:
        return next(p for p in self.pools if p.name == name)


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {
        e["name"]: str(e.get("value", "")) for e in container.get("env") or [] if isinstance(e, dict) and "value" in e
    }


def _marker_dirs(container: dict[str, Any], volumes: dict[str, Any], markers_dir: str) -> tuple[str, ...]:
    """Where the container sees the host's marker directory: the directory itself, and under each
    mount of a hostPath volume that is it or holds it (`/run/nvidia` at `/host-run` gives
    `/host-run/validations`)."""
    found = [markers_dir]
    for mount in container.get("volumeMounts") or []:
        host = (((volumes.get(mount.get("name")) or {}).get("hostPath") or {}).get("path") or "").rstrip("/")
        if host and (markers_dir == host or markers_dir.startswith(host + "/")) and not mount.get("subPath"):
            found.append(mount["mountPath"].rstrip("/") + markers_dir[len(host) :])
    return tuple(dict.fromkeys(found))


def _unread(what: str, container: str, text: str, dirs: tuple[str, ...], form: str) -> ValueError:
    # A form the model cannot read would be taken for none: refuse it, so the model is taught the new form.
    return ValueError(
        f"container {container!r}'s {what} refers to the marker directory ({', '.join(dirs)}) in a form "
        f"the lifecycle model does not read (it reads {form}): {text!r}"
    )


def _step(container: dict[str, Any], dirs: tuple[str, ...]) -> Step:
    env = _env(container)
    text = " ".join(map(str, [*(container.get("command") or []), *(container.get("args") or [])]))
    waits = [m["marker"] for m in _WAIT.finditer(text) if m["dir"] in dirs]
    if "COMPONENT" not in env and any(d in _WAIT.sub("", text) for d in dirs):
        raise _unread("command", container["name"], text, dirs, "`until [ -f DIR/MARKER ]`")
    security = container.get("securityContext") or {}
    probe = " ".join(map(str, (((container.get("readinessProbe") or {}).get("exec") or {}).get("command") or [])))
    ready = next((r for d in dirs if (r := re.fullmatch(rf"test -f {re.escape(d)}/([\w.-]+)", probe))), None)
    if ready is None and any(d in probe for d in dirs):
        raise _unread("readiness probe", container["name"], probe, dirs, "exec `test -f DIR/MARKER`")
    return Step(
        container=container["name"],
        wait_for=waits[0] if waits and "COMPONENT" not in env else None,
        check=env.get("COMPONENT"),
        with_workload=env.get("WITH_WORKLOAD") == "true",
        privileged=bool(security.get("privileged")),
        capabilities=tuple((security.get("capabilities") or {}).get("add") or ()),
        env=tuple(sorted(env.items())),
        ready_marker=ready.group(1) if ready else None,
    )


def _deletes(containers: list[dict[str, Any]], volumes: dict[str, Any], markers_dir: str) -> tuple[str, ...]:
    globs = []
    for container in containers:
        dirs = _marker_dirs(container, volumes, markers_dir)
        hook = ((container.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}
        command = " ".join(map(str, hook.get("command") or []))
        # Every mention of the directory must be a path of an `rm -f`: a `cd DIR`, a `find DIR -delete`
        # beside an `rm -f` elsewhere would otherwise delete markers the model never sees go.
        if any(d in _REMOVE.sub("", command) for d in dirs):
            raise _unread("pre-stop hook", container["name"], command, dirs, "`rm -f DIR/GLOB`")
        for match in _REMOVE.finditer(command):
            for path in match["paths"].split():
                if any(d in path for d in dirs) and not any(path.startswith(d + "/") for d in dirs):
                    raise _unread("pre-stop hook", container["name"], command, dirs, "`rm -f DIR/GLOB`")
                globs += [path.removeprefix(d + "/") for d in dirs if path.startswith(d + "/")]
    return tuple(globs)


def _version(image: str) -> str:
    # The tag's, not the digest's: `x:v25.10.1@sha256:...` is 25.10.1 (an override may pin a digest).
    found = re.search(r"\d+\.\d+\.\d+", image_refs.tag_of(image))
    return found.group(0) if found else "0.0.0"


def _required_terms(spec: dict[str, Any]) -> tuple[tuple[dict[str, Any], ...], ...]:
    """A pod's required node affinity (workloads.required_node_terms), refusing what the model cannot match."""
    terms = sequence(
        dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution").get("nodeSelectorTerms")
    )
    if any(mapping(t).get("matchFields") for t in terms):
        raise ValueError("node affinity by matchFields is not one the lifecycle model reads (matchExpressions)")
    return tuple(tuple(dict(e) for e in term) for term in workloads.required_node_terms(spec))


def pod_template(daemonset: dict[str, Any], name: str = "") -> PodTemplate:
    """`name`: the resource's name, for a DaemonSet whose object name Pulumi chooses (a readiness gate)."""
    rules = lifecycle_rules.load()
    markers_dir = rules.markers_dir
    meta, spec = daemonset["metadata"], daemonset["spec"]["template"]["spec"]
    pod_labels = (daemonset["spec"]["template"].get("metadata") or {}).get("labels") or {}
    containers = spec.get("containers") or []
    all_containers = [*(spec.get("initContainers") or []), *containers]
    grace = spec.get("terminationGracePeriodSeconds")
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    return PodTemplate(
        daemonset=meta.get("name") or name,
        operand=(meta.get("labels") or {}).get(OPERAND_LABEL)
        or (meta.get("labels") or {}).get("app.kubernetes.io/name", ""),
        selector=dict(spec.get("nodeSelector") or {}),
        tolerations=tuple(spec.get("tolerations") or ()),
        init=tuple(_step(c, _marker_dirs(c, volumes, markers_dir)) for c in spec.get("initContainers") or []),
        main=tuple(_step(c, _marker_dirs(c, volumes, markers_dir)) for c in containers),
        deletes=_deletes(all_containers, volumes, markers_dir),
        image_version=_version(containers[0]["image"]) if containers else "0.0.0",
        app=str(pod_labels.get("app", "")),
        grace=int(grace) if grace is not None else rules.termination_grace_default,
        pre_stop=any(((c.get("lifecycle") or {}).get("preStop")) for c in all_containers),
        affinity=_required_terms(spec),
    )


def _boot_runtime(user_data: str) -> str | None:
    """The `nvidia` runtime's BinaryName in the NodeConfig's containerd config of a pool's user data
    (a MIME multipart the launch template carries base64-encoded), if it registers one."""
    text = base64.b64decode(user_data).decode() if user_data else ""
    for part in email.message_from_string(text).walk():
        if part.get_content_type() != "application/node.eks.aws":
            continue
        document = yaml_files.load(part.get_payload()) or {}
        config = ((document.get("spec") or {}).get("containerd") or {}).get("config") or ""
        runtimes = (
            ((tomllib.loads(config).get("plugins") or {}).get("io.containerd.grpc.v1.cri") or {}).get("containerd")
            or {}
        ).get("runtimes") or {}
        binary = ((runtimes.get("nvidia") or {}).get("options") or {}).get("BinaryName")
        if binary:
            return binary
    return None


def _pool(group: dict[str, Any], user_data: str = "") -> Pool:
    tags = group.get("tags") or {}
    taints = tuple(
        {"key": t["key"], "value": t.get("value", ""), "effect": _EFFECTS.get(t["effect"], t["effect"])}
        for t in group.get("taints") or ()
    )
    return Pool(
        name=tags[contract.POOL_LABEL],
        labels=dict(group.get("labels") or {}),
        taints=taints,
        gpus=int(float(tags.get(contract.GPU_COUNT_TAG, 0))),
        gpu_model=tags.get(contract.GPU_MODEL_TAG, ""),
        boot_runtime=_boot_runtime(user_data),
    )


def addon_dcgm_server(addon: dict[str, Any]) -> PodTemplate:
    """The node monitoring add-on's DCGM server on a node, from the add-on's configuration values and
    what its chart renders around them (rules.yaml addon_dcgm_server)."""
    facts = lifecycle_rules.load().addon_dcgm_server
    dcgm = (json.loads(addon.get("configurationValues") or "{}") or {}).get("dcgmAgent") or {}
    return PodTemplate(
        daemonset=facts["daemonset"],
        operand=facts["container"],
        selector=dict(dcgm.get("nodeSelector") or {}),
        tolerations=tuple(dcgm.get("tolerations") or ()),
        init=(),
        main=(Step(facts["container"], privileged=True, env=tuple(sorted(facts["env"].items()))),),
        deletes=(),
        image_version=ADDON_VERSION,
        app=str((dcgm.get("podLabels") or {}).get("app", "")),
        grace=lifecycle_rules.load().termination_grace_default,
        pre_stop=False,
        affinity=_required_terms(dcgm),
        holds_gpus=True,
    )


def view(recording: Recording) -> StackView:
    config = parse(recording.config)
    groups = [
        r.inputs for r in recording.of_type(EKS_NODE_GROUP) if contract.POOL_LABEL in (r.inputs.get("tags") or {})
    ]
    user_data = {
        (r.inputs.get("tags") or {}).get(contract.POOL_LABEL): r.inputs.get("userData") or ""
        for r in recording.of_type(LAUNCH_TEMPLATE)
    }
    addons = tuple(
        addon_dcgm_server(r.inputs) for r in recording.of_type(EKS_ADDON) if r.inputs.get("addonName") == ADDON
    )
    pods = addons + tuple(
        pod_template(r.inputs, r.name)
        for r in recording.of_type(DAEMONSET)
        if OPERAND_LABEL in (labels := r.inputs["metadata"].get("labels") or {})
        or labels.get("app.kubernetes.io/name") == GATE_NAME
    )
    maps = {r.inputs["metadata"]["name"]: r.inputs.get("data") or {} for r in recording.of_type(CONFIG_MAP)}
    plugin = {
        name: yaml_files.load(text) for name, text in maps.get("nvidia-device-plugin-available-configs", {}).items()
    }
    mig_file = (
        yaml_files.load(maps.get("nvidia-mig-manager-mig-parted-config", {}).get("config.yaml", "") or "{}") or {}
    )
    mig = {}
    for name, entries in (mig_file.get("mig-configs") or {}).items():
        layout: dict[str, int] = {}
        for entry in entries:
            if entry.get("mig-enabled"):
                for profile, count in (entry.get("mig-devices") or {}).items():
                    layout[profile] = layout.get(profile, 0) + int(count)
        mig[name] = layout
    toolkit = config.release.toolkit_version
    return StackView(
        config,
        tuple(_pool(g, user_data.get(g["tags"][contract.POOL_LABEL], "")) for g in groups),
        pods,
        plugin,
        mig,
        lifecycle_rules.load().toolkit_mode(toolkit),
    )
