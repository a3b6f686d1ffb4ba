"""DIT-style dilemma files (YAML or JSON): a list of dilemmas, or {"dilemmas": [...]}.

Each dilemma: id, title, context, story, question, options (should / can't decide / should
not), and exactly 12 statements, each `{text, stage}` with stage 2-6 or "M".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from scenarios.loaders._common import (
    Collector,
    LoadIssue,
    RecordInvalid,
    ScenarioLoadError,
    read_utf8_lines,
    text_field,
)
from scenarios.types import STAGES, Dilemma, Statement

N_STATEMENTS = 12
DILEMMA_KEYS = ("id", "title", "context", "story", "question", "options", "statements")


def parse_dilemma(data: Any) -> Dilemma:
    if not isinstance(data, dict):
        raise RecordInvalid(None, "expected a mapping")
    unknown = sorted(set(data) - set(DILEMMA_KEYS))
    if unknown:
        raise RecordInvalid(unknown[0], "unknown key")
    options = data.get("options")
    if not isinstance(options, list) or len(options) != 3:
        raise RecordInvalid(
            "options", "must list exactly 3 options (should, can't decide, should not)"
        )
    for i, option in enumerate(options):
        if not isinstance(option, str) or not option.strip():
            raise RecordInvalid(f"options[{i}]", "must be a non-empty string")
    statements = data.get("statements")
    if not isinstance(statements, list) or len(statements) != N_STATEMENTS:
        count = len(statements) if isinstance(statements, list) else 0
        raise RecordInvalid(
            "statements", f"must list exactly {N_STATEMENTS} statements, got {count}"
        )
    parsed: list[Statement] = []
    for i, item in enumerate(statements):
        if not isinstance(item, dict):
            raise RecordInvalid(f"statements[{i}]", "must be a mapping with 'text' and 'stage'")
        try:
            text = text_field(item, "text")
        except RecordInvalid as exc:
            raise RecordInvalid(f"statements[{i}].text", exc.reason) from None
        stage = str(item.get("stage", "")).strip().upper()
        if stage not in STAGES:
            raise RecordInvalid(
                f"statements[{i}].stage",
                f"must be one of 2, 3, 4, 5, 6, M, got {item.get('stage')!r}",
            )
        parsed.append(Statement(text=text, stage=stage))
    return Dilemma(
        id=text_field(data, "id"),
        title=text_field(data, "title"),
        context=text_field(data, "context"),
        story=text_field(data, "story"),
        question=text_field(data, "question"),
        options=(options[0].strip(), options[1].strip(), options[2].strip()),
        statements=tuple(parsed),
    )


def _item_lines(text: str, key: str | None) -> list[int]:
    """1-based start line of each list item, for error messages (YAML is a superset of JSON)."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return []
    if isinstance(node, yaml.MappingNode) and key:
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                node = v
                break
    if isinstance(node, yaml.SequenceNode):
        return [item.start_mark.line + 1 for item in node.value]
    return []


def load_dilemmas(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[Dilemma], list[LoadIssue]]:
    p = Path(path)
    collector = Collector(p, skip_invalid)
    lines = list(read_utf8_lines(collector))
    if collector.issues:  # a dilemma file cannot be parsed around a bad byte
        raise ScenarioLoadError(p, collector.issues[0].where, None, collector.issues[0].reason)
    text = "".join(line for _, line in lines)
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ScenarioLoadError(p, "file", None, f"cannot be parsed: {exc}") from None
    key = None
    if isinstance(data, dict) and "dilemmas" in data:
        data, key = data["dilemmas"], "dilemmas"
    if not isinstance(data, list):
        raise ScenarioLoadError(
            p, "file", None, "expected a list of dilemmas (or a 'dilemmas' key)"
        )
    item_lines = _item_lines(text, key)
    out: list[Dilemma] = []
    seen: dict[str, str] = {}
    for i, item in enumerate(data):
        where = f"line {item_lines[i]}" if i < len(item_lines) else f"dilemma #{i + 1}"
        ident = item.get("id") if isinstance(item, dict) else None
        if isinstance(ident, str):
            where += f" (id {ident})"
        try:
            dilemma = parse_dilemma(item)
        except RecordInvalid as exc:
            collector.problem(where, exc.field, exc.reason)
            continue
        if dilemma.id in seen:
            collector.problem(
                where, "id", f"duplicate id '{dilemma.id}' (first at {seen[dilemma.id]})"
            )
            continue
        seen[dilemma.id] = where
        out.append(dilemma)
    return out, collector.issues
