"""One GPU node under the lifecycle rules: its labels, markers, runtime, MIG layout, the GPUs
workloads hold, and a pod per DaemonSet that selects it. `settle()` lets every pod go as far as the
node allows; whatever is still waiting then waits forever, since nothing else on the node changes
by itself."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from components.aws.node_pool import NODE_GROUP_LABEL
from components.kubernetes.operands import sharing
from gpu_platform.interface import contract
from preview.lifecycle import rules as lifecycle_rules
from preview.lifecycle.stack import PodTemplate, Pool, StackView, Step

RUNNING = "Running"
NO_INSTANCES = ""  # MIG mode on (it persists), no instances carved (they do not persist)


@dataclass
class Pod:
    template: PodTemplate
    done: int = 0  # init containers finished
    phase: str = "Init"  # Init | Running | CrashLoopBackOff
    why: str = ""  # what it waits for, or why it crashes


@dataclass
class Node:
    stack: StackView
    pool: Pool
    labels: dict[str, str] = field(default_factory=dict)
    markers: set[str] = field(default_factory=set)
    runtime: bool = False
    installed: bool = False  # the toolkit DaemonSet has put the runtime binaries on the node's disk
    mig_layout: str | None = None  # the applied MIG config's name; None: MIG off (as the GPUs boot)
    mig_state: str = ""  # "" (to apply) | success | failed:<config> | pending:<config> (the manager gave up)
    mig_why: str = ""  # why the last MIG change did not apply
    allocated: int = 0  # GPU devices held by workloads
    busy: bool = False  # workload processes run on the GPUs (not until the allocator is back after a boot)
    # Workload pods wait for this node's GPUs: a boot lost their pods and their controllers made new ones,
    # or the autoscaler added the node for them. Worst case, they take every device the moment one is advertised.
    waiting: bool = False
    pods: dict[str, Pod] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    # --- events -------------------------------------------------------------------------------------
    @classmethod
    def boot(cls, stack: StackView, pool: Pool) -> Node:
        node = cls(stack, pool, labels=dict(pool.labels))
        # EKS labels each node with its node group: a readiness gate selects the pool's current group.
        for template in stack.pods:
            if template.selector.get(contract.POOL_LABEL) == pool.name and NODE_GROUP_LABEL in template.selector:
                node.labels[NODE_GROUP_LABEL] = template.selector[NODE_GROUP_LABEL]
        node.runtime = stack.config.node_image.toolkit_baked
        return node

    def reboot(self) -> None:
        rules = lifecycle_rules.load()
        if rules.cleared_at_boot:
            self.markers.clear()
        if not self.stack.config.node_image.toolkit_baked:
            # Registered again at boot only by containerd's boot config, and usable once installed.
            self.runtime = self.installed and self.pool.boot_runtime is not None
        if not rules.allocations_survive_boot[self.stack.config.allocation.mode]:
            # The kubelet rejects the workloads' pods (kubernetes#125579); their controllers make new ones.
            self.waiting, self.allocated = self.allocated > 0, 0
        # MIG instances do not survive a reboot (the MIG manager carves them again), and no workload
        # process runs until the device plugin serves its devices again.
        if rules.mig_instances_cleared_at_boot and self.mig_layout:
            self.mig_layout = NO_INSTANCES
        self.mig_state = ""  # the manager's container starts again and applies the node's config
        self.busy = False
        # The kubelet starts every pod again from its first init container.
        for name, pod in self.pods.items():
            self.pods[name] = Pod(pod.template)
        self.log.append("reboot")

    def delete_pod(self, daemonset: str) -> None:
        """The pod goes (its pre-stop hooks run); its DaemonSet makes a new one at the next settle."""
        pod = self.pods.pop(daemonset, None)
        if pod is None:
            return
        if pod.template.operand == "mig-manager":
            self.mig_state = ""  # a new manager pod applies the node's config again
        for glob in pod.template.deletes:
            self.markers -= {m for m in self.markers if fnmatch.fnmatch(m, glob)}

    def roll(self, daemonsets: list[str] | None = None) -> None:
        for name in list(daemonsets if daemonsets is not None else self.pods):
            self.delete_pod(name)

    def fill(self) -> None:
        """Workloads take every GPU device the node advertises."""
        self.allocated = sum(self.advertised().values())
        self.busy = self.allocated > 0

    def drain(self) -> None:
        self.allocated, self.busy = 0, False

    # --- what the node offers -----------------------------------------------------------------------
    def _plugin_config(self) -> dict:
        configs = self.stack.plugin_configs
        return configs.get(self.labels.get(contract.DEVICE_PLUGIN_CONFIG_LABEL, ""), configs.get("default", {})) or {}

    def advertised(self) -> dict[str, int]:
        """What the kubelet lists in the node's capacity: the device plugin's, once it runs."""
        dra = self.stack.config.allocation.mode == "dra"
        allocator = next(
            (p for p in self.pods.values() if p.template.operand == ("dra-driver" if dra else "device-plugin")), None
        )
        if allocator is None or allocator.phase != RUNNING:
            return {}
        return offers(self.stack, self.pool, self.mig_layout, self._plugin_config())

    # --- conditions ---------------------------------------------------------------------------------
    def _holds(self, condition: str, step: Step) -> bool:
        if condition == "driver":
            return True
        if condition == "runtime":
            return self.runtime
        if condition == "gpu-capacity":
            return sum(self.advertised().values()) > 0
        if condition == "free-gpu":
            return sum(self.advertised().values()) > self.allocated
        if condition == "mig-devices":
            return step.privileged or (
                self.stack.toolkit_mode == "legacy"
                and "SYS_ADMIN" in step.capabilities
                and dict(step.env).get("NVIDIA_MIG_MONITOR_DEVICES") == "all"
            )
        if condition == "gpus-idle":
            return not self.busy
        raise ValueError(f"unknown lifecycle condition {condition!r} (preview/lifecycle/rules.yaml)")

    def _missing(self, conditions: tuple[str, ...], step: Step) -> list[str]:
        return [c for c in conditions if not self._holds(c, step)]

    # --- one pass -------------------------------------------------------------------------------------
    def _check(self, pod: Pod, step: Step) -> str | None:
        """Run a validator check; None when its marker is written, else what it waits for."""
        rules = lifecycle_rules.load()
        check = rules.checks.get(step.check or "")
        if check is None:
            return None
        missing = self._missing(check.needs + (check.workload_needs if step.with_workload else ()), step)
        if missing:
            return f"{step.container} waits for {', '.join(missing)}"
        self.markers.add(check.marker(pod.template.image_version))
        return None

    def _advance(self, pod: Pod) -> None:
        rules = lifecycle_rules.load()
        while pod.done < len(pod.template.init):
            step = pod.template.init[pod.done]
            if step.wait_for and step.wait_for not in self.markers:
                pod.why = f"{step.container} waits for marker {step.wait_for}"
                return
            blocked = self._check(pod, step) if step.check else None
            if blocked:
                pod.why = blocked
                return
            pod.done += 1
        operand = rules.operand(pod.template.operand)
        mig = self._plugin_config().get("flags", {}).get("migStrategy", "none") not in ("none", None)
        for step in pod.template.main:
            if step.check:
                self._check(pod, step)  # the validator's running container: a check in a loop, the pod runs
                continue
            # Only a container that asks the runtime for GPUs opens them (not a config-manager sidecar).
            gpus = "NVIDIA_VISIBLE_DEVICES" in dict(step.env)
            missing = (
                self._missing(tuple(operand.get("needs_with_mig") or ()), step)
                if mig and gpus and self.mig_layout
                else []
            )
            if missing:
                pod.phase, pod.why = "CrashLoopBackOff", f"{step.container} exits: needs {', '.join(missing)}"
                return
        pod.phase, pod.why = RUNNING, ""
        if pod.template.operand in ("device-plugin", "dra-driver") and self.advertised():
            if self.waiting:
                # Worst case: the waiting pods take every GPU as soon as it is advertised, before any
                # validation pod asks for one, and before a MIG manager that starts beside the plugin
                # has carved the layout.
                self.waiting, self.allocated = False, sum(self.advertised().values())
            if self.allocated:
                self.busy = True  # the kubelet admits the workloads again and their processes start
        if operand.get("provides") == "runtime":
            self.installed = True
            # It registers the runtime itself unless told to leave containerd alone (toolkit v1.19+).
            configures = not any(dict(s.env).get("NO_RUNTIME_CONFIG") == "true" for s in pod.template.main)
            self.runtime = configures or self.pool.boot_runtime is not None

    def _mig_manager(self, pod: Pod) -> None:
        wanted = self.labels.get(contract.MIG_CONFIG_LABEL)
        if pod.phase != RUNNING or not wanted or self.mig_state.endswith(f":{wanted}"):
            return  # failed or given up: it waits for the next change of the label, or a new pod
        if wanted == self.mig_layout:
            if not self.mig_state:  # a new manager pod finds its config applied, and says so
                self.mig_state = self.labels[contract.MIG_CONFIG_STATE_LABEL] = "success"
            return
        rules = lifecycle_rules.load()
        operand, manager = rules.operand("mig-manager"), rules.mig_manager
        self.labels[contract.MIG_CONFIG_STATE_LABEL] = "pending"
        # The clients' gates (their DaemonSets' nvidia.com/gpu.deploy.* selectors) are paused, so their
        # pods leave the node; "false" stays "false", anything else comes back as "true".
        gates = {
            key
            for t in self.stack.pods
            if t.operand in operand["pauses"]
            for key in t.selector
            if key.startswith(contract.GATE_PREFIX)
        }
        saved = {key: self.labels[key] for key in gates if key in self.labels}
        self.labels.update({key: "false" if v == "false" else operand["pause_value"] for key, v in saved.items()})
        leaving = [c.template for c in self.pods.values() if not c.template.selects(self.labels, self.pool.taints)]
        for template in leaving:
            self.delete_pod(template.daemonset)
        slow = [t for t in leaving if t.app in manager.waits_for_apps and t.leaves_within > manager.wait_seconds]
        if slow:
            paused = ", ".join(sorted(k for k, v in saved.items() if v != "false"))
            self.mig_state = f"pending:{wanted}"
            self.mig_why = (
                f"{slow[0].daemonset} may take {slow[0].leaves_within} s to leave, the MIG manager waits "
                f"{manager.wait_seconds} s: it gave up on MIG config {wanted}, gates {paused} stay "
                f"{operand['pause_value']} until a new manager pod runs"
            )
            self.log.append(f"MIG config {wanted} pending: the manager gave up waiting for {slow[0].daemonset}")
            return
        # A client the manager does not find by its app label is not waited for: it may still hold its
        # GPUs when the config is applied.
        holding = [
            t.daemonset
            for t in leaving
            if t.app not in manager.waits_for_apps and any("NVIDIA_VISIBLE_DEVICES" in dict(s.env) for s in t.main)
        ]
        # A GPU client no paused gate removes holds its GPUs through the change.
        staying = [p.template.daemonset for p in self.pods.values() if p.template.holds_gpus]
        if holding or staying or self._missing(tuple(operand["needs_to_apply"]), Step("mig-manager")):
            self.mig_state = f"failed:{wanted}"
            held = f" by {', '.join(holding)} (app label not waited for)" if holding else ""
            held += f" by {', '.join(staying)} (not paused)" if staying else ""
            self.mig_why = f"MIG config {wanted} failed: GPUs in use{held}"
            self.log.append(self.mig_why)
        else:
            self.mig_layout, self.mig_state, self.mig_why = wanted, "success", ""
            self.roll(
                [p.template.daemonset for p in list(self.pods.values()) if p.template.operand in operand["restarts"]]
            )
        # The gates come back first, then the state label (setState).
        self.labels.update({key: "false" if v == "false" else "true" for key, v in saved.items()})
        self.labels[contract.MIG_CONFIG_STATE_LABEL] = self.mig_state.split(":")[0]

    def settle(self, limit: int = 100) -> Node:
        for _ in range(limit):
            before = self._snapshot()
            for template in self.stack.pods:
                selected = template.selects(self.labels, self.pool.taints)
                if selected and template.daemonset not in self.pods:
                    self.pods[template.daemonset] = Pod(template)
                elif not selected and template.daemonset in self.pods:
                    self.delete_pod(template.daemonset)
            for pod in list(self.pods.values()):
                self._advance(pod)
            # A repartition takes longer than any pod's start (rules.yaml mig_manager.acts_last): what
            # could start beside the manager in this pass has started before it changes anything.
            for pod in list(self.pods.values()):
                if pod.template.operand == "mig-manager":
                    self._mig_manager(pod)
            if self._snapshot() == before:
                return self
        raise AssertionError(f"node of pool {self.pool.name} never settles: {self._snapshot()}")

    def _snapshot(self) -> tuple:
        return (
            frozenset(self.markers),
            tuple(sorted(self.labels.items())),
            self.runtime,
            self.mig_layout,
            self.mig_state,
            self.allocated,
            tuple(sorted((n, p.done, p.phase, p.why) for n, p in self.pods.items())),
        )

    # --- verdict ----------------------------------------------------------------------------------------
    def stuck(self) -> list[str]:
        """Every pod that is not running, or never ready, once the node has settled, with what it waits for."""
        found = []
        manager = next((n for n, p in self.pods.items() if p.template.operand == "mig-manager"), "mig-manager")
        if self.mig_state.startswith("pending:"):
            found.append(f"{manager}: {self.mig_why}")
        for name, pod in sorted(self.pods.items()):
            unready = [s for s in pod.template.main if s.ready_marker and s.ready_marker not in self.markers]
            if pod.phase != RUNNING:
                found.append(f"{name}: {pod.phase} ({pod.why})")
            elif unready:
                found.append(
                    f"{name}: Running, never Ready ({unready[0].container}'s probe waits for marker {unready[0].ready_marker})"
                )
        return found


def offers(stack: StackView, pool: Pool, mig_layout: str | None, plugin_config: dict) -> dict[str, int]:
    """What a node of the pool advertises with the rendered device plugin config and the MIG layout
    applied (the counting itself: components/kubernetes/operands/sharing.py `advertised`, which the
    pool's cluster autoscaler tags use too)."""
    if stack.config.allocation.mode == "dra":
        # The DRA driver publishes each whole GPU as a device of class gpu.nvidia.com (operands/dra_driver/).
        return {"gpu.nvidia.com": pool.gpus}
    flags = plugin_config.get("flags") or {}
    strategy = flags.get("migStrategy", "none")
    if strategy != "none" and mig_layout == NO_INSTANCES:
        return {}  # MIG mode on and nothing carved: no whole GPU and no instance to advertise
    layout = stack.mig_configs.get(mig_layout or "", {}) if strategy != "none" else {}
    replicas = 1
    for resource in ((plugin_config.get("sharing") or {}).get("timeSlicing") or {}).get("resources") or ():
        if resource.get("name") == "nvidia.com/gpu":
            replicas = int(resource.get("replicas", 1))
    return sharing.advertised(pool.gpus, replicas, strategy, layout)
