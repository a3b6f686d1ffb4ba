"""Corpora as the uniform records discussion construction needs, and the split-leak guard.

Every corpus becomes three kinds of record:
- `SourceAnswer`: a question, an answer, the RoT it was judged against, the answer's stance
  toward that RoT as the corpus labels it, and whether the answer plays the revised answer A'.
- `SourceRoT`: an RoT on its own (for PT).
- `GeneralDialogue`: a chat from an optional general-dialogue file (GD).

Stances always come from the corpus (the core pack's agree/disagree answers, MIC `A_agrees`);
nothing here asks a model, so the flows never train on labels the evaluator itself produced.

Split leaks: the source splits are kept, but a record whose question or RoT also appears in a
held-out split is dropped, test first, then dev, so the test set never shrinks to protect the
training set and no question or RoT (after light normalisation) is shared between splits.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from scenarios.loaders import MicRow, ScenarioLoadError, SocialChemRow
from scenarios.loaders._common import Collector, read_utf8_lines
from scenarios.rot import RoT
from scenarios.types import SPLITS, MoralQuestion

Message = dict[str, str]
FLOWS: tuple[str, ...] = ("MA", "ME", "MR", "RIL", "PT", "GD")
"""The discussion flows in their canonical order (docs/methods.md §2)."""
ROLES: tuple[str, ...] = ("user", "assistant")
SPLIT_PRIORITY: tuple[str, ...] = ("test", "dev", "train")
"""Order in which splits claim a question or RoT: a held-out split always wins."""


def normalise(text: str) -> str:
    """The comparison key of a question or RoT: case, spacing, quotes and end marks ignored."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(" .!?")


@dataclass(frozen=True)
class SourceAnswer:
    """One answer to one question, judged against one RoT by the corpus's annotators."""

    source: str
    question_id: str
    question: str
    answer: str
    rot: RoT
    stance: str  # agree | neutral | disagree (toward `rot`)
    revised: bool  # plays A' (the answer a bot gives after adopting the RoT)
    split: str
    other_questions: tuple[str, ...] = ()  # paraphrases, related question: leak keys only

    def leak_keys(self) -> set[str]:
        texts = (self.question, *self.other_questions)
        return {f"q:{normalise(t)}" for t in texts} | {
            f"id:{self.source}:{self.question_id}",
            f"r:{normalise(self.rot.text)}",
        }


@dataclass(frozen=True)
class SourceRoT:
    """An RoT for PT, with the question (or corpus row) it came from."""

    source: str
    question_id: str
    rot: RoT
    split: str

    def leak_keys(self) -> set[str]:
        return {f"r:{normalise(self.rot.text)}"}


@dataclass(frozen=True)
class GeneralDialogue:
    """A general chat (GD) mixed in against forgetting; no RoT, so it never leaks one."""

    source: str
    dialogue_id: str
    messages: tuple[tuple[str, str], ...]
    split: str


@dataclass
class Corpus:
    """Everything one build draws from, with what loading left out and why."""

    answers: list[SourceAnswer] = field(default_factory=list)
    rots: list[SourceRoT] = field(default_factory=list)
    dialogues: list[GeneralDialogue] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)

    def extend(self, other: Corpus) -> None:
        self.answers += other.answers
        self.rots += other.rots
        self.dialogues += other.dialogues
        self.dropped.update(other.dropped)


def core_corpus(questions: list[MoralQuestion], source: str = "core") -> Corpus:
    """Pack questions: A = the disagreeing reference answer, A' = the agreeing one.

    The agreeing answer is written to follow the hidden RoT, which is what a bot says once it
    has adopted that RoT, so it is treated as the revised answer A' in every flow.
    """
    corpus = Corpus()
    for q in questions:
        common = {
            "source": source,
            "question_id": q.id,
            "question": q.question,
            "rot": q.rot,
            "split": q.split,
            "other_questions": (*q.paraphrases, q.related_question),
        }
        corpus.answers.append(
            SourceAnswer(answer=q.disagree_answer, stance="disagree", revised=False, **common)
        )
        corpus.answers.append(
            SourceAnswer(answer=q.agree_answer, stance="agree", revised=True, **common)
        )
        if q.related_answer:
            # The related question shares the RoT, so its reference answer is the A_new that
            # RIL needs (and one more agreeing answer for MA/ME).
            corpus.answers.append(
                SourceAnswer(
                    answer=q.related_answer,
                    stance="agree",
                    revised=True,
                    **{
                        **common,
                        "question_id": f"{q.id}:related",
                        "question": q.related_question,
                        "other_questions": (q.question, *q.paraphrases),
                    },
                )
            )
        corpus.rots.append(SourceRoT(source, q.id, q.rot, q.split))
    return corpus


def mic_corpus(rows: list[MicRow], path: Path, source: str = "mic") -> Corpus:
    """MIC rows as original answers with their `A_agrees` stance; rows sharing a question text
    share a question id (file stem and the line of its first row)."""
    corpus = Corpus()
    ids: dict[str, str] = {}
    for row in rows:
        qid = ids.setdefault(normalise(row.question), f"{path.stem}:{row.line}")
        corpus.answers.append(
            SourceAnswer(
                source=source,
                question_id=qid,
                question=row.question,
                answer=row.answer,
                rot=row.rot,
                stance=row.label,
                revised=False,
                split=row.split,
            )
        )
        corpus.rots.append(SourceRoT(source, qid, row.rot, row.split))
    return corpus


def social_chem_corpus(rows: list[SocialChemRow], source: str = "social_chem") -> Corpus:
    """Social-Chem-101 RoTs for PT (it has no question-answer pairs).

    Rows marked `rot-bad` (confusing or not splittable into judgment and action) and rows of the
    dev-extra/test-extra/analysis/none splits (re-annotations of RoTs already in dev/test) are
    left out and counted.
    """
    corpus = Corpus()
    for row in rows:
        if row.rot_bad:
            corpus.dropped[f"{source}: rot-bad RoT"] += 1
        elif row.split not in SPLITS:
            corpus.dropped[f"{source}: split {row.split!r} (not train/dev/test)"] += 1
        else:
            corpus.rots.append(SourceRoT(source, row.rot_id, row.rot, row.split))
    return corpus


def load_general_dialogues(path: str | Path, source: str = "gd") -> list[GeneralDialogue]:
    """A JSONL file of `{"messages": [{"role", "content"}, ...], "split"?: ...}` chats.

    Roles must be user/assistant and the last message the assistant's (the turn trained on);
    `split` defaults to train. Errors name the file, line and field.
    """
    path = Path(path)
    out: list[GeneralDialogue] = []
    for number, line in read_utf8_lines(Collector(path)):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioLoadError(path, where, None, f"invalid JSON ({exc.msg})") from None
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ScenarioLoadError(path, where, "messages", "must be a list of messages")
        split = data.get("split", "train")
        if split not in SPLITS:
            raise ScenarioLoadError(
                path, where, "split", f"must be one of {', '.join(SPLITS)}, got {split!r}"
            )
        messages: list[tuple[str, str]] = []
        for i, message in enumerate(data["messages"]):
            name = f"messages[{i}]"
            if not isinstance(message, dict):
                raise ScenarioLoadError(path, where, name, "must be an object")
            role, content = message.get("role"), message.get("content")
            if role not in ROLES:
                raise ScenarioLoadError(
                    path, where, f"{name}.role", f"must be user or assistant, got {role!r}"
                )
            if not isinstance(content, str) or not content.strip():
                raise ScenarioLoadError(
                    path, where, f"{name}.content", "must be a non-empty string"
                )
            messages.append((role, content.strip()))
        if not messages or messages[-1][0] != "assistant":
            raise ScenarioLoadError(
                path, where, "messages", "must end with an assistant message (the trained turn)"
            )
        out.append(GeneralDialogue(source, f"{path.stem}:{number}", tuple(messages), split))
    return out


def drop_split_leaks(corpus: Corpus) -> Corpus:
    """Keep each question and RoT in one split only: test claims first, then dev, then train."""
    kept = Corpus(dialogues=list(corpus.dialogues), dropped=Counter(corpus.dropped))
    claimed: dict[str, str] = {}
    for split in SPLIT_PRIORITY:
        records: list[SourceAnswer | SourceRoT] = [
            r for r in (*corpus.answers, *corpus.rots) if r.split == split
        ]
        mine: set[str] = set()
        for record in records:
            owners = {claimed[k] for k in record.leak_keys() if k in claimed}
            if owners:
                kind = "answer" if isinstance(record, SourceAnswer) else "RoT"
                kept.dropped[
                    f"{record.source}: {split} {kind} shares a question or RoT with "
                    f"{'/'.join(sorted(owners))}"
                ] += 1
                continue
            mine |= record.leak_keys()
            if isinstance(record, SourceAnswer):
                kept.answers.append(record)
            else:
                kept.rots.append(record)
        claimed.update(dict.fromkeys(mine, split))
    order = {id(r): i for i, r in enumerate((*corpus.answers, *corpus.rots))}
    kept.answers.sort(key=lambda r: order[id(r)])
    kept.rots.sort(key=lambda r: order[id(r)])
    return kept
