"""tools/mutation/sample.py: which mutants `make mutation SAMPLE=N` runs."""

from __future__ import annotations

import json

import pytest

from tools.mutation import sample
from tools.mutation.report import Mutant


def _pending(package: str, count: int, done: int = 0) -> list[Mutant]:
    module = package.replace("/", ".")
    return [
        Mutant(f"{module}.m.x_f__mutmut_{i}", package, "killed" if i < done else "not run") for i in range(count + done)
    ]


def test_each_package_gets_its_share_of_what_it_has_not_run():
    # 60 + 30 + 10 pending (policy's 50 already run do not count): 10 -> 6, 3, 1.
    mutants = _pending("components/aws", 60) + _pending("gpu_platform", 30) + _pending("policy", 10, done=50)
    chosen = sample.sample(mutants, 10)
    assert [
        sum(name.startswith(prefix) for name in chosen) for prefix in ("components.aws.", "gpu_platform.", "policy.")
    ] == [6, 3, 1]
    assert not set(chosen) & {m.name for m in mutants if m.status != "not run"}


def test_largest_remainders_round_the_shares_to_the_size():
    # 2 of 3 pending in each of three packages: exact shares 2/3 each; the two largest remainders
    # (ties broken by package name) get one.
    mutants = _pending("components", 3) + _pending("gpu_platform", 3) + _pending("policy", 3)
    chosen = sample.sample(mutants, 2)
    assert len(chosen) == 2 and {name.split(".")[0] for name in chosen} == {"components", "gpu_platform"}


def test_the_same_seed_gives_the_same_sample_and_another_seed_another():
    mutants = _pending("policy", 200)
    assert sample.sample(mutants, 20) == sample.sample(list(reversed(mutants)), 20)
    assert sample.sample(mutants, 20, seed=1) != sample.sample(mutants, 20)


def test_a_mutant_with_any_result_is_not_sampled_again():
    ran = [
        Mutant(f"policy.m.x_f__mutmut_{status}", "policy", status)
        for status in ("killed", "survived", "timeout", "no tests", "suspicious")
    ]
    assert sample.sample(ran + _pending("gpu_platform", 2), 7) == [
        "gpu_platform.m.x_f__mutmut_0",
        "gpu_platform.m.x_f__mutmut_1",
    ]


def test_asking_for_more_than_is_left_runs_what_is_left():
    assert len(sample.sample(_pending("policy", 5, done=5), 40)) == 5


def test_nothing_to_sample_is_exit_2_saying_how_to_generate_the_mutants(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sample, "MUTANTS", tmp_path)
    assert sample.main(["5"]) == 2
    assert "make mutation MUTANTS='policy.*'" in capsys.readouterr().err


def test_the_names_are_printed_one_per_line_from_mutmuts_records(tmp_path, monkeypatch, capsys):
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "gpu.py.meta").write_text(
        json.dumps({"exit_code_by_key": {"policy.gpu.x_a__mutmut_1": None, "policy.gpu.x_a__mutmut_2": 1}})
    )
    monkeypatch.setattr(sample, "MUTANTS", tmp_path)
    assert sample.main(["3"]) == 0
    assert capsys.readouterr().out == "policy.gpu.x_a__mutmut_1\n"


@pytest.mark.parametrize("size", ["0", "-3"])
def test_a_size_below_one_is_a_usage_error(size, capsys):
    with pytest.raises(SystemExit) as stopped:
        sample.main([size])
    assert stopped.value.code == 2
