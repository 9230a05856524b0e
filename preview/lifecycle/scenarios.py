"""The scenarios of a node's life, each run on one node of a pool: what happens, then `settle()`, and
the verdict: every operand that selects the node runs, and the node advertises what the plan says
(`expected`). A scenario's problems are the pods that wait forever and what the node fails to offer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpu_platform.interface import contract
from preview.lifecycle.node import Node, offers
from preview.lifecycle.stack import Pool, StackView


@dataclass(frozen=True)
class Outcome:
    scenario: str
    pool: str
    problems: tuple[str, ...]
    advertised: dict[str, int]

    @property
    def live(self) -> bool:
        return not self.problems


def expected(stack: StackView, pool: Pool, node: Node | None = None) -> dict[str, int]:
    """What the plan says a node of the pool offers: its device plugin config, and its MIG config applied."""
    labels = node.labels if node else pool.labels
    configs = stack.plugin_configs
    config = configs.get(labels.get(contract.DEVICE_PLUGIN_CONFIG_LABEL, ""), configs.get("default", {})) or {}
    return offers(stack, pool, labels.get(contract.MIG_CONFIG_LABEL), config)


def _verdict(name: str, node: Node, want: dict[str, int] | None = None) -> Outcome:
    want = expected(node.stack, node.pool, node) if want is None else want
    problems = list(node.stuck())
    have = node.advertised()
    if have != want:
        why = f" ({node.mig_why})" if node.mig_why and not node.mig_state.startswith("pending:") else ""
        problems.append(f"advertises {have or 'nothing'}, the plan says {want}{why}")
    return Outcome(name, node.pool.name, tuple(problems), have)


def _live(stack: StackView, pool: Pool) -> Node:
    """A node that joined with every DaemonSet in place."""
    return Node.boot(stack, pool).settle()


def first_up(stack: StackView, pool: Pool) -> Outcome:
    """The first `pulumi up`: the node is there, the DaemonSets come one by one in stage order."""
    node = Node.boot(stack, pool)
    created = list(stack.pods)
    for count in range(1, len(created) + 1):
        node.stack = StackView(
            stack.config,
            stack.pools,
            tuple(created[:count]),
            stack.plugin_configs,
            stack.mig_configs,
            stack.toolkit_mode,
        )
        node.settle()
    node.stack = stack
    return _verdict("first up", node.settle())


def joins_later(stack: StackView, pool: Pool) -> Outcome:
    return _verdict("node joins later", _live(stack, pool))


def joins_for_waiting_pods(stack: StackView, pool: Pool) -> Outcome:
    """The autoscaler adds a node for pods that wait for GPUs (scale-from-zero included): they take
    whatever the node advertises first, so it must advertise nothing the plan does not say."""
    node = Node.boot(stack, pool)
    node.waiting = True
    return _verdict("node joins for pods waiting for GPUs", node.settle())


def _on_a_full_node(stack: StackView, pool: Pool, name: str, event: Callable[[Node], None]) -> Outcome:
    """`event` happens to a live node whose every GPU is taken; the verdict once it settles."""
    node = _live(stack, pool)
    node.fill()
    event(node)
    return _verdict(name, node.settle())


def _restart(*operands: str) -> Callable[[Node], None]:
    return lambda node: node.roll([p.template.daemonset for p in node.pods.values() if p.template.operand in operands])


def reboot_full(stack: StackView, pool: Pool) -> Outcome:
    return _on_a_full_node(stack, pool, "reboot with every GPU taken", Node.reboot)


def validator_restart_full(stack: StackView, pool: Pool) -> Outcome:
    return _on_a_full_node(stack, pool, "validator restart with every GPU taken", _restart("validator"))


def roll_all_full(stack: StackView, pool: Pool) -> Outcome:
    """A release bump changes every pod template: every pod is replaced."""
    return _on_a_full_node(stack, pool, "roll of every DaemonSet with every GPU taken", lambda node: node.roll())


def mig_change_busy(stack: StackView, pool: Pool) -> Outcome:
    """A new MIG config on a node whose GPUs are in use: it cannot apply until they are idle; the
    operands must come back on the old layout, and the layout applies once the node is drained."""
    node = _live(stack, pool)
    old = node.labels.get(contract.MIG_CONFIG_LABEL)
    other = next((name for name in sorted(stack.mig_configs) if name != old), None)
    if old is None or other is None:
        return Outcome("MIG change on a busy node", pool.name, (), node.advertised())
    first = _verdict("MIG change on a busy node: the node before it", node)
    if not first.live:
        return first  # its first MIG config never applied (a manager that gave up, a change that failed)
    node.fill()
    node.labels[contract.MIG_CONFIG_LABEL] = other
    node.settle()
    busy = _verdict("MIG change on a busy node", node, offers(stack, pool, old, node._plugin_config()))
    if not busy.live:
        return busy
    node.drain()
    # mig-parted does not retry in-process: after the drain the manager's pod is restarted (as an
    # operator does, or a reboot), and the new pod applies the config.
    _restart("mig-manager")(node)
    return _verdict("MIG change on a busy node, then drained", node.settle())


def image_roll(stack: StackView, pool: Pool) -> Outcome:
    """A driver image roll, surge or blue-green: a new node joins beside the full old ones and must come
    up whole by itself (a blue-green pool's readiness gate waits for exactly that); nothing on an old
    node reaches it."""
    return _verdict("driver image roll: a new node beside full ones", _live(stack, pool))


def time_slicing_change(stack: StackView, pool: Pool) -> Outcome:
    """New replicas change the plugin's ConfigMap, whose hash is in the pod templates of the plugin and
    GFD: both roll, on a node with every GPU taken."""
    return _on_a_full_node(
        stack, pool, "time-slicing change with every GPU taken", _restart("device-plugin", "gpu-feature-discovery")
    )


SCENARIOS: tuple[Callable[[StackView, Pool], Outcome], ...] = (
    first_up,
    joins_later,
    joins_for_waiting_pods,
    reboot_full,
    validator_restart_full,
    roll_all_full,
    mig_change_busy,
    image_roll,
    time_slicing_change,
)


def run(stack: StackView) -> list[Outcome]:
    return [scenario(stack, pool) for pool in stack.pools for scenario in SCENARIOS]
