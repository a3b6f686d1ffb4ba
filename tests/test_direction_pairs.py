"""Written direction pairs: the file format, how a pack carries them, how they join the
direction half (and only it), and how writers' situations expand into them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scenarios.loaders import ScenarioLoadError, load_direction_pairs
from scenarios.pack import load_pack
from scenarios.types import AgreementExample, DirectionPair, ScenarioPack
from training.direction_pair_items import check_situation, expand
from training.factored_data import pair_examples
from training.factored_scorer import FactoredRecipe, factored_splits

GOOD = {
    "id": "p1",
    "question": "Should I tell the coach my teammate is hiding an injury?",
    "rot": "You shouldn't stay quiet when someone's health is at risk.",
    "direction": "for",
    "split": "train",
    "form": "negated-opposite",
}


def test_a_pair_file_loads_and_its_errors_name_the_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "p2", "direction": "open"}) + "\n"
    )
    with pytest.raises(ScenarioLoadError, match=r"pairs\.jsonl.*line 2.*direction.*open"):
        load_direction_pairs(path)
    rows, issues = load_direction_pairs(path, skip_invalid=True)
    assert rows == [DirectionPair("p1", GOOD["question"], GOOD["rot"], "for", "train",
                                  "directions", "negated-opposite")]  # fmt: skip
    assert len(issues) == 1
    path.write_text(json.dumps({**GOOD, "direction": "unrelated", "source": "mine"}) + "\n")
    (pair,) = load_direction_pairs(path)[0]
    assert pair_examples([pair])[0].label == "neutral" and pair_examples([pair])[0].kind == (
        "mine:negated-opposite"
    )
    for key, value in (("split", "later"), ("form", ""), ("form", "two words"), ("extra", 1)):
        path.write_text(json.dumps({**GOOD, key: value}) + "\n")
        with pytest.raises(ScenarioLoadError, match=key):
            load_direction_pairs(path)


def test_a_pack_carries_its_pairs_apart_from_its_stated_directions(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    source = Path(__file__).parent / "data" / "questions_sample.jsonl"
    (folder / "q.jsonl").write_text(source.read_text())
    (folder / "pairs.jsonl").write_text(json.dumps(GOOD) + "\n")
    (folder / "pack.yaml").write_text("name: p\nquestions: q.jsonl\ndirection_pairs: pairs.jsonl\n")
    pack = load_pack(folder).pack
    assert [p.id for p in pack.direction_pairs_in("train")] == ["p1"]
    assert pack.direction_pairs_in("dev") == []
    assert pack.direction_map() == {}  # a run never reads them as its own pairs


Q = "Is it okay to lend my brother my laptop for his exam?"
RULE = "It's good to help family when it costs you little."


def _pack(pairs: list[DirectionPair]) -> ScenarioPack:
    examples = [
        AgreementExample("e1", Q, "Yes, lend it.", RULE, "agree", "train", "written:flat"),
        AgreementExample("e2", Q, "No.", RULE, "disagree", "dev", "written:flat"),
    ]
    return ScenarioPack("t", None, agreement_examples=examples, direction_pairs=pairs)


def test_pairs_join_the_direction_half_of_their_split_only_when_the_recipe_names_them() -> None:
    pairs = [
        DirectionPair("d1", GOOD["question"], GOOD["rot"], "for", "train"),
        DirectionPair("d2", GOOD["question"], "Keep teammates' secrets.", "against", "dev"),
        DirectionPair("d3", Q, RULE, "against", "train"),  # an (act, RoT) already labelled
    ]
    directions = {(Q, RULE): "for"}
    with_pairs = factored_splits(
        _pack(pairs), FactoredRecipe(sources=("written", "directions")), directions
    )
    train, dev = with_pairs["direction"]
    assert {(e.answer, e.rot): e.label for e in train} == {
        (Q, RULE): "agree",  # the answers' label stands; the pair does not overwrite it
        (GOOD["question"], GOOD["rot"]): "agree",
    }
    assert [(e.rot, e.label, e.kind) for e in dev[1:]] == [
        ("Keep teammates' secrets.", "disagree", "directions:unspecified")
    ]
    assert all(e.question == "" for e in train + dev)
    without = factored_splits(_pack(pairs), FactoredRecipe(sources=("written",)), directions)
    assert len(without["direction"][0]) == 1 and len(without["direction"][1]) == 1
    assert without["stance"] == with_pairs["stance"]  # pairs carry no answer: no stance


SITUATION = {
    "sid": "b1-001",
    "q_act": "Should I tell my roommate her music keeps me up?",
    "q_opp": "Is it better to just put up with my roommate's loud music?",
    "rots": [
        {"rot": "You should speak up about things that affect your sleep.", "on_act": "for",
         "form": "plain"},
        {"rot": "You shouldn't suffer in silence at home.", "on_act": "for",
         "form": "negated-opposite"},
        {"rot": "It's petty to complain about every noise.", "on_act": "against",
         "form": "plain"},
        {"rot": "It's kind to let housemates enjoy their evenings.", "on_act": "against",
         "form": "positive-opposite"},
    ],
}  # fmt: skip


def test_a_situation_gives_each_rot_on_the_act_and_turned_on_the_opposite_choice() -> None:
    items = expand(SITUATION)
    assert len(items) == 8 and len({i["id"] for i in items}) == 8
    by_id = {i["id"]: (i["question"], i["label"]) for i in items}
    assert by_id["b1-001-a2"] == (SITUATION["q_act"], "agree")  # for the act
    assert by_id["b1-001-o2"] == (SITUATION["q_opp"], "disagree")  # against its opposite
    assert by_id["b1-001-a4"][1] == "disagree" and by_id["b1-001-o4"][1] == "agree"
    forms = {i["id"]: i["phenomenon"] for i in items}  # named against the question's own act
    assert [forms[f"b1-001-a{n}"] for n in range(1, 5)] == [
        "plain", "negated-opposite", "plain", "positive-opposite"
    ]  # fmt: skip
    assert [forms[f"b1-001-o{n}"] for n in range(1, 5)] == [
        "positive-opposite", "plain", "negated-opposite", "plain"
    ]  # fmt: skip
    assert {i["sid"] for i in items} == {"b1-001"} and all(i["answer"] == "" for i in items)


def test_a_situation_needs_one_rot_of_each_form_on_its_own_side() -> None:
    wrong_side = json.loads(json.dumps(SITUATION))
    wrong_side["rots"][1]["on_act"] = "against"
    with pytest.raises(ValueError, match="b1-001: a negated-opposite RoT cannot be against"):
        check_situation(wrong_side)
    missing = {**SITUATION, "rots": SITUATION["rots"][:3]}
    with pytest.raises(ValueError, match="expected one of each"):
        check_situation(missing)
    with pytest.raises(ValueError, match="b1-001: field 'q_opp': missing or empty"):
        check_situation({**SITUATION, "q_opp": " "})
    no_text = json.loads(json.dumps(SITUATION))
    del no_text["rots"][2]["rot"]
    with pytest.raises(ValueError, match=r"field 'rots\[2\]\.rot'"):
        check_situation(no_text)


def test_shipped_pairs_are_balanced_leak_free_and_reach_the_direction_half_only() -> None:
    """The core pack's pairs: both directions and every form, a situation's pairs in one
    split, no question or RoT of a held-out question or of the sign sets; a recipe that names
    them gains direction examples and no stance example (the default does not name them)."""
    from dataclasses import replace

    from training.factored_data import with_explanation_directions
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE
    from training.scorer_data import held_out_texts, normalise_text

    pack = load_pack("core").pack
    pairs = pack.direction_pairs
    assert len(pairs) >= 2_000 and {p.split for p in pairs} == {"train", "dev"}
    directions = Counter(p.direction for p in pairs)
    assert set(directions) == {"for", "against"} and min(directions.values()) >= 0.45 * len(pairs)
    assert {p.form for p in pairs} == {"plain", "negated-opposite", "positive-opposite"}
    split_of: dict[str, set[str]] = {}
    for p in pairs:  # ids are <situation>-<a|o><n>
        split_of.setdefault(p.id.rsplit("-", 1)[0], set()).add(p.split)
    assert all(len(v) == 1 for v in split_of.values())
    held_questions, held_rots = held_out_texts(pack)  # dev/test questions, hard and sign sets
    held = {normalise_text(t) for t in (*held_questions, *held_rots)}
    assert not [p.id for p in pairs if {normalise_text(p.question), normalise_text(p.rot)} & held]
    # not in the default (docs/agreement-scorer.md, "Direction pairs")
    assert "directions" not in DEFAULT_FACTORED_RECIPE.sources
    recipe = replace(
        DEFAULT_FACTORED_RECIPE, sources=(*DEFAULT_FACTORED_RECIPE.sources, "directions")
    )
    labelled = with_explanation_directions(pack.questions, pack.direction_map())
    with_pairs = factored_splits(pack, recipe, labelled)
    without = factored_splits(pack, DEFAULT_FACTORED_RECIPE, labelled)
    assert with_pairs["stance"] == without["stance"]
    for k, split in enumerate(("train", "dev")):
        kept = len(without["direction"][k])
        assert with_pairs["direction"][k][:kept] == without["direction"][k]
        assert len(with_pairs["direction"][k]) - kept == len(pack.direction_pairs_in(split))
