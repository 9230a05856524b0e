"""Every release of the matrix rendered by the real program, and readers of what it registered.

`rendered(release, baked)` is the prod stack (a MIG pool, the baked toolkit) on `release`, or its twin
with the toolkit DaemonSet and a time-sliced pool (`baked=False`), run through the engine of the
offline preview (preview/offline/engine.py): what the real components (operands/component.py and the
operand modules, through components/platform.py) register, not a test-side copy of their wiring.
The release-parametrised operand tests read their Kubernetes objects from it
(tests/gpu_platform/catalog/test_operand_contracts.py, tests/components/kubernetes/operands/test_versions_*.py).

Each recording is made once per process (tests/recordings.py, whose cache credits every test that
reads it under mutmut's coverage pass), and once per run: mark every test that reads a release's recordings with
`group(release)` (or parametrise it with `each`), and pytest.ini's `--dist loadgroup` runs a
release's tests on one worker.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from unittest import mock

import kubernetes_validate
import pytest
from kubernetes_validate import utils as validate_utils

from gpu_platform.catalog import operands, versions
from preview.offline import engine
from preview.recording import Registration
from tests import recordings
from tests.conftest import stack_config


def _variant(config: dict, release: str, baked: bool) -> None:
    config["gpu-platform:operator"]["release"] = release
    config["gpu-platform:nodeImage"]["toolkitBaked"] = baked
    if not baked:
        for pool in config["gpu-platform:nodePools"]:
            if not pool.get("mig"):
                pool["timeSlicing"] = {"replicas": 2}


def rendered(release: str, baked: bool) -> engine.Recording:
    """Read-only, and recorded once per worker (tests/recordings.py)."""
    config = stack_config("prod")
    _variant(config, release, baked)
    return recordings.of_config(config, f"contract-{release}-{'baked' if baked else 'ds'}")


def group(release: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that read `release`'s recordings: one worker records it."""
    return pytest.mark.xdist_group(f"release-{release}")


def each(names: Iterable[str], value: Callable[[str], object] = lambda name: name) -> list:
    """Parameters for `pytest.mark.parametrize`: each release (its name, or `value(name)`), id'd by
    its name and in its group."""
    return [pytest.param(value(name), id=name, marks=group(name)) for name in names]


# --- what the components registered ---------------------------------------------------------------

COMPONENT_TYPES = {row.operand: f"gpu-platform:operands:{row.component}" for row in operands.rows()}
CLUSTER_SCOPED = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}


def objects(rec: engine.Recording, operand: str) -> list[Registration]:
    """The Kubernetes objects the operand's component registered ([] when the stack leaves it out)."""
    components = [r for r in rec.resources if r.type == COMPONENT_TYPES[operand]]
    assert len(components) <= 1, f"{len(components)} {operand} components"
    return [r for c in components for r in rec.descendants(c.urn) if r.type.startswith("kubernetes:")]


def of_kind(rec: engine.Recording, operand: str, kind: str) -> list[Registration]:
    return [r for r in objects(rec, operand) if r.inputs["kind"] == kind]


def workload(
    rec: engine.Recording, operand: str, kind: str = "DaemonSet", name: str | None = None, variant: str = ""
) -> Registration:
    """The operand's DaemonSet (`variant`: the one for those nodes, e.g. `mig`; "": the operand's own),
    or its Deployment (or any kind) named `name`."""
    app = f"{operand}-{variant}" if variant else operand

    def chosen(r: Registration) -> bool:
        if name is not None:
            return r.inputs["metadata"]["name"] == name
        return (
            kind != "DaemonSet" or r.inputs["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == app
        )

    found = [r for r in of_kind(rec, operand, kind) if chosen(r)]
    if len(found) != 1:
        raise LookupError(f"{len(found)} {kind}s{' named ' + name if name else ''} {app} under the {operand} component")
    return found[0]


def pod(obj: Registration) -> dict:
    return obj.inputs["spec"]["template"]["spec"]


def containers(obj: Registration) -> list[dict]:
    return [*pod(obj).get("initContainers", []), *pod(obj)["containers"]]


def container(obj: Registration, name: str) -> dict:
    found = [c for c in containers(obj) if c["name"] == name]
    if len(found) != 1:
        raise LookupError(f"{len(found)} containers named {name!r} in {obj.inputs['metadata']['name']}")
    return found[0]


def env(c: dict) -> dict:
    """Name -> value (a `valueFrom` entry: its source, as a dict)."""
    return {e["name"]: e["value"] if "value" in e else e["valueFrom"] for e in c.get("env", [])}


def host_mounts(obj: Registration, c: dict) -> dict[str, tuple[str, str]]:
    """The hostPath volumes the container mounts: volume name -> (host path, mount path)."""
    volumes = {v["name"]: v for v in pod(obj).get("volumes", [])}
    return {
        m["name"]: (volumes[m["name"]]["hostPath"]["path"], m["mountPath"])
        for m in c.get("volumeMounts", [])
        if "hostPath" in volumes.get(m["name"], {})
    }


def mounted_config(rec: engine.Recording, obj: Registration, c: dict, directory: str) -> dict | None:
    """The data of the recorded ConfigMap the container mounts at `directory` (None: no ConfigMap there)."""
    volumes = {v["name"]: v for v in pod(obj).get("volumes", [])}
    namespace = obj.inputs["metadata"].get("namespace")
    for mount in c.get("volumeMounts", []):
        source = volumes.get(mount["name"], {}).get("configMap")
        if mount["mountPath"] != directory or not source:
            continue
        for cm in rec.resources:
            meta = cm.inputs.get("metadata") or {}
            if cm.inputs.get("kind") == "ConfigMap" and (meta.get("name"), meta.get("namespace")) == (
                source["name"],
                namespace,
            ):
                return cm.inputs.get("data") or {}
    return None


def bound_rules(rec: engine.Recording, obj: Registration, kind: str) -> list[dict]:
    """The rules of the `kind` objects (Role or ClusterRole) bound to the workload's service account:
    by RoleBindings in its namespace, or ClusterRoleBindings."""
    account, namespace = pod(obj).get("serviceAccountName", "default"), obj.inputs["metadata"].get("namespace")
    by_kind: dict[str, list[dict]] = {}
    for r in rec.resources:
        if r.type.startswith("kubernetes:"):
            by_kind.setdefault(r.inputs.get("kind"), []).append(r.inputs)
    rules: list[dict] = []
    for binding in by_kind.get("RoleBinding" if kind == "Role" else "ClusterRoleBinding", []):
        if kind == "Role" and binding["metadata"].get("namespace") != namespace:
            continue
        if not any(
            s.get("kind") == "ServiceAccount" and s.get("name") == account and s.get("namespace") == namespace
            for s in binding.get("subjects") or []
        ):
            continue
        ref = binding["roleRef"]
        for role in by_kind.get(kind, []) if ref["kind"] == kind else []:
            meta = role["metadata"]
            if meta["name"] == ref["name"] and (kind == "ClusterRole" or meta.get("namespace") == namespace):
                rules += role.get("rules") or []
    return rules


def dangling(rec: engine.Recording, obj: Registration) -> list[str]:
    """What a workload's pod names that is not there: a volume its containers mount but the pod does
    not declare (the API server refuses the object), a ConfigMap or a service account that is not
    recorded in its namespace (its pods never start)."""
    namespace = obj.inputs["metadata"].get("namespace")
    recorded = {
        (r.inputs.get("kind"), *((r.inputs.get("metadata") or {}).get(k) for k in ("name", "namespace")))
        for r in rec.resources
        if r.type.startswith("kubernetes:")
    }
    volumes = {v["name"]: v for v in pod(obj).get("volumes", [])}
    found = [
        f"container {c['name']} mounts {m['name']}, which the pod does not declare"
        for c in containers(obj)
        for m in c.get("volumeMounts", [])
        if m["name"] not in volumes
    ]
    found += [
        f"volume {v['name']} names ConfigMap {v['configMap']['name']}, not in namespace {namespace}"
        for v in volumes.values()
        if "configMap" in v and ("ConfigMap", v["configMap"]["name"], namespace) not in recorded
    ]
    account = pod(obj).get("serviceAccountName", "default")
    if ("ServiceAccount", account, namespace) not in recorded:
        found.append(f"service account {account} is not in namespace {namespace}")
    return found


# --- strict schema validation ---------------------------------------------------------------------

OLDEST_SCHEMA = "1.25"  # the oldest Kubernetes kubernetes-validate has schemas for


def kubernetes_versions(row) -> list[str]:
    """The oldest and newest Kubernetes a matrix release supports (the oldest no older than the schemas)."""
    low = row.kubernetes_min if versions.at_least(row.kubernetes_min, OLDEST_SCHEMA) else OLDEST_SCHEMA
    return sorted({low, row.kubernetes_max}, key=versions.parse)


_read_schema = validate_utils.schema_contents


@functools.cache
def _schema(filename: str, version: str):
    return _read_schema(filename, version)


NAMESPACE = "gpu-operator"  # the prod stack's namespace, where every namespaced operand object belongs


def problems(rec: engine.Recording, obj: Registration, row) -> list[str]:
    """What is wrong with a recorded object for matrix release `row`: a strict schema error on the
    oldest or newest Kubernetes the release supports, a namespace other than the stack's (none for a
    cluster-scoped kind), and for a workload what its pod names that is not there (`dangling`)."""
    kind, meta = obj.inputs["kind"], obj.inputs["metadata"]
    found = [f"on {k8s}: {error}" for k8s in kubernetes_versions(row) if (error := strict_error(obj.inputs, k8s))]
    want = None if kind in CLUSTER_SCOPED else NAMESPACE
    if meta.get("namespace") != want:
        found.append(f"namespace {meta.get('namespace')!r}, not {want!r}")
    if kind in ("DaemonSet", "Deployment"):
        found += dangling(rec, obj)
    return [f"{kind} {meta['name']}: {problem}" for problem in found]


def strict_error(obj: dict, kubernetes: str) -> str | None:
    """kubernetes_validate's strict check of `obj` for Kubernetes `kubernetes` (major.minor): None,
    or what is wrong. The same check, but each schema file is parsed once per process (the library
    parses the version's 1.4 MB definitions at every call, most of its time)."""
    with mock.patch.object(validate_utils, "schema_contents", _schema):
        try:
            kubernetes_validate.validate(obj, kubernetes + ".0", strict=True)
        except kubernetes_validate.ValidationError as error:
            return error.message
    return None
