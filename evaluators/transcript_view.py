"""The transcript viewer of report.html: every dialogue of a run, filterable, read in place.

The numbers in the report are only as good as the turns behind them, so the report carries the
turns too: each dialogue's flow, scenario, foundations, hidden RoT and turns, and for each
scored bot turn its score, the three class probabilities (meta.p) and the RoT it was scored
against. The data is embedded once as JSON in a `<script type="application/json">` element
(every "<", ">" and "&" written as a \\u escape, so no record text can close the element or
open a comment) and a small script renders one page of rows at a time and a dialogue's turns
only when it is opened, so a run of 1,000 dialogues opens at once. Record text is untrusted:
the script writes it with textContent only.

Filters, sort and the page live in the URL hash (`#flow=...&foundation=...&metric=S_MR1&min=
-1&max=0&sort=desc&page=2&open=3`), so a view can be linked and a headless browser can test
one. Nothing here knows a flow: metrics are the score names the records carry.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from scenarios.records import Dialogue, Score, Turn
from scenarios.rot import RoT

__all__ = [
    "HIDDEN_ROT",
    "MEAN_AS",
    "NO_FOUNDATION",
    "ROT_KEYS",
    "VIEWER_CSS",
    "dialogue_metrics",
    "embed_json",
    "transcript_section",
    "viewer_payload",
]

MEAN_AS = "mean AS"
"""The per-dialogue mean of every score that carries class probabilities (an AS)."""

ROT_KEYS: Mapping[str, str] = {
    "worst_rot": "nearest safety RoT it most violates",
    "rot_bot": "the bot's own explanation",
}
"""Score-meta keys that store the RoT a score was scored against, and how to name it."""

HIDDEN_ROT = "hidden RoT (implied: not stored on the score)"
"""What an AS with no stored RoT was scored against, by every scorer's definition."""

NO_FOUNDATION = "(none)"
"""The foundation filter's choice for dialogues whose hidden RoT names none (or that have none)."""

PAGE_SIZE = 50

VIEWER_CSS = """
#transcripts .tv-controls { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center;
  margin: .5em 0; font-size: 13px; }
#transcripts input[type=number] { width: 6em; }
.tv-row { border: 1px solid #ddd; margin: 2px 0; font-size: 13px; }
.tv-row > summary { cursor: pointer; padding: 3px 6px; display: flex; gap: 10px;
  white-space: nowrap; overflow: hidden; }
.tv-row[open] > summary { background: #f2f2f2; }
.tv-val { width: 4.5em; text-align: right; font-variant-numeric: tabular-nums; font-weight: 600; }
.tv-low { color: #b03a2e; } .tv-high { color: #1e7b34; }
.tv-flow { width: 8em; } .tv-scn { width: 11em; } .tv-fdn { width: 11em; color: #555; }
.tv-row > summary > span { flex: none; }
.tv-row > summary > .tv-preview { flex: 1 1 0; min-width: 0; color: #555; overflow: hidden;
  text-overflow: ellipsis; }
.tv-body { padding: 4px 10px 8px; }
.tv-facts { display: grid; grid-template-columns: max-content 1fr; gap: 1px 10px; margin: 0; }
.tv-facts dt { font-weight: 600; } .tv-facts dd { margin: 0; }
.tv-turn { margin: 6px 0; padding: 4px 8px; border-left: 4px solid #bbb; }
.tv-turn.tv-bot { border-color: #4c78a8; background: #f5f8fc; }
.tv-turn.tv-system { border-color: #999; background: #f6f6f6; }
.tv-who { font-size: 12px; color: #555; }
.tv-text { white-space: pre-wrap; margin: 2px 0; }
.tv-scores { margin: 4px 0 2px; font-size: 12px; }
.tv-scores td:last-child, .tv-scores th:last-child { text-align: left; max-width: 32em; }
#tv-errors { color: #7b1d14; background: #fdecea; white-space: pre-wrap; }
"""

_ERRORS_JS = """
window.addEventListener("error", function (event) {
  var box = document.getElementById("tv-errors");
  box.hidden = false;
  box.textContent += "Uncaught " + event.message + "\\n";
});
"""

# The viewer: plain ES2017, no framework. It reads the JSON once and builds DOM nodes with
# textContent; rows exist only for the visible page, turns only for opened rows.
_VIEWER_JS = """
(function () {
  "use strict";
  const root = document.getElementById("transcripts");
  const data = JSON.parse(document.getElementById("tv-data").textContent);
  const list = root.querySelector(".tv-list");
  const status = root.querySelector(".tv-status");
  const NONE = data.no_foundation;
  const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function fmt(x, digits) {
    if (typeof x !== "number" || !isFinite(x)) return "\\u2014";
    const text = x.toFixed(digits);
    return Number(text) === 0 ? text.replace("-", "") : text;
  }

  function bound(text, fallback) {
    const x = text === "" ? NaN : Number(text);
    return isFinite(x) ? x : fallback;
  }

  /* The state a link or the controls set: filters, metric, sort order, page, rows opened. */
  function readHash() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ""));
    const metric = p.get("metric");
    return {
      flow: p.get("flow") || "",
      foundation: p.get("foundation") || "",
      metric: metric !== null && data.metrics.includes(metric) ? metric : data.default_metric,
      min: p.get("min") || "",
      max: p.get("max") || "",
      sort: p.get("sort") === "desc" ? "desc" : "asc",
      page: Math.max(0, (parseInt(p.get("page"), 10) || 1) - 1),
      open: Math.max(0, parseInt(p.get("open"), 10) || 0),
    };
  }

  function writeHash(state) {
    const p = new URLSearchParams();
    for (const key of ["flow", "foundation", "metric", "min", "max"]) {
      if (state[key]) p.set(key, state[key]);
    }
    if (state.sort === "desc") p.set("sort", "desc");
    if (state.page > 0) p.set("page", String(state.page + 1));
    try {
      history.replaceState(null, "", "#" + p.toString());
    } catch (err) {
      /* some browsers refuse replaceState on file: URLs; the view still works */
    }
  }

  function value(d, metric) {
    return has(d.m, metric) ? d.m[metric] : null;
  }

  /* Dialogues passing the filters, worst (lowest) first unless sort is desc; none last. */
  function selected(state) {
    const ranged = state.min !== "" || state.max !== "";
    const lo = bound(state.min, -Infinity);
    const hi = bound(state.max, Infinity);
    const rows = data.dialogues.filter((d) => {
      if (state.flow && d.flow !== state.flow) return false;
      if (state.foundation === NONE && d.foundations.length) return false;
      if (state.foundation && state.foundation !== NONE &&
          !d.foundations.includes(state.foundation)) return false;
      const v = value(d, state.metric);
      return !ranged || (v !== null && v >= lo && v <= hi);
    });
    const sign = state.sort === "desc" ? -1 : 1;
    rows.sort((a, b) => {
      const va = value(a, state.metric);
      const vb = value(b, state.metric);
      if (va === null || vb === null) {
        if (va !== vb) return va === null ? 1 : -1;
      } else if (va !== vb) {
        return sign * (va - vb);
      }
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    return rows;
  }

  function pairs(obj, sep) {
    return Object.keys(obj).map((k) => k + ": " + obj[k]).join(sep);
  }

  function scoreTable(scores) {
    const table = el("table", "tv-scores");
    const head = table.createTHead().insertRow();
    const names = ["metric", "value", "P(agree)", "P(neutral)", "P(disagree)", "scored against"];
    for (const name of names) head.append(el("th", "", name));
    const body = table.createTBody();
    for (const s of scores) {
      const row = body.insertRow();
      const p = s.p || [];
      let against = s.vs ? data.rot_labels[s.vs] : "";
      if (s.rot) against += ": \\u201c" + s.rot + "\\u201d";
      if (s.info) against += (against ? "; " : "") + pairs(s.info, "; ");
      const cells = [s.name, fmt(s.value, 3), fmt(p[0], 3), fmt(p[1], 3), fmt(p[2], 3), against];
      for (const text of cells) row.append(el("td", "", text));
    }
    return table;
  }

  function facts(d) {
    const dl = el("dl", "tv-facts");
    const add = (term, text) => {
      if (text === undefined || text === null || text === "") return;
      dl.append(el("dt", "", term), el("dd", "", text));
    };
    add("dialogue", d.id);
    add("scenario", d.scenario);
    add("flow", d.flow);
    add("foundations", d.foundations.join(", "));
    if (d.rot) {
      const extra = ["consensus", "severity"].filter((k) => has(d.rot, k))
        .map((k) => k + " " + d.rot[k]);
      add("hidden RoT", d.rot.text + (extra.length ? " (" + extra.join(", ") + ")" : ""));
    } else {
      add("hidden RoT", "none recorded");
    }
    add("record meta", pairs(d.meta, "; "));
    return dl;
  }

  /* A dialogue's turns and scores, built the first time its row is opened. */
  function body(d) {
    const box = el("div", "tv-body");
    box.append(facts(d));
    const placed = (s) => s.turn !== null && s.turn >= 0 && s.turn < d.turns.length;
    const overall = d.scores.filter((s) => !placed(s));
    if (overall.length) box.append(el("div", "tv-who", "dialogue scores"), scoreTable(overall));
    d.turns.forEach((t, i) => {
      const turn = el("div", "tv-turn tv-" + t.role);
      const who = [t.role + " #" + i, t.step || "", pairs(t.meta || {}, " \\u00b7 ")];
      turn.append(el("div", "tv-who", who.filter(Boolean).join(" \\u00b7 ")));
      turn.append(el("div", "tv-text", t.text));
      const scores = d.scores.filter((s) => s.turn === i);
      if (scores.length) turn.append(scoreTable(scores));
      box.append(turn);
    });
    return box;
  }

  function expand(item, d) {
    if (item.open && !item.querySelector(".tv-body")) item.append(body(d));
  }

  /* The first user line, cut: enough to recognise a dialogue in a closed row. */
  function preview(d) {
    const first = d.turns.find((t) => t.role === "user");
    const flat = first ? first.text.replace(/\\s+/g, " ").trim() : "";
    return flat.length > 160 ? flat.slice(0, 159) + "\\u2026" : flat;
  }

  function row(d, state) {
    const item = el("details", "tv-row");
    const v = value(d, state.metric);
    item.dataset.id = d.id;
    item.dataset.flow = d.flow;
    item.dataset.value = v === null ? "" : String(v);
    const tone = v === null ? "" : v < 0 ? " tv-low" : v > 0 ? " tv-high" : "";
    const head = el("summary");
    head.append(el("span", "tv-val" + tone, fmt(v, 2)), el("span", "tv-flow", d.flow),
      el("span", "tv-scn", d.scenario), el("span", "tv-fdn", d.foundations.join(", ")),
      el("span", "tv-preview", preview(d)));
    item.append(head);
    item.addEventListener("toggle", () => expand(item, d));
    return item;
  }

  function render(state) {
    const rows = selected(state);
    const pages = Math.max(1, Math.ceil(rows.length / data.page_size));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * data.page_size;
    const shown = rows.slice(start, start + data.page_size);
    list.replaceChildren(...shown.map((d) => row(d, state)));
    list.querySelectorAll(".tv-row").forEach((item, i) => {
      if (i < state.open) {
        item.open = true;
        expand(item, shown[i]);
      }
    });
    status.textContent = rows.length ?
      "dialogues " + (start + 1) + "\\u2013" + (start + shown.length) + " of " + rows.length +
        " shown (" + data.dialogues.length + " in the run), page " + (state.page + 1) +
        " of " + pages :
      "no dialogue matches (" + data.dialogues.length + " in the run)";
    root.querySelector(".tv-prev").disabled = state.page === 0;
    root.querySelector(".tv-next").disabled = state.page >= pages - 1;
    root.querySelector(".tv-sort").textContent =
      state.sort === "desc" ? "best first (click: worst first)" : "worst first (click: best first)";
  }

  function select(label, key, options, state) {
    const box = el("label", "", label + " ");
    const input = el("select");
    input.name = key;
    for (const [val, text] of options) {
      const option = el("option", "", text);
      option.value = val;
      input.append(option);
    }
    input.value = state[key];
    box.append(input);
    return box;
  }

  function number(label, key, state) {
    const box = el("label", "", label + " ");
    const input = el("input");
    input.type = "number";
    input.step = "0.05";
    input.name = key;
    input.value = state[key];
    box.append(input);
    return box;
  }

  function controls(state) {
    const bar = root.querySelector(".tv-controls");
    const all = (items) => [["", "all"]].concat(items.map((x) => [x, x]));
    bar.append(
      select("flow", "flow", all(data.flows), state),
      select("foundation", "foundation", all(data.foundations), state),
      select("metric", "metric", data.metrics.map((x) => [x, x]), state),
      number("min", "min", state),
      number("max", "max", state),
      el("button", "tv-sort"), el("button", "tv-prev", "\\u2190 previous"),
      el("button", "tv-next", "next \\u2192"));
    const update = () => {
      for (const input of bar.querySelectorAll("select, input")) state[input.name] = input.value;
      state.page = 0;
      state.open = 0;
      writeHash(state);
      render(state);
    };
    bar.addEventListener("change", update);
    bar.querySelector(".tv-sort").addEventListener("click", () => {
      state.sort = state.sort === "desc" ? "asc" : "desc";
      update();
    });
    const turn = (step) => () => {
      state.page += step;
      state.open = 0;
      writeHash(state);
      render(state);
    };
    bar.querySelector(".tv-prev").addEventListener("click", turn(-1));
    bar.querySelector(".tv-next").addEventListener("click", turn(1));
  }

  const state = readHash();
  controls(state);
  render(state);
  root.dataset.ready = "1";
})();
"""


# --------------------------------------------------------------------------- data


def _finite(value: object) -> float | None:
    """A finite float, or None: the page and JSON.parse must never meet NaN or Infinity."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _probabilities(score: Score) -> list[float] | None:
    """meta.p as three finite numbers (P(agree), P(neutral), P(disagree)), or None."""
    p = score.meta.get("p")
    if not isinstance(p, Sequence) or isinstance(p, str) or len(p) != 3:
        return None
    values = [x for x in map(_finite, p) if x is not None]
    return values if len(values) == 3 else None


def _scalars(meta: Mapping[str, Any], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The str/number/bool entries of a meta dict: short facts worth a line, not lists."""
    return {
        str(k): v
        for k, v in meta.items()
        if k not in skip and (isinstance(v, str | bool) or _finite(v) is not None)
    }


def dialogue_metrics(dialogue: Dialogue) -> dict[str, float]:
    """The per-dialogue values the viewer filters and sorts on.

    Each score name maps to the mean of its values in the dialogue (one value in every flow
    today; a mean keeps a name scored twice usable), and MEAN_AS to the mean of every score
    that carries class probabilities, i.e. every AS the dialogue received. A dialogue without
    scores has no metrics, so the viewer sorts it last and a range filter leaves it out.
    """
    by_name: dict[str, list[float]] = {}
    agreement: list[float] = []
    for score in dialogue.scores:
        value = _finite(score.value)
        if value is None:
            continue
        by_name.setdefault(score.name, []).append(value)
        if _probabilities(score) is not None:
            agreement.append(value)
    out = {name: sum(vs) / len(vs) for name, vs in by_name.items()}
    if agreement:
        out[MEAN_AS] = sum(agreement) / len(agreement)
    return out


def _score_view(score: Score, has_hidden_rot: bool) -> dict[str, Any]:
    """One score as shown: value, class probabilities, and the RoT it was scored against.

    The RoT is the one stored on the score (ROT_KEYS); an AS with none stored was scored
    against the dialogue's hidden RoT, and the page says that this is implied, not recorded.
    """
    out: dict[str, Any] = {"name": score.name, "value": _finite(score.value), "turn": score.turn}
    p = _probabilities(score)
    if p is not None:
        out["p"] = p
    stored = next((k for k in ROT_KEYS if isinstance(score.meta.get(k), str)), None)
    if stored is not None:
        out["vs"], out["rot"] = stored, score.meta[stored]
    elif p is not None and has_hidden_rot:
        out["vs"] = "hidden_rot"
    extra = _scalars(score.meta, skip=("p", *ROT_KEYS))
    if extra:
        out["info"] = extra
    return out


def _turn_view(turn: Turn) -> dict[str, Any]:
    """role, text and flow step; other short turn meta (e.g. a firm push-back) kept as facts."""
    out: dict[str, Any] = {"role": turn.role, "text": turn.text}
    step = turn.meta.get("step")
    if isinstance(step, str):
        out["step"] = step
    extra = _scalars(turn.meta, skip=("step", "question"))  # the question repeats the text
    if extra:
        out["meta"] = extra
    return out


def _rot_view(rot: RoT | None) -> dict[str, Any] | None:
    """The hidden RoT's text and the two attributes a reader weighs a score by."""
    if rot is None:
        return None
    extra = {"consensus": rot.consensus, "severity": rot.severity}
    return {"text": rot.text, **{k: v for k, v in extra.items() if v is not None}}


def _dialogue_view(dialogue: Dialogue) -> dict[str, Any]:
    """Everything the viewer shows of one dialogue, each text once."""
    rot = dialogue.hidden_rot
    return {
        "id": dialogue.id,
        "flow": dialogue.flow,
        "scenario": dialogue.scenario_id,
        "foundations": list(rot.foundations) if rot else [],
        "rot": _rot_view(rot),
        "meta": _scalars(dialogue.meta),
        "m": dialogue_metrics(dialogue),
        "turns": [_turn_view(t) for t in dialogue.turns],
        "scores": [_score_view(s, rot is not None) for s in dialogue.scores],
    }


def viewer_payload(dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """The JSON the page embeds: the dialogues and the choices its filters offer.

    Metrics are listed MEAN_AS first, then by name; the default is MEAN_AS when any dialogue
    has an AS, so the page opens on the worst-agreeing dialogues.
    """
    views = [_dialogue_view(d) for d in dialogues]
    names = sorted({name for v in views for name in v["m"]} - {MEAN_AS})
    has_mean = any(MEAN_AS in v["m"] for v in views)
    metrics = [MEAN_AS, *names] if has_mean else names
    foundations = sorted({f for v in views for f in v["foundations"]})
    if any(not v["foundations"] for v in views):
        foundations.append(NO_FOUNDATION)
    return {
        "page_size": PAGE_SIZE,
        "flows": sorted({v["flow"] for v in views}),
        "foundations": foundations,
        "no_foundation": NO_FOUNDATION,
        "metrics": metrics,
        "default_metric": metrics[0] if metrics else "",
        "rot_labels": {**ROT_KEYS, "hidden_rot": HIDDEN_ROT},
        "dialogues": views,
    }


def embed_json(obj: Any) -> str:
    """JSON that is inert inside a <script> element: no "<", ">" or "&" survives unescaped.

    "</script" would end the element and "<!--" would switch the parser into a state where a
    later "</script>" no longer closes it; as \\u003c they are plain characters to JSON.parse.
    U+2028/2029 are escaped too, so the text is also valid as a JavaScript literal.
    """
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


# --------------------------------------------------------------------------- section


def transcript_section(dialogues: Sequence[Dialogue]) -> str:
    """The viewer's <section>: a note, the controls' place, the embedded data, the script.

    A run without dialogues gets a one-line section and no script, so the page stays valid.
    """
    head = '<section id="transcripts"><h2>Transcripts</h2>'
    if not dialogues:
        return f'{head}<p class="note">No dialogues in this run.</p></section>'
    note = (
        '<p class="note">Every dialogue of the run; open a row to read its turns. Rows are '
        f"sorted worst (lowest) first on the chosen metric, {PAGE_SIZE} to a page; "
        f"<b>{escape(MEAN_AS)}</b> is the mean of the dialogue's agreement scores (AS = "
        "P(agree) - P(disagree), in [-1, 1]); other metrics are its scores by name, as stored. "
        "A score that stores no RoT of its own was scored against the hidden RoT. The filters "
        "live in the address (#flow=...&amp;metric=...&amp;min=...&amp;max=...), so a view "
        "can be linked.</p>"
    )
    return (
        f"{head}{note}"
        '<pre id="tv-errors" hidden></pre>'
        "<noscript><p>The transcript viewer needs JavaScript.</p></noscript>"
        '<div class="tv-controls"></div><p class="tv-status note"></p><div class="tv-list"></div>'
        f'<script type="application/json" id="tv-data">{embed_json(viewer_payload(dialogues))}'
        f"</script><script>{_ERRORS_JS}</script><script>{_VIEWER_JS}</script></section>"
    )
