"""What every loader shares: located errors, the skip-invalid collector, and safe text reading.

Every problem names the file, the line (or record) and the field. In strict mode the first
problem raises; with `skip_invalid=True` the bad record is left out and reported, so a user can
load the rest of a large corpus and see exactly what was dropped. Nothing is ever filled in
with a default.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from scenarios.rot import FOUNDATIONS


class ScenarioLoadError(ValueError):
    """A bad record: `path`, `where` (line N / record id), `field` and the reason."""

    def __init__(self, path: Path | str, where: str, field_name: str | None, reason: str) -> None:
        loc = f"{path}: {where}" + (f", field '{field_name}'" if field_name else "")
        super().__init__(f"{loc}: {reason}")
        self.path = Path(path)
        self.where = where
        self.field = field_name
        self.reason = reason


@dataclass(frozen=True)
class LoadIssue:
    """One record left out by a lenient load."""

    path: Path
    where: str
    field: str | None
    reason: str

    def __str__(self) -> str:
        loc = f"{self.path}: {self.where}" + (f", field '{self.field}'" if self.field else "")
        return f"{loc}: {self.reason}"


class RecordInvalid(Exception):
    """Raised inside a record parser; the collector turns it into an error or a skip."""

    def __init__(self, field_name: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field_name
        self.reason = reason


@dataclass
class Collector:
    """Decides, per bad record, between raising and skipping; remembers what it skipped."""

    path: Path
    skip_invalid: bool = False
    issues: list[LoadIssue] = field(default_factory=list)

    def problem(self, where: str, field_name: str | None, reason: str) -> None:
        if not self.skip_invalid:
            raise ScenarioLoadError(self.path, where, field_name, reason)
        self.issues.append(LoadIssue(self.path, where, field_name, reason))


def read_utf8_lines(collector: Collector) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, text with its newline) for every line that decodes."""
    try:
        raw = collector.path.read_bytes()
    except FileNotFoundError:
        raise ScenarioLoadError(collector.path, "file", None, "file not found") from None
    for number, chunk in enumerate(raw.splitlines(keepends=True), start=1):
        try:
            yield number, chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            collector.problem(f"line {number}", None, f"not valid UTF-8 (byte {exc.start})")


def read_csv_rows(
    collector: Collector, required: tuple[str, ...], delimiter: str | None = None
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield (line number, row) from a CSV/TSV with a header; missing columns are fatal."""
    lines = list(read_utf8_lines(collector))
    if not lines:
        raise ScenarioLoadError(collector.path, "line 1", None, "empty file: expected a header row")
    text = "".join(line for _, line in lines)
    numbers = [n for n, _ in lines]
    if delimiter is None:
        delimiter = "\t" if "\t" in lines[0][1] else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise ScenarioLoadError(
            collector.path,
            "line 1 (header)",
            missing[0],
            f"missing column(s) {', '.join(missing)}; found {', '.join(header)}",
        )
    for row in reader:
        # reader.line_num counts the lines read so far in the decoded text; map it back.
        number = numbers[min(reader.line_num, len(numbers)) - 1]
        if None in row:
            collector.problem(
                f"line {number}",
                None,
                f"{len(header) + len(row[None])} values for {len(header)} columns",
            )
            continue
        yield number, row


# --------------------------------------------------------------------------- field checks


def text_field(data: dict[str, Any], key: str) -> str:
    if key not in data or data[key] is None:
        raise RecordInvalid(key, "missing")
    value = data[key]
    if not isinstance(value, str):
        raise RecordInvalid(key, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise RecordInvalid(key, "is empty")
    return value.strip()


def int_in_range(
    value: Any, key: str, low: int, high: int, *, allow_none: bool = False
) -> int | None:
    """An integer on a closed scale; accepts "4", 4 and 4.0 but not 4.5 or "four"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if allow_none:
            return None
        raise RecordInvalid(key, "missing")
    if isinstance(value, bool):
        raise RecordInvalid(key, f"must be an integer {low}-{high}, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RecordInvalid(key, f"must be an integer {low}-{high}, got {value!r}") from None
    if not number.is_integer():
        raise RecordInvalid(key, f"must be an integer {low}-{high}, got {value!r}")
    if not low <= number <= high:
        raise RecordInvalid(key, f"{int(number)} is out of range {low}-{high}")
    return int(number)


_FOUNDATION_ALIASES = {
    "care-harm": "care",
    "fairness-cheating": "fairness",
    "liberty-oppression": "liberty",
    "loyalty-betrayal": "loyalty",
    "authority-subversion": "authority",
    "sanctity-degradation": "sanctity",
}


def foundations_field(value: Any, key: str) -> tuple[str, ...]:
    """Foundations as a list or "|"-joined string, short ("care") or axis form ("care-harm")."""
    if value is None or value == "":
        return ()
    items = value.split("|") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise RecordInvalid(key, f"must be a list or a '|'-joined string, got {value!r}")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise RecordInvalid(key, f"unknown foundation {item!r}")
        name = _FOUNDATION_ALIASES.get(item.strip().lower(), item.strip().lower())
        if name not in FOUNDATIONS:
            raise RecordInvalid(
                key, f"unknown foundation {item!r}; expected {', '.join(FOUNDATIONS)}"
            )
        if name not in out:
            out.append(name)
    return tuple(out)


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


R = TypeVar("R", bound=_Identified)


def read_json_lines(collector: Collector) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) for every non-blank line that is valid JSON."""
    for number, line in read_utf8_lines(collector):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            collector.problem(
                f"line {number}", None, f"invalid JSON ({exc.msg} at column {exc.colno})"
            )


def load_jsonl_records(
    path: str | Path, parse: Callable[[Any], R], skip_invalid: bool = False
) -> tuple[list[R], list[LoadIssue]]:
    """One JSON object per line, parsed into records whose `id` must be unique in the file."""
    collector = Collector(Path(path), skip_invalid)
    out: list[R] = []
    seen: dict[str, int] = {}
    for number, data in read_json_lines(collector):
        where = f"line {number}"
        ident = data.get("id") if isinstance(data, dict) else None
        try:
            if not isinstance(data, dict):
                raise RecordInvalid(None, f"expected a JSON object, got {type(data).__name__}")
            record = parse(data)
        except RecordInvalid as exc:
            located = f"{where} (id {ident})" if isinstance(ident, str) else where
            collector.problem(located, exc.field, exc.reason)
            continue
        if record.id in seen:
            collector.problem(
                where, "id", f"duplicate id '{record.id}' (first on line {seen[record.id]})"
            )
            continue
        seen[record.id] = number
        out.append(record)
    return out, collector.issues
