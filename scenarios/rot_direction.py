"""Split a rule of thumb into its direction and the act it recommends.

Agreement with a RoT is the answer's stance on an act combined with the RoT's verdict on that
act: "Sure, go ahead" agrees with "It's okay to skip the wedding" and disagrees with "It's
wrong to skip the wedding". A small cross-encoder has to learn that sign flip from the RoT's
wording on top of reading the answer, and on real text it mostly does not (it reads answers that
sound approving as agreement whatever the RoT says). So a RoT that forbids an act is rewritten as
the one recommending it ("It's wrong to X" -> "It's good to X", "You shouldn't X" -> "You should
X"), the scorer reads the answer against that recommending form only, and agreement with the
original is the reading with agree and disagree swapped (docs/methods.md §3).

Only wordings whose forbidding sense is unambiguous are rewritten; every other RoT is taken as
recommending what it names and passed through unchanged (never a guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FORBIDDING_WORDS = (
    "wrong|bad|mean|rude|unkind|cruel|selfish|greedy|immoral|unethical|dishonest|unfair|"
    "inappropriate|inconsiderate|disrespectful|irresponsible|unacceptable|hurtful|harmful|"
    "offensive|insulting|abusive|manipulative|controlling|reckless|careless|dangerous|unsafe|"
    "illegal|shameful|petty|cowardly|hypocritical|childish|impolite|unprofessional|wasteful|"
    "annoying|irritating|creepy|gross|disgusting|sexist|racist|frowned upon|a bad idea|"
    "(?:not|never) (?:okay|ok|alright|all right|fine|good|nice|right|acceptable|appropriate|"
    "polite|kind|fair|cool)"
)
_DEGREE = r"(?:usually|generally|always|very|really|considered|often|so)"
_IT_IS = rf"(?:It's|It is|Its)\s+(?:{_DEGREE}\s+)?"
_FORBIDDING_VERDICT = re.compile(
    rf"^{_IT_IS}(?P<verdict>{_FORBIDDING_WORDS})\s+(?P<link>to|that|when|if|for)\s+(?P<act>.+)$",
    re.IGNORECASE,
)
_FORBIDDING_MODAL = re.compile(
    r"^(?P<who>(?:[A-Z][\w'-]*|you)(?:\s+[\w'-]+){0,3}?)\s+"
    r"(?:should not|shouldn't|should never|must not|mustn't|ought not to|ought never to)\s+"
    r"(?!have to\b|need to\b)(?P<act>.+)$"  # "shouldn't have to X" frees from X, not forbids it
)
_PROHIBITION = re.compile(r"^(?:Don't|Do not|Never)\s+(?P<act>.+)$")


@dataclass(frozen=True)
class RotDirection:
    """forbids: the RoT forbids the act of `recommending`, the same RoT turned to recommend it.
    For a RoT that does not forbid, `recommending` is the RoT itself."""

    forbids: bool
    recommending: str


def rot_direction(rot: str) -> RotDirection:
    text = " ".join(rot.split())
    if match := _FORBIDDING_VERDICT.match(text):
        return RotDirection(True, f"It's good {match['link']} {match['act']}")
    if match := _FORBIDDING_MODAL.match(text):
        return RotDirection(True, f"{match['who']} should {match['act']}")
    if match := _PROHIBITION.match(text):
        return RotDirection(True, f"You should {match['act']}")
    return RotDirection(False, text)


SWAPPED_LABEL = {"agree": "disagree", "disagree": "agree", "neutral": "neutral"}
"""Agreement with a forbidding RoT, from agreement with its recommending form, and back."""
