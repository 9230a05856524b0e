"""The policy-pack config file, read and sent through Configure as the CLI does
(pulumi/pulumi v3.259.0 pkg/resource/analyzer/config.go), and the preview's own stricter checks."""

from __future__ import annotations

import json

import pytest

from preview.__main__ import main
from preview.offline import analyze, policy_config
from tests import fixture_stacks
from tests.policy.test_pack import EXPECTED

TOO_OLD_FOR_GPU = fixture_stacks.row("violating", "driver-too-old-for-gpu").path

LEVEL = {v: k for k, v in policy_config.FROM_PROTO.items()}


def _sent(config: dict) -> dict[str, str]:
    request = policy_config.configure_request(
        analyze.info(analyze.in_process()), policy_config.parse(json.dumps(config), "f")
    )
    return {name: policy_config.FROM_PROTO[c.enforcementLevel] for name, c in request.policyConfig.items()}


def test_every_policy_is_sent_with_its_own_level_when_the_file_sets_none():
    sent = _sent({})
    assert sent["cluster-endpoint-private"] == "advisory" and sent["driver-supports-gpu"] == "mandatory"
    assert sorted(sent) == sorted(name for name, _, _ in EXPECTED)  # every policy the pack serves


def test_all_sets_every_level_and_a_named_policy_still_wins():
    sent = _sent({"all": "advisory", "driver-supports-gpu": {"enforcementLevel": "disabled"}})
    assert sent["release-supports-kubernetes"] == "advisory" and sent["driver-supports-gpu"] == "disabled"


def test_an_object_without_a_level_keeps_the_policys_own():
    assert _sent({"driver-supports-gpu": {"someProperty": 1}})["driver-supports-gpu"] == "mandatory"


def test_an_empty_file_is_no_config():
    assert policy_config.parse("  \n", "f") == {}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[1]", "must be a JSON object"),
        (
            '{"driver-supports-gpu": "warn"}',
            "'warn' is not an enforcement level (valid: advisory, mandatory, remediate, disabled)",
        ),
        (
            '{"driver-supports-gpu": {"enforcementLevel": 3}}',
            "driver-supports-gpu.enforcementLevel: 3 is not an enforcement level",
        ),
        ('{"driver-supports-gpu": 3}', "neither an enforcement level nor an object"),
        ('{"environments": ["prod-env"]}', "Pulumi ESC"),
        ("{", "not JSON"),
        ('{"driver-supports-gpu": ""}', "'' is not an enforcement level"),
        ('{"driver-supports-gpu": {"enforcementLevel": ""}}', "driver-supports-gpu.enforcementLevel: '' is not"),
        ('{"driver-supports-gpu": "Mandatory"}', "'Mandatory' is not an enforcement level"),
        # Go's encoding/json (the CLI's reader) has no NaN or Infinity; protobuf could not carry them either.
        ('{"cluster-endpoint-private": {"x": 1e999}}', "not JSON (1e999 is beyond the largest number"),
        ('{"cluster-endpoint-private": {"x": NaN}}', "not JSON (NaN is not a JSON number"),
        ('{"cluster-endpoint-private": {"x": -Infinity}}', "not JSON (-Infinity is not a JSON number"),
        ('{"cluster-endpoint-private": {"x": ' + "9" * 5000 + "}}", "not JSON (a number of more than 4300 digits)"),
    ],
)
def test_a_malformed_file_names_the_flag_and_the_key(text, fragment):
    with pytest.raises(ValueError) as caught:
        policy_config.parse(text, "--policy-config p.json")
    assert str(caught.value).startswith("--policy-config p.json") and fragment in str(caught.value)


def test_an_unknown_policy_name_is_an_error_the_cli_would_ignore(tmp_path, capsys):
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"driver-suports-gpu": "advisory"}))
    assert main(["--stack", "dev", "--policy-config", str(levels)]) == 2
    err = capsys.readouterr().err
    assert (
        "'driver-suports-gpu' is not a policy of the pack" in err
        and "driver-supports-gpu" in err
        and "ignore it silently" in err
    )


def test_all_without_a_level_is_refused_as_the_cli_refuses_it():
    with pytest.raises(ValueError, match="all: sets no enforcementLevel"):
        policy_config.validate(policy_config.parse('{"all": {"x": 1}}', "f"), ["a"], "f")


def test_all_advisory_lets_a_violating_stack_pass(tmp_path):
    levels = tmp_path / "levels.json"
    levels.write_text('{"all": "advisory"}')
    assert main(["--config", str(TOO_OLD_FOR_GPU), "--policy-config", str(levels)]) == 0


def test_the_level_reaches_the_pack_started_as_the_cli_starts_it(real_pack):
    # The same Configure request, over gRPC: the level the CLI pack applies is the file's.
    from preview.offline import engine
    from tests.conftest import record_mode

    recording = record_mode(TOO_OLD_FOR_GPU, engine.UP)
    config = policy_config.parse('{"driver-supports-gpu": "advisory"}', "f")
    found = analyze.analyze(recording, real_pack, config)
    # Besides the advisories every stack has: no image digest pinned in the matrix, no approved ledger in the fixture.
    assert {(v.policy, v.enforcement_level) for v in found} == {
        ("driver-supports-gpu", "advisory"),
        ("privileged-images-pinned-by-digest", "advisory"),
        ("privilege-ledger-recorded", "advisory"),
    }
