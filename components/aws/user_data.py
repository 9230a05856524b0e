"""User data for a GPU node on a custom AMI: a nodeadm NodeConfig, as EKS adds no bootstrap for
custom AMIs. It carries what the node needs to join (cluster name, endpoint, CA, service CIDR) and
the kubelet labels and taint of the pool, so a node joins already gated and tainted.

On an image the stack did not bake (AWS's accelerated AMI, or a pinned one) the user data also makes
the container toolkit refuse GPUs to pods the device plugin gave none, as a baked image does at bake
time (scripts/install-nvidia-driver.sh): `gpu_access_script`."""

from __future__ import annotations

import yaml

from components.aws.image_component import GPU_ACCESS_SETTINGS
from gpu_platform.interface import contract

_BOUNDARY = "==GPUPLATFORM=="
# A kubelet drop-in, so that the settings are applied before every start of the kubelet, on every boot.
KUBELET_DROP_IN = "/etc/systemd/system/kubelet.service.d/10-gpu-platform-gpu-access.conf"
NVIDIA_CTK = "/usr/bin/nvidia-ctk"


def node_config(
    cluster_name: str,
    endpoint: str,
    certificate_authority: str,
    service_cidr: str,
    labels: dict[str, str],
    taints: list[dict[str, str]],
    containerd_config: str = "",
) -> str:
    """`containerd_config`: TOML nodeadm merges into the containerd config it writes (toolkit_runtime)."""
    flags = [
        "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        "--register-with-taints=" + ",".join(f"{t['key']}={t['value']}:{t['effect']}" for t in taints),
    ]
    document = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": cluster_name,
                "apiServerEndpoint": endpoint,
                "certificateAuthority": certificate_authority,
                "cidr": service_cidr,
            },
            "kubelet": {"flags": flags},
            **({"containerd": {"config": containerd_config}} if containerd_config else {}),
        },
    }
    return yaml.safe_dump(document, sort_keys=False, width=1000)


def toolkit_runtime(cdi: bool) -> str:
    """containerd config for a node whose toolkit the DaemonSet installs: the `nvidia` runtime on the
    binary the operand leaves on the host's disk, so containerd serves it from boot.

    nodeadm rewrites /etc/containerd/config.toml at every boot from its template, which imports no
    drop-in, so nothing the toolkit writes survives a reboot; it deep-merges this TOML into its own,
    the user's keys winning (amazon-eks-ami v20260714 nodeadm/internal/containerd/config.go:59-106,
    config2.template.toml, config.template.toml; util.Merge is mergo.Merge WithOverride,
    internal/util/merge.go:16-53). Config version 2, which nodeadm takes on containerd 1.7 and, on
    2.x, renders with its version-2 template and migrates (config.go:82-87, 126-142); version 3 fails
    nodeadm on 1.7. Not the default runtime: at first boot the binary is not there yet, and
    containerd checks no BinaryName until a container of that runtime starts (containerd v2.2.4
    internal/cri/config/config.go:608-684; cmd/containerd-shim-runc-v2/runc/container.go:85, 205),
    so only pods of the nvidia RuntimeClass wait (the toolkit's own pod runs under runc). The options
    are those the installer copies from the runc runtime, as nodeadm writes them for it; with CDI,
    enable_cdi as the installer sets it (RUNTIME_ENABLE_CDI defaults to CDI_ENABLED:
    cmd/nvidia-ctk-installer/container/runtime/runtime.go:153-155 at v1.20.0), which nodeadm sets
    only from kubelet 1.32 (config.go:115)."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    runtime = f"{cri}.containerd.runtimes.{contract.NVIDIA_RUNTIME_HANDLER}"
    return (
        "version = 2\n" + (f"\n[{cri}]\nenable_cdi = true\n" if cdi else "") + f"\n[{runtime}]\n"
        'runtime_type = "io.containerd.runc.v2"\n'
        'base_runtime_spec = "/etc/containerd/base-runtime-spec.json"\n'
        f"\n[{runtime}.options]\n"
        f'BinaryName = "{contract.TOOLKIT_RUNTIME}"\n'
        "SystemdCgroup = true\n"
    )


def gpu_access_script() -> str:
    """A cloud-init user script that makes the container toolkit refuse NVIDIA_VISIBLE_DEVICES from
    unprivileged pods and accept the device plugin's volume mounts, before any pod runs.

    AWS's accelerated AMI sets neither (nothing in amazon-eks-ami v20260714 templates/ calls nvidia-ctk),
    so its toolkit keeps its defaults: NVIDIA_VISIBLE_DEVICES accepted from any pod, volume mounts
    ignored (nvidia-container-toolkit v1.19.1 api/config/v1/config.go lines 64-65 and 105-106), while
    nodeadm makes `nvidia` the default runtime of every pod (nodeadm/internal/containerd/
    runtime_config_nvidia.go). Why this runs before the kubelet admits a pod: the settings are an
    ExecStartPre of kubelet.service, so they are written before every kubelet start, and a failure
    keeps the kubelet down (the node never turns Ready, so it serves nothing unprotected). The drop-in
    itself is written at first boot by cloud-init's scripts-user module, in cloud-final (cloud-init
    22.2.2 config/cloud.cfg.tmpl lines 159 and 181), and the kubelet is started only by nodeadm-run,
    which runs After=cloud-final.service (amazon-eks-ami v20260714,
    templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service line 6; nodeadm init's run
    phase starts the daemons, nodeadm/cmd/nodeadm/init/init.go lines 140-153; the AMI enables no
    kubelet.service of its own: install-worker.sh line 199, install-nodeadm.sh lines 57-60)."""
    settings = " ".join(f"--set {key}={value}" for key, value in GPU_ACCESS_SETTINGS)
    return (
        "#!/usr/bin/env bash\n"
        "# gpu-platform: GPUs only for the pods the device plugin gave them (components/aws/user_data.py).\n"
        "set -euo pipefail\n"
        f'mkdir -p "${{ROOT:-}}{KUBELET_DROP_IN.rsplit("/", 1)[0]}"\n'
        f"cat >\"${{ROOT:-}}{KUBELET_DROP_IN}\" <<'GPU_PLATFORM_EOF'\n"
        "[Service]\n"
        f"ExecStartPre={NVIDIA_CTK} config --in-place {settings}\n"
        "GPU_PLATFORM_EOF\n"
        "systemctl daemon-reload\n"
    )


def mime(node_config_yaml: str, script: str | None = None) -> str:
    """nodeadm reads NodeConfig parts of a MIME multi-part document; cloud-init runs its
    text/x-shellscript parts."""
    parts = [("application/node.eks.aws", node_config_yaml)]
    if script:
        parts.append(('text/x-shellscript; charset="us-ascii"', script))
    body = "".join(f"--{_BOUNDARY}\nContent-Type: {kind}\n\n{text}" for kind, text in parts)
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{_BOUNDARY}"\n\n{body}--{_BOUNDARY}--\n'
