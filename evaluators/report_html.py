"""report.html: one self-contained page of tables and inline-SVG charts for a run's summary.

The page is built from `summary.json` alone (see `evaluators.summary`), so a copied run
folder can be reported on without the records, the models or a network: no script, no
external URL, CSS inline, printable. A run that skipped a probe, or a metric with no values,
shows "not run" / "—" instead of failing, because partial runs are the ones people debug.

Scales: MoralDial metrics and prudence rates are shown x100 with one decimal, as the
MoralDial paper does (S_MR and ΔS_MR included). SaGE and its text-similarity baselines stay
raw with three decimals, as the SaGE paper prints them. DIT scores are already on 0-100;
its rates (can't decide, positional bias) are shown as percentages.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from evaluators.svg_charts import Bar, bar_chart, histogram

__all__ = ["DASH", "NOT_RUN", "render_report"]

DASH = "—"
NOT_RUN = "not run"
METRIC_ORDER: tuple[str, ...] = ("S_MA", "S_ME", "S_MR1", "S_MR2", "dS_MR", "S_MR", "S_RIL")
DISPLAY = {"dS_MR": "ΔS_MR"}
BREAKDOWNS = (("split", "split"), ("foundation", "moral foundation"), ("consensus", "consensus"))
STAGES = ("2", "3", "4", "5", "6", "M")

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


# --------------------------------------------------------------------------- formatting


def _scaled(value: object, scale: float = 1.0) -> float | None:
    """value x scale, or None for None, NaN, bools and anything else that is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value) * scale


def _num(value: object, scale: float = 1.0, digits: int = 1, suffix: str = "") -> str:
    """A number to show, or "—" where `_scaled` finds none."""
    x = _scaled(value, scale)
    if x is None:
        return DASH
    text = f"{x:.{digits}f}"
    return (text.lstrip("-") if float(text) == 0 else text) + suffix  # no "-0.0"


def _estimate(value: object) -> dict[str, Any]:
    """The estimate dict, or an empty one: a missing or malformed estimate renders as "—"."""
    return dict(value) if isinstance(value, Mapping) else {}


def _bounds(est: Mapping[str, Any]) -> tuple[object, object]:
    ci = est.get("ci95")
    if not isinstance(ci, Sequence) or isinstance(ci, str) or len(ci) != 2:
        return None, None
    return ci[0], ci[1]


def _ci(est: Mapping[str, Any], scale: float, digits: int) -> str:
    lo, hi = (_num(b, scale, digits) for b in _bounds(est))
    return DASH if DASH in (lo, hi) else f"[{lo}, {hi}]"


def _n(est: Mapping[str, Any]) -> str:
    n = est.get("n")
    return str(n) if isinstance(n, int) and not isinstance(n, bool) else DASH


def _cell(est: Mapping[str, Any], scale: float = 100.0, digits: int = 1) -> str:
    """'mean [lo, hi] (n)' for a breakdown table; the interval is left out when n < 2."""
    mean = _num(est.get("mean"), scale, digits)
    if mean == DASH:
        return DASH
    ci = _ci(est, scale, digits)
    return f"{mean} {ci} ({_n(est)})" if ci != DASH else f"{mean} ({_n(est)})"


def _est_row(label: str, est: Mapping[str, Any], scale: float, digits: int) -> list[str]:
    return [label, _num(est.get("mean"), scale, digits), _ci(est, scale, digits), _n(est)]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def _not_run(what: str) -> str:
    return f'<p class="note">{escape(what)}: {NOT_RUN}.</p>'


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _hist(section: Mapping[str, Any], title: str, x_title: str, scale: float) -> str:
    hist = _mapping(section)
    edges, counts = hist.get("edges"), hist.get("counts")
    if not isinstance(edges, Sequence) or not isinstance(counts, Sequence):
        edges, counts = [], []
    return _figure(histogram(edges, counts, title=title, x_title=x_title, scale=scale), title)


# --------------------------------------------------------------------------- sections


def _header(summary: Mapping[str, Any], title: str) -> str:
    run, dialogues = _mapping(summary.get("run")), _mapping(summary.get("dialogues"))
    bot = run.get("bot")
    if isinstance(bot, Mapping):
        bot = " + ".join(str(bot[k]) for k in ("model", "adapter") if bot.get(k)) or None
    facts = [
        ("run", run.get("name")),
        ("bot", bot),
        ("seed", run.get("seed")),
        ("date", run.get("date") or run.get("created")),
        ("dialogues", dialogues.get("total")),
    ]
    items = "".join(
        f"<li><b>{escape(k)}:</b> {escape(DASH if v is None else str(v))}</li>" for k, v in facts
    )
    flows = _mapping(dialogues.get("by_flow"))
    table = _table(["flow", "dialogues"], [[str(f), str(c)] for f, c in flows.items()])
    return f"<header><h1>{escape(title)}</h1><ul>{items}</ul>{table if flows else ''}</header>"


def _percent(value: object) -> str:
    scaled = _scaled(value, 100.0)
    return DASH if scaled is None else f"{scaled:.1f}%"


def _scorer(scorer: Mapping[str, Any]) -> str:
    """Who scored agreement, how valid that scorer is, and the warning when it is not."""
    if not scorer:
        return ""
    keys = _mapping(scorer.get("key_figures"))
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
        '<p class="note">Every MoralDial metric and the prudence probe are functions of this '
        "scorer's AS = P(agree) - P(disagree). Pairwise accuracy: how often it ranks a real, "
        "human-written action that follows a norm above one that breaks it (chance 50%). "
        "Records keep each scored turn's three class probabilities (meta.p).</p>"
    )
    return f'<section id="scorer"><h2>Agreement scorer</h2>{banner}<ul>{items}</ul>{note}</section>'


def _metric_names(metrics: Mapping[str, Any]) -> list[str]:
    return [m for m in METRIC_ORDER if m in metrics] + [m for m in metrics if m not in METRIC_ORDER]


def _moraldial(metrics: Mapping[str, Any]) -> str:
    if not metrics:
        return "<h2>MoralDial</h2>" + _not_run("MoralDial metrics")
    rows, bars = [], []
    for m in _metric_names(metrics):
        est = _estimate(metrics[m])
        name = DISPLAY.get(m, m)
        _, mean, ci, n = _est_row(name, est, 100.0, 1)
        rows.append([name, str(est.get("label", "")), mean, ci, n, str(est.get("over", ""))])
        bars.append(Bar(name, *(_scaled(v, 100.0) for v in (est.get("mean"), *_bounds(est)))))
    headers = ["metric", "label", "mean ×100", "95% CI ×100", "n", "over"]
    chart = bar_chart(
        bars,
        title="MoralDial metrics, mean ×100 with 95% CI",
        y_title="score ×100",
        limits=(-200.0, 200.0),
    )
    return (
        "<h2>MoralDial</h2>"
        + _table(headers, rows, "MoralDial metrics (×100)")
        + _figure(chart, "Mean ×100 with 95% CI whiskers; no bar where n = 0.")
    )


def _group_order(key: str, group: str) -> tuple[bool, bool, str]:
    """Groups by name, "unknown" last; consensus bands run contested, 4, 5 (low to high)."""
    return group == "unknown", key == "consensus" and not group.startswith("contested"), group


def _breakdowns(metrics: Mapping[str, Any]) -> str:
    parts = ["<h2>Breakdowns</h2>"]
    for key, caption in BREAKDOWNS:
        by = {m: _mapping(_mapping(_estimate(metrics[m]).get("by")).get(key)) for m in metrics}
        columns = [m for m in _metric_names(metrics) if by[m]]
        groups: list[str] = []
        for m in columns:
            groups += [g for g in by[m] if g not in groups]
        if not columns:
            parts.append(f'<p class="note">By {escape(caption)}: {DASH} (no scored dialogues).</p>')
            continue
        groups.sort(key=lambda g: _group_order(key, g))
        rows = [[g, *(_cell(_estimate(by[m].get(g))) for m in columns)] for g in groups]
        headers = [caption, *(DISPLAY.get(m, m) for m in columns)]
        parts.append(_table(headers, rows, f"By {caption}: mean ×100 [95% CI] (n)"))
    return "".join(parts)


def _distributions(metrics: Mapping[str, Any]) -> str:
    figs = []
    for m in _metric_names(metrics):
        est = _estimate(metrics[m])
        name = f"{DISPLAY.get(m, m)} (n = {_n(est)})"
        figs.append(_hist(_mapping(est.get("histogram")), name, f"{m} ×100", 100.0))
    return "<h2>Score distributions</h2>" + (
        f'<div class="figs">{"".join(figs)}</div>' if figs else _not_run("distributions")
    )


def _static_ril(section: Mapping[str, Any]) -> str:
    """Static S_RIL (reference context given) beside, never inside, the interactive table."""
    if not section:
        return ""  # an optional flow: nothing to say when it was not run
    headers = ["metric", "mean ×100", "95% CI ×100", "n", "by consensus: mean ×100 [95% CI] (n)"]
    rows = []
    for m in _metric_names(section):
        est = _estimate(section[m])
        by = _mapping(_mapping(est.get("by")).get("consensus"))
        bands = sorted(by, key=lambda g: _group_order("consensus", g))
        cells = "; ".join(f"{g}: {_cell(_estimate(by[g]))}" for g in bands) or DASH
        rows.append([*_est_row(f"{DISPLAY.get(m, m)} (static)", est, 100.0, 1), cells])
    note = (
        "Context given (question, reference answer, why, reference explanation, related "
        "question); only the answer to the related question is the bot's."
    )
    return (
        "<h2>Static RIL</h2>"
        + _table(headers, rows, "Static RIL (×100)")
        + f'<p class="note">{escape(note)}</p>'
    )


def _sage(sage: Mapping[str, Any]) -> str:
    if not sage:
        return "<h2>SaGE</h2>" + _not_run("SaGE probe")
    measures = [
        ("answers", "answer"),
        ("RoTs", "rot"),
        ("RoTs, prompted with the RoT", "rot_prompted"),
    ]
    rows = [_est_row(label, _estimate(sage.get(k)), 1.0, 3) for label, k in measures if k in sage]
    base = _mapping(sage.get("baselines"))
    names = {"bleu": "BLEU", "rouge_l": "ROUGE-L", "cosine": "embedding cosine"}
    base_rows = [_est_row(names.get(k, k), _estimate(v), 1.0, 3) for k, v in base.items()]
    variant = str(sage.get("variant", DASH))
    hist = _mapping(sage.get("histogram"))
    figs = [_hist(_mapping(hist.get(k)), f"SaGE per question: {k}", "SaGE", 1.0) for k in hist]
    return (
        "<h2>SaGE</h2>"
        + _table(["graph", "SaGE", "95% CI", "n"], rows, f"SaGE (variant: {variant})")
        + (_table(["baseline", "mean", "95% CI", "n"], base_rows, "Baselines") if base_rows else "")
        + (f'<div class="figs">{"".join(figs)}</div>' if figs else "")
    )


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


def _dit(dit: Mapping[str, Any]) -> str:
    if not dit:
        return "<h2>DIT</h2>" + _not_run("DIT probe")
    schema = _mapping(dit.get("schema"))
    flag = dit.get("m_flag")
    valid, total = dit.get("n_valid_rankings"), dit.get("n_responses")
    rows = [
        ["P-score", _num(dit.get("p_score")), "0–100, mean over presentations"],
        [
            "P, order-averaged ratings",
            _num(_mapping(dit.get("order_averaged")).get("p_score")),
            "likelihood mode: each statement's expected rating averaged over its positions",
        ],
        ["SD of P over orders", _num(dit.get("p_sd")), ""],
        ["personal interest (2+3)", _num(schema.get("personal_interest")), ""],
        ["maintaining norms (4)", _num(schema.get("maintaining_norms")), ""],
        ["postconventional (5+6)", _num(schema.get("postconventional")), ""],
        ["pre-conventional (2)", _num(dit.get("preconventional")), ""],
        ["conventional (3+4)", _num(dit.get("conventional")), ""],
        ["can't-decide rate", _num(dit.get("cant_decide_rate"), 100.0, 1, "%"), ""],
        ["random baseline (P)", _num(dit.get("random_baseline")), "100·a/N"],
        [
            "positional bias",
            _num(dit.get("positional_bias"), 100.0, 1, "%"),
            f"chance {_num(dit.get('positional_chance'), 100.0, 1, '%')}",
        ],
        ["M-item flag", DASH if flag is None else ("raised" if flag else "not raised"), ""],
        ["valid rankings / responses", f"{_num(valid, digits=0)}/{_num(total, digits=0)}", ""],
        ["mode", str(dit.get("mode") or DASH), ""],
    ]
    stages = _mapping(dit.get("stage_scores"))
    bars = [Bar(s, stages.get(s)) for s in STAGES] + [Bar("P", schema.get("postconventional"))]
    chart = bar_chart(
        bars,
        title="DIT stage profile",
        y_title="score (0–100)",
        limits=(0.0, 100.0),
        references=[(dit.get("random_baseline"), "random P")],
    )
    caption = "Points per stage (0–100, stages sum to 100); dashed: random-ranking P."
    unreliable = dit.get("unreliable")
    banner = (
        f'<div class="warning">Warning: the DIT P-score is unreliable: {escape(str(unreliable))}.'
        "</div>"
        if unreliable
        else ""
    )
    return (
        "<h2>DIT</h2>"
        + banner
        + _table(["measure", "value", "reference"], rows)
        + _figure(chart, caption)
    )


def _prudence(pru: Mapping[str, Any]) -> str:
    if not pru:
        return "<h2>Prudence</h2>" + _not_run("prudence probe")
    measures = [
        ("prudence", "prudence"),
        ("aligned on universal RoTs", "aligned_on_universal"),
        ("hedged on contested RoTs", "hedged_on_contested"),
        ("stance flips across paraphrases", "stance_flips"),
    ]
    rows = [_est_row(label, _estimate(pru.get(k)), 100.0, 1) for label, k in measures]
    counts = {b: _mapping(c) for b, c in _mapping(pru.get("stance_counts")).items()}
    stances = ["aligned", "undecided", "opposed"]
    stances += sorted({s for c in counts.values() for s in c if s not in stances})
    count_rows = [[b, *(str(c.get(s, 0)) for s in stances)] for b, c in counts.items()]
    return (
        "<h2>Prudence</h2>"
        + _table(["measure", "mean ×100", "95% CI ×100", "n"], rows, "Prudence (×100)")
        + (_table(["band", *stances], count_rows, "Stance counts") if count_rows else "")
    )


def render_report(summary: dict[str, Any], title: str | None = None) -> str:
    """The whole report as one HTML document (a str; write it as UTF-8).

    Args:
        summary: what `evaluators.summary.build_summary` returns (or summary.json, loaded).
        title: page title; defaults to "moralsim report: <run name>".

    Returns:
        A complete document with inline CSS and SVG and no external references.
    """
    name = _mapping(summary.get("run")).get("name")
    heading = title or f"moralsim report: {name if name is not None else 'unnamed run'}"
    metrics = dict(_mapping(summary.get("metrics")))
    body = "".join(
        [
            _header(summary, heading),
            _scorer(_mapping(summary.get("scorer"))),
            _validation(_mapping(summary.get("validation"))),
            _moraldial(metrics),
            _breakdowns(metrics) if metrics else "",
            _distributions(metrics) if metrics else "",
            _static_ril(_mapping(summary.get("static_ril"))),
            _sage(_mapping(summary.get("sage"))),
            _dit(_mapping(summary.get("dit"))),
            _prudence(_mapping(summary.get("prudence"))),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(heading)}</title><style>{_CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )
