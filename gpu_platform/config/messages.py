"""pydantic's errors told as problems of the stack file: the key path as the file spells it, what is
wrong and what would be valid."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from gpu_platform.config.errors import ConfigProblem, NoValue, shown
from gpu_platform.config.section import GIVE, PATTERN_MEANINGS
from gpu_platform.config.stack import StackConfig

_MAPPING_KINDS = ("model_type", "model_attributes_type", "dict_type", "mapping_type")


def problems(errors: list[ErrorDetails]) -> list[ConfigProblem]:
    """One problem per error of a failed StackConfig validation, in pydantic's order."""
    locs = [_alias_loc(e["loc"]) for e in errors]
    # A list whose items failed also reports itself "too short" (no valid item left): noise.
    errors = [
        e
        for e, loc in zip(errors, locs, strict=True)
        if not (e["type"] == "too_short" and any(other[: len(loc)] == loc and other != loc for other in locs))
    ]
    return [_problem(error) for error in errors]


_BOOL_LOOKALIKES = {"true", "false", "yes", "no", "on", "off", "y", "n"}


def _problem(error: ErrorDetails) -> ConfigProblem:
    loc = _alias_loc(error["loc"])
    fields = _field_names(loc)
    no_value = _no_value(error, loc)
    raised = error.get("ctx", {}).get("error")
    # A validator's problem may name an item (an index, a key) or another section below where it ran.
    path = loc + raised.path if no_value is None and isinstance(raised, ConfigProblem) else loc
    message = no_value or _message(error)
    if message == "unknown key" and fields:
        message += f" (valid: {', '.join(fields)})"
    if error["type"] in ("model_type", "model_attributes_type") and not _empty(error):
        keys = _field_names((*loc, ""))
        if keys:
            message = f"expected a mapping with keys {', '.join(keys)} (got {shown(error['input'])})"
    return ConfigProblem(message, path=path)


def _alias_loc(loc: tuple) -> tuple:
    """Pydantic reports model-level validator errors without a field; keep the path it gives."""
    return tuple(part for part in loc if part not in ("function-after", "function-before"))


def _message(error: ErrorDetails) -> str:
    kind, msg = error["type"], error["msg"]
    got = f" (got {shown(error['input'])})" if "input" in error else ""
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "value_error":
        raised = error["ctx"]["error"]
        return raised.message if isinstance(raised, ConfigProblem) else msg.removeprefix("Value error, ")
    if kind == "string_pattern_mismatch":
        return f"{shown(error['input'])} is {PATTERN_MEANINGS.get(error['ctx']['pattern'], 'not valid here')}"
    if kind == "too_short":
        return f"needs at least {error['ctx']['min_length']} item(s){got}"
    if kind == "tuple_type":  # every list of the models is a tuple[...] (list_type never occurs)
        return f"expected a list{got}"
    if kind in _MAPPING_KINDS:
        return f"expected a mapping{got}"  # (null or empty never reaches here: _no_value answers it)
    # Every number and switch is StrictInt/StrictBool: pydantic's lax kinds (int_parsing,
    # int_from_float, bool_parsing) never occur, "3" and 2.0 are int_type.
    if kind == "int_type":
        return f"expected a whole number{got}"
    if kind == "bool_type":
        given = error.get("input")
        if isinstance(given, str) and given.lower() in _BOOL_LOOKALIKES:
            # Quoted, or YAML 1.1's yes/no/on/off: go-yaml (Pulumi's reader) keeps these as text.
            return f"expected true or false{got}: it reads as text; write true or false, unquoted"
        return f"expected true or false{got}"
    if kind in ("string_type", "string_sub_type"):
        return f"expected text{got}"
    # Every bound of the models is Field(ge=...) or Field(le=...); pydantic puts the limit in ctx.
    if kind == "greater_than_equal":
        return f"must be at least {error['ctx']['ge']}{got}"
    if kind == "less_than_equal":
        return f"must be at most {error['ctx']['le']}{got}"
    if kind == "literal_error":
        return f"expected {error['ctx']['expected']}{got}"
    return f"{msg}{got}"


def _empty(error: ErrorDetails) -> bool:
    # `key:` with nothing after it is a YAML null, and a top-level null reaches the program as "" (as
    # Pulumi hands it over): one answer for both, wherever the key is.
    return error["type"] != "missing" and "input" in error and (error["input"] is None or error["input"] == "")


def _no_value(error: ErrorDetails, loc: tuple) -> str | None:
    """The one answer to a key given null or empty, whatever its type: what to give, and whether
    removing the key is a way out (it is when the key has a default)."""
    kind = error["type"]
    if not _empty(error) or isinstance(error.get("ctx", {}).get("error"), NoValue):
        return None  # a validator that says it itself (with the key's default)
    name = next((part for part in reversed(loc) if isinstance(part, str)), "")
    if name in GIVE and isinstance(loc[-1], str):
        give = GIVE[name]
    elif kind in _MAPPING_KINDS:
        keys = _field_names((*loc, ""))
        give = f"a mapping with keys {', '.join(keys)}" if keys else "a mapping"
    elif kind == "tuple_type":  # (too_short never has an empty input: null fails the type first)
        give = "a list"
    elif kind == "int_type":
        give = "a whole number"
    elif kind == "bool_type":
        give = "true or false"
    elif kind == "literal_error":
        give = error["ctx"]["expected"]
    elif kind == "string_pattern_mismatch" and error["ctx"]["pattern"] in PATTERN_MEANINGS:
        give = PATTERN_MEANINGS[error["ctx"]["pattern"]].removeprefix("not ")
    else:
        give = GIVE.get(name, "text" if kind.startswith("string") else "a value")
    field = _field(loc)
    optional = field is not None and not field.is_required()
    return f"has no value (null or empty): give {give}" + (", or remove the key for the default" if optional else "")


def _field(loc: tuple) -> Any:
    """The pydantic field at `loc`, or None (an item of a list, a key the model does not have)."""
    if not loc or not isinstance(loc[-1], str):
        return None
    model: Any = StackConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        model = model_in(fields[part].annotation) if part in fields else None
        if model is None:
            return None
    return {f.alias or name: f for name, f in model.model_fields.items()}.get(loc[-1])


def _field_names(loc: tuple) -> list[str]:
    """The keys valid at the parent of `loc`, for 'unknown key' messages."""
    model: Any = StackConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        if part not in fields:
            return []
        annotation = fields[part].annotation
        model = model_in(annotation)
        if model is None:
            return []
    return [f.alias or name for name, f in model.model_fields.items()]


def model_in(annotation: Any) -> Any:
    """The section model a field holds, through Optional and tuple[...]; None for a plain value."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = model_in(arg)
        if found is not None:
            return found
    return None
