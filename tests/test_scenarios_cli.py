"""`moralsim scenarios check` without embeddings (fast)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from moralsim.cli import app

DATA = Path(__file__).parent / "data"


def make_pack(tmp_path: Path) -> Path:
    folder = tmp_path / "pack"
    folder.mkdir()
    shutil.copy(DATA / "questions_sample.jsonl", folder / "q.jsonl")
    (folder / "pack.yaml").write_text("name: tiny\nquestions: q.jsonl\n")
    return folder


def run(*args: str):
    return CliRunner().invoke(app, ["scenarios", "check", *args], terminal_width=200)


def test_check_prints_counts_and_passes(tmp_path: Path) -> None:
    result = run(str(make_pack(tmp_path)), "--no-embeddings")
    assert result.exit_code == 0, result.output
    assert "questions by split" in result.output and "pack OK" in result.output
    assert "embedding checks skipped" in result.output


def test_bad_record_stops_unless_skipped(tmp_path: Path) -> None:
    folder = make_pack(tmp_path)
    path = folder / "q.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["rot"]["consensus"] = 0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    strict = run(str(folder), "--no-embeddings")
    assert strict.exit_code == 2
    assert "line 2 (id sample-002), field 'rot.consensus': 0 is out of range 1-5" in strict.output
    lenient = run(str(folder), "--no-embeddings", "--skip-invalid")
    # --skip-invalid shows the rest of the check, but a pack with a skipped record is not OK
    assert lenient.exit_code == 1, lenient.output
    assert "skipped" in lenient.output and "1 skipped record(s)" in lenient.output


def test_leak_fails_the_check(tmp_path: Path) -> None:
    folder = make_pack(tmp_path)
    path = folder / "q.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[3]["rot"]["text"] = rows[0]["rot"]["text"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(str(folder), "--no-embeddings")
    assert result.exit_code == 1
    assert "RoT shared across splits" in result.output
