"""Which tests depend on which code, told truthfully to mutmut's coverage pass.

mutmut (`make mutation`) runs, for each mutant, only the tests that executed the mutated function
during one instrumented run of the suite (MUTANT_UNDER_TEST=stats): it credits a test with the
functions called between the previous test's teardown and its own. Caching defeats that: the
recording of a stack made once per session, a module-scoped fixture, an lru_cache in the program
and code run at import time are credited to the one test that ran first, and a mutant there would
be tried against that test alone and "survive". During that pass only, this plugin
- remembers what each fixture's setup executed and credits it to every test using the fixture,
- makes the suite's own caches (`cached` below) credit each caller with what the cached call ran,
- credits what ran at import time to every test,
- clears the program's lru_caches after each test, so each test runs what it depends on.
Outside that pass `cached` is functools.lru_cache and nothing here runs.

It reads mutmut 3.8.1's record of hits (mutmut.state.state()._stats): pinned in
requirements-mutation.txt; a newer mutmut needs this file checked."""

from __future__ import annotations

import functools
import os
import sys

import pytest

ACTIVE = os.environ.get("MUTANT_UNDER_TEST") == "stats"
PROGRAM = ("components", "gpu_platform", "policy", "preview")


def _hits() -> set[str]:
    from mutmut.state import state

    return state()._stats


def cached(function):
    """functools.lru_cache, except under mutmut's coverage pass, where every call is credited with
    the code the first call ran."""
    if not ACTIVE:
        return functools.lru_cache(maxsize=None)(function)
    store: dict = {}

    @functools.wraps(function)
    def wrapper(*args):
        if args not in store:
            outer = set(_hits())
            _hits().clear()
            try:
                value = function(*args)
            finally:
                ran = set(_hits())
                _hits().update(outer)
            store[args] = (value, ran)
        value, ran = store[args]
        _hits().update(ran)
        return value

    return wrapper


class Attribution:
    def __init__(self) -> None:
        self.at_import: set[str] = set()
        self.by_fixture: dict[int, set[str]] = {}
        self.program_caches: list = []

    def pytest_collection_finish(self, session):
        self.at_import = set(_hits())
        for name, module in list(sys.modules.items()):
            if name.split(".")[0] in PROGRAM and module is not None:
                self.program_caches += [v for v in vars(module).values() if isinstance(v, functools._lru_cache_wrapper)]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        outer = set(_hits())
        _hits().clear()
        try:
            yield
        finally:
            self.by_fixture[id(fixturedef)] = set(_hits())
            _hits().update(outer)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        _hits().update(self.at_import)
        for name in item.fixturenames:
            for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):
                _hits().update(self.by_fixture.get(id(fixturedef), ()))
        yield

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item, nextitem):
        for cache in self.program_caches:
            cache.cache_clear()
