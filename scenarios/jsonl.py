"""Crash-safe JSON Lines: append whole records, read them back with line-accurate errors.

A run may be killed at any moment (SIGKILL, OOM, a lost Ray node). Each record is written with
one `os.write` on an O_APPEND descriptor, so concurrent appenders never interleave, and a
writer that reopens the file first cuts off any torn tail a crash left. Readers tolerate a torn
final line (it can only be the write that was in flight) but report any other corrupt line
with its number, because that means the file was edited or damaged.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from scenarios.records import Dialogue, RecordError

log = logging.getLogger(__name__)
T = TypeVar("T")


class JsonlError(ValueError):
    """A line of a JSONL file that cannot be read: `path`, 1-based `line` and the reason."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass
class SkippedLine:
    """A line left out by a lenient read, so the caller can report what it lost."""

    line: int
    reason: str


def repair_torn_tail(path: Path) -> int:
    """Make the file end on a newline; return the number of bytes dropped.

    A crash mid-append leaves a final line without a newline. If that line is a whole JSON
    record (a file edited by hand, or written by another tool, may simply lack the final
    newline) it is kept and the newline added; only an unparsable tail is cut, which loses
    nothing that was finished.
    """
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        if _last_line_is_complete(fh, size):
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
            return 0
        block = 1 << 16
        pos = size
        keep = 0
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                break
            pos = start
        fh.truncate(keep)
    dropped = size - keep
    log.warning(
        "%s: dropped a torn final line of %d bytes left by an interrupted write", path, dropped
    )
    return dropped


def _last_line_is_complete(fh: Any, size: int) -> bool:
    """Whether the file's final (newline-less) line parses as one JSON object."""
    block = 1 << 16
    tail = b""
    pos = size
    while pos > 0:
        start = max(0, pos - block)
        fh.seek(start)
        tail = fh.read(pos - start) + tail
        if b"\n" in tail[: pos - start]:
            break
        pos = start
    line = tail.rsplit(b"\n", 1)[-1]
    try:
        return isinstance(json.loads(line.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


class JsonlAppender:
    """Appends one JSON object per call as a single write; use as a context manager."""

    def __init__(self, path: str | os.PathLike[str], fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dropped_bytes = repair_torn_tail(self.path)
        self._fsync = fsync
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, obj: Any) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path}: appender is closed")
        data = (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_jsonl(
    path: str | os.PathLike[str],
    skipped: list[SkippedLine] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Yield (line number, object) pairs.

    Args:
        path: the file.
        skipped: when given, corrupt lines are recorded here and skipped instead of raising.
    """
    p = Path(path)
    with p.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            is_torn_tail = not raw.endswith(b"\n")  # only the last line can lack it
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if is_torn_tail:  # a write cut inside a multi-byte character
                    log.warning("%s:%d: ignoring a torn final line (interrupted write)", p, number)
                    continue
                _bad(p, number, f"not valid UTF-8 (byte {exc.start})", skipped)
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                if is_torn_tail:
                    log.warning("%s:%d: ignoring a torn final line (interrupted write)", p, number)
                    continue
                _bad(p, number, f"corrupt JSON ({exc.msg} at column {exc.colno})", skipped)
                continue
            yield number, obj


def _bad(path: Path, number: int, reason: str, skipped: list[SkippedLine] | None) -> None:
    if skipped is None:
        raise JsonlError(path, number, reason)
    skipped.append(SkippedLine(number, reason))


def read_records(
    path: str | os.PathLike[str],
    parse: Callable[[Any, str], T],
    skipped: list[SkippedLine] | None = None,
) -> list[T]:
    """Read and parse every line; parse errors name the line as well as the field."""
    p = Path(path)
    out: list[T] = []
    for number, obj in iter_jsonl(p, skipped):
        try:
            out.append(parse(obj, f"line {number}"))
        except RecordError as exc:
            _bad(p, number, str(exc).removeprefix(f"line {number}: "), skipped)
    return out


def read_dialogues(
    path: str | os.PathLike[str],
    skipped: list[SkippedLine] | None = None,
    duplicates: list[str] | None = None,
) -> list[Dialogue]:
    """Every dialogue once, in file order.

    A dialogue id that appears again (two runs appended to one file, a file concatenated by
    hand) is kept at its first record only, so no summary counts it twice; the repeated ids
    go into `duplicates` (once per extra record) for the caller to report.
    """
    seen: set[str] = set()
    out: list[Dialogue] = []
    for dialogue in read_records(path, Dialogue.from_dict, skipped):
        if dialogue.id in seen:
            if duplicates is not None:
                duplicates.append(dialogue.id)
            continue
        seen.add(dialogue.id)
        out.append(dialogue)
    return out


def describe_duplicates(path: str | os.PathLike[str], duplicates: list[str]) -> str:
    """One line for a user: which ids repeat, and that the first record of each was kept."""
    shown = ", ".join(sorted(set(duplicates))[:5])
    more = "" if len(set(duplicates)) <= 5 else ", ..."
    return (
        f"{path}: {len(duplicates)} repeated dialogue record(s) ignored (ids {shown}{more}); "
        "the first record of each id is used"
    )


class DialogueWriter(JsonlAppender):
    """Appends finished dialogues; a dialogue is on disk whole or not at all."""

    def write(self, dialogue: Dialogue) -> None:
        self.append(dialogue.to_dict())
