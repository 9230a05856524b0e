"""GPU allocation through DRA (gpu-platform:allocation mode dra): what the DRA driver needs of the
cluster, the operator release and the nodes (gpu_platform/catalog/dra.yaml, per driver version), and its
alpha feature gates turned on only knowingly. Both compare resources with one another (the mode and
the acknowledgements are on the operands' namespace, the driver and the kubelet version on the node
image and node groups, the gates on the kubelet plugin's DaemonSet), and the admission policy that
keeps the kubelet plugin to its own node's ResourceSlices (the plugin's DaemonSet, the policy and its
binding): stack policies."""

from __future__ import annotations

import re

from pulumi_policy import EnforcementLevel

from gpu_platform.catalog import dra, matrix, versions
from gpu_platform.interface import admission, contract
from gpu_platform.interface.props import dig, sequence, text
from gpu_platform.interface.resource_types import ADMISSION_BINDING as BINDING, ADMISSION_POLICY as POLICY
from policy import facts, workloads
from policy.declare import stack_policy

_MINOR = re.compile(r"1\.\d{1,2}")


def _namespace(resources) -> dict[str, str]:
    """The annotations of the operands' namespace, else none."""
    namespace = facts.operator_namespace(resources)
    return facts.annotations(namespace.props) if namespace is not None else {}


def _plugins(resources) -> list:
    """The DRA kubelet plugin's workloads: whatever made them, they allocate GPUs through DRA."""
    return [
        r
        for r in resources
        if workloads.kind(r.resource_type) is not None and workloads.operand(r.props) == dra.OPERAND
    ]


def _driver(release: matrix.Release | None, plugins) -> tuple[str, dra.Driver | None]:
    """The DRA driver image the stack runs (its kubelet plugin's, else its release's) and its row."""
    for r in plugins:
        # Its main containers run the driver's image; init containers (the wait) another one.
        for container in sequence(workloads.pod_spec(r.resource_type, r.props).get("containers")):
            image = text(container.get("image"))
            if image:
                return image, dra.driver_of_image(image)
    image = release.images.get(dra.OPERAND, "") if release else ""
    return image, dra.driver_of_image(image) if image else None


@stack_policy(
    "dra-mode-supported",
    EnforcementLevel.MANDATORY,
    "A stack that allocates GPUs through DRA runs a GPU Operator release that ships the DRA driver, on a Kubernetes, "
    "an NVIDIA driver branch and a CDI-enabled runtime the driver supports, with feature gates its kubelet plugin can start with.",
    fix="gpu-platform:operator.release, gpu-platform:cluster.kubernetesVersion, gpu-platform:nodeImage.driverVersion, "
    "gpu-platform:allocation.featureGates, or gpu-platform:allocation.mode device-plugin",
)
def dra_mode_supported(args, report_violation) -> None:
    notes, plugins = _namespace(args.resources), _plugins(args.resources)
    if notes.get(contract.ALLOCATION_MODE_KEY) != "dra" and not plugins:
        return
    table = matrix.load()
    release = table.releases.get(notes.get(contract.OPERATOR_RELEASE_KEY, ""))
    shipping = ", ".join(name for name, r in table.releases.items() if dra.OPERAND in r.images) or "none in the matrix"
    if release is not None and dra.OPERAND not in release.images:
        report_violation(
            f"the stack allocates GPUs through DRA, but GPU Operator {release.name} (the operands' namespace "
            f"declares it) ships no DRA driver; use a release that does ({shipping}), or allocation mode device-plugin"
        )
    image, known = _driver(release, plugins)
    # A driver version the table lacks (an override's patch release) is judged by the newest it has.
    driver = known or list(dra.load().values())[-1]
    at = f"the DRA driver {driver.version}" + (
        "" if known else f" (the newest gpu_platform/catalog/dra.yaml lists; the stack runs {image or 'another'})"
    )
    minor = notes.get(contract.KUBERNETES_VERSION_TAG, "")
    if _MINOR.fullmatch(minor) and not versions.at_least(minor, driver.kubernetes):
        report_violation(
            f"the cluster runs Kubernetes {minor} (the operands' namespace declares it), but {at} needs "
            f"{driver.kubernetes} or later (resource.k8s.io/v1; NVIDIA asks for {driver.kubernetes}.2+); "
            f"upgrade the cluster to {driver.kubernetes} or later, or use allocation mode device-plugin"
        )
    for found in (facts.of(r) for r in args.resources if facts.is_gpu_resource(r.resource_type, r.props)):
        if (
            found.brings_node_image
            and versions.is_version(found.driver)
            and versions.major(found.driver) < driver.driver_branch
        ):
            report_violation(
                f"{found.describe()} runs NVIDIA driver {found.driver} (branch {versions.major(found.driver)}), "
                f"but {at} needs branch {driver.driver_branch} or later; bake a driver of branch "
                f"{driver.driver_branch} or later, or use allocation mode device-plugin"
            )
        kubelet = found.kubernetes
        if (
            found.type != facts.NODE_GROUP
            or not _MINOR.fullmatch(kubelet)
            or versions.at_least(kubelet, driver.kubernetes)
        ):
            continue
        cdi = (
            f"; and below {driver.cdi_kubelet} nodeadm leaves containerd's CDI off, through which the driver hands "
            f"devices to containers"
            if not versions.at_least(kubelet, driver.cdi_kubelet)
            else ""
        )
        report_violation(
            f"{found.describe()} runs kubelet {kubelet}, but {at} needs {driver.kubernetes} or later on its "
            f"nodes{cdi}; run the pool's nodes on {driver.kubernetes} or later, or use allocation mode device-plugin"
        )
    # Gates the kubelet plugin cannot start with, or that need what the stack does not render.
    for r in plugins:
        for container in workloads.containers(workloads.pod_spec(r.resource_type, r.props)):
            for name, wrong, valid in driver.problems(_gates(container)):
                report_violation(
                    f"{facts.kind(r.resource_type)} {r.name!r}, container {text(container.get('name'))!r}, "
                    f"{wrong}; set {valid} (gpu-platform:allocation.featureGates.{name})",
                    r.urn,
                )


def _gates(container) -> dict[str, bool]:
    """The feature gates a container hands the DRA driver: env FEATURE_GATES, or the flag (which wins,
    as an explicit flag does over its env in urfave/cli)."""
    found: dict[str, bool] = {}
    for env in sequence(container.get("env")):
        if text(env.get("name")) == dra.FEATURE_GATES_ENV and env.get("value") is not None:
            found.update(dra.parse_gates(text(env.get("value"))))
    words = [text(w) for w in (*sequence(container.get("command")), *sequence(container.get("args")))]
    for i, word in enumerate(words):
        if word.startswith(dra.FEATURE_GATES_FLAG + "="):
            found.update(dra.parse_gates(word.split("=", 1)[1]))
        elif word == dra.FEATURE_GATES_FLAG and i + 1 < len(words):
            found.update(dra.parse_gates(words[i + 1]))
    return found


@stack_policy(
    "dra-alpha-features-acknowledged",
    EnforcementLevel.ADVISORY,
    "Every alpha feature gate turned on in the DRA driver is one the stack acknowledges (gpu-platform:allocation.acknowledgeAlpha).",
    fix="gpu-platform:allocation.acknowledgeAlpha, or turn the gate off in gpu-platform:allocation.featureGates",
)
def dra_alpha_features_acknowledged(args, report_violation) -> None:
    acknowledged = set(contract.split_values(_namespace(args.resources).get(contract.ACKNOWLEDGED_ALPHA_KEY, "")))
    newest = list(dra.load().values())[-1]
    for r in args.resources:
        if workloads.kind(r.resource_type) is None:
            continue
        for container in workloads.containers(workloads.pod_spec(r.resource_type, r.props)):
            gates = _gates(container)
            if not gates:
                continue
            # A driver version the table lacks is judged by the newest one it has.
            driver = dra.driver_of_image(text(container.get("image"))) or newest
            for name in sorted(n for n, on in gates.items() if on and n in driver.alpha() and n not in acknowledged):
                report_violation(
                    f"{facts.kind(r.resource_type)} {r.name!r} ({r.urn}), container {text(container.get('name'))!r}, turns on "
                    f"{name}, an alpha feature gate of the DRA driver {driver.version} (alpha: off by default, may change "
                    f"or go without notice); acknowledge it (allocation.acknowledgeAlpha: [{name}]) or turn it off",
                    r.urn,
                )


def _user(r) -> str:
    """The username the API server gives a workload's pods: its service account in its namespace (the
    `default` account where the pod names none)."""
    spec = workloads.pod_spec(r.resource_type, r.props)
    account = text(spec.get("serviceAccountName")) or text(spec.get("serviceAccount")) or "default"
    return f"system:serviceaccount:{text(dig(r.props, 'metadata').get('namespace')) or 'default'}:{account}"


def _on_slices(spec) -> bool:
    """The policy sees every create, update and delete of resource.k8s.io ResourceSlices."""
    for rule in sequence(dig(spec, "matchConstraints").get("resourceRules")):
        groups, resources = (
            [text(v) for v in sequence(rule.get("apiGroups"))],
            [text(v) for v in sequence(rule.get("resources"))],
        )
        operations = {text(v) for v in sequence(rule.get("operations"))}
        if (
            {"resource.k8s.io", "*"} & set(groups)
            and {"resourceslices", "*"} & set(resources)
            and ("*" in operations or {"CREATE", "UPDATE", "DELETE"} <= operations)
        ):
            return True
    return False


def _names(spec, user: str) -> bool:
    """A match condition names the user, quoted as a CEL string."""
    return any(
        f"'{user}'" in text(c.get("expression")) or f'"{user}"' in text(c.get("expression"))
        for c in sequence(spec.get("matchConditions"))
    )


@stack_policy(
    "dra-kubelet-plugin-slices-own-node",
    EnforcementLevel.MANDATORY,
    "The DRA kubelet plugin, whose ClusterRole may write every node's ResourceSlices, is held to its own node's by a "
    "ValidatingAdmissionPolicy on resourceslices that names its service account, reads the token's node, fails closed "
    "and is bound with Deny.",
    fix="no stack key: the program builds it with the DRA driver (components/kubernetes/operands/dra_driver/); report it",
)
def dra_kubelet_plugin_slices_own_node(args, report_violation) -> None:
    plugins = _plugins(args.resources)
    if not plugins:
        return
    on_slices = [r for r in args.resources if r.resource_type == POLICY and _on_slices(dig(r.props, "spec"))]
    denying = {
        text(dig(r.props, "spec").get("policyName"))
        for r in args.resources
        if r.resource_type == BINDING
        and "Deny" in [text(a) for a in sequence(dig(r.props, "spec").get("validationActions"))]
    }
    for plugin in plugins:
        user, who = _user(plugin), f"the DRA kubelet plugin ({facts.kind(plugin.resource_type)} {plugin.name!r})"
        guarding = [r for r in on_slices if _names(dig(r.props, "spec"), user)]
        if not guarding:
            others = "; ".join(f"{text(dig(r.props, 'metadata').get('name'))!r} matches other users" for r in on_slices)
            report_violation(
                f"{who} runs as {user}, which may write every node's ResourceSlices, but no ValidatingAdmissionPolicy "
                f"on resource.k8s.io resourceslices (CREATE, UPDATE, DELETE) names it in a match condition"
                f"{f' ({others})' if others else ''}: a compromised plugin could publish or delete any node's devices",
                plugin.urn,
            )
            continue
        policy = guarding[0]
        name, spec = text(dig(policy.props, "metadata").get("name")), dig(policy.props, "spec")
        expressions = [
            text(e.get("expression")) for key in ("variables", "validations") for e in sequence(spec.get(key))
        ]
        if text(spec.get("failurePolicy")) == "Ignore":
            report_violation(
                f"ValidatingAdmissionPolicy {name!r}, which holds {who} to its node's ResourceSlices, has failurePolicy "
                "Ignore: an expression error would admit the write",
                policy.urn,
            )
        elif not any(admission.NODE_NAME_EXTRA in e for e in expressions):
            report_violation(
                f"ValidatingAdmissionPolicy {name!r}, on {who}'s ResourceSlice writes, never reads the token's node "
                f"({admission.NODE_NAME_EXTRA}): it cannot keep the plugin to its own node",
                policy.urn,
            )
        elif name not in denying:
            report_violation(
                f"ValidatingAdmissionPolicy {name!r}, which holds {who} to its node's ResourceSlices, has no binding "
                "with validationActions Deny: it would deny nothing",
                policy.urn,
            )
