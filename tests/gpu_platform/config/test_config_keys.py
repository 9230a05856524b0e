"""Which `namespace:key` names a stack may hold: the project's keys, the engine's and the AWS
provider's settings; anything else would be ignored silently, so it is refused."""

from __future__ import annotations

import pytest

from gpu_platform.config.config_keys import key_problem


@pytest.mark.parametrize(
    "key",
    [
        "gpu-platform:cluster",
        "gpu-platform:nodePools",
        "pulumi:disable-default-providers",
        # Settings pulumi-aws reads (its config/vars.py: region, profile, defaultTags).
        "aws:region",
        "aws:profile",
        "aws:defaultTags",
    ],
)
def test_the_projects_keys_the_engines_and_the_aws_providers_settings_are_taken(key):
    assert key_problem(key) is None


def test_a_project_key_without_its_namespace_is_told_its_full_name():
    problem = key_problem("nodePools")
    assert (problem.path, problem.message) == (
        ("nodePools",),
        "a config key is namespace:key; did you mean gpu-platform:nodePools?",
    )


def test_a_namespace_no_package_reads_is_refused_naming_it():
    # The Kubernetes provider is built from the cluster: `kubernetes:` config would do nothing.
    problem = key_problem("kubernetes:context")
    assert problem.path == ("kubernetes:context",)
    assert problem.message.startswith("no package of this program reads the namespace 'kubernetes'")
