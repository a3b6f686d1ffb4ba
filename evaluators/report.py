"""Build a run folder's summary.json and report.html from its records.

`dialogues.jsonl` holds every dialogue with its scores; `probes.json` (optional) holds the
flows' question-level results; `config.yaml` names the run and the plugins whose flows it
used. Rebuilding is
cheap and needs no model, so a copied run folder can be re-reported anywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from evaluators.scorer_eval import RUN_SCORER_FILE, scorer_summary
from evaluators.scorers import DEFAULT_SCORER
from evaluators.summary import build_summary
from scenarios.jsonl import describe_duplicates, read_dialogues


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def saved_config(run_dir: Path) -> dict[str, Any] | None:
    """The run's config.yaml as a mapping; None when the folder has none (or it is not one)."""
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        return None
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    return config if isinstance(config, dict) else None


def run_info(run_dir: Path) -> dict[str, Any]:
    config = saved_config(run_dir)
    if config is None:
        return {"name": run_dir.name}
    bot = config.get("bot") or {}
    return {
        "name": config.get("name", run_dir.name),
        "seed": config.get("seed"),
        "bot": bot.get("model"),
        "adapter": bot.get("adapter"),
        "pack": (config.get("scenarios") or {}).get("pack"),
        "split": (config.get("scenarios") or {}).get("split"),
        "models": _models_ran(run_dir),
    }


def _models_ran(run_dir: Path) -> str | None:
    """Where the models ran, as the run wrote it (runtime.json); None for an older run."""
    import json

    try:
        data = json.loads((run_dir / "runtime.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    models = data.get("models") if isinstance(data, dict) else None
    return models if isinstance(models, str) else None


def _validation_of(run_dir: Path) -> dict[str, Any] | None:
    """The latest `moralsim validate` of this run's pack and scorer in the same output folder:
    whether its instruments separated known-answer bots, and where to read it."""
    from evaluators.validation import failed_instruments, latest_validation, run_fingerprint

    config = saved_config(run_dir)
    if config is None:
        return None
    pack = (config.get("scenarios") or {}).get("pack", "core")
    scorer = (config.get("evaluators") or {}).get("agreement_model", DEFAULT_SCORER)
    prints = run_fingerprint(str(pack), str(scorer))
    record = latest_validation(run_dir, pack, scorer, None if isinstance(prints, str) else prints)
    if record is None:
        return None
    return {
        "date": record.get("date"),
        "passed": record.get("passed") is True and not record["stale"],
        "stale": record["stale"],
        "failed": failed_instruments(record.get("checks", [])),
        "path": record["path"],
        "href": os.path.relpath(record["path"], run_dir),
    }


def load_run_plugins(run_dir: Path) -> None:
    """Import the plugins a run's config.yaml names, so their flows can summarise and render
    (raises scenarios.plugins.PluginError with a one-line reason)."""
    from scenarios.plugins import load_plugins, resolve_plugin

    plugins = (saved_config(run_dir) or {}).get("plugins")
    if isinstance(plugins, list):
        load_plugins([resolve_plugin(str(p), run_dir) for p in plugins])


class RunFileError(ValueError):
    """A file of a run folder that cannot be read (the message names it and why)."""


def read_json_file(path: Path) -> Any:
    """A run folder's JSON file, or None when it is absent; a damaged one is a RunFileError
    naming the file and position, so `report` and `compare` say one line, not a traceback."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RunFileError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise RunFileError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "delete it and rerun with --resume to rebuild it from the records"
        ) from None


def check_records(records: Path) -> None:
    """A run folder's dialogues.jsonl must exist and hold at least one line of data."""
    if not records.is_file():
        raise FileNotFoundError(f"{records}: no dialogues in this run folder")
    with records.open("rb") as fh:
        if not any(line.strip() for line in fh):
            raise RunFileError(f"{records}: the file is empty; this run wrote no dialogues")


def write_report(
    run_dir: str | Path, warn: Callable[[str], None] | None = None
) -> tuple[Path, Path]:
    """(summary.json, report.html) of a run folder, rebuilt from its records; a repeated
    dialogue id is counted once and reported through `warn`."""
    from evaluators.report_html import render_report

    folder = Path(run_dir)
    load_run_plugins(folder)
    records = folder / "dialogues.jsonl"
    check_records(records)
    # Completion order depends on the runtime (and on a resumed interruption); the summary must
    # not, so it is built from the records in id order.
    duplicates: list[str] = []
    dialogues = sorted(read_dialogues(records, duplicates=duplicates), key=lambda d: d.id)
    if duplicates and warn is not None:
        warn(describe_duplicates(records, duplicates))
    probes = read_json_file(folder / "probes.json")
    info = run_info(folder)
    # The run's date is when its last dialogue was written, not when the report was rebuilt.
    written = datetime.fromtimestamp(records.stat().st_mtime, tz=UTC)
    info["date"] = written.strftime("%Y-%m-%d %H:%M UTC")
    summary = build_summary(dialogues, probes, info)
    scorer_path = folder / RUN_SCORER_FILE
    if scorer_path.is_file():
        summary["scorer"] = scorer_summary(read_json_file(scorer_path))
    validation = _validation_of(folder)
    if validation is not None:
        summary["validation"] = validation
    summary_path, html_path = folder / "summary.json", folder / "report.html"
    _write_atomic(summary_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    _write_atomic(html_path, render_report(summary, dialogues=dialogues))
    return summary_path, html_path
