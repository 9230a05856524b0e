"""A version given as text: only a number is told to quote itself, never a quoted version that is
unknown, nor a mapping."""

from __future__ import annotations

from tests.gpu_platform.config import message_for


def test_a_quoted_but_unknown_cuda_version_is_not_told_to_quote_itself():
    message = message_for(lambda raw: raw["gpu-platform:workloads"].update(cudaVersions=["99.9"]))
    assert (
        "gpu-platform:workloads.cudaVersions[0]: '99.9' is not a CUDA toolkit version the matrix knows (valid: 11.8, "
        in message
    )
    assert "quote" not in message


def test_an_unknown_quoted_kubernetes_version_is_not_told_to_quote_itself():
    message = message_for(lambda raw: raw["gpu-platform:cluster"].update(kubernetesVersion="1.3x"))
    assert "gpu-platform:cluster.kubernetesVersion: '1.3x' is not a Kubernetes minor version" in message
    assert "quote" not in message


def test_a_merge_entry_in_the_cuda_list_is_named_a_mapping_not_told_to_quote_itself():
    message = message_for(lambda raw: raw["gpu-platform:workloads"].update(cudaVersions=[{"a": "b"}]))
    assert 'cudaVersions[0]: {"a": "b"} is a mapping, not a CUDA toolkit version' in message
    assert "write it quoted" not in message and "read as a number" not in message
