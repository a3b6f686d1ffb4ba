from __future__ import annotations

import random

import pytest

from scenarios.phrases import PHRASES, pick, pushback


def test_each_class_has_at_least_ten_distinct_phrases() -> None:
    for kind, phrases in PHRASES.items():
        assert len(set(phrases)) == len(phrases) >= 10, kind


def test_pick_is_seeded() -> None:
    a = [pick("why", random.Random(3)) for _ in range(3)]
    assert a == [pick("why", random.Random(3)) for _ in range(3)]
    with pytest.raises(KeyError, match="unknown phrase class 'how'"):
        pick("how", random.Random(0))


def test_pushback_reads_as_one_sentence() -> None:
    rng = random.Random(0)
    texts = {pushback("It's wrong to lie to friends.", rng) for _ in range(50)}
    for text in texts:
        assert text.endswith("lie to friends.")
        joined = any(text.startswith(p) for p in PHRASES["but"])
        assert joined
        if not text.split("it's wrong")[0].rstrip().endswith((".", ":")):
            assert "it's wrong to lie" in text
    firm = pushback("It's wrong to lie.", random.Random(1), firm=True)
    assert any(firm.startswith(p) for p in PHRASES["but_firm"])
