"""gpu_platform/privileges/device_access.py: admin access to DRA devices is a ledger row wherever it is asked
for (any resource.k8s.io version, either request form) and where the namespace label opens it; an
ordinary claim adds nothing."""

from __future__ import annotations

import pytest

from gpu_platform.privileges import device_access, ledger

TEMPLATE_V1 = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
NAMESPACE = "kubernetes:core/v1:Namespace"


def _template(request: dict, api: str = TEMPLATE_V1) -> list:
    props = {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"spec": {"devices": {"requests": [request]}}}}
    return ledger.resource_rows(api, "t-res", props)


def test_an_admin_access_template_is_a_row_naming_its_class_and_how_many():
    rows = _template(
        {"name": "all", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All", "adminAccess": True}}
    )
    assert rows == [
        (
            "ResourceClaimTemplate ns/t",
            "request all",
            "adminAccess to devices of class gpu.nvidia.com, allocationMode All",
        )
    ]


def test_an_exact_count_reads_with_its_count():
    rows = _template(
        {"name": "one", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1.0, "adminAccess": True}}
    )
    assert rows == [
        (
            "ResourceClaimTemplate ns/t",
            "request one",
            "adminAccess to devices of class gpu.nvidia.com, allocationMode ExactCount 1",
        )
    ]


def test_the_v1beta1_form_and_a_first_available_subrequest_count_too():
    beta = _template(
        {"name": "b", "deviceClassName": "x", "allocationMode": "All", "adminAccess": True},
        api="kubernetes:resource.k8s.io/v1beta1:ResourceClaimTemplate",
    )
    assert beta == [
        ("ResourceClaimTemplate ns/t", "request b", "adminAccess to devices of class x, allocationMode All")
    ]
    sub = _template(
        {
            "name": "f",
            "firstAvailable": [{"name": "s", "deviceClassName": "y", "allocationMode": "All", "adminAccess": True}],
        }
    )
    assert sub == [
        ("ResourceClaimTemplate ns/t", "request f/s", "adminAccess to devices of class y, allocationMode All")
    ]


def test_a_resource_claim_is_read_from_its_own_spec():
    props = {
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "r", "exactly": {"deviceClassName": "z", "allocationMode": "All", "adminAccess": True}}
                ]
            }
        },
    }
    assert ledger.resource_rows("kubernetes:resource.k8s.io/v1:ResourceClaim", "c", props) == [
        ("ResourceClaim ns/c", "request r", "adminAccess to devices of class z, allocationMode All")
    ]


@pytest.mark.parametrize(
    "exactly",
    [
        {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"},
        {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All", "adminAccess": False},
    ],
)
def test_an_ordinary_claim_adds_no_row(exactly):
    assert _template({"name": "r", "exactly": exactly}) == []


def test_the_namespace_label_is_a_row_and_only_when_true():
    def rows(labels):
        return device_access.rows(NAMESPACE, "ns-res", {"metadata": {"name": "gpu-operator", "labels": labels}})

    (row,) = rows({"resource.kubernetes.io/admin-access": "true"})
    assert row[:2] == ("Namespace gpu-operator", "(namespace)") and "resource.kubernetes.io/admin-access=true" in row[2]
    assert rows({"resource.kubernetes.io/admin-access": "false"}) == [] and rows({}) == []


def test_the_label_changes_the_hash_and_a_namespace_keeps_its_other_rows():
    plain = {"metadata": {"name": "gpu-operator", "labels": {}}}
    labelled = {"metadata": {"name": "gpu-operator", "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    before = ledger.rows([(NAMESPACE, "ns", plain)])
    after = ledger.rows([(NAMESPACE, "ns", labelled)])
    assert set(before) < set(after)
    assert ledger.digest(before) != ledger.digest(after)
