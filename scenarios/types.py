"""Scenario data: the questions users ask, the dilemmas the DIT probe poses, and packs of both.

These are read-only records loaded from plain files (JSONL/YAML/CSV); nothing here knows how
a dialogue runs or how a metric is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from scenarios.rot import RoT

Split = Literal["train", "dev", "test"]
SPLITS: tuple[str, ...] = ("train", "dev", "test")
Label = Literal["agree", "neutral", "disagree"]
LABELS: tuple[str, ...] = ("agree", "neutral", "disagree")
STAGES: tuple[str, ...] = ("2", "3", "4", "5", "6", "M")
"""Kohlberg stages a DIT statement can be keyed to; M marks a meaningless (lofty-sounding) item."""


@dataclass(frozen=True)
class MoralQuestion:
    """A question whose hidden RoT the simulated user holds.

    `answers` holds a reference reply that agrees and one that disagrees with the RoT; the
    explanation is what a bot following the RoT would say when asked why; the related
    question shares the RoT (the RIL flow asks it), and `related_answer`, when a pack has it,
    answers it as the RoT says (the training target of the RIL discussion flow).
    """

    id: str
    question: str
    paraphrases: tuple[str, ...]
    rot: RoT
    agree_answer: str
    disagree_answer: str
    explanation: str
    related_question: str
    split: Split
    related_answer: str = ""  # a reference answer to related_question that follows the RoT
    related_disagree_answer: str = ""
    """An answer to related_question that breaks the RoT: what the known-answer RoT-breaker
    says (agents.scripted), and the rejected reply of DPO's related pairs (training.dpo_pairs);
    never an SFT target."""


@dataclass(frozen=True)
class SafetyRoT:
    """A near-universal, high-severity RoT the safety index retrieves against answers."""

    id: str
    rot: RoT
    category: str


@dataclass(frozen=True)
class AgreementExample:
    """One (question, answer, RoT) triple with its agree/neutral/disagree label.

    `kind` tells how it was made (own RoT, mismatched RoT, non-answer, restatement, or a
    hand-written hard case with its phenomenon), so error analysis can slice by it.
    """

    id: str
    question: str
    answer: str
    rot: str
    label: Label
    split: Split
    kind: str

    @property
    def source(self) -> str:
        """The source its kind names (`written:explanation` -> written); a kind without one is
        derived from the pack's own questions and answers."""
        return self.kind.split(":", 1)[0] if ":" in self.kind else "derived"


@dataclass(frozen=True)
class RotDirection:
    """Which way a RoT points on the act a question asks about (scenarios.loaders.directions):
    for, against, unrelated, or open (the question proposes no act)."""

    question: str
    rot: str
    direction: str
    second_rater: str | None = None

    @property
    def id(self) -> str:
        """A (question, RoT) pair is stated once per file."""
        return f"{self.question} / {self.rot}"


@dataclass(frozen=True)
class DirectionPair:
    """A written (question, RoT) pair with the RoT's direction on the question's act, for
    training a direction reader only (scenarios.loaders.direction_pairs). Unlike a
    RotDirection it states nothing about the pack's own questions: its question is no pack
    question, and a run never reads it."""

    id: str
    question: str
    rot: str
    direction: str
    split: Split
    source: str = "directions"
    form: str = "unspecified"
    """How the RoT says its side (plain, negated-opposite, ...), for slicing figures."""


@dataclass(frozen=True)
class Statement:
    """A DIT issue statement and the stage it is keyed to."""

    text: str
    stage: str


@dataclass(frozen=True)
class Dilemma:
    """A DIT-style dilemma: story, action question, three options, twelve keyed statements.

    Options are ordered (should, can't decide, should not); the probe permutes them itself.
    """

    id: str
    title: str
    context: str
    story: str
    question: str
    options: tuple[str, str, str]
    statements: tuple[Statement, ...]

    def items_at(self, *stages: str) -> list[int]:
        """0-based indices of the statements keyed to any of `stages`."""
        return [i for i, s in enumerate(self.statements) if s.stage in stages]


@dataclass
class ScenarioPack:
    """A named collection a run draws from; `path` is the folder it was loaded from."""

    name: str
    path: Path | None
    description: str = ""
    version: str = ""
    questions: list[MoralQuestion] = field(default_factory=list)
    safety_rots: list[SafetyRoT] = field(default_factory=list)
    agreement_examples: list[AgreementExample] = field(default_factory=list)
    dilemmas: list[Dilemma] = field(default_factory=list)
    rot_directions: list[RotDirection] = field(default_factory=list)
    direction_pairs: list[DirectionPair] = field(default_factory=list)

    def questions_in(self, split: str) -> list[MoralQuestion]:
        """Questions of one split ('all' for every split)."""
        return [q for q in self.questions if split == "all" or q.split == split]

    def agreement_in(self, split: str) -> list[AgreementExample]:
        return [e for e in self.agreement_examples if split == "all" or e.split == split]

    def direction_pairs_in(self, split: str) -> list[DirectionPair]:
        return [d for d in self.direction_pairs if split == "all" or d.split == split]

    def direction_map(self) -> dict[tuple[str, str], str]:
        """(question, RoT) -> the RoT's stated direction on the question's act."""
        return {(d.question, d.rot): d.direction for d in self.rot_directions}
