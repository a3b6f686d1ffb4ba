"""The RoT direction split behind the agreement scorer's recommending-form input."""

import pytest

from scenarios.rot_direction import SWAPPED_LABEL, RotDirection, rot_direction


@pytest.mark.parametrize(
    ("rot", "recommending"),
    [
        ("It's wrong to read your partner's texts.", "It's good to read your partner's texts."),
        ("It is rude to talk during a film.", "It's good to talk during a film."),
        ("It's not okay to lie to a friend.", "It's good to lie to a friend."),
        ("It's never fine to hit a child.", "It's good to hit a child."),
        ("It's bad when people litter.", "It's good when people litter."),
        ("You shouldn't keep extra change.", "You should keep extra change."),
        ("You should not ghost a date.", "You should ghost a date."),
        ("Employers shouldn't punish whistleblowers.", "Employers should punish whistleblowers."),
        ("Hotel staff must not open guests' mail.", "Hotel staff should open guests' mail."),
        ("Don't  take the last slice.", "You should take the last slice."),
        ("Never drive after drinking.", "You should drive after drinking."),
    ],
)
def test_a_forbidding_rot_is_turned_to_recommend_its_act(rot: str, recommending: str) -> None:
    assert rot_direction(rot) == RotDirection(True, recommending)


@pytest.mark.parametrize(
    "rot",
    [
        "It's good to return a lost wallet.",
        "It's okay to move a parent into professional care.",
        "It's okay not to attend every family party.",  # permits not doing: no safe opposite
        "You should help others when they're in danger.",
        "You don't have to lend money to relatives.",
        "If you take the last of the coffee, you should make more.",
        "Helping yourself to a colleague's lunch is theft.",
        "You shouldn't have to pay for your own leaving party.",  # frees from it, not forbids
    ],
)
def test_any_other_rot_passes_through_as_recommending(rot: str) -> None:
    assert rot_direction(rot) == RotDirection(False, " ".join(rot.split()))


def test_swapping_twice_gives_the_label_back() -> None:
    assert {SWAPPED_LABEL[SWAPPED_LABEL[k]] for k in SWAPPED_LABEL} == set(SWAPPED_LABEL)
    assert SWAPPED_LABEL["agree"] == "disagree" and SWAPPED_LABEL["neutral"] == "neutral"
