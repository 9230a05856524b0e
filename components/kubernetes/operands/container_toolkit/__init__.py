"""The NVIDIA container toolkit: installs the `nvidia` runtime on the host's disk, where the pool's user
data has registered it with containerd from boot (components/aws/user_data.py, toolkit_runtime); images
older than v1.19.0 also register it in containerd's config and restart containerd through its socket
(`configures_runtime` below). Its first init step is the validator's driver check, which
proves the baked driver is loaded and writes its marker (`host-driver-ready` for a host driver up to
validator v24.3.0, `driver-ready` from v24.6.0: validator/). The installer itself reads no marker and
makes no Kubernetes API call (components/kubernetes/operands/container_toolkit/contract.yaml), so the pods get
no API token: the driver check needs one only to list driver DaemonSets when the host driver fails,
where failing and being restarted is what we want (validator/).

Env and host paths are the GPU Operator's (gpu-operator-facts.yaml, operand_manifests
container_toolkit_containerd and per_component.container-toolkit at v23.9.2, v24.9.2, v25.10.1 and
v26.7.0, from assets/state-container-toolkit/0500_daemonset.yaml and controllers/object_controls.go
TransformToolkit), except the CRI-O hooks directory: these nodes run containerd only. What the
toolkit image itself understands changes with its version; that is the `TRAITS` table below,
chosen by the image tag's version (github.com/NVIDIA/nvidia-container-toolkit, the env names of
tools/container/** up to v1.17.8 and of cmd/nvidia-ctk-installer/** from v1.18.0).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.kubernetes.namespace import RUNTIME_CLASS
from components.kubernetes.operands import validator
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import VALIDATIONS_DIR, Container, HostPath, OperandSpec
from components.kubernetes.operands.version_table import for_version
from gpu_platform.interface import contract

# Where v1.18.x writes its drop-in. nodeadm's template imports nothing (amazon-eks-ami v20260714
# nodeadm/internal/containerd/config.template.toml, config2.template.toml): containerd reads the
# drop-in only through the `imports` line the installer adds to config.toml, until nodeadm rewrites
# that file at the next boot. What holds from boot is the pool's user data (user_data.toolkit_runtime).
DROP_IN_DIR = "/etc/containerd/config.d"
CONFIG_TOML = "/etc/containerd/config.toml"
PID_DIR = "toolkit-run"
# The runtime this installer writes must hand a pod only the GPUs the device plugin gave it, as a node
# with the toolkit in its image does (gpu_access.py): left at the installer's defaults (accept the
# variable from any pod, ignore volume mounts), the `nvidia` runtime gives every GPU to any pod whose
# image sets NVIDIA_VISIBLE_DEVICES=all (every CUDA base image), GPUs requested or not. The variable
# then counts only for a container that is privileged or holds CAP_SYS_ADMIN, in the legacy hook
# (cmd/nvidia-container-runtime-hook/container_config.go:130-170, 236-258 at v1.14.3) as in CDI mode,
# where NVIDIA_VISIBLE_DEVICES=all would otherwise be the management spec's `all` device, every
# /dev/nvidia* node (internal/modifier/cdi.go:102-115, internal/config/image/cuda_image.go:258-292,
# pkg/nvcdi/management.go:41-60 at v1.18.1). Both names and their write into the toolkit's config.toml
# are the same at every tag we render, v1.14.3 to v1.20.0 (tools/container/toolkit/toolkit.go:176-188,
# 404-405 at v1.14.3; :166-176, 455-456 at v1.17.8; cmd/nvidia-ctk-installer/toolkit/toolkit.go:157-169,
# 413-414 at v1.20.0), which is why they are not a row of TRAITS.
GPU_ACCESS = (
    ("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "false"),
    ("ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "true"),
)


@dataclass(frozen=True)
class Traits:
    since: str
    # Where the installer writes and flocks its pid file, at start, before it installs anything or
    # touches containerd (initialize() in Run, at every version from v1.14.3 to v1.20.0). No probe
    # reads it: its presence means "installer started", which a running container says already; the
    # proof that containerd has the handler is the validator's toolkit check, the next stage. Up to
    # 1.15 the path is the constant /run/nvidia/toolkit.pid, created without a mkdir
    # (tools/container/nvidia-toolkit/run.go:17-19, 185-220 at v1.14.3, v1.15.0), so /run/nvidia is a
    # pod-local emptyDir; TOOLKIT_PID_FILE exists from v1.16.0 (run.go v1.16.1) and puts it in a host
    # directory, where the lock also keeps a second installer on the node from starting.
    pid_file: str
    pid_file_env: bool
    # NVIDIA_DEV_ROOT / DEV_ROOT_CTR_PATH exist from v1.16.0 (tools/container/toolkit/toolkit.go:141-152
    # at v1.16.1; absent at v1.15.0). Unset, the control device nodes that the installer creates with CDI
    # on go under the container's own / (createDeviceNodes, toolkit.go:780-794 at v1.16.1;
    # pkg/system/nvdevices/devices.go: an empty root is /), not the host's /dev; the operator exports
    # them (/ and /host for a host driver) from the validator's driver-ready, which we do not source.
    dev_root_env: bool
    # RUNTIME_DROP_IN_CONFIG(_HOST_PATH) exist from v1.18.0 (cmd/nvidia-ctk-installer); older images
    # edit the file named by RUNTIME_CONFIG/CONTAINERD_CONFIG in place (and restore it on exit).
    drop_in: bool
    # Whether the installer edits containerd's config and restarts it. From v1.19.0 NO_RUNTIME_CONFIG
    # turns both off, cleanup included (cmd/nvidia-ctk-installer/main.go:121-128, 281, 310, 332 and
    # container/runtime/runtime.go:233-239, 280-290 at v1.20.0; absent at v1.18.1): the pool's user data
    # registers the runtime at every boot, so no edit is needed, nor the socket and hostPID of the SIGHUP.
    # Older images cannot be told: they still edit and restart (the non-CDI lines also make `nvidia`
    # containerd's default runtime, which the boot config must not: its binary is absent at first boot).
    configures_runtime: bool
    # The env the operator sets with CDI enabled, for this toolkit line: up to v25.3.x
    # (object_controls.go at v24.9.2, v25.3.4: the annotation prefix, runtime mode `cdi` only with
    # cdi.default) and from v25.10.0 (transformToolkitCtrForCDI: CDI as the runtime mode, the
    # nvidia runtime not the default). Every name exists in every image from v1.14.3.
    cdi_env: tuple[tuple[str, str], ...]


_CDI_ANNOTATIONS = (
    ("CDI_ENABLED", "true"),
    ("NVIDIA_CONTAINER_RUNTIME_MODES_CDI_ANNOTATION_PREFIXES", "nvidia.cdi.k8s.io/"),
    ("CRIO_CONFIG_MODE", "config"),
)
_CDI_MODE = (
    ("CDI_ENABLED", "true"),
    ("NVIDIA_RUNTIME_SET_AS_DEFAULT", "false"),
    ("NVIDIA_CONTAINER_RUNTIME_MODE", "cdi"),
    ("CRIO_CONFIG_MODE", "config"),
)

TRAITS: tuple[Traits, ...] = (
    Traits(
        "1.14",
        pid_file="/run/nvidia/toolkit.pid",
        pid_file_env=False,
        dev_root_env=False,
        drop_in=False,
        configures_runtime=True,
        cdi_env=_CDI_ANNOTATIONS,
    ),
    Traits(
        "1.16",
        pid_file="/run/nvidia/toolkit/toolkit.pid",
        pid_file_env=True,
        dev_root_env=True,
        drop_in=False,
        configures_runtime=True,
        cdi_env=_CDI_ANNOTATIONS,
    ),
    Traits(
        "1.18",
        pid_file="/run/nvidia/toolkit/toolkit.pid",
        pid_file_env=True,
        dev_root_env=True,
        drop_in=True,
        configures_runtime=True,
        cdi_env=_CDI_MODE,
    ),
    Traits(
        "1.19",
        pid_file="/run/nvidia/toolkit/toolkit.pid",
        pid_file_env=True,
        dev_root_env=True,
        drop_in=False,
        configures_runtime=False,
        cdi_env=_CDI_MODE,
    ),
)


def traits(image: str) -> Traits:
    return for_version(image, TRAITS)


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["container-toolkit"]
    t = traits(image)
    containerd = (
        (
            ("RUNTIME", "containerd"),
            ("CONTAINERD_RUNTIME_CLASS", RUNTIME_CLASS),
            ("NO_RUNTIME_CONFIG", "true"),
        )
        if not t.configures_runtime
        else (
            ("RUNTIME", "containerd"),
            ("CONTAINERD_RUNTIME_CLASS", RUNTIME_CLASS),
            ("RUNTIME_CONFIG", "/runtime/config-dir/config.toml"),
            ("CONTAINERD_CONFIG", "/runtime/config-dir/config.toml"),
            *(
                (
                    ("RUNTIME_DROP_IN_CONFIG", "/runtime/config-dir.d/99-nvidia.toml"),
                    ("RUNTIME_DROP_IN_CONFIG_HOST_PATH", f"{DROP_IN_DIR}/99-nvidia.toml"),
                )
                if t.drop_in
                else ()
            ),
            ("RUNTIME_SOCKET", "/runtime/sock-dir/containerd.sock"),
            ("CONTAINERD_SOCKET", "/runtime/sock-dir/containerd.sock"),
        )
    )
    # The toolkit-root host directory only holds the pid file, so it is mounted only where the
    # image can be told to write it there; older images get a pod-local /run/nvidia for it.
    toolkit_root = ("toolkit-root",) if t.pid_file_env else ()
    pid_dir = () if t.pid_file_env else ((PID_DIR, "/run/nvidia", False),)
    toolkit = Container(
        name="nvidia-container-toolkit-ctr",
        image=image,
        env=(
            ("ROOT", contract.TOOLKIT_INSTALL_ROOT),
            ("NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND", "management.nvidia.com/gpu"),
            ("NVIDIA_VISIBLE_DEVICES", "void"),
            *GPU_ACCESS,
            *((("TOOLKIT_PID_FILE", t.pid_file),) if t.pid_file_env else ()),
            # The driver is the host's (baked into the image), not a driver container's under
            # /run/nvidia/driver: the operator sets the same pair when its driver is disabled
            # (both names read since v1.14.3, tools/container/toolkit/toolkit.go).
            ("NVIDIA_DRIVER_ROOT", "/"),
            ("DRIVER_ROOT_CTR_PATH", "/host"),
            *((("NVIDIA_DEV_ROOT", "/"), ("DEV_ROOT_CTR_PATH", "/host")) if t.dev_root_env else ()),
            *containerd,
            *(t.cdi_env if ctx.cdi else ()),
        ),
        host_paths=(
            *(
                ("containerd-config", *(("containerd-drop-in-config",) if t.drop_in else ()), "containerd-socket")
                if t.configures_runtime
                else ()
            ),
            *toolkit_root,
            "toolkit-install-dir",
            "host-root",
            "cdi-root",
        ),
        mounts=pid_dir,
        privileged=True,
        read_only_root=False,
        requests=("50m", "64Mi"),
    )
    writes = (
        f"writes the containerd drop-in {DROP_IN_DIR}/99-nvidia.toml, imports it into {CONFIG_TOML} until the "
        "next boot and restarts containerd (privileged, hostPID)"
        if t.drop_in
        else f"adds the nvidia runtime to {CONFIG_TOML} (restored on exit) and restarts containerd (privileged, hostPID)"
        if t.configures_runtime
        else "which the node's user data registers with containerd at boot: leaves containerd alone (privileged)"
    )
    return OperandSpec(
        operand="container-toolkit",
        reason=(
            f"installs the NVIDIA runtime under {contract.TOOLKIT_INSTALL_ROOT}, {writes}; "
            "generates CDI specs in /var/run/cdi; its driver check chroots into / and links the GPU char devices in /dev/char"
        ),
        init_containers=(validator.driver_check(ctx.images["validator"]),),
        containers=(toolkit,),
        host_paths=(
            *(
                (
                    HostPath(
                        "containerd-config", "/etc/containerd", "/runtime/config-dir/", False, "DirectoryOrCreate"
                    ),
                    *(
                        (
                            HostPath(
                                "containerd-drop-in-config",
                                DROP_IN_DIR,
                                "/runtime/config-dir.d/",
                                False,
                                "DirectoryOrCreate",
                            ),
                        )
                        if t.drop_in
                        else ()
                    ),
                    HostPath("containerd-socket", "/run/containerd", "/runtime/sock-dir/", False),
                )
                if t.configures_runtime
                else ()
            ),
            *(
                (HostPath("toolkit-root", "/run/nvidia/toolkit", "/run/nvidia/toolkit", False, "DirectoryOrCreate"),)
                if t.pid_file_env
                else ()
            ),
            HostPath("toolkit-install-dir", contract.TOOLKIT_INSTALL_ROOT, contract.TOOLKIT_INSTALL_ROOT, False),
            validator.HOST_ROOT,
            HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"),
            validator.HOST_DEV_CHAR,
            HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, False, "DirectoryOrCreate"),
        ),
        empty_dirs=() if t.pid_file_env else (PID_DIR,),
        # Only for the SIGHUP that restarts containerd (toolkit-host-namespace-pid).
        host_pid=t.configures_runtime,
        # The GPU Operator's pod label (assets/state-container-toolkit/0500_daemonset.yaml:17 at
        # v23.9.0 .. v26.7.0), kept beside ours.
        app_label="nvidia-container-toolkit-daemonset",
    )


class ContainerToolkit(Operand):
    """`gpu-platform:operands:ContainerToolkit`."""
