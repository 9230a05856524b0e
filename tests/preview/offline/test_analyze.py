"""One analyzer, the real one: every stack (shipped and fixtures) gets the same verdict, policy for
policy, from the offline preview's in-process pack and from the pack started as the Pulumi CLI
starts it (a subprocess over gRPC); and the first preview of a new stack (computed values unknown)
decides the same as `pulumi up`."""

from __future__ import annotations

import pytest

from preview.offline import analyze, engine, policy_config, requests
from preview.reports import report
from tests import fixture_stacks
from tests.conftest import FIXTURES, SHIPPED_STACKS, record_mode
from tests.policy.resources import launch_template, node_image
from tests.policy.verdict import UNKNOWN, diagnostics

STACKS = SHIPPED_STACKS + fixture_stacks.paths("violating") + sorted((FIXTURES / "passing").glob("*.yaml"))


@pytest.mark.parametrize("stack", STACKS, ids=lambda p: p.stem)
@pytest.mark.parametrize("mode", engine.MODES)
def test_the_cli_started_pack_and_the_offline_preview_agree(stack, mode, real_pack):
    recording = record_mode(stack, mode)
    assert analyze.analyze(recording, real_pack) == analyze.analyze(recording)


@pytest.mark.parametrize("stack", STACKS, ids=lambda p: p.stem)
def test_the_first_preview_decides_every_policy_as_pulumi_up_does(stack):
    up = analyze.analyze(record_mode(stack, engine.UP))
    first = analyze.analyze(record_mode(stack, engine.FIRST_PREVIEW))
    assert [v for v in first if v.undecided] == []
    assert first == up


def test_the_first_preview_really_has_unknowns(prod):
    # Otherwise the test above would compare one view with itself.
    first = record_mode(engine.stack_file("prod"), engine.FIRST_PREVIEW)
    template = first.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l40s-lt")
    assert template.sent.fields["imageId"].string_value == UNKNOWN
    assert template.sent.fields["userData"].string_value == UNKNOWN
    assert "imageId" in prod.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l40s-lt").inputs


def test_a_policy_that_reads_an_unknown_value_says_it_cannot_decide_and_never_passes():
    # The hop limit is unknown: the analyzer answers "can't run policy ... during preview", advisory.
    unknown = launch_template(props={"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": UNKNOWN}})
    found = [d for d in diagnostics([unknown]) if d.policyName == "gpu-launch-templates-hardened"]
    assert len(found) == 1
    assert "can't run policy" in found[0].message and "httpPutResponseHopLimit" in found[0].message
    assert policy_config.FROM_PROTO[found[0].enforcementLevel] == "advisory"


def test_an_undecided_policy_is_shown_as_such_in_the_summary(dev):
    up = [analyze.Violation("gpu-launch-templates-hardened", "mandatory", "urn:x", "hop limit 2")]
    first = [
        analyze.Violation(
            "gpu-launch-templates-hardened", "advisory", "urn:x", "can't run policy ...: unknown", undecided=True
        )
    ]
    text = report.summary(dev, up, "stacks/Pulumi.dev.yaml", first_preview=first)
    assert "First pulumi preview of a new stack (ids and computed outputs unknown): differs" in text
    assert "[cannot decide until the values exist; pulumi up decides] gpu-launch-templates-hardened" in text
    # pulumi up's verdict still counts: the summary fails.
    assert text.rstrip().endswith("Verdict: FAIL (mandatory policy violations)")


def test_a_mandatory_violation_only_the_first_preview_finds_fails_the_verdict(dev):
    first = [analyze.Violation("release-supports-kubernetes", "mandatory", "urn:x", "boom")]
    assert report.fails([], first)
    assert "[mandatory, found only by the first preview] release-supports-kubernetes" in report.summary(
        dev, [], "s", first_preview=first
    )


def test_resource_policy_diagnostics_belong_to_the_analyzed_resource(dev):
    broken = dev.replaced(
        "aws:imagebuilder/image:Image",
        "gpu-node-image-image",
        lambda inputs: inputs["tags"].pop("audit.gpu-platform.io/approval"),
    )
    found = [v for v in analyze.analyze(broken) if v.policy == "privileged-software-tagged"]
    assert [v.urn for v in found] == [dev.one("aws:imagebuilder/image:Image", "gpu-node-image-image").urn]


def test_a_stack_policy_diagnostic_without_a_resource_belongs_to_the_root_stack(dev):
    # declared-facts-agree names no single resource: the engine files it under the root stack.
    changed = dev.replaced(
        "kubernetes:core/v1:Namespace",
        "gpu-namespace",
        lambda inputs: inputs["metadata"]["annotations"].update({"gpu-platform.io/operator-release": "v25.3.0"}),
    )
    found = [v for v in analyze.analyze(changed) if v.policy == "declared-facts-agree"]
    assert [v.urn for v in found] == ["urn:pulumi:dev::gpu-platform::pulumi:pulumi:Stack::gpu-platform-dev"]
    assert "v25.3.0" in found[0].message and "v25.10.1" in found[0].message


def test_the_image_is_checked_before_anything_else_sees_its_driver():
    # A resource policy on the image: it runs before the image's create step, so a bad driver never
    # starts a 30-60 minute bake, also under `pulumi up --skip-preview`.
    found = [
        d for d in diagnostics([node_image(driver="560.35.03")]) if d.policyName == "driver-branch-supported-by-release"
    ]
    assert len(found) == 1


def test_the_in_process_pack_converts_each_message_of_a_call_once(dev, monkeypatch):
    # pulumi_policy converts a resource's properties for each policy it runs (policy.py:997, 1049,
    # 1410 at 1.21.0); a call holds one properties message per resource and one per provider, and
    # each is converted once: the preview's cost must not grow as resources times policies.
    from google.protobuf import json_format

    real, converted = json_format.MessageToDict, []
    monkeypatch.setattr(
        json_format, "MessageToDict", lambda message, *a, **k: converted.append(message) or real(message, *a, **k)
    )
    pack = analyze.in_process()
    pack.Configure(policy_config.configure_request(analyze.info(pack), {}))
    stack = requests.analyze_stack_request(dev)
    converted.clear()
    pack.AnalyzeStack(stack)
    messages = [r.properties for r in stack.resources] + [
        r.provider.properties for r in stack.resources if r.HasField("provider")
    ]
    assert len(converted) == len({id(m) for m in messages})
    (request, *_) = [r for r in requests.analyze_requests(dev) if r.HasField("provider")]
    converted.clear()
    pack.Analyze(request)
    assert len(converted) == 2  # its properties and its provider's


def test_within_one_call_a_message_is_proxied_once_and_no_policy_can_write_to_it():
    # pulumi_policy builds a proxy per policy (policy.py:998); shared, one policy's write would reach
    # the next, so during the call the only way to write, a dict proxy's __setitem__, raises.
    import pulumi_policy.policy as servicer

    props = {"spec": {"replicas": 1}}
    with analyze._converting_once():
        first = servicer.unknown_checking_proxy(props)
        assert servicer.unknown_checking_proxy(props) is first
        with pytest.raises(TypeError, match="policies only read them"):
            first["spec"] = {}
    after = servicer.unknown_checking_proxy(props)
    assert after is not first
    after["spec"] = {}  # outside the call the library's own behaviour is back
