"""tests/attribution.py: under mutmut's coverage pass, a cached call credits every caller with the
code the first call ran; outside it, `cached` is a plain cache. (mutmut's record of hits is a set;
a set stands in for it here.)"""

from __future__ import annotations

from tests import attribution


def test_a_cache_hit_credits_the_caller_with_what_the_first_call_ran(monkeypatch):
    hits: set[str] = set()
    monkeypatch.setattr(attribution, "ACTIVE", True)
    monkeypatch.setattr(attribution, "_hits", lambda: hits)
    calls = []

    @attribution.cached
    def record(stack):
        calls.append(stack)
        hits.add(f"components.render.{stack}")
        return stack.upper()

    hits.add("earlier.test.code")
    assert record("dev") == "DEV"
    assert hits == {"earlier.test.code", "components.render.dev"}  # what ran before is kept
    hits.clear()  # the next test
    assert record("dev") == "DEV" and calls == ["dev"]  # cached: not run again...
    assert hits == {"components.render.dev"}  # ...but credited again
    hits.clear()
    record("prod")
    assert hits == {"components.render.prod"}


def test_outside_the_coverage_pass_it_is_a_plain_cache(monkeypatch):
    monkeypatch.setattr(attribution, "ACTIVE", False)
    calls = []

    @attribution.cached
    def twice(n):
        calls.append(n)
        return n * 2

    assert (twice(2), twice(2), twice(3)) == (4, 4, 6)
    assert calls == [2, 3]
