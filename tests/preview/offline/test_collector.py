"""preview/offline/collector.py: the collector is off inside, and put back as it was outside."""

from __future__ import annotations

import gc

import pytest

from preview.offline import collector, engine


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_inside_no_collection_runs_and_outside_it_is_back_on(collector_on):
    with collector.held():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_holds_leave_it_off_until_the_outer_one_ends(collector_on):
    with collector.held():
        with collector.held():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off():
    was = gc.isenabled()
    gc.disable()
    try:
        with collector.held():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_an_error_inside_puts_it_back(collector_on):
    with pytest.raises(RuntimeError), collector.held():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_the_program_runs_with_it_held(collector_on, monkeypatch):
    seen = []

    async def nothing():
        return None

    def run_pulumi_func(_program):
        seen.append(gc.isenabled())
        return nothing()

    monkeypatch.setattr(engine, "run_pulumi_func", run_pulumi_func)
    engine.run(engine.stack_file("dev"))
    assert seen == [False]
    assert gc.isenabled()


def test_the_pack_judges_with_it_held(collector_on, dev):
    from preview.offline import analyze

    pack = analyze.in_process()
    seen = []

    class Watched:
        def __getattr__(self, name):
            method = getattr(pack, name)
            if name not in ("Analyze", "AnalyzeStack"):
                return method
            return lambda request, *rest: seen.append(gc.isenabled()) or method(request, *rest)

    analyze.analyze(dev, Watched())
    assert seen and not any(seen)
    assert gc.isenabled()
