"""`moralsim scorer eval` on a tiny model: figures, the card, the warning rule."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evaluators.agreement import AgreementItem
from evaluators.scorer_eval import (
    CARD_NAME,
    LabelledSet,
    PairSet,
    evaluate_scorer,
    key_figures,
    labelled_set,
    merge_card,
    user_set,
    warning_text,
)
from moralsim.cli import app
from scenarios.loaders import NormPair, ScenarioLoadError, load_moral_stories
from scenarios.pack import load_pack
from scenarios.types import AgreementExample

runner = CliRunner()


class TableScorer:
    """Probabilities looked up by answer text: a scorer whose figures are known by hand."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def probabilities(self, items: list[AgreementItem]) -> np.ndarray:
        return np.array([self.table[i.answer] for i in items])


def test_evaluate_scorer_by_hand() -> None:
    scorer = TableScorer(
        {"keeps it": [0.1, 0.2, 0.7], "returns it": [0.5, 0.4, 0.1], "hm": [0.2, 0.6, 0.2]}
    )
    labelled = LabelledSet(
        "set",
        [AgreementItem("q", a, "r") for a in ("returns it", "keeps it", "hm")],
        ["agree", "agree", "neutral"],
        ["x", "x", "y"],
    )
    pairs = PairSet(
        "moral-stories",
        [NormPair("1", "r", "returns it", "keeps it"), NormPair("2", "r", "hm", "returns it")],
    )
    figures = evaluate_scorer(scorer, [labelled], [pairs])
    assert figures["set"]["accuracy"] == pytest.approx(2 / 3)
    assert figures["set"]["sign_accuracy"] == pytest.approx(0.5)
    # pair 1: +0.4 > -0.6 (hit); pair 2: 0.0 > +0.4 (miss)
    assert figures["moral-stories"]["pairwise_accuracy"] == pytest.approx(0.5)
    keys = key_figures(figures)
    assert keys["real_data_pairwise_accuracy"] == pytest.approx(0.5)
    assert keys["warn"] and "only 50%" in (warning_text(keys) or "")


def test_key_figures_verdicts() -> None:
    assert key_figures({})["verdict"] == "not validated on real data"
    good = {"moral-stories": {"pairwise_accuracy": 0.82}, "pack-test": {"macro_f1": 0.8}}
    keys = key_figures(good)
    assert (keys["verdict"], keys["warn"], warning_text(keys)) == ("validated", False, None)


def test_merge_card_keeps_other_figures() -> None:
    old = merge_card(None, "m", {"a": {"kind": "labelled", "n": 1}}, {"data": 1}, today="d1")
    new = merge_card(old, "m", {"b": {"kind": "labelled", "n": 2}}, None, today="d2")
    assert set(new["figures"]) == {"a", "b"}
    assert new["figures"]["a"]["measured"] == "d1" and new["training"] == {"data": 1}


def test_predictions_have_one_row_per_item_with_what_the_figures_count() -> None:
    scorer = TableScorer({
        "yes": [0.7, 0.2, 0.1], "no": [0.1, 0.2, 0.7], "meh": [0.3, 0.4, 0.3],
        "keeps": [0.6, 0.3, 0.1], "breaks": [0.5, 0.3, 0.2],
    })  # fmt: skip
    labelled = LabelledSet(
        "mine",
        [AgreementItem("q", a, "r") for a in ("yes", "no", "meh")],
        ["agree", "agree", "neutral"],
        ["flat", "flat", "hedged"],
    )
    pairs = PairSet("ms", [NormPair("p1", "n", "keeps", "breaks")])
    rows: list = []
    figures = evaluate_scorer(scorer, [labelled], [pairs], predictions=rows)
    assert [r["set"] for r in rows] == ["mine", "mine", "mine", "ms"]
    yes, no, meh, pair = rows
    assert yes["as"] == pytest.approx(0.6) and yes["predicted"] == "agree" and yes["sign_right"]
    assert no["as"] == pytest.approx(-0.6) and no["sign_right"] is False
    assert (
        meh["sign_right"] is None and meh["phenomenon"] == "hedged" and meh["p"] == [0.3, 0.4, 0.3]
    )
    # AS 0.5 (keeps) > 0.3 (breaks): ranked right, as the pairwise figure counts it
    assert pair["ranked_right"] and pair["as_break"] == pytest.approx(0.3) and pair["id"] == "p1"
    assert figures["mine"]["sign_accuracy"] == pytest.approx(0.5)
    assert figures["ms"]["pairwise_accuracy"] == pytest.approx(1.0)


def test_user_set_errors_name_the_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"question": "q", "answer": "a", "rot": "r", "label": "agree"}\n'
        '{"question": "q", "answer": "a", "rot": "r", "label": "maybe"}\n'
    )
    with pytest.raises(ScenarioLoadError, match=r"mine.jsonl: line 2.*field 'label'"):
        user_set(path)


def test_a_pack_or_user_own_explanation_is_read_as_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"question": "q", "answer": "a", "rot": "r", "label": "agree"}\n'
        '{"question": "q", "answer": "a", "rot": "it hurts", "label": "agree", '
        '"phenomenon": "own-explanation"}\n'
    )
    assert [item.reason for item in user_set(path).items] == [False, True]
    pack = load_pack("core").pack
    derived = [e for e in pack.agreement_in("test") if e.kind in ("own-rot", "own-explanation")]
    items = {e.kind: i for e, i in zip(derived, labelled_set("t", derived).items, strict=True)}
    assert items["own-explanation"].reason and not items["own-rot"].reason


def test_moral_stories_loader_pairs_and_reports_halves(tmp_path: Path) -> None:
    path = tmp_path / "ms.jsonl"
    rows = [
        {"ID": "A1", "norm": "Be kind.", "moral_action": "She helps.", "label": "1"},
        {"ID": "A0", "norm": "Be kind.", "immoral_action": "She mocks.", "label": "0"},
        {"ID": "B1", "norm": "Be fair.", "moral_action": "He shares.", "label": "1"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ScenarioLoadError, match=r"line 3, field 'ID': story B has only one"):
        load_moral_stories(path)
    pairs, issues = load_moral_stories(path, skip_invalid=True)
    assert pairs == [NormPair("A", "Be kind.", "She helps.", "She mocks.")] and len(issues) == 1


def _write_pairs_with_identical_actions(path: Path) -> None:
    """Each story's two actions are the same text, so every pair ties: pairwise accuracy is 0."""
    rows = []
    for i in range(3):
        rows.append({"ID": f"S{i}1", "norm": "it is wrong to lie .", "moral_action": "no",
                     "label": "1"})  # fmt: skip
        rows.append({"ID": f"S{i}0", "norm": "it is wrong to lie .", "immoral_action": "no",
                     "label": "0"})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_cli_eval_writes_the_card_and_warns(tiny_classifier: Path, tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    data.write_text(
        '{"question": "is it okay to lie ?", "answer": "no", "rot": "it is wrong to lie .", '
        '"label": "agree", "phenomenon": "negated-agreement"}\n'
        '{"question": "is it okay to lie ?", "answer": "yes", "rot": "it is wrong to lie .", '
        '"label": "disagree", "phenomenon": "flat-yes-no"}\n'
    )
    ms = tmp_path / "ms.jsonl"
    _write_pairs_with_identical_actions(ms)
    result = runner.invoke(
        app,
        ["scorer", "eval", str(tiny_classifier), "--no-pack", "--data", str(data),
         "--moral-stories", str(ms), "--json", str(tmp_path / "figures.json"),
         "--predictions", str(tmp_path / "rows.jsonl")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["set"] for r in rows] == ["mine", "mine", "moral-stories", "moral-stories",
                                        "moral-stories"]  # fmt: skip
    assert not any(r["ranked_right"] for r in rows[2:])  # identical actions: pairwise 0%
    assert "confusion" in result.output and "per phenomenon" in result.output
    assert "warning:" in result.output and "only 0%" in result.output
    card = json.loads((tiny_classifier / CARD_NAME).read_text())
    assert card["key_figures"]["real_data_pairwise_accuracy"] == 0.0
    assert card["key_figures"]["verdict"] == "unreliable"
    assert card["figures"]["mine"]["n"] == 2 and card["figures"]["moral-stories"]["n_pairs"] == 3
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert set(figures) == {"mine", "moral-stories"}


def test_cli_bad_data_is_one_line_and_loads_no_model(tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"question": "q", "answer": "a", "label": "agree"}\n')
    result = runner.invoke(app, ["scorer", "eval", "no-such-model", "--no-pack", "--data",
                                 str(data)])  # fmt: skip
    assert result.exit_code == 2
    assert "bad.jsonl: line 1" in result.output and "field 'rot'" in result.output
    assert "Traceback" not in result.output


def test_cli_a_predictions_file_in_a_missing_folder_is_refused_before_loading(
    tmp_path: Path,
) -> None:
    data = tmp_path / "ok.jsonl"
    data.write_text('{"question": "q", "answer": "a", "rot": "r", "label": "agree"}\n')
    missing = tmp_path / "nope" / "r.jsonl"
    args = ["scorer", "eval", "no-such-model", "--no-pack", "--data", str(data)]
    result = runner.invoke(app, [*args, "--predictions", str(missing)])
    assert result.exit_code == 2 and "--predictions" in result.output
    assert "does not exist" in result.output and "Traceback" not in result.output


def test_reference_figures_only_carry_over_to_a_reproducing_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import training.scorer as scorer_module

    ref = tmp_path / "ref.json"
    recipe = scorer_module.recipe_key(scorer_module.DEFAULT_SCORER_RECIPE)
    ref.write_text(json.dumps({
        "recipe": recipe, "pack_dev_macro_f1": 0.774,
        "figures": {"moral-stories": {"kind": "pairs", "pairwise_accuracy": 0.5}},
    }))  # fmt: skip
    monkeypatch.setattr(scorer_module, "REFERENCE_FILE", ref)
    carried = scorer_module.reference_figures(0.78)
    assert carried["moral-stories"]["pairwise_accuracy"] == 0.5
    assert "developers" in carried["moral-stories"]["measured_by"]
    assert scorer_module.reference_figures(0.70) == {}  # another model: nothing carried over
    ref.write_text(json.dumps({"recipe": {**recipe, "epochs": 9}, "pack_dev_macro_f1": 0.774}))
    assert scorer_module.reference_figures(0.774) == {}  # another recipe
    # the same recipe on other training examples is another model, however close its F1
    ex = AgreementExample("e1", "Can I?", "No.", "Don't.", "agree", "train", "hard:x")
    digest = scorer_module.training_data_digest([ex], [])
    assert digest != scorer_module.training_data_digest([replace(ex, label="neutral")], [])
    shipped = {"recipe": recipe, "pack_dev_macro_f1": 0.774, "data_sha256": digest}
    ref.write_text(json.dumps({**shipped, "figures": {"m": {"kind": "pairs"}}}))
    assert scorer_module.reference_figures(0.774, data_sha256=digest)
    assert scorer_module.reference_figures(0.774, data_sha256="other") == {}


def test_the_shipped_reference_figures_are_for_the_default_recipe() -> None:
    """A recipe field added later must not orphan the developers' Moral Stories figures, and
    a change of the core pack's training examples must come with re-measured figures."""
    from scenarios.pack import load_pack
    from training.scorer import (
        DEFAULT_SCORER_RECIPE,
        REFERENCE_FILE,
        recipe_examples,
        recipe_key,
        training_data_digest,
    )

    shipped = json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))
    assert shipped["recipe"] == recipe_key(DEFAULT_SCORER_RECIPE)
    pack = load_pack("core").pack

    train, dev = (recipe_examples(pack, DEFAULT_SCORER_RECIPE.sources, s) for s in ("train", "dev"))
    assert shipped["data_sha256"] == training_data_digest(train, dev)


def test_a_card_records_the_probe_reading_and_drops_figures_read_another_way() -> None:
    one = {"a": {"kind": "labelled", "n": 1}}
    two = {"b": {"kind": "labelled", "n": 2}}
    old = merge_card(None, "m", one, None, today="d1", probe_reading=2)
    assert old["probe_reading"] == 2
    same = merge_card(old, "m", two, None, today="d2", probe_reading=2)
    assert set(same["figures"]) == {"a", "b"}
    newer = merge_card(old, "m", two, None, today="d2", probe_reading=3)
    assert set(newer["figures"]) == {"b"} and newer["probe_reading"] == 3
    unrecorded = {k: v for k, v in old.items() if k != "probe_reading"}
    assert set(merge_card(unrecorded, "m", two, None, probe_reading=2)["figures"]) == {"b"}
    plain = merge_card(merge_card(None, "m", one, None), "m", two, None)
    assert set(plain["figures"]) == {"a", "b"} and "probe_reading" not in plain


def test_a_probe_folder_whose_card_was_read_another_way_warns_in_reports(
    tmp_path: Path,
) -> None:
    from evaluators.factored import PROBE_READING_VERSION
    from evaluators.scorer_eval import scorer_record, scorer_summary, stale_reading_text

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "factored.json").write_text(json.dumps({"unstated": "agreement+probe"}))
    good = {"moral-stories": {"pairwise_accuracy": 0.82}, "pack-test": {"macro_f1": 0.8}}
    card = merge_card(None, "mine", good, None, probe_reading=PROBE_READING_VERSION - 1)
    (folder / CARD_NAME).write_text(json.dumps(card))
    summary = scorer_summary(scorer_record(str(folder)))
    assert summary["key_figures"]["verdict"] == "validated"
    assert f"probe reading {PROBE_READING_VERSION - 1}" in summary["warning"]
    assert "scorer eval" in summary["warning"]

    card["probe_reading"] = PROBE_READING_VERSION
    (folder / CARD_NAME).write_text(json.dumps(card))
    assert scorer_summary(scorer_record(str(folder)))["warning"] is None
    (folder / "factored.json").write_text(json.dumps({"unstated": "agreement"}))
    del card["probe_reading"]
    (folder / CARD_NAME).write_text(json.dumps(card))
    assert scorer_summary(scorer_record(str(folder)))["warning"] is None
    assert "unrecorded" in (stale_reading_text(card, PROBE_READING_VERSION) or "")


def test_cli_says_which_figures_a_re_measure_drops(tiny_classifier: Path, tmp_path: Path) -> None:
    old = merge_card(None, "m", {"old-set": {"n": 3, "accuracy": 0.5}}, None, probe_reading=7)
    (tiny_classifier / CARD_NAME).write_text(json.dumps(old))
    data = tmp_path / "mine.jsonl"
    data.write_text(
        '{"question": "is it okay to lie ?", "answer": "no", "rot": "it is wrong to lie .", '
        '"label": "agree"}\n'
    )
    args = ["scorer", "eval", str(tiny_classifier), "--no-pack", "--data", str(data)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "dropped 1 figure(s) measured with another probe reading: old-set" in result.output
    assert set(json.loads((tiny_classifier / CARD_NAME).read_text())["figures"]) == {"mine"}
    result = runner.invoke(app, args)  # read the same way now: nothing more to drop
    assert result.exit_code == 0 and "dropped" not in result.output
