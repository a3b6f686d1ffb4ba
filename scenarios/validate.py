"""Pack validation: the counts a curator needs and the defects a benchmark must not have.

Errors (the check fails): the same RoT text in two splits (a leak between train and test),
duplicate or near-duplicate questions, paraphrases identical to their question or to each
other, paraphrases too far in meaning from their question, DIT dilemmas without enough
stage 5/6 items or without an M item. Warnings: reference answers outside 8-30 words and
splits far from 70/15/15.

Embedding similarity is injected (`embed`), so this module stays free of model code; the CLI
passes the MiniLM encoder.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from scenarios.rot import FOUNDATIONS
from scenarios.types import SPLITS, ScenarioPack

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors, one row per text."""

NEAR_DUPLICATE_COSINE = 0.95
PARAPHRASE_MIN_COSINE = 0.5
ANSWER_WORDS = (8, 30)
TARGET_SPLIT = {"train": 0.70, "dev": 0.15, "test": 0.15}


@dataclass
class PackReport:
    """Counts, errors and warnings of one pack."""

    counts: dict[str, Counter[str]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    similarity_checked: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def count_pack(pack: ScenarioPack, report: PackReport) -> None:
    qs = pack.questions
    report.totals = {
        "questions": len(qs),
        "contested questions (consensus <= 3)": sum(q.rot.contested for q in qs),
        "safety RoTs": len(pack.safety_rots),
        "agreement examples": len(pack.agreement_examples),
        "hand-written hard cases": sum(e.kind.startswith("hard") for e in pack.agreement_examples),
        "dilemmas": len(pack.dilemmas),
    }
    report.counts["questions by split"] = Counter(q.split for q in qs)
    report.counts["questions by foundation"] = Counter(f for q in qs for f in q.rot.foundations)
    report.counts["questions by consensus"] = Counter(str(q.rot.consensus) for q in qs)
    report.counts["questions by severity"] = Counter(str(q.rot.severity) for q in qs)
    report.counts["agreement examples by split"] = Counter(e.split for e in pack.agreement_examples)
    report.counts["agreement examples by label"] = Counter(e.label for e in pack.agreement_examples)
    report.counts["agreement examples by kind"] = Counter(e.kind for e in pack.agreement_examples)
    report.counts["safety RoTs by category"] = Counter(s.category for s in pack.safety_rots)
    report.counts["dilemmas by context"] = Counter(d.context for d in pack.dilemmas)
    report.counts["DIT statements by stage"] = Counter(
        s.stage for d in pack.dilemmas for s in d.statements
    )


def check_structure(pack: ScenarioPack, report: PackReport) -> None:
    if not pack.questions:
        report.errors.append("the pack has no questions: no flow could run on it")
    # RoT texts must not cross splits (questions and agreement examples together).
    splits_of: dict[str, set[str]] = {}
    for q in pack.questions:
        splits_of.setdefault(_norm(q.rot.text), set()).add(q.split)
    for e in pack.agreement_examples:
        if e.kind in ("restated-answer",):
            continue  # the "RoT" there is the answer itself, not a rule of the pack
        if e.kind.startswith("bot:"):
            # Labelled bot replies are asked from train questions and judged against their
            # RoTs; the held-out ones test the scorer on unseen replies, not unseen rules.
            continue
        splits_of.setdefault(_norm(e.rot), set()).add(e.split)
    for rot, splits in sorted(splits_of.items()):
        if len(splits) > 1:
            report.errors.append(f"RoT shared across splits {sorted(splits)}: {rot!r}")

    first_seen: dict[str, str] = {}
    for q in pack.questions:
        key = _norm(q.question)
        if key in first_seen:
            report.errors.append(f"{q.id}: same question text as {first_seen[key]}")
        first_seen.setdefault(key, q.id)
        seen = {key}
        for i, p in enumerate(q.paraphrases):
            if _norm(p) in seen:
                report.errors.append(
                    f"{q.id}: paraphrases[{i}] is identical to the question or another paraphrase"
                )
            seen.add(_norm(p))
        for side, answer in (("agree", q.agree_answer), ("disagree", q.disagree_answer)):
            words = len(answer.split())
            if not ANSWER_WORDS[0] <= words <= ANSWER_WORDS[1]:
                report.warnings.append(f"{q.id}: answers.{side} has {words} words (expected 8-30)")

    safety_seen: dict[str, str] = {}
    for s in pack.safety_rots:
        key = _norm(s.rot.text)
        if key in safety_seen:
            report.errors.append(f"{s.id}: same safety RoT text as {safety_seen[key]}")
        safety_seen.setdefault(key, s.id)

    for d in pack.dilemmas:
        high = len(d.items_at("5", "6"))
        if high < 3:
            report.errors.append(
                f"{d.id}: {high} statements keyed to stage 5/6 (at least 3 needed)"
            )
        if not d.items_at("M"):
            report.errors.append(f"{d.id}: no M (meaningless) item to detect random answering")

    n = len(pack.questions)
    if n >= 20:
        by_split = Counter(q.split for q in pack.questions)
        for split in SPLITS:
            share = by_split.get(split, 0) / n
            if abs(share - TARGET_SPLIT[split]) > 0.05:
                report.warnings.append(
                    f"split {split} holds {share:.0%} of the questions "
                    f"(target {TARGET_SPLIT[split]:.0%})"
                )
    missing = [
        f for f in FOUNDATIONS if f not in {x for q in pack.questions for x in q.rot.foundations}
    ]
    if pack.questions and missing:
        report.warnings.append(f"no question covers the foundation(s): {', '.join(missing)}")


def check_similarity(pack: ScenarioPack, embed: Embed, report: PackReport) -> None:
    """Near-duplicate questions and paraphrases that drift from (or collapse onto) the question."""
    qs = pack.questions
    if not qs:
        return
    report.similarity_checked = True
    question_vecs = embed([q.question for q in qs])
    sims = question_vecs @ question_vecs.T
    np.fill_diagonal(sims, -1.0)
    rows, cols = np.nonzero(np.triu(sims > NEAR_DUPLICATE_COSINE))
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        report.errors.append(
            f"{qs[i].id} and {qs[j].id} are near-duplicates "
            f"(cosine {sims[i, j]:.3f} > {NEAR_DUPLICATE_COSINE})"
        )
    flat = [p for q in qs for p in q.paraphrases]
    para_vecs = embed(flat)
    offset = 0
    for qi, q in enumerate(qs):
        block = para_vecs[offset : offset + len(q.paraphrases)]
        offset += len(q.paraphrases)
        cosines = block @ question_vecs[qi]
        for k, c in enumerate(cosines.tolist()):
            if c < PARAPHRASE_MIN_COSINE:
                report.errors.append(
                    f"{q.id}: paraphrases[{k}] is too far from the question "
                    f"(cosine {c:.2f} < {PARAPHRASE_MIN_COSINE})"
                )


def validate_pack(pack: ScenarioPack, embed: Embed | None = None) -> PackReport:
    report = PackReport()
    count_pack(pack, report)
    check_structure(pack, report)
    if embed is not None:
        check_similarity(pack, embed, report)
    return report
