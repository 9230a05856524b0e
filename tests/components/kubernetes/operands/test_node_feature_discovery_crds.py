"""NFD's CRDs are the ones each release publishes (kubernetes-sigs/node-feature-discovery
deployment/base/nfd-crds/nfd-api-crds.yaml), vendored unmodified: equal to the tag's own file for
every shipped stack, pinned by hash for every tag the matrix renders; and, read on their own, they
refuse what NFD's Go types refuse and drop what they do not name."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from components.kubernetes.operands import node_feature_discovery as nfd
from gpu_platform.catalog import matrix
from gpu_platform.config import ConfigError
from tests.conftest import ROOT

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
PREFIX = "gpu-node-feature-discovery"
SOURCES = ROOT / "third_party" / "node-feature-discovery" / "SOURCES.yaml"


def _clone() -> Path:
    # A git worktree's .git is a file naming <clone>/.git/worktrees/<name>; shared/ sits beside the clone.
    git = ROOT / ".git"
    return Path(git.read_text().split("gitdir:", 1)[1].strip()).parents[2] if git.is_file() else ROOT


# The upstream CRD files at each tag, beside the clone (CI: ../shared; SOURCES.txt there names tag and commit).
REF = _clone().parent / "shared" / "upstream" / "ref"


def _rendered(rec) -> tuple[str, dict[str, dict]]:
    """The NFD image tag a recording renders and its CRDs by name (metadata annotations and spec)."""
    image = next(
        c["image"]
        for r in rec.of_type("kubernetes:apps/v1:DaemonSet")
        if r.name == f"{PREFIX}-ds"
        for c in r.inputs["spec"]["template"]["spec"]["containers"]
        if c["name"] == "worker"
    )
    crds = {
        r.inputs["metadata"]["name"]: {"annotations": r.inputs["metadata"]["annotations"], "spec": r.inputs["spec"]}
        for r in rec.of_type(CRD)
        if r.name.startswith(PREFIX)
    }
    return image.rsplit(":", 1)[1], crds


def _schemas(version: str) -> dict[str, dict]:
    """Each CRD's openAPIV3Schema by plural, as the platform renders them at an NFD version."""
    return {
        c["spec"]["names"]["plural"]: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for c in nfd.release_crds(version)
    }


@pytest.mark.parametrize("name", ["dev", "prod", "dra"])
def test_each_stacks_crds_equal_what_its_nfd_tag_publishes(request, name):
    tag, mine = _rendered(request.getfixturevalue(name))
    ref = REF / f"nfd-{tag}-nfd-api-crds.yaml"
    assert ref.is_file(), (
        f"stack {name} renders NFD {tag}, but {ref} (upstream's deployment/base/nfd-crds/"
        f"nfd-api-crds.yaml at {tag}) is missing: put shared/ beside the clone"
    )
    upstream = {
        d["metadata"]["name"]: {"annotations": d["metadata"]["annotations"], "spec": d["spec"]}
        for d in yaml.safe_load_all(ref.read_text())
        if d
    }
    assert mine == upstream


def test_every_vendored_file_has_the_hash_its_row_records():
    rows = yaml.safe_load(SOURCES.read_text())["releases"]
    found = {tag: hashlib.sha256((SOURCES.parent / r["file"]).read_bytes()).hexdigest() for tag, r in rows.items()}
    assert found == {tag: r["sha256"] for tag, r in rows.items()}


def test_every_nfd_tag_a_release_renders_has_its_crds_vendored():
    tags = {
        image.rsplit(":", 1)[1]
        for release in matrix.load().releases.values()
        for operand, image in release.images.items()
        if operand == "node-feature-discovery"
    }
    assert tags and tags <= set(yaml.safe_load(SOURCES.read_text())["releases"])


def test_an_override_to_a_tag_without_vendored_crds_names_the_key_and_the_remedy():
    with pytest.raises(ConfigError) as caught:
        nfd.release_crds("0.20.1")
    message = str(caught.value)
    assert "gpu-platform:operator.overrides.node-feature-discovery" in message
    assert "v0.19.0" in message and "python -m tools.vendor.nfd_crds v0.20.1" in message


def test_a_vendored_file_edited_by_hand_is_not_rendered(tmp_path, monkeypatch):
    copy = tmp_path / "nfd"
    shutil.copytree(SOURCES.parent, copy)
    target = copy / "v0.18.2" / "nfd-api-crds.yaml"
    target.write_text(target.read_text().replace("- In\n", "- In\n                            - Equals\n", 1))
    monkeypatch.setattr(nfd, "VENDORED", copy)
    nfd._read.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="sha256 is not f8a40048"):
            nfd.release_crds("0.18.2")
    finally:
        nfd._read.cache_clear()


def _refusal(obj: dict, schema: dict) -> str:
    """Why the API server would refuse an object on the schema ('' if it would not): types,
    required fields and enums, as apiextensions validates them (JSON Schema draft 4 semantics)."""
    error = jsonschema.exceptions.best_match(jsonschema.Draft4Validator(schema).iter_errors(obj))
    return error.message if error else ""


def _pruned(obj, schema: dict, root: bool = True):
    """What the API server stores of an object: fields the schema does not name are dropped
    (k8s.io/apiextensions-apiserver pkg/apiserver/schema/pruning/algorithm.go), except under
    x-kubernetes-preserve-unknown-fields; the root's apiVersion, kind and metadata are kept (metadata
    is ObjectMeta, pruned by its own rules)."""
    if isinstance(obj, list):
        return [_pruned(v, schema.get("items", {}), False) for v in obj]
    if not isinstance(obj, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return obj
    if "additionalProperties" in schema:
        return {k: _pruned(v, schema["additionalProperties"], False) for k, v in obj.items()}
    props, kept = schema.get("properties", {}), ({"apiVersion", "kind", "metadata"} if root else set())
    return {k: v if k in kept else _pruned(v, props[k], False) for k, v in obj.items() if k in props or k in kept}


@pytest.fixture
def node_feature(dev) -> dict:
    return _rendered(dev)[1][f"nodefeatures.{nfd.GROUP}"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


GOOD = {
    "apiVersion": f"{nfd.GROUP}/v1alpha1",
    "kind": "NodeFeature",
    "metadata": {"name": "node-a"},
    "spec": {
        "labels": {"nvidia.com/gpu.present": "true"},
        "features": {
            "flags": {"cpu.cpuid": {"elements": {"AVX2": {}}}},
            "attributes": {"kernel.version": {"elements": {"major": "6"}}},
        },
    },
}


def test_a_nodefeature_label_that_is_not_a_string_is_refused(node_feature):
    # NodeFeatureSpec.Labels is map[string]string (api/nfd/v1alpha1/types.go:55 v0.18.2).
    bad = {**GOOD, "spec": {"labels": {"nvidia.com/gpu.count": 8}}}
    assert (_refusal(GOOD, node_feature), _refusal(bad, node_feature)) == ("", "8 is not of type 'string'")


def test_a_nodefeature_without_spec_is_refused(node_feature):
    # NodeFeature.Spec has no omitempty or +optional (types.go:45 v0.18.2).
    bad = {k: v for k, v in GOOD.items() if k != "spec"}
    assert _refusal(bad, node_feature) == "'spec' is a required property"


def test_a_field_nfd_does_not_define_is_pruned_from_a_nodefeature(node_feature):
    sent = {**GOOD, "spec": {**GOOD["spec"], "owner": "someone"}, "status": {"x": 1}}
    assert _pruned(sent, node_feature) == GOOD


def _walk(node: dict, path: str = "$"):
    yield path, node
    children = [(f"{path}.{k}", v) for k, v in node.get("properties", {}).items()]
    extra = node.get("additionalProperties")
    children += [(f"{path}.*", extra)] if isinstance(extra, dict) else []
    children += [(f"{path}[]", node["items"])] if "items" in node else []
    for child_path, child in children:
        yield from _walk(child, child_path)


@pytest.mark.parametrize("tag", ["0.14.2", "0.15.4", "0.16.3", "0.17.3", "0.18.2", "0.19.0"])
def test_every_level_of_every_schema_has_a_type_so_it_is_structural(tag):
    # A structural schema names a type at every level (apiextensions.k8s.io/v1, "Specifying a
    # structural schema"); without one a CRD needs x-kubernetes-preserve-unknown-fields.
    untyped = [
        f"{plural} {path}"
        for plural, schema in _schemas(tag).items()
        for path, node in _walk(schema)
        if "type" not in node
    ]
    assert untyped == []


def _rule(expression: dict, term_extra: dict | None = None) -> dict:
    term = {"feature": "pci.device", "matchExpressions": {"vendor": expression}, **(term_extra or {})}
    return {
        "apiVersion": f"{nfd.GROUP}/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": "r"},
        "spec": {"rules": [{"name": "r", "labels": {"a": "b"}, "matchFeatures": [term]}]},
    }


def test_an_unknown_match_op_is_refused_in_a_nodefeaturerule():
    # MatchOp's kubebuilder enum (types.go:308 v0.18.2).
    schema = _schemas("0.18.2")["nodefeaturerules"]
    assert _refusal(_rule({"op": "In", "value": ["10de"]}), schema) == ""
    assert "is not one of" in _refusal(_rule({"op": "Equals", "value": ["10de"]}), schema)


def test_the_ge_op_is_refused_before_0_18_and_admitted_from_it():
    # Ge, Le and GeLe join MatchOp's enum in v0.18 (types.go:292 v0.17.3 lacks them, :308 v0.18.2 has them).
    rule = _rule({"op": "Ge", "value": ["2"]})
    assert "is not one of" in _refusal(rule, _schemas("0.17.3")["nodefeaturerules"])
    assert _refusal(rule, _schemas("0.18.2")["nodefeaturerules"]) == ""


def test_a_term_without_match_expressions_is_refused_only_in_0_14():
    # FeatureMatcherTerm.MatchExpressions is a required value in v0.14.2 (pkg/apis/nfd/v1alpha1/types.go:198)
    # and an optional pointer from v0.15.4 (types.go:202), beside matchName.
    rule = _rule({"op": "Exists"})
    del rule["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"]
    assert _refusal(rule, _schemas("0.14.2")["nodefeaturerules"]) == "'matchExpressions' is a required property"
    assert _refusal(rule, _schemas("0.15.4")["nodefeaturerules"]) == ""
