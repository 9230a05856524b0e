"""The container toolkit DaemonSet (toolkitBaked: false) runs on a real node: the env its installer
reads for a host driver, the label upstream gives it, no API token, no probe that claims more than
"running". Each expectation is a literal from the upstream source (NVIDIA/nvidia-container-toolkit
tools/container/** up to v1.17.8, cmd/nvidia-ctk-installer/** from v1.18.0; NVIDIA/gpu-operator
assets/state-container-toolkit/), not read from components/kubernetes/operands/container_toolkit/."""

from __future__ import annotations

import pytest

from components.kubernetes.operands import container_toolkit
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.manifests import daemonset_manifest
from components.kubernetes.operands.spec import OperandArgs
from components.kubernetes.operands.version_table import image_version
from gpu_platform.catalog import matrix, versions
from gpu_platform.config.audit import Audit
from tests.components.kubernetes.conftest import daemonset_of, pod_spec

MATRIX = matrix.load()
RELEASES = sorted(MATRIX.releases, key=versions.parse)
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
ROLE_TYPES = ("kubernetes:rbac.authorization.k8s.io/v1:Role", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
INSTALLER = "nvidia-container-toolkit-ctr"


def manifest(release: str) -> dict:
    row = MATRIX.release(release)
    ctx = OperandContext(
        images=dict(row.images),
        sharing=(),
        mig_pools=(),
        toolkit_baked=False,
        toolkit_version=row.toolkit_version,
        cdi=row.cdi,
    )
    spec = container_toolkit.spec(ctx)
    args = OperandArgs(
        spec=spec,
        namespace="gpu-operator",
        gate="container-toolkit",
        waits_for=None,
        wait_image="",
        audit=Audit(owner="o", approval="a"),
        release=release,
        provider=None,
    )
    return daemonset_manifest(spec, args, spec.name, {})


def containers(release: str) -> dict[str, dict]:
    pod = manifest(release)["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


def toolkit_version(release: str) -> str:
    return image_version(MATRIX.release(release).images["container-toolkit"])


def env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def mounts(container: dict) -> dict[str, dict]:
    return {m["mountPath"]: m for m in container.get("volumeMounts") or []}


@pytest.mark.parametrize("release", RELEASES)
def test_pods_carry_the_operators_app_label(release):
    # assets/state-container-toolkit/0500_daemonset.yaml:17 at v23.9.0 .. v26.7.0.
    assert manifest(release)["spec"]["template"]["metadata"]["labels"]["app"] == "nvidia-container-toolkit-daemonset"


@pytest.mark.parametrize("release", RELEASES)
def test_the_installer_finds_the_hosts_dev_where_the_host_driver_is(release):
    # NVIDIA_DEV_ROOT / DEV_ROOT_CTR_PATH from v1.16.0 (tools/container/toolkit/toolkit.go:141-152 at
    # v1.16.1); unset, the CDI control device nodes go under the container's own / (nvdevices: an empty
    # root is /). The operator exports / and /host for a host driver from driver-ready
    # (cmd/nvidia-validator/driver.go:45-55 at gpu-operator v26.7.0).
    installer = env(containers(release)[INSTALLER])
    if versions.at_least(toolkit_version(release), "1.16"):
        assert (installer.get("NVIDIA_DEV_ROOT"), installer.get("DEV_ROOT_CTR_PATH")) == ("/", "/host"), release
    else:
        assert "NVIDIA_DEV_ROOT" not in installer and "DEV_ROOT_CTR_PATH" not in installer, release
    assert (installer["NVIDIA_DRIVER_ROOT"], installer["DRIVER_ROOT_CTR_PATH"]) == ("/", "/host")


@pytest.mark.parametrize("release", RELEASES)
def test_the_runtime_it_installs_gives_a_pod_only_the_gpus_the_device_plugin_gave_it(release):
    # The installer writes both settings into the runtime's config.toml at every tag, from these env
    # names, defaults true and false (tools/container/toolkit/toolkit.go:176-188, 404-405 at v1.14.3;
    # :166-176, 455-456 at v1.17.8; cmd/nvidia-ctk-installer/toolkit/toolkit.go:157-169, 413-414 at
    # v1.20.0). Left at the defaults, NVIDIA_VISIBLE_DEVICES=all of any CUDA image gets every GPU, in the
    # legacy hook (cmd/nvidia-container-runtime-hook/container_config.go:236-258 at v1.14.3) and in CDI
    # mode as management.nvidia.com/gpu=all (internal/modifier/cdi.go:102-115, pkg/nvcdi/management.go:41-60
    # at v1.18.1).
    installer = env(containers(release)[INSTALLER])
    assert installer.get("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED") == "false", release
    assert installer.get("ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS") == "true", release


@pytest.mark.parametrize("release", RELEASES)
def test_no_probe_claims_more_than_a_running_installer(release):
    # The pid file is written at start, before anything is installed or containerd touched
    # (tools/container/nvidia-toolkit/run.go:185-220 at v1.14.3; cmd/nvidia-ctk-installer/main.go:274-279
    # at v1.20.0), and the image serves no health endpoint.
    installer = containers(release)[INSTALLER]
    assert not {"readinessProbe", "livenessProbe", "startupProbe"} & set(installer), release


@pytest.mark.parametrize("release", RELEASES)
def test_the_pre_1_16_pid_file_has_a_pod_local_run_nvidia(release):
    # Up to v1.15.0 the pid file is the constant /run/nvidia/toolkit.pid, created without a mkdir
    # (tools/container/nvidia-toolkit/run.go:17-19, 185-220 at v1.14.3).
    if versions.at_least(toolkit_version(release), "1.16"):
        return
    pod = manifest(release)["spec"]["template"]["spec"]
    run_nvidia = mounts(containers(release)[INSTALLER])["/run/nvidia"]
    assert not run_nvidia.get("readOnly")
    assert "emptyDir" in {v["name"]: v for v in pod["volumes"]}[run_nvidia["name"]]


@pytest.mark.parametrize("release", RELEASES)
def test_only_the_driver_check_mounts_dev_char_and_the_markers(release):
    # The installer never touches /dev/char or /run/nvidia/validations (no reference in tools/container
    # or cmd/nvidia-ctk-installer at v1.14.3, v1.17.8, v1.20.0); the validator's driver check writes both
    # (assets/state-container-toolkit/0500_daemonset.yaml:28-59 at gpu-operator v26.7.0).
    by_name = containers(release)
    assert not {"/host-dev-char", "/run/nvidia/validations"} & set(mounts(by_name[INSTALLER])), release
    assert {"/host-dev-char", "/run/nvidia/validations", "/host"} <= set(mounts(by_name["driver-validation"])), release


def _toolkit_daemonset(cfg: dict) -> None:
    cfg["gpu-platform:nodeImage"]["toolkitBaked"] = False


def test_the_toolkits_pods_get_no_api_token_and_no_rights(variant):
    # The installer makes no Kubernetes API call; its driver check lists DaemonSets only when the host's
    # nvidia-smi fails, where exiting (and being restarted) is what we want (test_validator.py).
    rec = variant(_toolkit_daemonset, stack="prod")
    ds = daemonset_of(rec, "container-toolkit")
    account = pod_spec(ds)["serviceAccountName"]
    sa = [r for r in rec.of_type(SERVICE_ACCOUNT) if r.inputs["metadata"]["name"] == account]
    assert sa and sa[0].inputs["automountServiceAccountToken"] is False
    assert pod_spec(ds).get("automountServiceAccountToken") in (None, False)
    assert not [r for t in ROLE_TYPES for r in rec.of_type(t) if r.inputs["metadata"]["name"] == account]
