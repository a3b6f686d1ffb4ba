from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scenarios.jsonl import (
    DialogueWriter,
    JsonlAppender,
    JsonlError,
    SkippedLine,
    iter_jsonl,
    read_dialogues,
    repair_torn_tail,
)
from scenarios.records import Dialogue, Turn


def dialogue(i: int) -> Dialogue:
    return Dialogue(id=f"d{i}", scenario_id="q", flow="ma", turns=[Turn("user", "é" * i)])


def test_written_dialogues_read_back(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "dialogues.jsonl"
    with DialogueWriter(path) as writer:
        for i in range(3):
            writer.write(dialogue(i))
    assert read_dialogues(path) == [dialogue(i) for i in range(3)]


def test_torn_final_line_is_ignored_by_readers_and_cut_by_writers(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with DialogueWriter(path) as writer:
        writer.write(dialogue(1))
    with path.open("ab") as fh:  # what a crash in the middle of a write leaves behind
        fh.write(b'{"version": 1, "id": "d2", "scen')
    assert [d.id for d in read_dialogues(path)] == ["d1"]
    with DialogueWriter(path) as writer:
        assert writer.dropped_bytes == len(b'{"version": 1, "id": "d2", "scen')
        writer.write(dialogue(3))
    assert [d.id for d in read_dialogues(path)] == ["d1", "d3"]


def test_corrupt_middle_line_reports_its_number(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    with JsonlAppender(path) as app:
        app.append(dialogue(1).to_dict())
    with path.open("a") as fh:
        fh.write("{not json}\n")
    with JsonlAppender(path) as app:
        app.append(dialogue(3).to_dict())
    with pytest.raises(JsonlError, match=r"d\.jsonl:2: corrupt JSON"):
        read_dialogues(path)
    skipped: list[SkippedLine] = []
    assert [d.id for d in read_dialogues(path, skipped)] == ["d1", "d3"]
    assert skipped[0].line == 2


def test_invalid_record_reports_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a", "scenario_id": "q", "flow": "ma", "turns": []}\n{"id": "b"}\n')
    with pytest.raises(JsonlError, match=r"d\.jsonl:2: missing field 'scenario_id'"):
        read_dialogues(path)


def test_non_utf8_line_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "\xff"}\n')
    with pytest.raises(JsonlError, match=r":2: not valid UTF-8"):
        list(iter_jsonl(path))


def test_file_without_final_newline_but_complete_is_read(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}')
    assert [obj["a"] for _, obj in iter_jsonl(path)] == [1, 2]


def test_repair_keeps_complete_files_untouched(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"a": 1}\n')
    assert repair_torn_tail(path) == 0
    assert path.read_text() == '{"a": 1}\n'
    path.write_text('{"a"')  # a single torn line: nothing complete to keep
    assert repair_torn_tail(path) == 4
    assert path.read_bytes() == b""


def test_killed_writer_never_leaves_an_unreadable_file(tmp_path: Path) -> None:
    """SIGKILL a process that appends large records in a loop; what it wrote must read back."""
    path = tmp_path / "d.jsonl"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from scenarios.jsonl import JsonlAppender
        app = JsonlAppender({str(path)!r}, fsync=False)
        i = 0
        while True:
            app.append({{"i": i, "pad": "x" * 200000}})
            i += 1
            if i == 3:
                print("ready", flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    proc.kill()
    proc.wait()
    numbers = [obj["i"] for _, obj in iter_jsonl(path)]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 3
    with JsonlAppender(path) as app:
        app.append({"i": "after"})
    assert os.path.getsize(path) > 0
    assert [obj["i"] for _, obj in iter_jsonl(path)][-1] == "after"
