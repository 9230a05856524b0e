"""A ValidatingAdmissionPolicy evaluated as the API server evaluates one (k8s.io/apiserver
pkg/admission/plugin/policy/validating): the request must match the policy's resource rules (and
namespace selector, here by the namespace's name label), every match condition must be true, then
the variables are computed in order and every validation must be true; a failed one reports its
messageExpression when that gives a string. CEL by cel-python (standard
CEL; the policies use no Kubernetes library function). Returns the messages of the failed
validations, or None when the policy does not apply."""

from __future__ import annotations

import celpy

_ENV = celpy.Environment()


def _run(expression: str, activation: dict):
    program = _ENV.program(_ENV.compile(expression))
    return program.evaluate(activation)


def _matches(spec: dict, request: dict) -> bool:
    resource = request["resource"] + (f"/{request['subResource']}" if request.get("subResource") else "")
    rules = spec["matchConstraints"]["resourceRules"]
    if not any(resource in r["resources"] and request["operation"] in r["operations"] for r in rules):
        return False
    for expression in spec["matchConstraints"].get("namespaceSelector", {}).get("matchExpressions", []):
        assert expression["key"] == "kubernetes.io/metadata.name"
        inside = request.get("namespace", "") in expression["values"]
        if inside != (expression["operator"] == "In"):
            return False
    return True


def evaluate(spec: dict, request: dict) -> list[str] | None:
    if not _matches(spec, request):
        return None
    data = {"request": request, "object": request.get("object"), "oldObject": request.get("oldObject")}
    activation = celpy.json_to_cel(data)
    if not all(bool(_run(c["expression"], activation)) for c in spec.get("matchConditions", [])):
        return None
    variables = {}
    for variable in spec.get("variables", []):
        variables[variable["name"]] = _run(
            variable["expression"],
            {
                **activation,
                "variables": celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in variables.items()}),
            },
        )
    activation["variables"] = celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in variables.items()})
    failed = []
    for validation in spec["validations"]:
        result = _run(validation["expression"], activation)
        if isinstance(result, celpy.CELEvalError):
            raise AssertionError(f"{validation['expression']}: {result}")
        if not bool(result):
            failed.append(_message(validation, activation))
    return failed


def _message(validation: dict, activation) -> str:
    """A failed validation's message: its messageExpression's string, else (an error, a blank or a
    multi-line string) its message (k8s.io/api admissionregistration/v1 Validation.messageExpression)."""
    if "messageExpression" in validation:
        result = _run(validation["messageExpression"], activation)
        if isinstance(result, str) and result.strip() and "\n" not in result:
            return str(result)
    return validation["message"]
