"""Nothing the program sets is deprecated in the pinned SDKs (pulumi-aws, pulumi-kubernetes; see
requirements.txt and requirements-dev.lock.txt).

The SDKs mark deprecations three ways, and the program must trip none of them:
- an input's Args class warns when the deprecated argument is set (`warnings.warn(...,
  DeprecationWarning)` plus `pulumi.log.warn("<arg> is deprecated: ...")` in `<Resource>Args.__init__`,
  e.g. `ClusterArgs(default_addons_to_removes=...)`). A resource built from keyword arguments skips
  that class, so the warning never fires at run time: the test replays every recorded input through
  the Args classes (nested ones too);
- a deprecated output or invoke result warns when read (`@_utilities.deprecated`, e.g.
  `GetPartitionResult.id`): caught while the stacks are recorded;
- a deprecated argument only documented as such ("The `managed_policy_arns` argument is deprecated"
  in pulumi_aws iam/role.py): read from the resource's own module text.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import sys
import typing
import warnings
from collections.abc import Iterator
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest
from pulumi import _types

from preview.offline import engine

# Resources the SDK has no class for: Kubernetes objects of a CRD the program brings itself.
NO_SDK_CLASS = {"kubernetes:monitoring.coreos.com/v1:ServiceMonitor"}
DOCUMENTED = re.compile(r"The `(\w+)` argument is deprecated")


class Captured(list):
    """Deprecation messages, from Python warnings and from the Pulumi log."""


def capture(monkeypatch) -> Captured:
    found = Captured()

    def log(message, *args, **kwargs):
        if "deprecat" in str(message).lower():
            found.append(str(message))

    monkeypatch.setattr(pulumi.log, "warn", log)
    monkeypatch.setattr(pulumi, "warn", log)
    return found


def sdk_class(type_: str) -> type | None:
    """The SDK class of a resource type token (aws:eks/cluster:Cluster, kubernetes:apps/v1:DaemonSet)."""
    if type_ == "pulumi:providers:kubernetes":
        return importlib.import_module("pulumi_kubernetes").Provider
    package, module, name = type_.split(":")
    if package == "aws":
        return getattr(importlib.import_module(f"pulumi_aws.{module.split('/')[0]}"), name)
    if package == "kubernetes":
        group, version = module.split("/")
        return getattr(importlib.import_module(f"pulumi_kubernetes.{group.split('.')[0]}.{version}"), name)
    return None


def args_class(resource: type) -> type:
    module = sys.modules[resource.__module__]
    return getattr(module, f"{resource.__name__}Args", None) or getattr(module, f"{resource.__name__}InitArgs")


def _nested(annotation: Any, namespace: dict) -> type | None:
    """The Args class an input annotation names (through Input, Optional, Sequence, Mapping)."""
    if isinstance(annotation, typing.ForwardRef):
        found = namespace.get(annotation.__forward_arg__)
        return found if isinstance(found, type) and _types.is_input_type(found) else None
    for arg in typing.get_args(annotation):
        found = _nested(arg, namespace)
        if found is not None:
            return found
    return None


def build(cls: type, inputs: dict[str, Any]) -> None:
    """Construct `cls` (an Args class) from recorded inputs, nested Args classes included, so the
    SDK's own deprecation checks run on exactly what the program sent."""
    names = {pulumi_name: py for py, pulumi_name in _types.input_type_py_to_pulumi_names(cls).items()}
    namespace = vars(sys.modules[cls.__module__])
    hints = cls.__init__.__annotations__
    kwargs = {}
    for key, value in inputs.items():
        py = names.get(key)
        if py is None:
            continue
        nested = _nested(hints.get(py), namespace)
        if nested is not None:
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    build(nested, item)
        kwargs[py] = value
    cls(**kwargs)


def documented_deprecations(resource: type) -> set[str]:
    return set(DOCUMENTED.findall(inspect.getsource(sys.modules[resource.__module__])))


def registrations(*recordings: engine.Recording) -> Iterator[engine.Registration]:
    for recording in recordings:
        yield from (r for r in recording.resources if r.custom and r.type not in NO_SDK_CLASS)


def test_recording_the_shipped_stacks_trips_no_deprecation(dev, prod, monkeypatch, caplog):
    # `dev` and `prod` were recorded first, so every SDK module is imported before the capture: a
    # module warns once on import about classes it merely holds (pulumi_aws.ec2 about
    # EncryptionControl), which says nothing about what the program uses.
    found = capture(monkeypatch)
    caplog.set_level(logging.WARNING)  # the mock engine's log: what reaches `pulumi up`'s diagnostics
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for stack in ("dev", "prod"):
            engine.run(engine.stack_file(stack))
    found += [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning) and "pulumi" in w.filename]
    found += [r.getMessage() for r in caplog.records if "deprecat" in r.getMessage().lower()]
    assert found == []


def test_no_recorded_input_is_deprecated_by_its_args_class(dev, prod, monkeypatch):
    found = capture(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for r in registrations(dev, prod):
            resource = sdk_class(r.type)
            assert resource is not None, r.type
            build(args_class(resource), r.inputs)
    found += [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert found == []


def test_no_recorded_input_is_documented_as_deprecated(dev, prod):
    used = []
    for r in registrations(dev, prod):
        resource = sdk_class(r.type)
        names = _types.input_type_py_to_pulumi_names(args_class(resource))
        used += [f"{r.type} {r.name}: {py}" for py in documented_deprecations(resource) if names.get(py) in r.inputs]
    assert used == []


def test_the_checks_see_what_the_sdk_marks_deprecated(monkeypatch):
    # The harness itself: a deprecated argument through an Args class, and a documented one.
    found = capture(monkeypatch)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        build(
            aws.eks.ClusterArgs,
            {"roleArn": "arn", "vpcConfig": {"subnetIds": []}, "defaultAddonsToRemoves": ["kube-proxy"]},
        )
    assert found and "default_addons_to_removes is deprecated" in found[0]
    assert "managed_policy_arns" in documented_deprecations(aws.iam.Role)


@pytest.mark.parametrize("type_", ["aws:iam/role:Role", "kubernetes:apps/v1:DaemonSet", "pulumi:providers:kubernetes"])
def test_every_recorded_type_has_its_sdk_class(type_):
    assert args_class(sdk_class(type_)) is not None
