"""NFD, the container toolkit and the validator render, for every release in the matrix, what that
release's images expect: flags the image defines, ports it listens on, health checks it serves,
env names it reads, host paths it writes; and every object they render is strictly valid for the
Kubernetes versions the release supports.

The expectations below are restated from the upstream sources (not read from the operand modules),
so a wrong row in an operand's version table fails here:
- kubernetes-sigs/node-feature-discovery cmd/nfd-{master,worker,gc}/main.go at v0.14.2, v0.15.4,
  v0.16.3, v0.16.6, v0.17.3, v0.18.2, v0.19.0;
- NVIDIA/nvidia-container-toolkit tools/container/** (<= v1.17.8), cmd/nvidia-ctk-installer/**
  (>= v1.18.0);
- NVIDIA/gpu-operator validator/main.go (<= v25.3.4), cmd/nvidia-validator/main.go (>= v25.10.0).

The release-parametrised tests read what the real components register: the prod stack recorded on
each release with the toolkit DaemonSet (tests/release_stacks.py), never a test-side copy of the
operand wiring. One test calls a spec directly (it says why); one records the prod stack on an old
release with that release's own Kubernetes.
"""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from components.kubernetes.operands import container_toolkit, node_feature_discovery, version_table
from components.kubernetes.operands.context import OperandContext
from gpu_platform.catalog import matrix, versions
from gpu_platform.config import ConfigError
from preview.reports import manifests
from tests import release_stacks as stacks
from tests.components.kubernetes.conftest import DAEMONSET, DEPLOYMENT, pod_spec

MATRIX = matrix.load()
RELEASES = sorted(MATRIX.releases, key=lambda name: versions.parse(name))

# --- what each image line defines, from the sources in the module docstring -----------------------

# Flags (by name) each NFD daemon defines; passing any other stops the daemon at start.
NFD_FLAGS = {
    "0.14": {
        "worker": {"config", "metrics", "server", "enable-nodefeature-api", "oneshot", "options"},
        "master": {"port", "metrics", "enable-leader-election", "enable-nodefeature-api", "config", "prune"},
        "gc": {"gc-interval", "kubeconfig"},
    },
    "0.15": {
        "worker": {"config", "metrics", "server", "enable-nodefeature-api", "oneshot", "options"},
        "master": {"port", "metrics", "enable-leader-election", "enable-nodefeature-api", "config", "prune"},
        "gc": {"gc-interval", "kubeconfig", "metrics"},
    },
    "0.16.0": {
        "worker": {"config", "metrics", "server", "enable-nodefeature-api", "oneshot", "options"},
        "master": {"port", "metrics", "enable-leader-election", "enable-nodefeature-api", "config", "prune"},
        "gc": {"gc-interval", "kubeconfig", "metrics"},
    },
    "0.16.6": {
        "worker": {"config", "metrics", "grpc-health", "server", "oneshot", "options"},
        "master": {"port", "metrics", "grpc-health", "enable-leader-election", "config", "prune"},
        "gc": {"gc-interval", "kubeconfig", "metrics"},
    },
    "0.17": {
        "worker": {"config", "metrics", "grpc-health", "oneshot", "options"},
        "master": {"metrics", "grpc-health", "enable-leader-election", "config", "prune"},
        "gc": {"gc-interval", "kubeconfig", "metrics"},
    },
    "0.18": {
        "worker": {"config", "port", "oneshot", "options"},
        "master": {"port", "enable-leader-election", "config", "prune"},
        "gc": {"gc-interval", "kubeconfig", "port"},
    },
}

# Where each daemon serves its health check: (kind, port), or None for no health check at all.
NFD_HEALTH = {
    "0.14": {"worker": None, "master": ("grpc", 8080), "gc": None},
    "0.15": {"worker": None, "master": ("grpc", 8080), "gc": None},
    "0.16": {"worker": ("grpc", 8082), "master": ("grpc", 8082), "gc": None},
    "0.17": {"worker": ("grpc", 8082), "master": ("grpc", 8082), "gc": None},
    "0.18": {"worker": ("http", 8080), "master": ("http", 8080), "gc": ("http", 8080)},
    "0.19": {"worker": ("http", 8080), "master": ("http", 8080), "gc": ("http", 8080)},
}

# Env names the toolkit installer reads (the subset this platform may set), by first version.
TOOLKIT_ENV = {
    "1.14": {
        "ROOT",
        "RUNTIME",
        "RUNTIME_CONFIG",
        "CONTAINERD_CONFIG",
        "RUNTIME_SOCKET",
        "CONTAINERD_SOCKET",
        "CONTAINERD_RUNTIME_CLASS",
        "NVIDIA_DRIVER_ROOT",
        "DRIVER_ROOT_CTR_PATH",
        "CDI_ENABLED",
        "NVIDIA_RUNTIME_SET_AS_DEFAULT",
        "NVIDIA_CONTAINER_RUNTIME_MODE",
        "CRIO_CONFIG_MODE",
        "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND",
        "NVIDIA_CONTAINER_RUNTIME_MODES_CDI_ANNOTATION_PREFIXES",
        # tools/container/toolkit/toolkit.go:176-188 at v1.14.3; cmd/nvidia-ctk-installer/toolkit/toolkit.go:157-169 at v1.20.0
        "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED",
        "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS",
    },
    "1.16": {"TOOLKIT_PID_FILE", "NVIDIA_DEV_ROOT", "DEV_ROOT_CTR_PATH"},
    "1.18": {"RUNTIME_DROP_IN_CONFIG", "RUNTIME_DROP_IN_CONFIG_HOST_PATH"},
    # cmd/nvidia-ctk-installer/main.go:121-128 at v1.19.0 and v1.20.0; absent at v1.18.1.
    "1.19": {"NO_RUNTIME_CONFIG"},
}
# Read by the container runtime for the toolkit's own container, not by the installer.
RUNTIME_ENV = {"NVIDIA_VISIBLE_DEVICES"}

# Env names the validator reads (os.Getenv and its flags' EnvVars), the same at every tag in the matrix.
VALIDATOR_ENV = {
    "COMPONENT",
    "WITH_WAIT",
    "WITH_WORKLOAD",
    "NODE_NAME",
    "OPERATOR_NAMESPACE",
    "VALIDATOR_IMAGE",
    "VALIDATOR_RUNTIME_CLASS",
}


def _line(table: dict, version: str):
    """The entry of `table` (keys: first versions) that covers `version`."""
    keys = sorted((k for k in table if versions.at_least(version, k)), key=versions.parse)
    return table[keys[-1]]


# --- each release's operands, as the real components register them -------------------------------

OPERANDS = ("node-feature-discovery", "container-toolkit", "validator")


def stack(release: str):
    """The prod stack on `release` with the toolkit DaemonSet: all three operands deployed."""
    return stacks.rendered(release, False)


def workload(release: str, operand: str, kind: str = "DaemonSet", suffix: str = "") -> dict:
    name = None if kind == "DaemonSet" else f"nvidia-{operand}" + (f"-{suffix}" if suffix else "")
    return stacks.workload(stack(release), operand, kind, name).inputs


def containers_of(obj: dict) -> list[dict]:
    spec = obj["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def nfd_container(release: str, daemon: str) -> dict:
    obj = (
        workload(release, "node-feature-discovery")
        if daemon == "worker"
        else workload(release, "node-feature-discovery", "Deployment", daemon)
    )
    return obj["spec"]["template"]["spec"]["containers"][0]


def image_version(release: str, operand: str) -> str:
    return version_table.image_version(MATRIX.release(release).images[operand])


# --- every release -------------------------------------------------------------------------------


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_every_object_of_the_three_operands_is_strictly_valid_for_the_releases_kubernetes(release):
    # Both variants: prod runs the baked one (no toolkit DaemonSet), the other has all three.
    for baked in (False, True):
        rec = stacks.rendered(release, baked)
        for operand in OPERANDS:
            objects = stacks.objects(rec, operand)
            assert objects or (baked and operand == "container-toolkit"), (release, baked, operand)
            wrong = [p for obj in objects for p in stacks.problems(rec, obj, MATRIX.release(release))]
            assert not wrong, f"{release} ({'baked' if baked else 'toolkit DaemonSet'}) {operand}: " + "; ".join(wrong)


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_nfd_daemons_pass_only_flags_their_image_defines(release):
    flags = _line(NFD_FLAGS, image_version(release, "node-feature-discovery"))
    for daemon in ("worker", "master", "gc"):
        for arg in nfd_container(release, daemon).get("args", []):
            assert arg.startswith("-") and arg[1:].split("=")[0] in flags[daemon], (release, daemon, arg)


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_nfd_probes_reach_the_health_check_each_image_serves_and_only_that(release):
    health = _line(NFD_HEALTH, image_version(release, "node-feature-discovery"))
    for daemon, expected in health.items():
        c = nfd_container(release, daemon)
        probes = [c[k] for k in ("livenessProbe", "readinessProbe", "startupProbe") if k in c]
        if expected is None:
            assert not probes, (release, daemon)
            continue
        kind, port = expected
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert probes and len(probes) >= 2, (release, daemon)
        for probe in probes:
            if kind == "http":
                assert probe["httpGet"] == {"path": "/healthz", "port": "http"} and ports["http"] == port
            else:
                assert probe["grpc"] == {"port": port} and port in ports.values(), (release, daemon, probe)


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_nfd_gives_the_worker_the_paths_and_rights_its_image_uses(release):
    version = image_version(release, "node-feature-discovery")
    worker = nfd_container(release, "worker")
    env = {e["name"] for e in worker["env"]}
    spec = workload(release, "node-feature-discovery")["spec"]["template"]["spec"]
    paths = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    crds = {
        o.inputs["metadata"]["name"]
        for o in stacks.of_kind(stack(release), "node-feature-discovery", "CustomResourceDefinition")
    }
    # Owner references since 0.15; the own-pod lookup, /proc/swaps and NodeFeatureGroups since 0.16.
    assert ({"POD_NAME", "POD_UID"} <= env) == versions.at_least(version, "0.15"), release
    assert ("/proc/swaps" in paths) == versions.at_least(version, "0.16"), release
    assert (f"nodefeaturegroups.{node_feature_discovery.GROUP}" in crds) == versions.at_least(version, "0.16"), release
    # The rules of the Role bound to the worker's service account.
    rules = stacks.bound_rules(stack(release), stacks.workload(stack(release), "node-feature-discovery"), "Role")
    assert any(r["resources"] == ["pods"] for r in rules) == versions.at_least(version, "0.16"), release
    nodefeature_verbs = next(r["verbs"] for r in rules if r["resources"] == ["nodefeatures"])
    assert ("delete" in nodefeature_verbs) == versions.at_least(version, "0.15"), release


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_nfd_master_may_inform_on_node_feature_groups_exactly_where_it_always_does(release):
    # v0.16.3 .. v0.17.2 start the NodeFeatureGroup informer whatever the gates (nothing sets
    # DisableNodeFeatureGroup: pkg/nfd-master/nfd-master.go:1514-1517 v0.16.3, :1350-1354 v0.17.2) and
    # wait for its cache before serving health; v0.17.3 gates it on NodeFeatureGroupAPI (:1364).
    version = image_version(release, "node-feature-discovery")
    always = versions.at_least(version, "0.16.3") and not versions.at_least(version, "0.17.3")
    master = stacks.workload(
        stack(release), "node-feature-discovery", "Deployment", "nvidia-node-feature-discovery-master"
    )
    cluster, namespace = (stacks.bound_rules(stack(release), master, kind) for kind in ("ClusterRole", "Role"))
    listed = {v for r in cluster if "nodefeaturegroups" in r["resources"] for v in r["verbs"]}
    status = {v for r in namespace if "nodefeaturegroups/status" in r["resources"] for v in r["verbs"]}
    assert (listed, status) == (({"list", "watch"}, {"update"}) if always else (set(), set())), release


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_the_toolkit_gets_only_env_its_installer_reads(release):
    version = image_version(release, "container-toolkit")
    readable = set().union(*(names for first, names in TOOLKIT_ENV.items() if versions.at_least(version, first)))
    c = workload(release, "container-toolkit")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"] for e in c["env"]}
    assert env - RUNTIME_ENV <= readable, (release, sorted(env - RUNTIME_ENV - readable))


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_the_toolkit_writes_a_drop_in_only_where_its_image_cannot_be_told_to_leave_containerd_alone(release):
    version = image_version(release, "container-toolkit")
    # v1.18.x writes a drop-in and cannot skip it; NO_RUNTIME_CONFIG exists from v1.19.0.
    drop_in = versions.at_least(version, "1.18") and not versions.at_least(version, "1.19")
    ds = workload(release, "container-toolkit")
    c = ds["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    annotations = ds["metadata"]["annotations"]
    host_paths = annotations["audit.gpu-platform.io/host-paths"]
    assert ("RUNTIME_DROP_IN_CONFIG" in env) == drop_in, release
    assert (f"{container_toolkit.DROP_IN_DIR}:rw" in host_paths) == drop_in, release
    # Without a drop-in the image up to v1.17 edits config.toml in place: the reason says so.
    in_place = not versions.at_least(version, "1.18")
    assert (
        "adds the nvidia runtime to /etc/containerd/config.toml" in annotations["audit.gpu-platform.io/reason"]
    ) == in_place, release
    assert ("CONTAINERD_CONFIG" in env) == (not versions.at_least(version, "1.19")), release
    # nodeadm rewrites config.toml at boot and imports no drop-in: the imports line the installer adds lasts
    # until then (amazon-eks-ami v20260714 nodeadm/internal/containerd/config.template.toml).
    if drop_in:
        assert "until the next boot" in annotations["audit.gpu-platform.io/reason"], release


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_the_toolkit_leaves_containerd_alone_where_its_image_can_be_told(release):
    # NO_RUNTIME_CONFIG=true (v1.19.0+) skips the config edit, the restart and the cleanup
    # (cmd/nvidia-ctk-installer/main.go:281, 310, 332; container/runtime/runtime.go:233-239 at v1.20.0):
    # then neither containerd's config directory, nor its socket, nor hostPID for the SIGHUP.
    told = versions.at_least(image_version(release, "container-toolkit"), "1.19")
    ds = workload(release, "container-toolkit")
    c = ds["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    host_paths = ds["metadata"]["annotations"]["audit.gpu-platform.io/host-paths"]
    assert (env.get("NO_RUNTIME_CONFIG") == "true") == told, release
    assert ("/etc/containerd" in host_paths) == (not told), release
    assert ("/run/containerd" in host_paths) == (not told), release
    assert bool(ds["spec"]["template"]["spec"].get("hostPID")) == (not told), release


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_the_toolkit_pid_file_goes_where_its_image_can_write_it(release):
    version = image_version(release, "container-toolkit")
    c = workload(release, "container-toolkit")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    if versions.at_least(version, "1.16"):
        assert env["TOOLKIT_PID_FILE"] == "/run/nvidia/toolkit/toolkit.pid" and "/run/nvidia/toolkit" in mounts
    else:
        # A constant in tools/container/nvidia-toolkit/run.go up to v1.15.0, created without a mkdir.
        assert "TOOLKIT_PID_FILE" not in env and "/run/nvidia" in mounts


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_the_toolkit_sets_the_cdi_env_of_its_line_exactly_when_the_release_enables_cdi(release):
    row = MATRIX.release(release)
    c = workload(release, "container-toolkit")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert (env.get("CDI_ENABLED") == "true") == row.cdi, release
    if row.cdi:
        assert env["NVIDIA_CONTAINER_RUNTIME_MODE"] == "cdi" and env["NVIDIA_RUNTIME_SET_AS_DEFAULT"] == "false"


def test_the_toolkits_pre_1_18_cdi_env_is_the_operators_annotation_prefix_set():
    # Unit-level on purpose: no stack renders a pre-1.18 toolkit with CDI on. Every release that turns
    # CDI on ships toolkit 1.18 or later, and operator.overrides may only be a patch bump of the
    # release's image (policy/images.py refuses the rest), so only the spec can show this branch.
    row = MATRIX.release("v24.9.2")
    spec = container_toolkit.spec(
        OperandContext(
            images=dict(row.images),
            sharing=(),
            mig_pools=(),
            toolkit_baked=False,
            toolkit_version=row.toolkit_version,
            cdi=True,
        )
    )
    env = dict(spec.containers[0].env)
    assert env["NVIDIA_CONTAINER_RUNTIME_MODES_CDI_ANNOTATION_PREFIXES"] == "nvidia.cdi.k8s.io/"
    assert "NVIDIA_CONTAINER_RUNTIME_MODE" not in env and "RUNTIME_DROP_IN_CONFIG" not in env


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_validator_checks_set_only_env_the_validator_reads_and_the_toolkit_check_asks_for_gpus(release):
    for obj in (workload(release, "validator"), workload(release, "container-toolkit")):
        for c in containers_of(obj):
            if "COMPONENT" not in {e["name"] for e in c.get("env", [])}:
                continue
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert set(env) - {"NVIDIA_VISIBLE_DEVICES"} <= VALIDATOR_ENV, (release, c["name"])
            # Every validator image sets NVIDIA_VISIBLE_DEVICES=void; the toolkit check runs
            # nvidia-smi through the nvidia runtime and needs the GPUs.
            assert (env.get("NVIDIA_VISIBLE_DEVICES") == "all") == (env["COMPONENT"] == "toolkit"), (release, c["name"])


@pytest.mark.parametrize("release", stacks.each(RELEASES))
def test_the_validator_idles_without_sleep_infinity(release):
    for c in containers_of(workload(release, "validator")):
        assert "sleep infinity" not in " ".join(c.get("args", [])), (release, c["name"])


def test_every_release_image_has_a_row_and_an_older_image_is_an_error():
    for release in RELEASES:
        images = MATRIX.release(release).images
        node_feature_discovery.traits(images["node-feature-discovery"])
        container_toolkit.traits(images["container-toolkit"])
    with pytest.raises(ConfigError, match="gpu-platform:operator.overrides: .* older than any this platform renders"):
        node_feature_discovery.traits("registry.k8s.io/nfd/node-feature-discovery:v0.13.4")
    with pytest.raises(ValueError, match="no tag"):
        container_toolkit.traits("nvcr.io/nvidia/k8s/container-toolkit")


def test_image_versions_ignore_os_and_flavour_suffixes():
    assert version_table.image_version("nvcr.io/nvidia/k8s/container-toolkit:v1.14.3-ubuntu20.04") == "1.14.3"
    assert version_table.image_version("registry.k8s.io/nfd/node-feature-discovery:v0.18.2-minimal") == "0.18.2"
    assert version_table.image_version("localhost:5000/nvidia/gpu-operator:v25.10.1") == "25.10.1"


# --- one whole stack on an old release, through the preview's engine --------------------------


def _on_release(release: str):
    row = MATRIX.release(release)

    def change(cfg: dict) -> None:
        cfg["gpu-platform:operator"]["release"] = release
        cfg["gpu-platform:cluster"]["kubernetesVersion"] = row.kubernetes_max
        cfg["gpu-platform:nodeImage"]["driverVersion"] = row.driver_default
        cfg["gpu-platform:workloads"]["cudaVersions"] = ["12.2"]

    return change


def test_the_prod_stack_on_the_oldest_release_renders_its_images_traits_and_validates(variant):
    # v23.9.2: the oldest release with a Kubernetes version that has an EKS AL2023 image (1.29;
    # v23.9.0 and v23.9.1 end at 1.28). It ships the oldest NFD (v0.14.2) and a 1.14 toolkit.
    oldest = "v23.9.2"

    def with_toolkit_daemonset(cfg: dict) -> None:
        _on_release(oldest)(cfg)
        cfg["gpu-platform:nodeImage"]["toolkitBaked"] = False
        # 1.29's EKS AMIs all predate the EFA driver in the standard image: the H100 pool goes without.
        cfg["gpu-platform:nodePools"][0]["efa"] = False

    rec = variant(with_toolkit_daemonset, stack="prod")
    k8s = rec.config["gpu-platform:cluster"]["kubernetesVersion"] + ".0"
    mine = ("nvidia-node-feature-discovery", "nvidia-container-toolkit", "nvidia-operator-validator")
    for text in manifests.files(rec).values():
        doc = yaml.safe_load(text)
        if any(name in doc["metadata"].get("name", "") for name in mine):
            kubernetes_validate.validate(doc, k8s, strict=True)
    master = pod_spec(rec.one(DEPLOYMENT, "gpu-node-feature-discovery-master"))["containers"][0]
    assert master["args"] == ["-enable-leader-election", "-port=8080", "-metrics=8081"]
    assert master["livenessProbe"]["grpc"] == {"port": 8080}
    toolkit = pod_spec(rec.one(DAEMONSET, "gpu-container-toolkit-ds"))["containers"][0]
    assert "RUNTIME_DROP_IN_CONFIG" not in {e["name"] for e in toolkit["env"]}
