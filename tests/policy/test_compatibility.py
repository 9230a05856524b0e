"""Version-matrix policies, called directly with resource inputs as the engine hands them over."""

from __future__ import annotations

from pulumi_policy import StackValidationArgs

from policy.compatibility import release_supports_kubernetes
from tests.policy.resources import cluster, namespace


def violations(policy, resources):
    found = []
    policy.validate(StackValidationArgs(resources), lambda message, urn=None: found.append((message, urn)))
    return found


def test_release_that_supports_the_kubernetes_minor_passes():
    for release, minor in (("v25.10.1", "1.33"), ("v24.3.0", "1.30"), ("v23.9.2", "1.29")):
        assert violations(release_supports_kubernetes, [cluster(minor), namespace(release)]) == []


def test_release_older_than_the_kubernetes_minor_fails_naming_both_sides():
    found = violations(release_supports_kubernetes, [cluster("1.33"), namespace("v24.3.0")])
    assert len(found) == 1
    message, urn = found[0]
    assert "v24.3.0" in message and "1.22-1.30" in message and "1.33" in message
    assert "v25.10.1" in message or "v26" in message  # a fix that exists
    assert urn == namespace("v24.3.0").urn


def test_release_newer_than_the_kubernetes_minor_fails():
    # v25.3.0 raised the minimum to 1.29.
    assert len(violations(release_supports_kubernetes, [cluster("1.28"), namespace("v25.3.0")])) == 1


def test_adopted_cluster_version_is_read_from_launch_template_tags():
    from tests.policy.resources import launch_template

    found = violations(release_supports_kubernetes, [launch_template(kubernetes="1.36"), namespace("v25.10.1")])
    assert len(found) == 1 and "1.36" in found[0][0]
