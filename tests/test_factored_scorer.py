"""The factored agreement scorer: the combination rule by hand, its derived training labels,
the RoT-direction file, and a tiny end-to-end build that loads wherever a scorer does."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaluators.agreement import AgreementItem
from evaluators.factored import combine, direction_items
from scenarios.rot import RoT
from scenarios.types import AgreementExample, MoralQuestion
from training.factored_data import (
    direction_examples,
    leaks,
    reason_examples,
    stance_examples,
    with_explanation_directions,
)


def test_combination_rule_by_hand() -> None:
    stance = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.3, 0.3, 0.4]])
    direction = np.array([[0.1, 0.1, 0.8], [0.9, 0.1, 0.0], [0.2, 0.5, 0.3]])
    got = combine(stance, direction, np.array([True, True, False]))
    # agree = endorse x for + reject x against = .7*.1 + .1*.8 = .15;
    # disagree = endorse x against + reject x for = .7*.8 + .1*.1 = .57
    assert got[0] == pytest.approx([0.15, 1 - 0.15 - 0.57, 0.57])
    # endorse x for: agree = .7*.9 + .1*0 = .63, disagree = .7*0 + .1*.9 = .09
    assert got[1] == pytest.approx([0.63, 0.28, 0.09])
    # no question: the narrated answer's direction row as it is
    assert got[2] == pytest.approx([0.2, 0.5, 0.3])
    assert np.allclose(got.sum(axis=1), 1.0)


def test_direction_items_read_the_question_or_the_action() -> None:
    items = [
        AgreementItem("Can I keep it?", "Sure.", "Return lost things."),
        AgreementItem("", "She kept the wallet.", "Return lost things."),
        AgreementItem("What did you do?", "I kept it.", "Return lost things."),
    ]
    acts = [i.answer for i in direction_items(items, [False, False, True])]
    assert acts == ["Can I keep it?", "She kept the wallet.", "I kept it."]
    assert all(i.question == "" for i in direction_items(items))


def ex(i: int, q: str, a: str, rot: str, label: str, kind: str = "written:x") -> AgreementExample:
    return AgreementExample(f"e{i}", q, a, rot, label, "train", kind)  # type: ignore[arg-type]


Q, FORBIDS, PERMITS = "Can I keep the extra change?", "Return extra change.", "Keep tips."
DIRECTIONS = {(Q, FORBIDS): "against", (Q, PERMITS): "for", ("How do I cope?", FORBIDS): "open"}


def test_stance_labels_follow_the_sign_rule() -> None:
    examples = [
        ex(1, Q, "No, give it back.", FORBIDS, "agree"),  # agrees with a forbidding RoT: rejects
        ex(2, Q, "Sure, keep it.", FORBIDS, "disagree"),  # breaks a forbidding RoT: endorses
        ex(3, Q, "Sure, keep it.", PERMITS, "agree"),  # endorses too: e2's stance example
        ex(4, Q, "Hard to say.", FORBIDS, "neutral"),  # no stance
        ex(5, "How do I cope?", "Talk to someone.", FORBIDS, "agree"),  # open: no stance label
        ex(6, Q, "Sure.", "Unlabelled rot.", "agree"),  # no stated direction: dropped
        ex(7, "", "She kept it.", FORBIDS, "disagree"),  # narrated: not a stance example
        ex(8, Q, "Sure.", "Be kind.", "neutral", kind="mismatched-rot"),  # unrelated: no stance
    ]
    got = {e.id: e.label for e in stance_examples(examples, DIRECTIONS)}
    # one stance example per (question, answer): e3 is e2's answer judged against another RoT
    assert got == {"e1": "disagree", "e2": "agree", "e4": "neutral"}
    # labels that imply two stances for one (question, answer) drop it; an unlabelled first
    # sighting does not block a later labelled one
    clash = [ex(1, Q, "Fine.", FORBIDS, "disagree"), ex(2, Q, "Fine.", PERMITS, "disagree")]
    assert stance_examples(clash, DIRECTIONS) == []
    late = [ex(1, Q, "Ok.", "Unlabelled rot.", "agree"), ex(2, Q, "Ok.", PERMITS, "agree")]
    assert [e.id for e in stance_examples(late, DIRECTIONS)] == ["e2"]
    assert all(e.rot == "" for e in stance_examples(examples, DIRECTIONS))


def test_direction_examples_one_per_act_and_rot() -> None:
    examples = [
        ex(1, Q, "No.", FORBIDS, "agree"),
        ex(2, Q, "Yes.", FORBIDS, "disagree"),  # same (act, RoT): one direction example
        ex(3, Q, "Yes.", PERMITS, "agree"),
        ex(4, "", "She kept it.", FORBIDS, "disagree"),  # narrated: its label is the direction
        ex(5, Q, "Yes.", "Be kind.", "neutral", kind="mismatched-rot"),
        ex(6, Q, "Yes, it was.", "Yes, it was.", "neutral", kind="restated-answer"),
        ex(7, "How do I cope?", "Talk.", FORBIDS, "agree"),  # open: no direction example
    ]
    got = {(e.answer, e.rot): e.label for e in direction_examples(examples, DIRECTIONS)}
    assert got == {
        (Q, FORBIDS): "disagree",
        (Q, PERMITS): "agree",
        ("She kept it.", FORBIDS): "disagree",
        (Q, "Be kind."): "neutral",
        (Q, "Yes, it was."): "neutral",
    }
    held = [replace(examples[0], id="dev1")]
    assert leaks(examples, held) == ["dev1"]


def _question(i: int, question: str, rot: str, explanation: str) -> MoralQuestion:
    return MoralQuestion(
        f"q{i}", question, (), RoT(rot), "Yes.", "No.", explanation, "Related?", "train"
    )


def test_an_explanation_takes_its_rots_direction_on_the_act() -> None:
    questions = [
        _question(1, Q, FORBIDS, "Because it is not yours."),
        _question(2, "How do I cope?", FORBIDS, "Because talking helps."),  # open: nothing
        _question(3, "Can I tip?", PERMITS, "Because they earned it."),  # no stated direction
    ]
    got = with_explanation_directions(questions, DIRECTIONS)
    assert got == DIRECTIONS | {(Q, "It is not yours."): "against"}
    examples = [
        ex(1, Q, "No, give it back.", "It is not yours.", "agree", kind="own-explanation"),
        ex(2, Q, "Sure.", "It is not yours.", "disagree", kind="own-explanation"),
    ]
    assert direction_examples(examples, DIRECTIONS) == []  # stated directions alone: untrained
    [learned] = direction_examples(examples, got)
    assert (learned.answer, learned.rot, learned.label) == (Q, "It is not yours.", "disagree")
    assert {e.label for e in stance_examples(examples, got)} == {"disagree", "agree"}


def test_labelled_reasons_become_rules_with_their_stance() -> None:
    examples = [
        # agrees with a forbidding RoT: the reason rejects keeping it -> a rule against it
        ex(1, Q, "Because it belongs to the shop.", FORBIDS, "agree", kind="written:explanation"),
        # breaks a forbidding RoT: the reason endorses keeping it -> a rule for it
        ex(
            2,
            Q,
            "Because their mistake is their loss.",
            FORBIDS,
            "disagree",
            kind="bot:bot-explanation-own",
        ),
        ex(3, Q, "Because reasons.", FORBIDS, "neutral", kind="written:explanation"),  # no stance
        ex(
            4, Q, "Because it is fine.", FORBIDS, "agree", kind="written:flat-yes-no"
        ),  # not a reason
        ex(5, Q, "Because why not.", "Unstated rot.", "disagree", kind="written:explanation"),
        # a written reason of the `reasons` source that breaks the forbidding RoT: a rule for it
        ex(6, Q, "Because nobody gets hurt.", FORBIDS, "disagree", kind="reasons:explanation"),
    ]
    got = {(e.answer, e.rot): (e.label, e.kind) for e in reason_examples(examples, DIRECTIONS)}
    assert got == {
        (Q, "It belongs to the shop."): ("disagree", "reason-as-rule"),
        (Q, "Their mistake is their loss."): ("agree", "reason-as-rule"),
        (Q, "Nobody gets hurt."): ("agree", "reason-as-rule"),
    }


def test_direction_file_errors_name_the_line_and_field(tmp_path: Path) -> None:
    from scenarios.loaders import ScenarioLoadError, load_rot_directions

    path = tmp_path / "d.jsonl"
    good = {"question": "Can I?", "rot": "Don't.", "direction": "against"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "direction": "maybe"}) + "\n")
    with pytest.raises(ScenarioLoadError, match=r"d\.jsonl.*line 2.*direction.*maybe"):
        load_rot_directions(path)
    rows, issues = load_rot_directions(path, skip_invalid=True)
    assert [r.direction for r in rows] == ["against"] and len(issues) == 1
    path.write_text(json.dumps({**good, "second_rater": "no"}) + "\n")
    with pytest.raises(ScenarioLoadError, match="second_rater"):
        load_rot_directions(path)


SIGN_SOURCES = ("signs", "signs-dev")
"""The sign test and its dev set state no directions: they measure the reading of unstated
pairs, so the pack must not hand the scorer their answers' other half."""


def test_core_pack_states_directions_and_none_for_the_sign_sets() -> None:
    from scenarios.pack import load_pack

    pack = load_pack("core").pack
    stated = pack.direction_map()
    assert len(stated) >= 12_000
    assert set(stated.values()) == {"for", "against", "unrelated", "open"}
    signs = [e for e in pack.agreement_examples if e.kind.split(":", 1)[0] in SIGN_SOURCES]
    assert {e.split for e in signs} == {"dev", "test"}
    assert not any((e.question, e.rot) in stated for e in signs)
    # every labelled example with a question (bar the sign sets, and the explanation-derived
    # examples, whose "RoT" is a reason the factored halves do not train on) has its
    # direction stated
    from training.factored_data import UNRELATED_KINDS

    sourced = [
        e
        for e in pack.agreement_examples
        if e.question and e.kind not in UNRELATED_KINDS  # derived ones too (own-rot, ...)
    ]
    missing = [
        e.id
        for e in sourced
        if e.kind.split(":", 1)[0] not in SIGN_SOURCES
        and e.kind != "own-explanation"
        and (e.question, e.rot) not in stated
    ]
    assert not missing
    second = [d for d in pack.rot_directions if d.second_rater]
    agreement = sum(d.second_rater == d.direction for d in second) / len(second)
    assert len(second) >= 700 and agreement >= 0.9


def make_factored_folder(tmp_path: Path, tiny_classifier: Path) -> Path:
    folder = tmp_path / "factored"
    shutil.copytree(tiny_classifier, folder / "stance")
    shutil.copytree(tiny_classifier, folder / "direction")
    (folder / "factored.json").write_text("{}\n")
    return folder


def test_factored_folder_loads_as_a_scorer_and_reads_stated_directions(
    tmp_path: Path, tiny_classifier: Path
) -> None:
    from evaluators.factored import FactoredScorer
    from evaluators.scorers import open_agreement_scorer

    folder = make_factored_folder(tmp_path, tiny_classifier)
    scorer = open_agreement_scorer(str(folder))
    assert isinstance(scorer, FactoredScorer) and scorer.describe()["kind"] == "factored"
    items = [
        AgreementItem("ab", "ba", "aab"),
        AgreementItem("", "ba", "aab"),
        AgreementItem("bb", "a", "aab"),
    ]
    plain = scorer.probabilities(items)
    assert plain.shape == (3, 3) and np.allclose(plain.sum(axis=1), 1.0)
    stance = scorer.stance.probabilities([AgreementItem(i.question, i.answer, "") for i in items])
    scorer.use_directions({("ab", "aab"): "against", ("bb", "aab"): "open"})
    stated = scorer.probabilities(items)
    against = np.array([[0.0, 0.0, 1.0]])
    assert stated[0] == pytest.approx(combine(stance[:1], against, np.array([True]))[0])
    assert stated[1] == pytest.approx(plain[1])  # no question: unchanged
    # an open question: the answer is judged as an action, like a narrated one
    as_action = scorer.direction.probabilities([AgreementItem("", "a", "aab")])
    assert stated[2] == pytest.approx(as_action[0])
    assert scorer.describe()["stated_directions"] == 2


class FixedRows:
    """A stand-in classifier: fixed probability rows keyed by (question, answer, rot)."""

    def __init__(self, rows: dict[tuple[str, str, str], list[float]]) -> None:
        self.rows = rows
        self.read: list[tuple[str, str, str]] = []

    def probabilities(self, items: list[AgreementItem]) -> np.ndarray:
        self.read += [(i.question, i.answer, i.rot) for i in items]
        return np.array([self.rows[(i.question, i.answer, i.rot)] for i in items])


def make_stated_folder(tmp_path: Path, tiny_classifier: Path) -> Path:
    folder = tmp_path / "stated"
    shutil.copytree(tiny_classifier, folder / "stance")
    shutil.copytree(tiny_classifier, folder / "agreement")
    (folder / "factored.json").write_text(json.dumps({"unstated": "agreement"}))
    return folder


def test_a_stated_scorer_reads_stated_pairs_by_stance_and_the_rest_whole(
    tmp_path: Path, tiny_classifier: Path
) -> None:
    """By hand: stance("Q", "A") = (.7, .2, .1) with the stated direction "against" gives
    agree .1, disagree .7, neutral .2; an unstated pair and a narrated action (no question)
    take the single classifier's row as it is, and the stance half never reads them."""
    from agents.models import ModelError
    from evaluators.factored import FactoredScorer
    from evaluators.scorers import open_agreement_scorer

    folder = make_stated_folder(tmp_path, tiny_classifier)
    scorer = open_agreement_scorer(str(folder))
    assert isinstance(scorer, FactoredScorer) and scorer.direction is None
    assert scorer.describe()["unstated"] == "agreement"
    stance = FixedRows({("Q", "A", ""): [0.7, 0.2, 0.1]})
    whole = FixedRows(
        {
            ("Q", "A", "other"): [0.5, 0.3, 0.2],
            ("", "He lied.", "R"): [0.1, 0.1, 0.8],
            ("Open?", "A", "R"): [0.3, 0.3, 0.4],
            ("", "A", "R"): [0.2, 0.6, 0.2],
        }
    )
    scorer.stance, scorer.agreement = stance, whole  # type: ignore[assignment]
    scorer.use_directions(
        {("Q", "R"): "against", ("Q", "R2"): "unrelated", ("Open?", "R"): "open", ("", "R"): "for"}
    )
    items = [AgreementItem("Q", "A", "R"), AgreementItem("Q", "A", "other"),
             AgreementItem("", "He lied.", "R"), AgreementItem("Q", "A", "R2"),
             AgreementItem("Open?", "A", "R"), AgreementItem("", "A", "R")]  # fmt: skip
    assert scorer.probabilities(items) == pytest.approx(
        np.array(
            [
                [0.1, 0.2, 0.7],  # stated against: stance x direction
                [0.5, 0.3, 0.2],  # not stated: whole
                [0.1, 0.1, 0.8],  # no question: whole
                [0.0, 1.0, 0.0],  # stated unrelated: neutral, as the factored scorer reads it
                [0.3, 0.3, 0.4],  # stated open: no act to take a side on, whole
                [0.2, 0.6, 0.2],  # a stated pair with no question: whole
            ]
        )
    )
    assert stance.read == [("Q", "A", ""), ("Q", "A", "")]  # the against and unrelated pairs
    assert whole.read == [
        ("Q", "A", "other"), ("", "He lied.", "R"), ("Open?", "A", "R"), ("", "A", "R")
    ]  # fmt: skip

    (folder / "factored.json").write_text(json.dumps({"unstated": "rules"}))
    with pytest.raises(ModelError, match="field 'unstated' must be one of direction, agreement"):
        FactoredScorer(str(folder))
    (folder / "factored.json").write_text("{not json")
    with pytest.raises(ModelError, match=r"factored\.json: not readable as JSON"):
        FactoredScorer(str(folder))


LIE_ROT = "it is wrong to lie ."


def _lie_example(i: int, q: str, a: str, label: str, split: str, kind: str) -> AgreementExample:
    return AgreementExample(f"x{i}", q, a, LIE_ROT, label, split, kind)  # type: ignore[arg-type]


def _lie_pack(rows: list[AgreementExample]) -> Any:
    """A tiny pack whose three lying questions all have the RoT stated against the act."""
    from scenarios.types import RotDirection, ScenarioPack

    directions = [
        RotDirection(q, LIE_ROT, "against")
        for q in ("can i lie ?", "may i lie ?", "should i lie ?")
    ]
    return ScenarioPack("tiny", None, agreement_examples=rows, rot_directions=directions)


def test_training_a_factored_scorer_on_a_tiny_pack(tmp_path: Path, tiny_encoder: Path) -> None:
    from evaluators.scorers import open_agreement_scorer
    from training.factored_scorer import factored_recipe, train_factored_scorer

    rows = [
        _lie_example(1, "can i lie ?", "no", "agree", "train", "written:x"),
        _lie_example(2, "can i lie ?", "yes", "disagree", "train", "written:x"),
        _lie_example(3, "may i lie ?", "", "neutral", "train", "written:x"),
        _lie_example(4, "", "he lied .", "disagree", "train", "written:x"),
        _lie_example(5, "should i lie ?", "no", "agree", "dev", "written:x"),
        _lie_example(6, "", "she lied .", "disagree", "dev", "written:x"),
    ]
    pack = _lie_pack(rows)
    recipe = factored_recipe(0, base_model=str(tiny_encoder), batch_size=2, frozen_layers=0)
    result = train_factored_scorer(pack, tmp_path / "f", recipe, show_bar=False)
    assert result.examples["stance"] == {"train": 3, "dev": 1}
    assert result.examples["direction"] == {"train": 3, "dev": 2}
    scorer = open_agreement_scorer(str(tmp_path / "f"))
    assert scorer.score([AgreementItem("can i lie ?", "yes", "it is wrong to lie .")]).shape == (1,)
    with pytest.raises(ValueError, match="states no RoT directions"):
        train_factored_scorer(replace(pack, rot_directions=[]), tmp_path / "g", recipe)


def test_training_a_stated_scorer_on_a_tiny_pack(
    tmp_path: Path, tiny_encoder: Path, tiny_classifier: Path
) -> None:
    """Only the stance half is trained; the given classifier is copied in as agreement/ and
    the card is measured with and without the pack's stated directions."""
    from evaluators.scorers import open_agreement_scorer
    from training.factored_scorer import factored_recipe, train_stated_scorer
    from training.scorer import write_pack_card

    rows = [
        _lie_example(1, "can i lie ?", "no", "agree", "train", "hard:x"),
        _lie_example(2, "can i lie ?", "yes", "disagree", "train", "hard:x"),
        _lie_example(3, "may i lie ?", "", "neutral", "train", "hard:x"),
        _lie_example(5, "should i lie ?", "no", "agree", "dev", "hard:x"),
        _lie_example(6, "should i lie ?", "yes", "disagree", "test", "hard:x"),
        _lie_example(7, "should i lie ?", "no", "agree", "test", "hard:x"),
    ]
    pack = _lie_pack(rows)
    recipe = factored_recipe(0, base_model=str(tiny_encoder), batch_size=2, frozen_layers=0)
    out = tmp_path / "s"
    result = train_stated_scorer(
        pack, out, tiny_classifier, recipe, agreement_name="tiny", show_bar=False
    )
    assert set(result.examples) == {"stance"} and not (out / "direction").exists()
    assert (out / "agreement" / "config.json").is_file()
    info = json.loads((out / "factored.json").read_text())
    assert info["unstated"] == "agreement" and info["agreement_model"] == "tiny"
    scorer = open_agreement_scorer(str(out))
    assert scorer.score([AgreementItem("", "he lied .", "it is wrong to lie .")]).shape == (1,)
    card = write_pack_card(out, pack, "tiny-stated", directions=pack.direction_map())
    assert {"pack-test", "pack-test+stated"} <= set(card["figures"])
    with pytest.raises(ValueError, match="not a trained agreement classifier folder"):
        train_stated_scorer(pack, tmp_path / "t", tiny_encoder, recipe)


def test_train_scorer_factored_on_the_core_pack_writes_both_halves_and_a_card(
    tiny_encoder: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app

    out = tmp_path / "factored"
    result = CliRunner().invoke(
        app,
        ["train", "scorer", "--factored", "--output", str(out), "--base-model",
         str(tiny_encoder), "--frozen-layers", "1", "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = json.loads((out / "factored.json").read_text())
    assert info["examples"]["stance"]["train"] > 5000 < info["examples"]["direction"]["train"]
    assert (out / "stance" / "config.json").is_file()
    card = json.loads((out / "scorer_card.json").read_text())
    assert {"pack-test", "signs-test", "bot-test"} <= set(card["figures"])
    refused = CliRunner().invoke(
        app, ["train", "scorer", "--factored", "--independent", "--output", str(tmp_path / "x")]
    )
    assert refused.exit_code != 0 and "--factored" in refused.output
    assert not (tmp_path / "x").exists()


def test_train_scorer_stated_copies_the_classifier_and_refuses_bad_input(
    tiny_encoder: Path, tiny_classifier: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app

    out = tmp_path / "stated"
    result = CliRunner().invoke(
        app,
        ["train", "scorer", "--stated", str(tiny_classifier), "--output", str(out),
         "--base-model", str(tiny_encoder), "--frozen-layers", "1", "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = json.loads((out / "factored.json").read_text())
    assert info["unstated"] == "agreement" and set(info["examples"]) == {"stance"}
    card = json.loads((out / "scorer_card.json").read_text())
    assert {"pack-test", "pack-test+stated", "signs-test+stated"} <= set(card["figures"])
    for args, message in (
        (["--stated", str(tmp_path / "nowhere")], "nowhere"),
        (["--stated", str(tiny_encoder)], "not a trained agreement classifier folder"),
        (["--stated", "smollm2-135m-instruct"], "a causal-lm, not a trained agreement"),
        (["--stated", str(tiny_classifier), "--factored"], "--stated"),
        (["--probe"], "--probe adds a probe to a stated scorer"),
        (["--stated", str(tiny_classifier), "--probe-examples", "9"], "give --probe too"),
    ):
        refused = CliRunner().invoke(
            app, ["train", "scorer", *args, "--output", str(tmp_path / "x"), "--device", "cpu"]
        )
        assert refused.exit_code != 0 and message in refused.output
        assert "Traceback" not in refused.output
    assert not (tmp_path / "x").exists()  # every refusal comes before anything is written


def test_the_embedded_factored_scorer_is_registered_with_its_recipe_fingerprint() -> None:
    from agents.models import _factored_fingerprint, _locate_core_pack, resolve_model
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE

    resolved = resolve_model("agreement-factored", prepare=False)
    assert resolved.kind == "factored-scorer" and resolved.embedded
    from training.factored_data import DERIVATION_VERSION

    recipe = _factored_fingerprint(_locate_core_pack())["recipe"]
    assert recipe["stance"]["epochs"] == DEFAULT_FACTORED_RECIPE.stance.epochs == 2
    # a build whose examples were derived the old way is stale
    assert recipe["factored_derivation"] == DERIVATION_VERSION


def test_the_embedded_stated_scorer_is_built_by_default_and_fingerprints_both_parts() -> None:
    from agents.models import _locate_core_pack, _stated_fingerprint, embedded_models

    model = embedded_models()["agreement-stated"]
    assert not model.optional and model.kind == "factored-scorer"
    recipe = _stated_fingerprint(_locate_core_pack())["recipe"]
    assert recipe["stance"]["epochs"] == 2 and "direction" not in recipe
    assert recipe["agreement"] == embedded_models()["agreement-minilm"].fingerprint(
        _locate_core_pack()
    )  # a rebuilt default makes this build stale too


def test_a_run_takes_the_factored_scorer_and_hands_it_the_packs_directions(
    tmp_path: Path, tiny_classifier: Path, tiny_encoder: Path
) -> None:
    """The evaluator spec a run builds (in process or in a Ray worker) carries the pack's
    stated directions to the scorer, and the plan check accepts the factored kind."""
    from evaluators.moraldial import MoralDialParams
    from evaluators.scorers import SCORER_KINDS
    from simulators.ray_actors import EvaluatorSpec

    folder = make_factored_folder(tmp_path, tiny_classifier)
    spec = EvaluatorSpec(
        str(folder), str(tiny_encoder), ("It's good to help.",), MoralDialParams(),
        device="cpu", dtype="float32", rot_directions=(("Can I?", "Don't.", "against"),),
    )  # fmt: skip
    stack = spec.load()
    assert stack.agreement.stated == {("Can I?", "Don't."): "against"}
    assert "factored-scorer" in SCORER_KINDS


def test_scorer_eval_with_stated_directions(tmp_path: Path, tiny_classifier: Path) -> None:
    from typer.testing import CliRunner

    from moralsim.cli import app

    folder = make_factored_folder(tmp_path, tiny_classifier)
    result = CliRunner().invoke(
        app,
        ["scorer", "eval", str(folder), "--stated-directions", "--json", str(tmp_path / "f.json")],
    )
    assert result.exit_code == 0, result.output
    figures = json.loads((tmp_path / "f.json").read_text())
    assert {"pack-test+stated", "signs-test+stated"} <= set(figures)
    refused = CliRunner().invoke(
        app, ["scorer", "eval", str(tiny_classifier), "--stated-directions"]
    )
    assert refused.exit_code != 0 and "only a factored scorer" in refused.output
    assert "Traceback" not in refused.output
    # a stated scorer reads them too (it was refused until 2026-12-04)
    stated = tmp_path / "stated"
    shutil.copytree(tiny_classifier, stated / "stance")
    shutil.copytree(tiny_classifier, stated / "agreement")
    (stated / "factored.json").write_text('{"unstated": "agreement"}\n')
    result = CliRunner().invoke(
        app,
        ["scorer", "eval", str(stated), "--stated-directions", "--json", str(tmp_path / "s.json")],
    )
    assert result.exit_code == 0, result.output
    assert "pack-test+stated" in json.loads((tmp_path / "s.json").read_text())


def test_a_plain_models_prepare_leaves_the_optional_factored_build_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    import agents.models
    from agents.models import PrepareResult
    from moralsim.cli import app

    asked: list[str] = []

    def fake_prepare(name: str, **_: object) -> PrepareResult:
        asked.append(name)
        return PrepareResult(name, Path("/nowhere"), built=False, seconds=0.0)

    monkeypatch.setattr(agents.models, "prepare_model", fake_prepare)
    assert CliRunner().invoke(app, ["models", "prepare"]).exit_code == 0
    # the default (agreement-probe) and the scorers it copies; never the 45-minute option
    assert "agreement-minilm" in asked and "agreement-factored" not in asked
    assert "agreement-stated" in asked and "agreement-probe" in asked
    assert asked.index("agreement-minilm") < asked.index("agreement-stated")
    assert asked.index("agreement-stated") < asked.index("agreement-probe")
    asked.clear()
    assert CliRunner().invoke(app, ["models", "prepare", "agreement-factored"]).exit_code == 0
    assert asked == ["agreement-factored"]


def test_a_stated_card_carries_only_the_question_less_real_data_figures() -> None:
    """Moral Stories pairs have no question, so the stated scorer reads them whole with its
    agreement/ classifier: that classifier's figure there is the stated scorer's, and it is the
    only one carried (an in-pack figure of the classifier is not the stated scorer's)."""
    from training.factored_scorer import question_less_figures

    agreement_card = {
        "figures": {
            "moral-stories": {"kind": "pairs", "pairwise_accuracy": 0.631},
            "pack-test": {"kind": "labelled", "macro_f1": 0.832},
        }
    }
    carried = question_less_figures(agreement_card)
    assert set(carried) == {"moral-stories"}
    assert carried["moral-stories"]["pairwise_accuracy"] == 0.631
    assert carried["moral-stories"]["read_by"].startswith("agreement/")
    assert question_less_figures({}) == {}
