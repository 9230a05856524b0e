"""The accepted-failures list (tools/security/accepted.yaml): every check checkov fails on, and why.

Shape, one block per check id (what `make scan-accept` writes):

    CKV_K8S_16:
      title: Container should not be privileged          # checkov's name of the check
      reason: ...                                         # optional: for every resource below without its own
      resources:
        DaemonSet/gpu-operator/nvidia-validator:
          stacks: [dev, prod]                             # where it fails
          reason: the driver check chroots into the host to run nvidia-smi

A resource's own `reason` wins over the check's. `make scan-accept` writes `reason: TODO` on every
new resource, even under a check that has a reason, so that a new failure is never accepted by a
reason written for another object; the scan refuses a TODO. Delete the TODO line to take the
check's reason, or replace it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tools.security.findings import Finding

PATH = Path(__file__).with_name("accepted.yaml")
TODO = "TODO"
REGENERATE = "make scan-accept"

HEADER = f"""\
# Every check checkov fails on the rendered manifests, per resource and stack, with the reason it is
# accepted (tools/security/accepted.py says the shape). `make scan` fails on a failure missing here, on an
# entry here that no longer fails, and on a reason left TODO. `{REGENERATE}` rewrites this file from
# the current failures, keeping the reasons of those still failing; write the TODOs, then run it
# again to regenerate the "Security scan" block of docs/ci-and-supply-chain.md.
"""


class ListError(Exception):
    """accepted.yaml is not in the shape above; the message names the key path."""


@dataclass
class Resource:
    stacks: list[str]
    reason: str | None = None


@dataclass
class Check:
    title: str = ""
    reason: str | None = None
    resources: dict[str, Resource] = field(default_factory=dict)


def _text(value: object, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ListError(f"{where}: {value!r} is not a non-empty string")
    return value.strip()


def parse(data: object, source: str = "accepted.yaml") -> dict[str, Check]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ListError(f"{source}: a mapping of check ids is expected, not {type(data).__name__}")
    checks: dict[str, Check] = {}
    for check_id, body in data.items():
        where = f"{source}: {check_id}"
        if not isinstance(body, dict) or not isinstance(body.get("resources"), dict):
            raise ListError(f"{where}.resources: a mapping of Kind/namespace/name to {{stacks, reason}} is expected")
        unknown = set(body) - {"title", "reason", "resources"}
        if unknown:
            raise ListError(f"{where}: unknown key(s) {sorted(unknown)} (valid: title, reason, resources)")
        check = Check(_text(body.get("title"), f"{where}.title") or "", _text(body.get("reason"), f"{where}.reason"))
        for name, entry in body["resources"].items():
            at = f"{where}.resources[{name}]"
            stacks = (entry or {}).get("stacks") if isinstance(entry, dict) else None
            if not isinstance(stacks, list) or not stacks or not all(isinstance(s, str) for s in stacks):
                raise ListError(f"{at}.stacks: a non-empty list of stack names is expected, not {stacks!r}")
            unknown = set(entry) - {"stacks", "reason"}
            if unknown:
                raise ListError(f"{at}: unknown key(s) {sorted(unknown)} (valid: stacks, reason)")
            reason = _text(entry.get("reason"), f"{at}.reason")
            if reason is None and check.reason is None:
                raise ListError(f"{at}: no reason, and {check_id} has no reason of its own either")
            check.resources[str(name)] = Resource(sorted(stacks), reason)
        checks[str(check_id)] = check
    return checks


def load(path: Path = PATH) -> dict[str, Check]:
    try:
        return parse(yaml.safe_load(path.read_text()), path.name)
    except FileNotFoundError:
        return {}
    except yaml.YAMLError as exc:
        raise ListError(f"{path.name}: not YAML: {exc}") from None


def reason_of(check: Check, resource: str) -> str:
    return check.resources[resource].reason or check.reason or TODO


def accepted_keys(checks: dict[str, Check]) -> dict[tuple[str, str, str], str]:
    """(check, resource, stack) -> reason."""
    return {
        (cid, name, stack): reason_of(check, name)
        for cid, check in checks.items()
        for name, res in check.resources.items()
        for stack in res.stacks
    }


def _grouped(keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for cid, resource, stack in sorted(keys):
        out.setdefault((cid, resource), []).append(stack)
    return out


def problems(
    checks: dict[str, Check], findings: Iterable[Finding], list_name: str = "tools/security/accepted.yaml"
) -> list[str]:
    """Every difference between what failed and what the list accepts, one line per check and
    resource (naming the stacks), each saying what to do."""
    accepted = accepted_keys(checks)
    failed = {(f.check, f.resource, f.stack): f for f in findings}
    out = []
    for (cid, resource), stacks in _grouped(failed.keys() - accepted.keys()).items():
        f = failed[(cid, resource, stacks[0])]
        out.append(
            f"{cid} ({f.title}) fails on {resource} ({f.file}; {', '.join(stacks)}), which {list_name} "
            f"does not accept: fix the manifest, or run `{REGENERATE}` and write why it is accepted"
        )
    for (cid, resource), stacks in _grouped(accepted.keys() - failed.keys()).items():
        out.append(
            f"{cid} on {resource} no longer fails ({', '.join(stacks)}): remove it from {list_name} "
            f"(`{REGENERATE}` does), so the list shrinks with the fix"
        )
    todo = [key for key in accepted.keys() & failed.keys() if accepted[key] == TODO]
    for (cid, resource), stacks in _grouped(todo).items():
        out.append(
            f"{cid} on {resource} ({', '.join(stacks)}): the reason in {list_name} is TODO: write why it "
            f"is accepted, or fix the manifest"
        )
    return out


def regenerate(checks: dict[str, Check], findings: Iterable[Finding]) -> dict[str, Check]:
    """The list for these findings: reasons kept where the failure remains, TODO where it is new."""
    out: dict[str, Check] = {}
    for f in sorted(findings):
        old = checks.get(f.check)
        check = out.setdefault(f.check, Check(f.title or (old.title if old else ""), old.reason if old else None))
        if f.resource not in check.resources:
            kept = old.resources.get(f.resource) if old else None
            check.resources[f.resource] = Resource([], kept.reason if kept else TODO)
        check.resources[f.resource].stacks = sorted({*check.resources[f.resource].stacks, f.stack})
    return dict(sorted(out.items(), key=lambda kv: _check_order(kv[0])))


def _check_order(check_id: str) -> tuple:
    prefix, _, number = check_id.rpartition("_")
    return (prefix, int(number) if number.isdigit() else 0, check_id)


def dump(checks: dict[str, Check]) -> str:
    data = {}
    for cid, check in sorted(checks.items(), key=lambda kv: _check_order(kv[0])):
        body: dict = {"title": check.title} if check.title else {}
        if check.reason:
            body["reason"] = check.reason
        body["resources"] = {
            name: {"stacks": res.stacks, **({"reason": res.reason} if res.reason else {})}
            for name, res in sorted(check.resources.items())
        }
        data[cid] = body
    return HEADER + yaml.safe_dump(data, sort_keys=False, width=100, default_flow_style=None, allow_unicode=True)
