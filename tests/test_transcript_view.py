"""The transcript viewer in report.html: embedded data, escaping, size, and a real browser.

Records here are built by hand (with the score names and meta the built-in scorers write), and
every expected value is worked out from them, never read back from the renderer. The browser
test runs the page's script in headless Chromium and is skipped where no chromium binary is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evaluators.report_html import render_report
from evaluators.transcript_view import (
    HIDDEN_ROT,
    MEAN_AS,
    NO_FOUNDATION,
    ROT_KEYS,
    dialogue_metrics,
    embed_json,
    transcript_section,
    viewer_payload,
)
from scenarios.records import Dialogue, Score, Turn
from scenarios.rot import RoT

HOSTILE = (
    "</script><img src=x onerror=\"document.title='pwned'\"><!-- <script>alert(1)</script> "
    "</SCRIPT > &amp; \u2028 end"
)
SUMMARY = {"run": {"name": "viewer-test"}}  # short, so the viewer is near the top of the page


def _moral(i: int, s_mr1: float, s_ma: float, text: str = "", foundation: str = "care") -> Dialogue:
    """A pushed-back dialogue with the scores (and score meta) a five-step dialogue carries."""
    reply = text or f"Bot answer {i}: it depends on who is hurt and how much."
    turns = [
        Turn("user", text or f"Question {i}: may I keep the wallet I found?", {"step": "question"}),
        Turn("bot", reply, {"step": "answer"}),
        Turn("user", "Why?", {"step": "why"}),
        Turn("bot", f"Because honesty matters, {i}.", {"step": "explanation"}),
        Turn("user", "I disagree.", {"step": "pushback", "firm": True}),
        Turn("bot", f"Revised answer {i}.", {"step": "revision"}),
    ]
    scores = [
        Score("S_MR1", s_mr1, 1, "m", {"p": [0.2, 0.1, 0.7]}),
        Score(
            "S_MA", s_ma, 1, "safety", {"worst_rot": text or "Do not steal.", "p": [0.1, 0, 0.9]}
        ),
        Score("S_ME", 0.25, 3, "m", {"rot_bot": f"honesty matters, {i}.", "p": [0.5, 0.25, 0.25]}),
        Score("S_MR2", 0.5, 5, "m", {"p": [0.6, 0.3, 0.1]}),
        Score("dS_MR", 0.5 - s_mr1, 5, "m"),
        Score("S_MR", 1.0, None, "m", {"pushed_back": True}),
    ]
    rot = RoT(text or "You should return lost property.", (foundation,), consensus=5, severity=3)
    return Dialogue(
        f"q{i:04d}/moraldial/s0",
        f"q{i:04d}",
        "moraldial",
        turns,
        rot,
        scores,
        {"run": "viewer-test", "seed": 0, "adapter": None},
    )


def _stance(i: int, as_rot: float, foundation: str = "fairness") -> Dialogue:
    """A one-answer dialogue with a single AS against its hidden RoT."""
    rot = RoT(f"It's unfair to cut in line ({i}).", (foundation, "care"), consensus=3)
    turns = [Turn("user", f"Can I cut in line {i}?", {"step": "question"}), Turn("bot", "No.")]
    scores = [Score("AS_rot", as_rot, 1, "agreement", {"p": [0.3, 0.4, 0.3]})]
    return Dialogue(f"q{i:04d}/prudence/p0/s0", f"q{i:04d}", "prudence", turns, rot, scores)


def _unscored(i: int) -> Dialogue:
    """A dialogue with no hidden RoT and no scores, like a multiple-choice probe's."""
    turns = [Turn("user", "Pick 1, 2 or 3."), Turn("bot", "1", {"step": "decision", "picked": 0})]
    return Dialogue(f"story-{i}/decision/s0", f"story-{i}", "decision", turns)


def _mixed(n_moral: int, n_stance: int, n_unscored: int = 2) -> list[Dialogue]:
    """n_moral + n_stance + n_unscored dialogues whose scores spread over [-0.9, 0.9]."""
    moral = [
        _moral(i, -0.9 + 1.8 * i / max(1, n_moral - 1), 0.1 * (i % 3) - 0.1) for i in range(n_moral)
    ]
    stance = [_stance(100 + i, 0.8 - 1.6 * i / max(1, n_stance - 1)) for i in range(n_stance)]
    return moral + stance + [_unscored(i) for i in range(n_unscored)]


class Scripts(HTMLParser):
    """The page's <script> elements (attributes and raw text) and every start tag's name."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.tags: list[str] = []
        self._open: dict[str, str | None] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def data(self) -> dict:
        found = [text for attrs, text in self.scripts if attrs.get("id") == "tv-data"]
        assert len(found) == 1 and self.scripts[0][0].get("type") == "application/json"
        return json.loads(found[0])


# --------------------------------------------------------------------------- data


def _rot(rot: RoT) -> dict:
    """What a reader of the hidden RoT is shown, worked out from the RoT itself."""
    out: dict = {"text": rot.text}
    if rot.consensus is not None:
        out["consensus"] = rot.consensus
    if rot.severity is not None:
        out["severity"] = rot.severity
    return out


def test_embedded_json_round_trips_records_with_hostile_text() -> None:
    hostile = _moral(0, -0.8, -0.6, text=HOSTILE)
    hostile.meta["note"] = HOSTILE
    dialogues = [hostile, *_mixed(3, 2)]
    html = render_report(SUMMARY, dialogues=dialogues)
    page = Scripts(html)
    assert len(page.scripts) == 3 and "img" not in page.tags  # no text became an element
    assert html.lower().count("</script") == 3 and "<!--" not in html
    data = page.data()
    assert data == viewer_payload(dialogues)  # exact, including \u2028 and "&amp;"
    for record, view in zip(dialogues, data["dialogues"], strict=True):
        assert (view["id"], view["flow"], view["scenario"]) == (
            record.id,
            record.flow,
            record.scenario_id,
        )
        assert [(t["role"], t["text"]) for t in view["turns"]] == [
            (t.role, t.text) for t in record.turns
        ]
        assert view["rot"] == (None if record.hidden_rot is None else _rot(record.hidden_rot))
        assert [(s["name"], s["value"], s["turn"], s.get("p")) for s in view["scores"]] == [
            (s.name, s.value, s.turn, s.meta.get("p")) for s in record.scores
        ]
    first = data["dialogues"][0]
    assert first["turns"][0]["text"] == HOSTILE and first["meta"]["note"] == HOSTILE
    assert first["scores"][1]["rot"] == HOSTILE and first["rot"]["text"] == HOSTILE


def test_embed_json_leaves_no_markup_characters() -> None:
    text = embed_json({"a": HOSTILE, "b": ["<!--", "-->", "</script>"]})
    assert not set("<>&") & set(text) and "\u2028" not in text
    assert json.loads(text) == {"a": HOSTILE, "b": ["<!--", "-->", "</script>"]}


def test_dialogue_metrics_by_hand() -> None:
    # S_MR1 -0.4, S_MA -0.6, S_ME 0.25, S_MR2 0.5 carry p; dS_MR 0.9 and S_MR 1 do not.
    metrics = dialogue_metrics(_moral(1, -0.4, -0.6))
    assert metrics[MEAN_AS] == pytest.approx((-0.4 - 0.6 + 0.25 + 0.5) / 4)
    assert metrics["dS_MR"] == pytest.approx(0.9) and metrics["S_MR"] == 1.0
    assert set(metrics) == {MEAN_AS, "S_MR1", "S_MA", "S_ME", "S_MR2", "dS_MR", "S_MR"}
    twice = _stance(2, 0.5)
    twice.scores.append(Score("AS_rot", -0.1, 1, "agreement", {"p": [0.2, 0.5, 0.3]}))
    assert dialogue_metrics(twice) == pytest.approx({"AS_rot": 0.2, MEAN_AS: 0.2})
    assert dialogue_metrics(_unscored(0)) == {}


def test_each_score_names_the_rot_it_was_scored_against() -> None:
    view = viewer_payload([_moral(7, -0.2, -0.3), _unscored(1)])
    labels = view["rot_labels"]
    scores = {s["name"]: s for s in view["dialogues"][0]["scores"]}
    assert (scores["S_MA"]["vs"], scores["S_MA"]["rot"]) == ("worst_rot", "Do not steal.")
    assert labels["worst_rot"] == ROT_KEYS["worst_rot"]
    assert (scores["S_ME"]["vs"], scores["S_ME"]["rot"]) == ("rot_bot", "honesty matters, 7.")
    assert scores["S_MR1"]["vs"] == "hidden_rot" and labels["hidden_rot"] == HIDDEN_ROT
    assert "rot" not in scores["S_MR1"] and "vs" not in scores["dS_MR"]  # no p: not an AS
    assert scores["S_MR"]["info"] == {"pushed_back": True} and scores["S_MR"]["turn"] is None
    assert scores["S_MA"]["p"] == [0.1, 0.0, 0.9]


def test_filter_choices_and_default_metric() -> None:
    data = viewer_payload(_mixed(2, 2, 1))
    assert data["flows"] == ["decision", "moraldial", "prudence"]
    assert data["foundations"] == ["care", "fairness", NO_FOUNDATION]
    assert data["metrics"][0] == MEAN_AS == data["default_metric"]
    assert data["metrics"][1:] == sorted(
        ["S_MR1", "S_MA", "S_ME", "S_MR2", "dS_MR", "S_MR", "AS_rot"]
    )
    unscored = viewer_payload([_unscored(0)])
    assert unscored["metrics"] == [] and unscored["default_metric"] == ""
    assert unscored["dialogues"][0]["turns"][1]["meta"] == {"picked": 0}


# --------------------------------------------------------------------------- report


def test_section_present_with_dialogues_and_absent_without() -> None:
    with_records = render_report(SUMMARY, dialogues=_mixed(2, 1))
    assert 'id="transcripts"' in with_records and 'id="tv-data"' in with_records
    assert "http://" not in with_records and "https://" not in with_records
    without = render_report(SUMMARY)
    assert 'id="transcripts"' not in without and "<script" not in without.lower()
    empty = render_report(SUMMARY, dialogues=[])
    assert 'id="transcripts"' in empty and "No dialogues in this run." in empty
    assert "<script" not in empty.lower()
    assert transcript_section([]) in empty


def _jsonl_bytes(dialogues: Sequence[Dialogue]) -> int:
    """The size of the records as dialogues.jsonl holds them (see scenarios.jsonl)."""
    return sum(
        len((json.dumps(d.to_dict(), ensure_ascii=False) + "\n").encode()) for d in dialogues
    )


def test_a_thousand_dialogues_stay_about_the_size_of_their_records() -> None:
    # Realistic turns: the demo run's bot replies are ~250 characters.
    dialogues = _mixed(600, 400, 0)
    for d in dialogues:
        for t in d.turns:
            t.text = (t.text + " ") * 8
    section = len(transcript_section(dialogues).encode())
    fixed = len(transcript_section(_mixed(1, 0, 0)).encode())
    records = _jsonl_bytes(dialogues)
    # Each text is embedded once and the fixed part (script, controls) is small, so the page
    # costs no more than the records it shows: the browser parses it as fast as one JSON file.
    assert fixed < 25_000
    assert section <= records + fixed, (section, records)
    assert section < 4_000_000  # here about 1.7 MB: opens in well under a second


# --------------------------------------------------------------------------- browser


class Dom(HTMLParser):
    """What a dumped DOM shows of the viewer: rows, opened bodies, errors, title, tags."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.ready = False
        self.bodies = 0
        self.turns = 0
        self.errors = ""
        self.title = ""
        self.text: list[str] = []
        self._sink: str | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        classes = (a.get("class") or "").split()
        if a.get("id") == "transcripts":
            self.ready = a.get("data-ready") == "1"
        if tag == "details" and "tv-row" in classes:
            self.rows.append(a)
        self.bodies += "tv-body" in classes
        self.turns += "tv-turn" in classes
        if a.get("id") == "tv-errors" or tag == "title":
            self._sink = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._sink:
            self._sink = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._sink == "pre":
            self.errors += data
        elif self._sink == "title":
            self.title += data


def _chromium(binary: str, tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    """One headless run; its own profile folder, console messages on stderr."""
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        "--virtual-time-budget=5000",
        *extra,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def _load(binary: str, tmp: Path, url: str) -> Dom:
    """The DOM after the page's script ran; fails on any uncaught script error."""
    done = _chromium(binary, tmp, url, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Uncaught" not in done.stderr, done.stderr[-2000:]
    dom = Dom(done.stdout)
    assert dom.ready and not dom.errors.strip(), dom.errors
    return dom


def _expected(dialogues: Sequence[Dialogue], metric: str, flow: str, high: float) -> list[str]:
    """Ids the filter should keep, worst first (ties by id), worked out from the records."""
    kept = [
        (dialogue_metrics(d)[metric], d.id)
        for d in dialogues
        if d.flow == flow and metric in dialogue_metrics(d) and dialogue_metrics(d)[metric] <= high
    ]
    return [ident for _, ident in sorted(kept)]


@pytest.mark.slow
def test_viewer_in_headless_chromium(tmp_path: Path) -> None:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("no `chromium` binary on PATH (Debian: apt-get install -y chromium)")
    hostile = _moral(999, -0.95, -0.99, text=HOSTILE)  # the worst S_MA
    dialogues = [*_mixed(30, 26, 3), hostile]
    run = tmp_path / "run"
    run.mkdir()
    report = run / "report.html"
    report.write_text(render_report(SUMMARY, dialogues=dialogues), encoding="utf-8")
    url = report.as_uri()

    # Filter: one flow, S_MR1 <= 0, worst first.
    dom = _load(binary, tmp_path, url + "#flow=moraldial&metric=S_MR1&max=0")
    assert [r["data-id"] for r in dom.rows] == _expected(dialogues, "S_MR1", "moraldial", 0.0)
    assert dom.rows and all(r["data-flow"] == "moraldial" for r in dom.rows)
    assert dom.bodies == 0  # closed rows render no turns
    dom = _load(binary, tmp_path, url + "#foundation=fairness")
    fair = {d.id for d in dialogues if d.hidden_rot and "fairness" in d.hidden_rot.foundations}
    assert fair and {r["data-id"] for r in dom.rows} == fair

    # The worst S_MA, opened: its hostile text is shown as text and runs nothing.
    dom = _load(binary, tmp_path, url + "#metric=S_MA&open=1")
    assert dom.rows[0]["data-id"] == hostile.id
    assert dom.bodies == 1 and dom.turns == len(hostile.turns)
    assert HOSTILE in "".join(dom.text) and ROT_KEYS["worst_rot"] in "".join(dom.text)
    assert "img" not in dom.tags and dom.title.strip() == "moralsim report: viewer-test"

    # Default view: mean AS, worst first, 50 to a page.
    dom = _load(binary, tmp_path, url)
    expected = sorted((dialogue_metrics(d)[MEAN_AS], d.id) for d in dialogues if d.scores)
    assert [r["data-id"] for r in dom.rows] == [ident for _, ident in expected[:50]]

    # Last page, best first: the unscored dialogues sort last whichever the direction.
    dom = _load(binary, tmp_path, url + "#sort=desc&page=2")
    assert len(dom.rows) == len(dialogues) - 50
    assert [r["data-value"] for r in dom.rows[-3:]] == ["", "", ""]

    shot = run / "transcripts.png"
    done = _chromium(
        binary, tmp_path, url + "#open=2", f"--screenshot={shot}", "--window-size=1300,2600"
    )
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr
    keep = os.environ.get("MORALSIM_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, Path(keep) / "transcript_viewer.png")
