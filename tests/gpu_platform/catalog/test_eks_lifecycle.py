"""gpu_platform/catalog/eks_lifecycle.py and its calendar: the dates obey AWS's stated rule, a minor's phase
changes at the start of its end dates, and "today" comes from SOURCE_DATE_EPOCH or the clock."""

from __future__ import annotations

import datetime as dt

import pytest

from gpu_platform.catalog import eks_lifecycle as lifecycle

D = dt.date


def _plus_months(day: dt.date, months: int) -> dt.date:
    month = day.month - 1 + months
    return day.replace(year=day.year + month // 12, month=month % 12 + 1)


def test_extended_support_lasts_twelve_months_after_standard_support_for_every_dated_minor():
    dated = [row for row in lifecycle.calendar().values() if row.end_of_standard]
    assert len(dated) >= 12
    for row in dated:
        assert row.end_of_extended == _plus_months(row.end_of_standard, 12), row.minor


def test_standard_support_lasts_fourteen_months_from_the_eks_release():
    # AWS's FAQ rule; 1.24 and 1.25 got a few weeks more (the guide's table says so).
    for row in lifecycle.calendar().values():
        if row.released is None:
            continue
        assert row.end_of_standard >= _plus_months(row.released, 14), row.minor
        if row.minor not in ("1.24", "1.25"):
            assert row.end_of_standard == _plus_months(row.released, 14), row.minor


@pytest.mark.parametrize(
    "minor, standard, extended",
    [
        # From AWS's calendar as the issue and the sources state them.
        ("1.28", D(2024, 11, 26), D(2025, 11, 26)),
        ("1.31", D(2025, 11, 26), D(2026, 11, 26)),
        ("1.32", D(2026, 3, 23), D(2027, 3, 23)),
        ("1.35", D(2027, 3, 27), D(2028, 3, 27)),
    ],
)
def test_the_calendar_has_awss_dates(minor, standard, extended):
    row = lifecycle.calendar()[minor]
    assert (row.end_of_standard, row.end_of_extended) == (standard, extended)


def test_every_minor_the_config_accepts_has_a_row_and_each_row_names_its_source():
    assert {f"1.{n}" for n in range(25, 37)} <= set(lifecycle.calendar())
    for row in lifecycle.calendar().values():
        assert row.source in ("guide-2024-12", "guide-2025-07", "apex-2026-04", "none"), row.minor
        assert (row.source == "none") == (row.end_of_standard is None), row.minor


@pytest.mark.parametrize(
    "day, phase, until",
    [
        (D(2026, 3, 22), lifecycle.STANDARD, D(2026, 3, 23)),
        (D(2026, 3, 23), lifecycle.EXTENDED, D(2027, 3, 23)),  # extended support is billed from the start of the day
        (D(2027, 3, 22), lifecycle.EXTENDED, D(2027, 3, 23)),
        (D(2027, 3, 23), lifecycle.ENDED, None),
    ],
)
def test_a_minors_phase_changes_at_the_start_of_its_end_dates(day, phase, until):
    standing = lifecycle.standing("1.32", day)
    assert (standing.phase, standing.until) == (phase, until)


def test_days_left_count_to_the_end_date():
    assert lifecycle.standing("1.32", D(2026, 6, 1)).days_left(D(2026, 6, 1)) == 295
    assert lifecycle.standing("1.32", D(2027, 3, 22)).days_left(D(2027, 3, 22)) == 1


def test_a_minor_without_dates_or_row_is_unknown():
    assert lifecycle.standing("1.36", D(2026, 6, 1)).phase == lifecycle.UNKNOWN
    assert lifecycle.standing("1.99", D(2026, 6, 1)).phase == lifecycle.UNKNOWN


def test_the_minors_in_standard_support_on_a_day():
    assert lifecycle.in_standard_support(D(2026, 6, 1)) == ["1.33", "1.34", "1.35"]
    assert lifecycle.in_standard_support(D(2026, 11, 30)) == ["1.34", "1.35"]


def test_today_is_source_date_epoch_when_set(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780272000")
    assert lifecycle.today() == (D(2026, 6, 1), "SOURCE_DATE_EPOCH")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1780358399")  # the day's last second, UTC
    assert lifecycle.today()[0] == D(2026, 6, 1)


def test_today_is_the_clocks_utc_date_without_it(monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    before = dt.datetime.now(dt.UTC).date()
    day, source = lifecycle.today()
    assert before <= day <= dt.datetime.now(dt.UTC).date()
    assert source == "the clock, UTC"


@pytest.mark.parametrize("value", ["", "yesterday", "-1", "1.5e9", "2026-06-01", "9" * 13, "\u00b2", "\u0661\u0662"])
def test_a_malformed_source_date_epoch_is_an_error_naming_it(monkeypatch, value):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    with pytest.raises(lifecycle.AsOfError, match="SOURCE_DATE_EPOCH=.* is not a whole number of seconds"):
        lifecycle.today()


def test_a_source_date_epoch_past_any_date_is_an_error(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "999999999999")  # year 33658
    with pytest.raises(lifecycle.AsOfError, match="is past any date Python can hold"):
        lifecycle.today()


@pytest.mark.parametrize("value, day", [("315532800", "1980-01-01"), ("0", "1970-01-01"), ("1668470399", "2022-11-14")])
def test_a_day_before_the_first_eks_release_is_refused_as_set_for_something_else(monkeypatch, value, day):
    # Nix shells export SOURCE_DATE_EPOCH=315532800: judged on 1980, every version would pass silently.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    with pytest.raises(
        lifecycle.AsOfError, match=f"is {day}, before the first EKS release in the calendar \\(2022-11-15\\)"
    ):
        lifecycle.today()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1668470400")  # 2022-11-15, 1.24's release
    assert lifecycle.today()[0] == D(2022, 11, 15)


def test_epoch_of_a_day_is_its_utc_midnight():
    assert lifecycle.epoch_of(D(2026, 6, 1)) == 1780272000
    assert lifecycle.epoch_of(D(2022, 11, 15)) == 1668470400
