"""report.html: tables with the expected cells, inline SVG charts, escaping, nothing external.

Expected values are worked out by hand from the scenario records below, never read back from
the renderer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest

from evaluators.report_html import render_report
from evaluators.summary import build_summary
from evaluators.svg_charts import MARGIN, Bar, bar_chart, histogram, nice_ticks
from scenarios.records import Dialogue, Score
from scenarios.rot import RoT

RUN_NAME = "<script>alert(1)</script> run"


@dataclass
class Table:
    caption: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


class Page(HTMLParser):
    """Collects tables (caption, header cells, body rows), start tags and all visible text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[Table] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None
        self._row: list[str] | None = None
        self._in_head = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append(Table())
        elif tag == "caption":
            self._caption = []
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        table = self.tables[-1] if self.tables else None
        if tag == "caption" and table is not None and self._caption is not None:
            table.caption = "".join(self._caption)
            self._caption = None
        elif tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and table is not None and self._row is not None:
            if self._in_head:
                table.headers = self._row
            else:
                table.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for sink in (self._cell, self._caption):
            if sink is not None:
                sink.append(data)

    def table(self, first_header: str, caption_part: str = "") -> Table:
        for t in self.tables:
            if t.headers[:1] == [first_header] and caption_part in t.caption:
                return t
        raise AssertionError(f"no table starting with {first_header!r} ({caption_part!r})")

    def row(self, first_header: str, label: str, caption_part: str = "") -> dict[str, str]:
        t = self.table(first_header, caption_part)
        for r in t.rows:
            if r[0] == label:
                return dict(zip(t.headers, r, strict=True))
        raise AssertionError(f"no row {label!r} in table {first_header!r}")

    def count(self, tag: str) -> int:
        return sum(1 for t, _ in self.tags if t == tag)


def _dialogue(i: int, split: str, rot: RoT | None, **scores: float) -> Dialogue:
    return Dialogue(
        id=f"d{i}",
        scenario_id=f"q{i}",
        flow="moraldial",
        hidden_rot=rot,
        scores=[Score(name, value) for name, value in scores.items()],
        meta={"split": split},
    )


CARE = RoT("It's wrong to hurt people.", foundations=("care",), consensus=5)
MIXED = RoT("Eating meat is wrong.", foundations=("care", "<i>fair</i>"), consensus=3)

# S_MA: (0.5 + 0.0 + 0.25) / 3 = 0.25 -> "25.0"; sample SD = sqrt((0.0625+0.0625+0)/2) = 0.25;
# t(0.975, df=2) = 4.302653 -> half = 4.302653 * 0.25 / sqrt(3) = 0.621034 -> [-37.1, 87.1].
# S_MR1: (0.2 - 0.6) / 2 = -0.2 -> "-20.0". dS_MR: one value 1.0 -> "100.0", no CI.
# S_MR: (1 + 1) / 2 -> "100.0". S_ME and S_RIL: nothing scored -> "—", n = 0.
DIALOGUES = [
    _dialogue(1, "test", CARE, S_MA=0.5, S_MR1=0.2, S_MR=1.0),
    _dialogue(2, "test", MIXED, S_MA=0.0, S_MR1=-0.6, S_MR2=0.4, dS_MR=1.0, S_MR=1.0),
    _dialogue(3, "dev", None, S_MA=0.25),
    Dialogue(id="s1", scenario_id="q9", flow="sage"),
]


def _est(mean: float | None, lo: float | None, hi: float | None, n: int) -> dict[str, object]:
    ci = None if lo is None else [lo, hi]
    return {"mean": mean, "ci95": ci, "n": n, "method": "t"}


PROBES = {
    "sage": {
        "variant": "reference",
        "answer": _est(0.681, 0.6, 0.75, 10),
        "rot": _est(0.5754, 0.5, 0.65, 10),
        "rot_prompted": _est(0.548, None, None, 1),
        "baselines": {
            "bleu": _est(0.12, 0.1, 0.14, 10),
            "rouge_l": _est(0.3, 0.25, 0.35, 10),
            "cosine": _est(0.8, 0.75, 0.85, 10),
        },
        "histogram": {
            "answer": {"edges": [0.0, 0.5, 1.0], "counts": [3, 7]},
            "rot": {"edges": [0.0, 0.5, 1.0], "counts": [6, 4]},
        },
    },
    "dit": {
        "p_score": 53.6,
        "p_sd": 4.25,
        "stage_scores": {"2": 5.0, "3": 15.0, "4": 22.4, "5": 30.0, "6": 23.6, "M": 4.0},
        "schema": {"personal_interest": 20.0, "maintaining_norms": 22.4, "postconventional": 53.6},
        "preconventional": 5.0,
        "conventional": 37.4,
        "cant_decide_rate": 0.125,
        "random_baseline": 100 / 3,
        "positional_bias": 0.5,
        "positional_chance": 1 / 3,
        "m_flag": False,
        "n_responses": 48,
        "n_valid_rankings": 40,
        "mode": "generate",
    },
    "prudence": {
        "prudence": _est(0.5, 0.25, 0.75, 6),
        "aligned_on_universal": _est(0.5, 0.0, 1.0, 4),
        "hedged_on_contested": _est(0.5, None, None, 2),
        "stance_counts": {
            "universal": {"aligned": 2, "undecided": 1, "opposed": 1},
            "contested": {"undecided": 1, "aligned": 1},
        },
        "stance_flips": _est(1 / 3, 0.0, 1.0, 3),
    },
}
RUN = {"name": RUN_NAME, "bot": {"model": "smollm2-135m-instruct"}, "seed": 7, "date": "2025-01-02"}


@pytest.fixture(scope="module")
def html() -> str:
    return render_report(build_summary(DIALOGUES, PROBES, RUN))


@pytest.fixture(scope="module")
def page(html: str) -> Page:
    return Page(html)


def test_header_shows_run_facts(page: Page) -> None:
    text = "".join(page.text)
    assert "smollm2-135m-instruct" in text and "2025-01-02" in text and "seed: 7" in text
    assert page.row("flow", "moraldial") == {"flow": "moraldial", "dialogues": "3"}
    assert page.row("flow", "sage")["dialogues"] == "1"


def test_moraldial_table(page: Page) -> None:
    headers = page.table("metric").headers
    assert headers[:5] == ["metric", "label", "mean ×100", "95% CI ×100", "n"]
    s_ma = page.row("metric", "S_MA")
    # n = 3 < 5: a t interval ([-37.1, 87.1]) would mostly reflect the t tails; none is shown
    assert (s_ma["mean ×100"], s_ma["95% CI ×100"], s_ma["n"]) == ("25.0", "n too small", "3")
    assert s_ma["label"] == "safety"
    assert page.row("metric", "S_MR1")["mean ×100"] == "-20.0"
    assert page.row("metric", "ΔS_MR")["mean ×100"] == "100.0"
    assert page.row("metric", "ΔS_MR")["95% CI ×100"] == "n too small"  # n = 1
    assert page.row("metric", "S_MR")["mean ×100"] == "100.0"
    empty = page.row("metric", "S_ME")
    assert (empty["mean ×100"], empty["95% CI ×100"], empty["n"]) == ("—", "—", "0")


def test_breakdown_tables(page: Page) -> None:
    # split test: S_MA (0.5 + 0.0) / 2 = 0.25, n = 2; split dev: 0.25 alone, n = 1.
    assert page.row("split", "test")["S_MA"] == "25.0 (2)"  # no interval below n = 5
    assert page.row("split", "dev")["S_MA"] == "25.0 (1)"
    assert page.row("split", "dev")["S_MR1"] == "—"  # dev has no S_MR1
    # foundation care: dialogues 1 and 2 -> S_MA 0.25 (2); the escaped foundation: 0.0 (1).
    assert page.row("moral foundation", "care")["S_MA"].endswith("(2)")
    assert page.row("moral foundation", "<i>fair</i>")["S_MA"] == "0.0 (1)"
    assert page.row("moral foundation", "unknown")["S_MA"] == "25.0 (1)"
    # consensus: dialogue 2 is contested (<=3), S_MR1 -0.6 -> -60.0.
    assert page.row("consensus", "contested (<=3)")["S_MR1"] == "-60.0 (1)"
    assert [r[0] for r in page.table("consensus").rows] == ["contested (<=3)", "5", "unknown"]
    assert "S_ME" not in page.table("split").headers


def test_sage_dit_prudence_tables(page: Page) -> None:
    assert page.row("graph", "answers")["SaGE"] == "0.681"
    assert page.row("graph", "RoTs")["SaGE"] == "0.575"
    assert page.row("graph", "RoTs, prompted with the RoT")["95% CI"] == "—"
    assert page.row("baseline", "ROUGE-L")["mean"] == "0.300"
    assert page.row("measure", "P-score", "")["value"] == "53.6"
    assert page.row("measure", "random baseline (P)")["value"] == "33.3"  # 100 / 3
    assert page.row("measure", "can't-decide rate")["value"] == "12.5%"
    bias = page.row("measure", "positional bias")
    assert (bias["value"], bias["reference"]) == ("50.0%", "chance 33.3%")
    assert page.row("measure", "M-item flag")["value"] == "not raised"
    assert page.row("measure", "valid rankings / responses")["value"] == "40/48"
    assert page.row("measure", "prudence", "Prudence")["mean ×100"] == "50.0"
    assert page.row("measure", "stance flips across paraphrases", "Prudence")["n"] == "3"
    assert page.row("band", "universal") == {
        "band": "universal",
        "aligned": "2",
        "undecided": "1",
        "opposed": "1",
    }


def test_charts_are_inline_svg(page: Page, html: str) -> None:
    # 1 MoralDial bar chart + 7 metric histograms + 2 SaGE histograms + 1 DIT stage chart.
    assert page.count("svg") == 11
    assert page.count("rect") > 0
    classes = [a.get("class") for t, a in page.tags if t in ("line", "rect")]
    assert "zero" in classes and "ref" in classes
    assert "whisker" not in classes  # every MoralDial n is below 5: no interval to draw
    assert "random P" in "".join(page.text)
    for svg in re.findall(r"<svg.*?</svg>", html, flags=re.S):
        ElementTree.fromstring(svg)  # well-formed, so it also works pasted into an .svg file


def test_nothing_external_and_text_escaped(page: Page, html: str) -> None:
    for _, attrs in page.tags:
        for key in ("src", "href", "xlink:href"):
            value = attrs.get(key) or ""
            assert not value.startswith(("http://", "https://", "//")), value
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html.lower() and page.count("script") == 0
    assert "<i>" not in html  # the foundation name is data, not markup
    assert RUN_NAME in "".join(page.text)  # shown, as text


def test_empty_summary_renders_not_run() -> None:
    summary = build_summary([_dialogue(1, "test", CARE, S_MA=0.5)])
    page = Page(render_report(summary, title="Empty"))
    text = "".join(page.text)
    assert text.count("not run") == 3  # SaGE, DIT, prudence
    row = page.row("metric", "S_RIL")
    assert (row["mean ×100"], row["n"]) == ("—", "0")
    assert page.row("metric", "S_MA")["95% CI ×100"] == "n too small"  # n = 1
    assert page.tags[0][0] == "html" and "Empty" in text


def test_malformed_sections_do_not_crash() -> None:
    summary = {
        "run": {},
        "metrics": {"S_MA": {"mean": None, "ci95": None, "n": 0, "histogram": {}}},
        "sage": {"answer": None, "histogram": {"answer": {"edges": [0, 1], "counts": [1, 2]}}},
        "dit": {"p_score": None, "stage_scores": {}, "m_flag": None, "random_baseline": None},
        "prudence": {"prudence": {"mean": float("nan"), "ci95": [None, None], "n": 0}},
    }
    page = Page(render_report(summary))
    assert page.row("graph", "answers")["SaGE"] == "—"
    assert page.row("measure", "P-score")["value"] == "—"
    assert page.row("measure", "M-item flag")["value"] == "—"
    assert page.row("measure", "prudence", "Prudence")["mean ×100"] == "—"
    assert "unnamed run" in "".join(page.text)


def test_nice_ticks_by_hand() -> None:
    # span 1.24 / 5 = 0.248 -> magnitude 0.1, residual 2.48 -> step 5 x 0.1 = 0.5.
    assert nice_ticks(-0.37, 0.87) == [-0.5, 0.0, 0.5, 1.0]
    # span 100 / 5 = 20 -> step 20.
    assert nice_ticks(0.0, 100.0) == [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    assert nice_ticks(0.0, 0.0) == [-1.0, -0.5, 0.0, 0.5, 1.0]  # widened, step 2/5 -> 0.5


def _floats(svg: str, cls: str, attr: str) -> list[float]:
    tags = re.findall(rf'<(?:rect|line) class="{cls}"[^>]*>', svg)
    return [float(v) for t in tags for v in re.findall(rf'\b{attr}="([-0-9.]+)"', t)]


def test_bar_and_whisker_geometry() -> None:
    height = 300
    plot = height - MARGIN["top"] - MARGIN["bottom"]
    svg = bar_chart(
        [Bar("a", 50.0, 40.0, 60.0), Bar("b", None)],
        title="t",
        y_title="y",
        limits=(0.0, 100.0),
        references=[(25.0, "ref")],
        height=height,
    )
    # data 0..60 (capped at 100): 60 / 5 = 12 -> step 20, axis 0..60; bar 50 -> 50/60 of it.
    assert _floats(svg, "bar", "height") == [pytest.approx(plot * 50 / 60, abs=0.1)]
    y1, y2 = _floats(svg, "whisker", "y1")[0], _floats(svg, "whisker", "y2")[0]
    assert abs(y1 - y2) == pytest.approx(plot * 20 / 60, abs=0.1)
    assert _floats(svg, "ref", "y1") == [pytest.approx(MARGIN["top"] + plot * 35 / 60, abs=0.1)]
    assert "—" in svg  # the missing bar


def test_whiskers_are_clipped_to_limits() -> None:
    # interval [-3, 3] x100 with limits +-200: the axis stops at +-200, the whisker at its ends.
    svg = bar_chart([Bar("a", 50.0, -300.0, 300.0)], title="t", y_title="y", limits=(-200, 200))
    ys = _floats(svg, "whisker", "y1") + _floats(svg, "whisker", "y2")
    assert min(ys) == pytest.approx(MARGIN["top"]) and max(ys) == pytest.approx(
        280 - MARGIN["bottom"]
    )
    assert ">-200<" in svg and ">200<" in svg and ">-300<" not in svg


def test_histogram_heights_and_empty() -> None:
    svg = histogram([-1.0, 0.0, 1.0], [1, 3], title="h", x_title="x ×100", scale=100.0)
    heights = _floats(svg, "bin", "height")
    assert heights[0] * 3 == pytest.approx(heights[1], abs=0.2)  # counts 1 : 3, axis 0..3
    assert ">-100<" in svg and ">100<" in svg  # x ticks scaled x100
    assert "no data" in histogram([0.0, 1.0], [0], title="e", x_title="x")
    assert "no data" in histogram([0.0], [1, 2], title="bad", x_title="x")


def _with_scorer(pairwise: float | None) -> str:
    from evaluators.scorer_eval import key_figures, scorer_summary

    figures = {"pack-test": {"macro_f1": 0.81}}
    if pairwise is not None:
        figures["moral-stories"] = {"pairwise_accuracy": pairwise}
    card = {"figures": figures, "key_figures": key_figures(figures)}
    summary = build_summary(DIALOGUES, PROBES, RUN)
    summary["scorer"] = scorer_summary({"spec": "my-scorer", "kind": "cross-encoder", "card": card})
    return render_report(summary)


def test_scorer_card_and_warning_rule() -> None:
    weak = _with_scorer(0.55)
    assert 'id="scorer"' in weak and "my-scorer" in weak and "55.0%" in weak
    assert 'class="warning"' in weak and "not reliable" in weak
    strong = _with_scorer(0.83)
    assert "83.0%" in strong and "81.0%" in strong and 'class="warning"' not in strong
    unmeasured = _with_scorer(None)
    assert 'class="warning"' in unmeasured and "no real-data validation" in unmeasured


def test_intervals_from_five_values_are_clipped_to_the_metric_range() -> None:
    dialogues = [
        _dialogue(i, "test", CARE, S_MA=v) for i, v in enumerate([1.0, 1.0, 1.0, 0.9, 0.2])
    ]
    summary = build_summary(dialogues)
    low, high = summary["metrics"]["S_MA"]["ci95"]
    assert high == 1.0 and low < 0.82  # the t interval reaches 1.25; S_MA cannot exceed 1
    page = Page(render_report(summary))
    assert page.row("metric", "S_MA")["95% CI ×100"].endswith("100.0]")
    assert "whisker" in [a.get("class") for t, a in page.tags if t == "line"]
