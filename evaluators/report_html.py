"""report.html: one self-contained page of tables and inline-SVG charts for a run's summary.

The page is built from `summary.json` alone (see `evaluators.summary`), so a copied run
folder can be reported on without the records, the models or a network: no script, no
external URL, CSS inline, printable. A run that skipped a probe, or a metric with no values,
shows "not run" / "—" instead of failing, because partial runs are the ones people debug.
Given the run's records as well, the page ends with the transcript viewer
(`evaluators.transcript_view`), its only script: inline, still nothing external.

This module renders what every run has (the header, the agreement scorer, the instrument
validation); each registered flow renders its own section (`Flow.html`, built from the pieces
in `evaluators.html_parts`), in flow order, so a new flow needs no change here. Scales are
the flows' own: agreement-based scores x100 with one decimal as their paper prints them,
consistency scores raw with three decimals, stage scores on 0-100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from evaluators import html_parts as h
from evaluators.transcript_view import VIEWER_CSS, transcript_section
from scenarios.flow_api import flows_in_order
from scenarios.records import Dialogue

__all__ = ["DASH", "NOT_RUN", "render_report"]

DASH, NOT_RUN = h.DASH, h.NOT_RUN


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1d1d1f; max-width: 1100px;
       margin: 1.5em auto; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; } h2 { border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; } thead th { background: #f2f2f2; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
.figs { display: flex; flex-wrap: wrap; gap: 10px; } figure { margin: 0; }
figcaption { font-size: 12px; color: #555; } .note { color: #555; font-size: 12px; }
.chart text { font-size: 11px; fill: #333; } .chart .axis-title { font-size: 12px; }
.axis { stroke: #333; } .grid { stroke: #e6e6e6; } .zero { stroke: #000; stroke-width: 1.2; }
.bar { fill: #4c78a8; } .bin { fill: #72a0c9; } .whisker { stroke: #111; stroke-width: 1.4; }
.ref { stroke: #c0392b; stroke-dasharray: 5 3; } .chart .ref-label { fill: #c0392b; }
.chart .missing { fill: #999; }
.warning { border: 2px solid #c0392b; background: #fdecea; color: #7b1d14; padding: .6em .9em;
           margin: .8em 0; font-weight: 600; }
@media print { body { max-width: none; } table, figure { break-inside: avoid; } }
"""


# --------------------------------------------------------------------------- sections


def _header(summary: Mapping[str, Any], title: str) -> str:
    run, dialogues = h.mapping(summary.get("run")), h.mapping(summary.get("dialogues"))
    bot = run.get("bot")
    if isinstance(bot, Mapping):
        bot = " + ".join(str(bot[k]) for k in ("model", "adapter") if bot.get(k)) or None
    facts = [
        ("run", run.get("name")),
        ("bot", bot),
        ("seed", run.get("seed")),
        ("models ran", run.get("models")),
        ("date", run.get("date") or run.get("created")),
        ("dialogues", dialogues.get("total")),
    ]
    items = "".join(
        f"<li><b>{escape(k)}:</b> {escape(DASH if v is None else str(v))}</li>" for k, v in facts
    )
    flows = h.mapping(dialogues.get("by_flow"))
    table = h.table(["flow", "dialogues"], [[str(f), str(c)] for f, c in flows.items()])
    return f"<header><h1>{escape(title)}</h1><ul>{items}</ul>{table if flows else ''}</header>"


def _percent(value: object) -> str:
    scaled = h.scaled(value, 100.0)
    return DASH if scaled is None else f"{scaled:.1f}%"


def _scorer(scorer: Mapping[str, Any]) -> str:
    """Who scored agreement, how valid that scorer is, and the warning when it is not."""
    if not scorer:
        return ""
    keys = h.mapping(scorer.get("key_figures"))
    facts = [
        ("scorer", f"{scorer.get('model')} ({scorer.get('kind')})"),
        (
            "real-data pairwise accuracy",
            f"{_percent(keys.get('real_data_pairwise_accuracy'))}"
            + (f" on {keys['real_data_set']}" if keys.get("real_data_set") else " (not measured)"),
        ),
        ("in-domain macro-F1 (pack test)", _percent(keys.get("in_domain_macro_f1"))),
        ("sign accuracy (sign test set)", _percent(keys.get("signs_test_sign_accuracy"))),
        ("verdict", keys.get("verdict") or DASH),
    ]
    items = "".join(f"<li><b>{escape(k)}:</b> {escape(str(v))}</li>" for k, v in facts)
    warning = scorer.get("warning")
    banner = f'<div class="warning">Warning: {escape(str(warning))}.</div>' if warning else ""
    note = (
        '<p class="note">Every score read from agreement (the dialogue metrics, the stance '
        "probe) is a function of this scorer's AS = P(agree) - P(disagree). Pairwise accuracy: "
        "how often it ranks a real, human-written action that follows a norm above one that "
        "breaks it (chance 50%). "
        "Records keep each scored turn's three class probabilities (meta.p).</p>"
    )
    return f'<section id="scorer"><h2>Agreement scorer</h2>{banner}<ul>{items}</ul>{note}</section>'


def _validation(v: Mapping[str, Any]) -> str:
    """The latest known-answer validation of this run's pack and scorer, linked."""
    if not v:
        return (
            '<section id="validation"><h2>Instrument validation</h2><p>No known-answer '
            "validation of this pack and scorer in this output folder: run <code>moralsim "
            "validate</code> to check that each instrument separates bots of known behaviour."
            "</p></section>"
        )
    href = str(v.get("href", ""))
    link = f'<a href="{escape(href)}">{escape(str(v.get("path", "")))}</a>'
    date = escape(str(v.get("date")))
    if v.get("stale"):
        body = (
            f'<div class="warning">Warning: the validation in this folder ({date}) was of another '
            "build of this pack or scorer; it says nothing about the one this run used. Rerun "
            f"<code>moralsim validate</code>.</div><p>{link}</p>"
        )
    elif v.get("passed"):
        body = f"<p>Every instrument separated its known-answer bots ({date}): {link}.</p>"
    else:
        failed = ", ".join(str(x) for x in v.get("failed") or []) or "some checks"
        body = (
            f'<div class="warning">Warning: in the latest validation ({date}) '
            f"these instruments did not separate bots of known behaviour: {escape(failed)}. "
            f"Their numbers here cannot be read as measurements of the bot.</div><p>{link}</p>"
        )
    return f'<section id="validation"><h2>Instrument validation</h2>{body}</section>'


def render_report(
    summary: dict[str, Any],
    title: str | None = None,
    dialogues: Sequence[Dialogue] | None = None,
) -> str:
    """The whole report as one HTML document (a str; write it as UTF-8).

    Args:
        summary: what `evaluators.summary.build_summary` returns (or summary.json, loaded).
        title: page title; defaults to "moralsim report: <run name>".
        dialogues: the run's records, for the transcript viewer (`evaluators.transcript_view`,
            the page's only script); None leaves the viewer out and the page script-free.

    Returns:
        A complete document with inline CSS and SVG and no external references.
    """
    name = h.mapping(summary.get("run")).get("name")
    heading = title or f"moralsim report: {name if name is not None else 'unnamed run'}"
    body = "".join(
        [
            _header(summary, heading),
            _scorer(h.mapping(summary.get("scorer"))),
            _validation(h.mapping(summary.get("validation"))),
            *(flow.html(h.mapping(summary.get(flow.key())) or None) for flow in flows_in_order()),
            transcript_section(dialogues) if dialogues is not None else "",
        ]
    )
    css = _CSS + (VIEWER_CSS if dialogues is not None else "")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(heading)}</title><style>{css}</style></head>"
        f"<body>{body}</body></html>\n"
    )
