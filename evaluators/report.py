"""Build a run folder's summary.json and report.html from its records.

`dialogues.jsonl` holds every dialogue with its scores; `probes.json` (optional) holds the
flows' question-level results; `config.yaml` names the run and the plugins whose flows it
used. Rebuilding is
cheap and needs no model, so a copied run folder can be re-reported anywhere.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from evaluators.scorer_eval import RUN_SCORER_FILE, scorer_summary
from evaluators.summary import build_summary
from scenarios.jsonl import read_dialogues


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
    }


def _validation_of(run_dir: Path) -> dict[str, Any] | None:
    """The latest `moralsim validate` of this run's pack and scorer in the same output folder:
    whether its instruments separated known-answer bots, and where to read it."""
    from evaluators.validation import failed_instruments, latest_validation, run_fingerprint

    config = saved_config(run_dir)
    if config is None:
        return None
    pack = (config.get("scenarios") or {}).get("pack", "core")
    scorer = (config.get("evaluators") or {}).get("agreement_model", "agreement-minilm")
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


def write_report(run_dir: str | Path) -> tuple[Path, Path]:
    """(summary.json, report.html) of a run folder, rebuilt from its records."""
    from evaluators.report_html import render_report

    folder = Path(run_dir)
    load_run_plugins(folder)
    records = folder / "dialogues.jsonl"
    if not records.is_file():
        raise FileNotFoundError(f"{records}: no dialogues in this run folder")
    # Completion order depends on the runtime (and on a resumed interruption); the summary must
    # not, so it is built from the records in id order.
    dialogues = sorted(read_dialogues(records), key=lambda d: d.id)
    probes_path = folder / "probes.json"
    probes = json.loads(probes_path.read_text(encoding="utf-8")) if probes_path.is_file() else None
    info = run_info(folder)
    # The run's date is when its last dialogue was written, not when the report was rebuilt.
    written = datetime.fromtimestamp(records.stat().st_mtime, tz=UTC)
    info["date"] = written.strftime("%Y-%m-%d %H:%M UTC")
    summary = build_summary(dialogues, probes, info)
    scorer_path = folder / RUN_SCORER_FILE
    if scorer_path.is_file():
        summary["scorer"] = scorer_summary(json.loads(scorer_path.read_text(encoding="utf-8")))
    validation = _validation_of(folder)
    if validation is not None:
        summary["validation"] = validation
    summary_path, html_path = folder / "summary.json", folder / "report.html"
    _write_atomic(summary_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    _write_atomic(html_path, render_report(summary))
    return summary_path, html_path
