"""Turn a rule of thumb into its opposite, for counterfactual scorer training.

The same answer agrees with "You should return the wallet" and disagrees with "You shouldn't
return the wallet". A classifier that sees such minimal pairs has to read the RoT's direction
instead of learning which answers sound moral. Only wordings whose opposite is unambiguous are
flipped; anything else returns None (never a guess).
"""

from __future__ import annotations

import re

_WHO = r"^(You|People|Parents|Children|Kids|Friends|Employees|Students|One|We|Everyone)"
_PAIRS: tuple[tuple[str, str], ...] = (
    (_WHO + r" should not ", r"\1 should "),
    (_WHO + r" shouldn't ", r"\1 should "),
    (_WHO + r" should (?!not |never |always )", r"\1 shouldn't "),
    (r"^It's wrong to ", "It's okay to "),
    (r"^It is wrong to ", "It is okay to "),
    (r"^It's okay to ", "It's wrong to "),
    (r"^It is okay to ", "It is wrong to "),
    (r"^It's fine to ", "It's wrong to "),
    (r"^It's acceptable to ", "It's wrong to "),
    (r"^It's good to ", "It's bad to "),
    (r"^It's bad to ", "It's good to "),
)


def flip_rot(rot: str) -> str | None:
    """The RoT with its direction reversed, or None when its wording has no safe opposite."""
    text = rot.strip()
    for pattern, replacement in _PAIRS:
        flipped, n = re.subn(pattern, replacement, text, count=1)
        if n:
            return flipped
    return None
