"""Second rating, leak checks and the shipped scorer training data."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from scenarios.pack import load_pack
from scenarios.phrases import strip_because
from scenarios.types import MoralQuestion, RoT, ScenarioPack
from training.scorer_data import (
    assemble,
    cohens_kappa,
    dev_share,
    leaking,
    normalise_text,
    second_rated,
)


def test_kappa_by_hand() -> None:
    # observed 3/4; rater a: agree 2, disagree 2; rater b: agree 1, disagree 3
    # expected (2*1 + 2*3) / 16 = 0.5; kappa = (0.75 - 0.5) / 0.5 = 0.5
    a = ["agree", "agree", "disagree", "disagree"]
    b = ["agree", "disagree", "disagree", "disagree"]
    assert cohens_kappa(a, b) == pytest.approx(0.5)


def item(i: int, label: str, rot: str = "r", question: str = "q") -> dict[str, str]:
    return {"id": f"w-{i}", "question": question, "answer": f"a{i}", "rot": rot, "label": label,
            "phenomenon": "flat-yes-no"}  # fmt: skip


def test_second_rating_keeps_agreements_only() -> None:
    items = [item(1, "agree"), item(2, "disagree"), item(3, "neutral")]
    kept, report = second_rated(items, {"w-1": "agree", "w-2": "agree"})
    assert [k["id"] for k in kept] == ["w-1"]
    assert report["second_rated"] == 2 and report["agreement_rate"] == 0.5


def _pack() -> ScenarioPack:
    q = MoralQuestion(
        id="t-1", question="Is it okay to lie to my boss?", paraphrases=["p"] * 5,
        rot=RoT("It's wrong to lie to your boss."), agree_answer="a", disagree_answer="d",
        explanation="e", related_question="Can I fib to my manager?", related_answer="r",
        split="test",
    )  # fmt: skip
    return ScenarioPack("p", None, questions=[q])


def fake_embed(texts):
    """Texts that normalise to the same words embed identically; others are orthogonal."""
    out = np.zeros((len(texts), 4096))
    for i, t in enumerate(texts):
        digest = hashlib.md5(normalise_text(t).encode()).digest()
        out[i, int.from_bytes(digest[:2], "big") % 4096] = 1.0
    return out


def test_leaks_of_dev_test_rots_and_questions_are_found() -> None:
    rows = [
        item(1, "agree", rot="It's wrong to lie to your boss!"),  # exact after normalising
        item(2, "agree", question="Can I fib to my manager?"),  # a held-out related question
        item(3, "agree", rot="Tip your server."),
    ]
    assert leaking(rows, ["Can I fib to my manager?"], ["It's wrong to lie to your boss."],
                   fake_embed) == {0, 1}  # fmt: skip


def test_assemble_drops_leaks_and_duplicates_and_splits_by_rot() -> None:
    items = [
        item(1, "agree", rot="It's wrong to lie to your boss."),
        item(2, "agree", rot="Tip your server."),
        {**item(3, "agree", rot="Tip your server."), "answer": "a2"},  # duplicate of 2
    ]
    ratings = {i["id"]: i["label"] for i in items}
    result = assemble(items, ratings, _pack(), fake_embed, "written", dev_fraction=0.0)
    assert [r["id"] for r in result.kept] == ["w-2"]
    assert result.report["leaks_dropped"] == 1 and result.report["duplicates_dropped"] == 1
    assert result.kept[0]["split"] == "train" and result.kept[0]["source"] == "written"
    assert dev_share("Tip your server.", 1.0) and not dev_share("Tip your server.", 0.0)


def test_assemble_drops_outside_held_out_rules_and_keeps_an_item_in_one_split() -> None:
    # the Moral Stories norms (validation only) are held out like the pack's own dev/test RoTs
    items = [item(1, "agree", rot="You should help others in danger."), item(2, "agree")]
    ratings = {i["id"]: i["label"] for i in items}
    result = assemble(items, ratings, _pack(), fake_embed, "pairs",
                      extra_held_rots=["You should help others in danger."])  # fmt: skip
    assert [r["id"] for r in result.kept] == ["w-2"] and result.report["leaks_dropped"] == 1
    # one question asked with two RoTs: both rows go to dev or both to train, by item
    rows = [{**item(k, "agree", rot=f"rule {k}"), "item": "qf-1"} for k in range(20)]
    ratings = {r["id"]: r["label"] for r in rows}
    by_rot = assemble(rows, ratings, _pack(), fake_embed, "factorial", dev_fraction=0.5)
    by_item = assemble(rows, ratings, _pack(), fake_embed, "factorial", dev_fraction=0.5,
                       dev_group="item")  # fmt: skip
    assert {r["split"] for r in by_rot.kept} == {"dev", "train"}
    assert len({r["split"] for r in by_item.kept}) == 1
    # a group one of whose RoTs the pack already trains on goes to train whole
    trained = _pack()
    trained.questions[0] = replace(trained.questions[0], split="train")
    rows[0] = {**rows[0], "rot": "It's wrong to lie to your boss."}
    whole = assemble(rows, ratings, trained, fake_embed, "factorial", dev_fraction=1.0,
                     dev_group="item")  # fmt: skip
    assert {r["split"] for r in whole.kept} == {"train"}


# --------------------------------------------------------------------------- shipped data


def _core_sources() -> dict[str, list]:
    pack = load_pack("core").pack
    by: dict[str, list] = {}
    for e in pack.agreement_examples:
        by.setdefault(e.kind.split(":", 1)[0] if ":" in e.kind else "derived", []).append(e)
    return by


def test_shipped_written_data_is_large_balanced_and_leak_free() -> None:
    pack = load_pack("core").pack
    written = _core_sources().get("written", [])
    assert len(written) >= 10_000
    labels = Counter(e.label for e in written)
    assert min(labels.values()) >= 0.15 * len(written)
    phenomena = {e.kind.split(":", 1)[1] for e in written}
    for needed in ("flat-yes-no", "negated-agreement", "hedged", "sarcasm", "refusal", "rambling",
                   "restate-then-break", "imperative", "narrated-first-person",
                   "narrated-third-person", "unrelated-rot"):  # fmt: skip
        assert needed in phenomena, needed
    held_q, held_r = set(), set()
    for q in pack.questions:
        if q.split != "train":
            held_q |= {normalise_text(t) for t in (q.question, *q.paraphrases, q.related_question)}
            held_r |= {normalise_text(q.rot.text), normalise_text(strip_because(q.explanation))}
    for e in written:
        if e.split == "train":
            assert normalise_text(e.rot) not in held_r, e.id
            assert not e.question or normalise_text(e.question) not in held_q, e.id


def test_shipped_sign_test_set_is_separate_and_large_enough() -> None:
    signs = _core_sources().get("signs", [])
    assert len(signs) >= 300 and {e.split for e in signs} == {"test"}
    phenomena = Counter(e.kind.split(":", 1)[1] for e in signs)
    assert set(phenomena) >= {"flat-yes-no", "negated-agreement", "hedged"}
    train_texts = {
        (normalise_text(e.answer), normalise_text(e.rot))
        for source, rows in _core_sources().items() if source != "signs"
        for e in rows
    }  # fmt: skip
    assert not [
        e.id for e in signs if (normalise_text(e.answer), normalise_text(e.rot)) in train_texts
    ]


def test_shipped_sign_dev_set_is_dev_only_balanced_and_apart_from_everything_else() -> None:
    """The development counterpart of the sign test: the same three phenomena, dev split only,
    both labels in each, and no question, answer or RoT shared with any other pack text, so
    choosing on it reads neither training data nor the test set."""
    sources = _core_sources()
    dev = sources.get("signs-dev", [])
    assert len(dev) >= 300 and {e.split for e in dev} == {"dev"}
    by_phenomenon = Counter((e.kind.split(":", 1)[1], e.label) for e in dev)
    for phenomenon in ("flat-yes-no", "negated-agreement", "hedged"):
        assert by_phenomenon[(phenomenon, "agree")] >= 45, phenomenon
        assert by_phenomenon[(phenomenon, "disagree")] >= 45, phenomenon
    assert set(p for p, _ in by_phenomenon) == {"flat-yes-no", "negated-agreement", "hedged"}
    pack = load_pack("core").pack
    others = {
        normalise_text(text)
        for q in pack.questions
        for text in (q.question, *q.paraphrases, q.related_question, q.rot.text)
    }
    others |= {
        normalise_text(text)
        for source, rows in sources.items() if source != "signs-dev"
        for e in rows
        for text in (e.question, e.answer, e.rot)
    }  # fmt: skip
    assert not [
        e.id for e in dev if {normalise_text(t) for t in (e.question, e.answer, e.rot)} & others
    ]
    triples = {tuple(normalise_text(t) for t in (e.question, e.answer, e.rot)) for e in dev}
    assert len(triples) == len(dev)


def test_sign_dev_set_shares_no_scenario_with_the_sign_test() -> None:
    """Writers converge on the same everyday scenarios; a dev item that retells a test item
    ("five minutes in the disabled spot" against "two minutes") would let choosing on dev read
    the test. The assembly dropped them by MiniLM similarity; this checks the word overlap."""

    def words(text: str) -> set[str]:
        return set(normalise_text(text).split())

    def overlap(a: set[str], b: set[str]) -> float:
        return len(a & b) / len(a | b)

    sources = _core_sources()
    test = [(words(e.question), words(e.rot)) for e in sources["signs"]]
    near = [
        e.id
        for e in sources["signs-dev"]
        for question, rot in test
        if overlap(words(e.question), question) >= 0.6 or overlap(words(e.rot), rot) >= 0.6
    ]
    assert not near


def test_sign_dev_set_is_a_scorer_eval_set_and_held_out_from_training() -> None:
    from evaluators.scorer_eval import pack_sets
    from training.scorer_data import held_out_texts

    pack = load_pack("core").pack
    sets = {s.name: s for s in pack_sets(pack)}
    assert len(sets["signs-dev"].items) == len(_core_sources()["signs-dev"])
    held_questions, held_rots = held_out_texts(pack)
    dev = _core_sources()["signs-dev"]
    assert {e.question for e in dev} <= set(held_questions)
    assert {e.rot for e in dev} <= set(held_rots)


def test_no_scorer_trains_or_picks_its_epoch_on_the_sign_sets() -> None:
    from moralsim.cli import _scorer_data
    from training.scorer import EVALUATION_ONLY_SOURCES, recipe_examples

    pack = load_pack("core").pack
    assert {e.source for e in pack.agreement_in("dev")} >= {"signs-dev", "written"}
    for split in ("train", "dev"):
        everything = recipe_examples(pack, (), split)  # a recipe naming no source: all of them
        assert everything and not {e.source for e in everything} & set(EVALUATION_ONLY_SOURCES)
    splits, _ = _scorer_data("core", None, None, 0)  # `moralsim train scorer` on a pack
    assert not {e.source for e in splits["train"] + splits["dev"]} & set(EVALUATION_ONLY_SOURCES)
    assert "signs" in {e.source for e in splits["test"]}


def test_shipped_factorial_and_pair_data_cover_both_sides_and_state_directions() -> None:
    """Question x answer x RoT items: each answer against an RoT for and one against the act,
    so the same answer carries both labels; norm-action pairs: a following and a breaking
    action per norm. No item crosses splits."""
    pack = load_pack("core").pack
    by = _core_sources()
    factorial, pairs = by.get("factorial", []), by.get("pairs", [])
    assert len(factorial) >= 8_000 and len(pairs) >= 3_000
    stated = pack.direction_map()
    assert all((e.question, e.rot) in stated for e in factorial)
    labels_of: dict[tuple[str, str], set[str]] = {}
    split_of: dict[str, set[str]] = {}
    for e in factorial:
        labels_of.setdefault((e.question, e.answer), set()).add(e.label)
        split_of.setdefault(e.question, set()).add(e.split)
    both = [k for k, v in labels_of.items() if v == {"agree", "disagree"}]
    assert len(both) >= 0.5 * len(labels_of)  # the composition is in the data
    assert all(len(v) == 1 for v in split_of.values())
    assert {e.kind.split(":", 1)[1] for e in factorial} >= {"flat", "negated", "hedged", "evasive"}
    assert not any(e.question for e in pairs)
    held_q, held_r = set(), set()
    for q in pack.questions:
        if q.split != "train":
            held_q |= {normalise_text(t) for t in (q.question, *q.paraphrases, q.related_question)}
            held_r |= {normalise_text(q.rot.text), normalise_text(strip_because(q.explanation))}
    for e in [*factorial, *pairs]:
        assert normalise_text(e.rot) not in held_r, e.id
        assert not e.question or normalise_text(e.question) not in held_q, e.id
    by_rot = Counter((e.rot, e.label) for e in pairs)
    paired = [rot for (rot, label) in by_rot if label == "agree" and (rot, "disagree") in by_rot]
    assert len(paired) >= 1_500


def test_shipped_reasons_take_both_sides_of_factorial_questions_in_their_split() -> None:
    """Written reasons (S_ME's input): each judged against its factorial question's RoTs,
    whose directions the pack states; both sides per question; the question's own split."""
    pack = load_pack("core").pack
    by = _core_sources()
    reasons, factorial = by.get("reasons", []), by.get("factorial", [])
    assert len(reasons) >= 4_000
    stated = pack.direction_map()
    assert all((e.question, e.rot) in stated for e in reasons)
    assert {e.label for e in reasons} == {"agree", "disagree"}
    assert {e.kind for e in reasons} == {"reasons:explanation"}
    split_of = {e.question: e.split for e in factorial}
    assert all(split_of[e.question] == e.split for e in reasons)
    sides: dict[str, set[str]] = {}
    for e in reasons:  # the reason's side on the act, by the sign rule
        side = e.label == "agree" if stated[(e.question, e.rot)] == "for" else e.label != "agree"
        sides.setdefault(e.question, set()).add("for" if side else "against")
    assert sum(v == {"for", "against"} for v in sides.values()) >= 0.9 * len(sides)


def test_shipped_concessions_are_stance_examples_that_leave_the_directions_as_they_were() -> None:
    """Concession-then-lean answers: each judged against both RoTs of its factorial question,
    in that question's split, an endorsing and a rejecting lean for most questions. Their
    (question, RoT) pairs are all stated already, so a recipe that adds them has the same
    direction examples as without them (the ones the shipped probe head was fitted on)."""
    from training.factored_data import direction_examples, with_explanation_directions
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE
    from training.scorer import recipe_examples

    pack = load_pack("core").pack
    by = _core_sources()
    concessions, factorial = by.get("concessions", []), by.get("factorial", [])
    assert len(concessions) >= 2_400
    # not in the default (docs/agreement-scorer.md, "Concessions")
    assert "concessions" not in DEFAULT_FACTORED_RECIPE.sources
    stated = pack.direction_map()
    assert all((e.question, e.rot) in stated for e in concessions)
    assert {e.kind for e in concessions} == {"concessions:hedged-late"}
    split_of = {e.question: e.split for e in factorial}
    assert all(split_of[e.question] == e.split for e in concessions)
    assert {e.split for e in concessions} == {"train", "dev"}
    leans: dict[str, set[str]] = {}
    for e in concessions:  # the answer's stance on the act, by the sign rule
        endorses = (e.label == "agree") == (stated[(e.question, e.rot)] == "for")
        leans.setdefault(e.question, set()).add("endorse" if endorses else "reject")
    assert sum(v == {"endorse", "reject"} for v in leans.values()) >= 0.8 * len(leans)
    labelled = with_explanation_directions(pack.questions, stated)
    for split in ("train", "dev"):
        rows = recipe_examples(pack, (*DEFAULT_FACTORED_RECIPE.sources, "concessions"), split)
        without = [e for e in rows if e.source != "concessions"]
        assert len(without) < len(rows)
        assert direction_examples(rows, labelled) == direction_examples(without, labelled)
