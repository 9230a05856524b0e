"""User data for a GPU node on a custom AMI: a nodeadm NodeConfig, as EKS adds no bootstrap for
custom AMIs. It carries what the node needs to join (cluster name, endpoint, CA, service CIDR) and
the kubelet labels and taint of the pool, so a node joins already gated and tainted."""

from __future__ import annotations

import yaml

_BOUNDARY = "==GPUPLATFORM=="


def node_config(cluster_name: str, endpoint: str, certificate_authority: str, service_cidr: str,
                labels: dict[str, str], taints: list[dict[str, str]]) -> str:
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
        },
    }
    return yaml.safe_dump(document, sort_keys=False, width=1000)


def mime(node_config_yaml: str) -> str:
    """nodeadm reads NodeConfig parts of a MIME multi-part document."""
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{_BOUNDARY}"\n'
        "\n"
        f"--{_BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n"
        "\n"
        f"{node_config_yaml}"
        f"--{_BOUNDARY}--\n"
    )
