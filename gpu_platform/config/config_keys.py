"""Which config keys a stack may hold. Pulumi reads `namespace:key`; a key this program reads
nowhere would be ignored silently, so it is an error."""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
from pathlib import Path

from gpu_platform.config.errors import ConfigProblem
from gpu_platform.config.stack import PROJECT, StackConfig

KNOWN_KEYS = tuple(f.alias for f in StackConfig.model_fields.values() if f.alias and f.alias.startswith(PROJECT))

# Namespaces this program's packages read: the project's own, and the AWS provider's (its default
# provider, which every AWS resource uses). The Kubernetes provider is built from the cluster, so
# `kubernetes:` config would do nothing.
PROVIDER_NAMESPACES = ("aws",)


@functools.cache
def provider_config_keys(package: str) -> tuple[str, ...]:
    """The config keys a provider SDK reads (`aws:region`, `aws:profile`, ...), from the installed
    SDK's own `config/vars.py` (`__config__.get('region')`), read as text: importing it is slow."""
    spec = importlib.util.find_spec(f"pulumi_{package}")
    if spec is None or not spec.submodule_search_locations:
        return ()
    source = Path(spec.submodule_search_locations[0], "config", "vars.py").read_text()
    return tuple(sorted(set(re.findall(r"__config__\.get[a-z_]*\('([A-Za-z0-9]+)'", source))))


def key_problem(key: str) -> ConfigProblem | None:
    """What is wrong with a config key's name, or None."""
    namespace, sep, name = key.partition(":")
    if namespace == "pulumi":
        return None  # the engine's own settings (pulumi:disable-default-providers, ...)
    if not sep:
        guess = f"{PROJECT}:{key}" if f"{PROJECT}:{key}" in KNOWN_KEYS else None
        return ConfigProblem(
            "a config key is namespace:key"
            + (f"; did you mean {guess}?" if guess else f" ({', '.join(KNOWN_KEYS)} or aws:<provider setting>)"),
            path=(key,),
        )
    if namespace == PROJECT:
        if key in KNOWN_KEYS:
            return None
        near = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
        return ConfigProblem(
            f"unknown key ({'did you mean ' + near[0] + '? ' if near else ''}valid: {', '.join(KNOWN_KEYS)})",
            path=(key,),
        )
    if namespace in PROVIDER_NAMESPACES:
        known = provider_config_keys(namespace)
        if name in known:
            return None
        near = difflib.get_close_matches(name, known, n=1)
        return ConfigProblem(
            f"not a setting of the {namespace} provider"
            + (f"; did you mean {namespace}:{near[0]}?" if near else f" (its settings: {', '.join(known)})"),
            path=(key,),
        )
    near = difflib.get_close_matches(namespace, [PROJECT, *PROVIDER_NAMESPACES], n=1)
    return ConfigProblem(
        f"no package of this program reads the namespace {namespace!r}"
        + (
            f"; did you mean {near[0]}:{name}?"
            if near
            else f" (namespaces: {PROJECT}, {', '.join(PROVIDER_NAMESPACES)})"
        ),
        path=(key,),
    )
