"""Written question × answer × RoT items expand into correctly labelled examples."""

import pytest

from training.factorial_items import expand_item, stated_directions

ITEM = {
    "item": "qf9-0001",
    "question": "Would it be wrong to skip my cousin's wedding?",
    "rot_for": "You don't have to attend every family event.",
    "rot_against": "You should show up for family milestones.",
    "answers": [
        {"text": "No, not at all.", "stance": "endorse", "style": "flat"},
        {"text": "Yes, it would.", "stance": "reject", "style": "flat"},
        {"text": "Hard to say.", "stance": "none", "style": "evasive"},
    ],
}


def test_each_answer_is_judged_against_both_rots_by_stance_and_direction() -> None:
    rows = {r["id"]: r for r in expand_item(ITEM)}
    assert len(rows) == 6
    # "No, not at all." endorses skipping: agrees with the RoT for it, disagrees with the other
    assert rows["qf9-0001-a1-for"]["label"] == "agree"
    assert rows["qf9-0001-a1-against"]["label"] == "disagree"
    assert rows["qf9-0001-a1-against"]["rot"] == ITEM["rot_against"]
    assert rows["qf9-0001-a2-for"]["label"] == "disagree"
    assert rows["qf9-0001-a2-against"]["label"] == "agree"
    assert {rows[f"qf9-0001-a3-{d}"]["label"] for d in ("for", "against")} == {"neutral"}
    assert rows["qf9-0001-a3-for"]["phenomenon"] == "evasive"


def test_directions_and_bad_items() -> None:
    assert [d["direction"] for d in stated_directions(ITEM)] == ["for", "against"]
    bad = {**ITEM, "answers": [{"text": "Sure.", "stance": "yes"}]}
    with pytest.raises(ValueError, match="qf9-0001: answer 1: stance 'yes'"):
        expand_item(bad)
    with pytest.raises(ValueError, match="missing field 'rot_for'"):
        expand_item({k: v for k, v in ITEM.items() if k != "rot_for"})
