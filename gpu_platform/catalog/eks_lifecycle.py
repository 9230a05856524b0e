"""Where an EKS Kubernetes minor stands on a given day (standard support, extended support, ended),
from the calendar in eks_versions.yaml; and which day "today" is.

"Today" is an input, so the same stack gives the same verdicts and reports on any day it is asked
about: `SOURCE_DATE_EPOCH` (seconds since 1970-01-01 UTC, as reproducible builds set it) when the
environment has it, else the clock's UTC date. The Pulumi CLI hands its environment to the policy
pack's process: a Python pack runs through the Python language plugin (pulumi/pulumi v3.259.0
sdk/go/common/resource/plugin/analyzer_plugin.go:160, 202-214), whose RunPlugin gets the CLI's
`os.Environ()` (plugin.go:500, 567-572); so `SOURCE_DATE_EPOCH=... pulumi preview --policy-pack
policy` judges as of that day, as `python -m preview --as-of` does. A day before the first EKS
release in the calendar is refused: such a SOURCE_DATE_EPOCH was set for something else (Nix shells
export 1980-01-01), and judging support on it would pass every version silently.

The phases change at the start of the end dates, in UTC: AWS bills extended support "at the
beginning of the day that the version reaches end of standard support" and creates no cluster on a
version from its end of extended support (EKS User Guide, kubernetes-versions.adoc at 4d52b4d0, the
calendar's preamble and the extended support FAQ). The FAQ's 1.23 example ("ended on October 11,
2023 ... began on October 12") reads as a day later; the billing rule and `aws eks
describe-cluster-versions` (end dates at 00:00 UTC) are what is followed here.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gpu_platform.catalog import yaml_files

DATA = Path(__file__).with_name("eks_versions.yaml")
EPOCH_VARIABLE = "SOURCE_DATE_EPOCH"
# Past this many digits a number of seconds is not a date (year 9999 is 253402300799).
_MAX_EPOCH_DIGITS = 12

STANDARD, EXTENDED, ENDED, UNKNOWN = (
    "standard support",
    "extended support",
    "past the end of extended support",
    "unknown",
)


@dataclass(frozen=True)
class Minor:
    minor: str
    released: dt.date | None
    end_of_standard: dt.date | None
    end_of_extended: dt.date | None
    source: str


@dataclass(frozen=True)
class Standing:
    """A minor on a day: its phase, and the day the phase ends (None when ended or unknown)."""

    minor: str
    phase: str
    until: dt.date | None
    calendar: Minor | None

    def days_left(self, today: dt.date) -> int | None:
        return None if self.until is None else (self.until - today).days


def _date(value) -> dt.date | None:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


@functools.cache
def calendar() -> dict[str, Minor]:
    rows = yaml_files.load(DATA.read_text())["versions"]
    return {
        minor: Minor(
            minor,
            _date(row["released"]),
            _date(row["endOfStandardSupport"]),
            _date(row["endOfExtendedSupport"]),
            row["source"],
        )
        for minor, row in rows.items()
    }


def standing(minor: str, today: dt.date) -> Standing:
    """Support ends at the start of the end date (UTC): AWS bills extended support from the start of
    the day standard support ends, and creates no cluster on the day extended support ends."""
    row = calendar().get(minor)
    if row is None or row.end_of_standard is None or row.end_of_extended is None:
        return Standing(minor, UNKNOWN, None, row)
    if today < row.end_of_standard:
        return Standing(minor, STANDARD, row.end_of_standard, row)
    if today < row.end_of_extended:
        return Standing(minor, EXTENDED, row.end_of_extended, row)
    return Standing(minor, ENDED, None, row)


def in_standard_support(today: dt.date) -> list[str]:
    """The minors in standard support on that day, oldest first."""
    return sorted(
        (m for m in calendar() if standing(m, today).phase == STANDARD), key=lambda m: tuple(map(int, m.split(".")))
    )


class AsOfError(ValueError):
    """SOURCE_DATE_EPOCH is set but is not a day to judge on; `early` when it is a day before EKS."""

    def __init__(self, message: str, early: str = ""):
        super().__init__(message)
        self.early = early


def epoch_date(text: str) -> dt.date:
    """The UTC date of a SOURCE_DATE_EPOCH value: a whole number of seconds, as the reproducible
    builds specification defines it (https://reproducible-builds.org/specs/source-date-epoch/), on or
    after the first EKS release in the calendar."""
    stripped = text.strip()
    if not re.fullmatch(rf"[0-9]{{1,{_MAX_EPOCH_DIGITS}}}", stripped):
        raise AsOfError(
            f"{EPOCH_VARIABLE}={text!r} is not a whole number of seconds since 1970-01-01 UTC "
            f"(e.g. {EPOCH_VARIABLE}=$(date -u -d 2026-11-30 +%s))"
        )
    try:
        day = dt.datetime.fromtimestamp(int(stripped), tz=dt.UTC).date()
    except (OverflowError, OSError, ValueError):
        raise AsOfError(f"{EPOCH_VARIABLE}={text!r} is past any date Python can hold") from None
    first = min(row.released for row in calendar().values() if row.released)
    if day < first:
        early = f"before the first EKS release in the calendar ({first.isoformat()})"
        raise AsOfError(
            f"{EPOCH_VARIABLE}={text!r} is {day.isoformat()}, {early}: it was set for something else; unset it "
            f"to judge as of today, or set the day to judge on",
            early,
        )
    return day


def epoch_of(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp())


def today() -> tuple[dt.date, str]:
    """(the day support is judged on, where it came from: SOURCE_DATE_EPOCH or the clock)."""
    given = os.environ.get(EPOCH_VARIABLE)
    if given is not None:
        return epoch_date(given), EPOCH_VARIABLE
    return dt.datetime.now(dt.UTC).date(), "the clock, UTC"
