"""Where an EKS Kubernetes minor stands on a given day (standard support, extended support, ended),
from the calendar in eks_versions.yaml; and which day "today" is.

"Today" is an input, so the same stack gives the same verdicts and reports on any day it is asked
about: `SOURCE_DATE_EPOCH` (seconds since 1970-01-01 UTC, as reproducible builds set it) when the
environment has it, else the clock's UTC date. The Pulumi CLI hands its environment to the policy
pack's process (pulumi/pulumi v3.259.0 sdk/go/common/resource/plugin/analyzer_plugin.go:204-213 and
963-1000: the pack's environment joins the CLI's), so `SOURCE_DATE_EPOCH=... pulumi preview
--policy-pack policy` judges as of that day, as `python -m preview --as-of` does.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

DATA = Path(__file__).with_name("eks_versions.yaml")
EPOCH_VARIABLE = "SOURCE_DATE_EPOCH"
# Past this many digits a number of seconds is not a date (year 9999 is 253402300799).
_MAX_EPOCH_DIGITS = 12

STANDARD, EXTENDED, ENDED, UNKNOWN = "standard support", "extended support", "past the end of extended support", "unknown"


@dataclass(frozen=True)
class Minor:
    minor: str
    released: Optional[dt.date]
    end_of_standard: Optional[dt.date]
    end_of_extended: Optional[dt.date]
    source: str


@dataclass(frozen=True)
class Standing:
    """A minor on a day: its phase, and the day the phase ends (None when ended or unknown)."""

    minor: str
    phase: str
    until: Optional[dt.date]
    calendar: Optional[Minor]

    def days_left(self, today: dt.date) -> Optional[int]:
        return None if self.until is None else (self.until - today).days


def _date(value) -> Optional[dt.date]:
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


@functools.lru_cache(maxsize=None)
def calendar() -> dict[str, Minor]:
    rows = yaml.load(DATA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["versions"]
    return {minor: Minor(minor, _date(row["released"]), _date(row["endOfStandardSupport"]),
                         _date(row["endOfExtendedSupport"]), row["source"])
            for minor, row in rows.items()}


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
    return sorted((m for m in calendar() if standing(m, today).phase == STANDARD), key=lambda m: tuple(map(int, m.split("."))))


class AsOfError(ValueError):
    """SOURCE_DATE_EPOCH is set but is not a date."""


def epoch_date(text: str) -> dt.date:
    """The UTC date of a SOURCE_DATE_EPOCH value: a whole number of seconds, as the reproducible
    builds specification defines it (https://reproducible-builds.org/specs/source-date-epoch/)."""
    stripped = text.strip()
    if not stripped.isdigit() or len(stripped) > _MAX_EPOCH_DIGITS:
        raise AsOfError(f"{EPOCH_VARIABLE}={text!r} is not a whole number of seconds since 1970-01-01 UTC "
                        f"(e.g. {EPOCH_VARIABLE}=$(date -u -d 2026-11-30 +%s))")
    return dt.datetime.fromtimestamp(int(stripped), tz=dt.timezone.utc).date()


def epoch_of(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp())


def today() -> tuple[dt.date, str]:
    """(the day support is judged on, where it came from: SOURCE_DATE_EPOCH or the clock)."""
    given = os.environ.get(EPOCH_VARIABLE)
    if given is not None:
        return epoch_date(given), EPOCH_VARIABLE
    return dt.datetime.now(dt.timezone.utc).date(), "the clock, UTC"
