"""The audit report's public exposure lines (preview/reports/aws_exposure.py): each launch template's
addressing as the recording has it."""

from __future__ import annotations

from preview.reports import aws_exposure


def _lines(rec) -> list[str]:
    return [line for line in aws_exposure.section(rec) if line.startswith("- LaunchTemplate")]


def test_a_single_interface_template_shows_its_public_address_setting(prod):
    (l40s,) = [line for line in _lines(prod) if "gpu-pool-l40s-lt" in line]
    assert l40s.endswith("associatePublicIpAddress interface 0: false")


def test_an_efa_template_says_no_public_address_for_its_interfaces(prod):
    (h100,) = [line for line in _lines(prod) if "gpu-pool-h100-mig-lt" in line]
    assert "32 interfaces (efa, efa-only): no public address" in h100
