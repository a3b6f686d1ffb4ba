"""Verdict preference pairs: Social-Chem questions and sides, pair polarity, leaks, the CLI."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from scenarios.loaders.social_chem import SocialChemRow
from scenarios.pack import load_pack
from scenarios.rot import RoT
from training.onpolicy_pairs import read_pairs
from training.verdict_answers import AGAINST_PHRASES, FOR_PHRASES, VerdictItem
from training.verdict_pairs import (
    QUESTION_FORMS,
    build_verdict_pairs,
    main,
    social_chem_items,
    verdict_pair,
)


def sc_row(
    rot_id: str,
    action: str | None,
    judgment: int | None,
    bad: bool = False,
    consensus: int = 5,
    action_agree: int = 4,
) -> SocialChemRow:
    rot = RoT(f"RoT about {action}.", consensus=consensus, judgment="It's good", action=action)
    return SocialChemRow(
        line=1, rot_id=rot_id, rot=rot, area="amitheasshole", split="train", rot_bad=bad,
        categories=(), action_moral_judgment=judgment, action_agree=action_agree,
        action_legal="legal",
        action_pressure=0, situation_id="s", characters=(),
    )  # fmt: skip


def test_social_chem_rows_become_questions_with_the_crowds_side() -> None:
    rows = [
        sc_row("a", "Helping your friends when they're down.", 2),
        sc_row("b", "lying to your boss", -1),
        sc_row("c", "eating lunch", 0),  # neutral: no side
        sc_row("d", "stealing", None),  # unrated
        sc_row("e", "hitting people", -2, bad=True),  # RoT flagged as bad
        sc_row("f", None, 1),  # no action
        sc_row("g", "tipping well", 2, consensus=3),  # contested RoT
        sc_row("h", "waving hello", 1, action_agree=2),  # the crowd's side is uncertain
    ]
    items = social_chem_items(rows, seed=0)
    assert [(i.example_id, i.direction) for i in items] == [
        ("social-chem:a", "for"),
        ("social-chem:b", "against"),
    ]
    wordings = {
        form.format(action="helping your friends when they're down") for form in QUESTION_FORMS
    }
    assert items[0].question in wordings
    assert items[0].rot == "RoT about Helping your friends when they're down.."


def test_pair_prefers_the_rots_side_with_the_same_reason() -> None:
    rng = random.Random(0)
    for direction, side, other in (
        ("for", FOR_PHRASES, AGAINST_PHRASES),
        ("against", AGAINST_PHRASES, FOR_PHRASES),
    ):
        item = VerdictItem("x", "Is lying okay?", "You shouldn't lie.", direction, "train")
        pair = verdict_pair(item, rng)
        assert pair.prompt == (("user", "Is lying okay?"),)
        assert pair.chosen.removesuffix(" You shouldn't lie.") in side
        assert pair.rejected.removesuffix(" You shouldn't lie.") in other


def test_build_keeps_train_items_drops_held_out_text_and_caps() -> None:
    pack = load_pack("core").pack
    test_q = pack.questions_in("test")[0]
    items = [
        VerdictItem("ok", "Is gardening okay?", "It's good to garden.", "for", "train"),
        VerdictItem("leak", "Is it fine?", test_q.rot.text, "against", "train"),
        VerdictItem("dev", "Is singing okay?", "Singing is fine.", "for", "dev"),
    ]
    pairs, dropped = build_verdict_pairs(items, pack.questions_in("test"), limit=None, seed=0)
    assert [p.question_id for p in pairs] == ["ok"]
    assert dropped == {"not train split": 1, "holds held-out text": 1}
    capped, _ = build_verdict_pairs(items[:1] * 3, [], limit=2, seed=0)
    assert len(capped) == 2


def test_cli_writes_pairs_dpo_can_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "vp.jsonl"
    main(["--written", "20", "--limit", "5", "--out", str(out)])
    pairs = read_pairs(out)
    assert len(pairs) == 5 and {p.step for p in pairs} == {"verdict"}
    assert all(p.question_id.startswith("written:") for p in pairs)
    assert "wrote 5 pairs" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--out", str(out)])  # no items asked for
