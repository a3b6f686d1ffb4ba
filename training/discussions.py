"""MoralDial discussion flows as a conversational training set (docs/methods.md §2).

Notation: Q question, A answer, A' revised answer, R RoT, W why-phrase, Q_new another question
with the same RoT. Each row's LAST message is the assistant turn its flow models; earlier
assistant turns are context only (the MR context holds an answer that breaks the RoT).

- MA  Q -> A. Answers that disagree with their RoT are dropped, and so are revised answers (A')
      whose RoT lacks high consensus (controversial or below, or consensus unknown): a bot should
      not learn to open with a one-sided stance on a contested norm.
- ME  Q -> A' -> W -> R. The bot states the RoT its answer follows.
- MR  Q -> A -> (but-phrase + R) -> (sorry-phrase + A'), only when A disagrees with R and R has
      high consensus (a bot should not learn to cave in on contested norms).
- RIL an ME or MR row (chosen at random) -> (base-phrase + Q_new) -> A_new, where Q_new is a
      different question of the same split whose reference answer A_new follows the same RoT.
- PT  `{judgment} {action} {when/if} {situation}` (see training.pt_statements). A PT row is a
      single assistant message: the trainer then computes the loss on exactly the statement with
      an empty prompt, and the "last message is the modelled turn" rule holds for every row.
- GD  general chats from optional JSONL files, mixed in unchanged.

Where A and A' come from, per corpus (stances are the corpus's own labels, never a model's):
- core pack (MoralQuestion): A = disagree_answer (breaks the RoT), A' = agree_answer (follows
  it; written as what a bot says having adopted the RoT, so it counts as a revised answer:
  MA keeps it only on high-consensus RoTs). Q_new for RIL: another pack question whose RoT text
  is the same; a question's `related_question` with its `related_answer` (written to follow the
  RoT) is such a question, so the core pack gives RIL rows in both directions. A pack without
  related answers and with unique RoT texts gets no RIL rows, and the build report says why.
- MIC CSV: each row is an original answer with `A_agrees` (0 disagree, 1 neutral, 2 agree) for
  its RoT. MA keeps agree and neutral answers. For ME, A' is an answer to the same question
  labelled agree with the same RoT; for MR, A' is one such answer picked at random for each
  disagreeing A. RIL's A_new is an agreeing answer to another question with the same RoT.
- verdict answers (`verdicts: N`, training.verdict_answers): further direct questions of the
  pack's written corpus, answered with a verdict on the act and the RoT as its reason; MA only.
- Social-Chem-101: no questions or answers; PT only, recombined from rot-judgment, action and
  situation.
- PT from sources without those fields (core, MIC) uses the RoT text as written; the build
  report counts statements of each kind.

Splits: the source splits, minus records whose question or RoT also occurs in a held-out
split (see training.discussion_sources); the result is checked by `check_disjoint_splits`.
Randomness: each flow draws from its own generator seeded by (seed, flow), so adding or
removing one flow leaves the others' rows unchanged.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict, Features, List, Value

from scenarios.loaders import load_mic, load_social_chem
from scenarios.pack import load_pack
from scenarios.phrases import pick, pushback
from scenarios.types import SPLITS, MoralQuestion
from training.discussion_sources import (
    FLOWS,
    Corpus,
    Message,
    SourceAnswer,
    core_corpus,
    drop_split_leaks,
    load_general_dialogues,
    mic_corpus,
    normalise,
    social_chem_corpus,
)
from training.discussion_stats import discussion_stats, save_discussions, stats_table
from training.pt_statements import pt_statement
from training.verdict_answers import SOURCE as VERDICT_SOURCE
from training.verdict_answers import verdict_corpus

__all__ = [
    "FLOWS",
    "BuildReport",
    "DiscussionConfig",
    "DiscussionError",
    "build_discussions",
    "check_disjoint_splits",
    "discussion_stats",
    "save_discussions",
    "stats_table",
    "to_dataset",
]

HIGH_CONSENSUS = 4
"""MIC scale: 4 = most (75-90%) agree. Below that an RoT is controversial or worse."""

FEATURES = Features(
    {
        "messages": List({"role": Value("string"), "content": Value("string")}),
        "flow": Value("string"),
        "question_id": Value("string"),
        "source": Value("string"),
        "rot": Value("string"),
    }
)


class DiscussionError(ValueError):
    """A bad discussion config, or a built dataset that breaks the split rule."""


@dataclass
class DiscussionConfig:
    """What to build discussions from and how (every field is also a CLI option)."""

    flows: tuple[str, ...] = field(
        default=FLOWS, metadata={"help": "Flows to include: MA, ME, MR, RIL, PT, GD."}
    )
    pack: str | None = field(
        default="core", metadata={"help": "Scenario pack (name or folder); None for no pack."}
    )
    mic_files: tuple[str, ...] = field(default=(), metadata={"help": "MIC CSV files."})
    social_chem_files: tuple[str, ...] = field(
        default=(), metadata={"help": "Social-Chem-101 TSV/CSV files (PT only)."}
    )
    gd_files: tuple[str, ...] = field(
        default=(), metadata={"help": "General-dialogue JSONL files (messages format)."}
    )
    verdicts: int = field(
        default=0,
        metadata={
            "help": "Verdict answers from the pack's written corpus added as MA rows: N from "
            "its train split and N // 10 from its dev split (training.verdict_answers); they "
            "share max_per_flow with the pack's MA rows; 0: none."
        },
    )
    seed: int = field(default=0, metadata={"help": "Seed for phrases, pairings and PT forms."})
    max_per_flow: int | None = field(
        default=None, metadata={"help": "Most rows per flow and split (random subset); None: all."}
    )
    pt_include_situation_prob: float = field(
        default=0.5, metadata={"help": "Chance a PT statement keeps its situation clause."}
    )
    pt_swap_prob: float = field(
        default=0.5, metadata={"help": "Chance the situation clause is put first."}
    )

    def __post_init__(self) -> None:
        self.flows = tuple(f.strip().upper() for f in self.flows if f.strip())
        unknown = [f for f in self.flows if f not in FLOWS]
        if unknown or not self.flows:
            raise DiscussionError(
                f"flows: unknown {', '.join(unknown) or '(none given)'}; choose from "
                f"{', '.join(FLOWS)}"
            )
        for name in ("pt_include_situation_prob", "pt_swap_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise DiscussionError(f"{name}: must be in [0, 1], got {value}")
        if self.verdicts < 0:
            raise DiscussionError(f"verdicts: must be 0 or more, got {self.verdicts}")
        if self.verdicts and not self.pack:
            raise DiscussionError("verdicts: needs a pack (they come from its written corpus)")
        if self.verdicts and "MA" not in self.flows:
            raise DiscussionError("verdicts: they are MA rows; add MA to flows or set verdicts 0")
        if self.max_per_flow is not None and self.max_per_flow < 1:
            raise DiscussionError(f"max_per_flow: must be at least 1, got {self.max_per_flow}")


@dataclass
class BuildReport:
    """What a build left out (reason -> count) and how the PT statements were made."""

    dropped: Counter[str] = field(default_factory=Counter)
    pt_statements: Counter[str] = field(default_factory=Counter)
    capped: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: it would rebuild each Counter from its (key, count) pairs
        parts = {"dropped": self.dropped, "pt_statements": self.pt_statements}
        return {k: dict(sorted(v.items())) for k, v in (*parts.items(), ("capped", self.capped))}


@dataclass(frozen=True)
class Row:
    flow: str
    split: str
    source: str
    question_id: str
    rot: str
    messages: tuple[Message, ...]

    def as_record(self) -> dict[str, Any]:
        return {
            "messages": [dict(m) for m in self.messages],
            "flow": self.flow,
            "question_id": self.question_id,
            "source": self.source,
            "rot": self.rot,
        }


def _user(text: str) -> Message:
    return {"role": "user", "content": text}


def _bot(text: str) -> Message:
    return {"role": "assistant", "content": text}


def _row(flow: str, a: SourceAnswer, messages: list[Message]) -> Row:
    return Row(flow, a.split, a.source, a.question_id, a.rot.text, tuple(messages))


def _firm(a: SourceAnswer) -> bool:
    return a.rot.consensus is not None and a.rot.consensus >= HIGH_CONSENSUS


def _groups(answers: list[SourceAnswer]) -> dict[tuple[str, str, str], list[SourceAnswer]]:
    """Answers to one question judged against one RoT (insertion-ordered)."""
    groups: dict[tuple[str, str, str], list[SourceAnswer]] = defaultdict(list)
    for a in answers:
        groups[(a.source, a.question_id, normalise(a.rot.text))].append(a)
    return groups


def ma_rows(answers: list[SourceAnswer], dropped: Counter[str]) -> list[Row]:
    rows = []
    for a in answers:
        if a.stance == "disagree":
            dropped["MA: answer disagrees with its RoT"] += 1
        elif a.revised and not _firm(a):
            dropped["MA: revised answer on an RoT without high consensus"] += 1
        else:
            rows.append(_row("MA", a, [_user(a.question), _bot(a.answer)]))
    return rows


def me_rows(groups: dict[Any, list[SourceAnswer]], rng: random.Random) -> list[Row]:
    rows = []
    for group in groups.values():
        for a in group:
            if a.stance == "agree":
                messages = [_user(a.question), _bot(a.answer), _user(pick("why", rng))]
                rows.append(_row("ME", a, [*messages, _bot(a.rot.text)]))
    return rows


def mr_rows(
    groups: dict[Any, list[SourceAnswer]], rng: random.Random, dropped: Counter[str]
) -> list[Row]:
    rows = []
    for group in groups.values():
        revisions = [a for a in group if a.stance == "agree"]
        for a in (a for a in group if a.stance == "disagree"):
            if not _firm(a):
                dropped["MR: revision toward an RoT without high consensus"] += 1
            elif not revisions:
                dropped["MR: no answer following the RoT to revise to"] += 1
            else:
                revised = rng.choice(revisions)
                messages = [
                    _user(a.question),
                    _bot(a.answer),
                    _user(pushback(a.rot.text, rng)),
                    _bot(f"{pick('sorry', rng)} {revised.answer}"),
                ]
                rows.append(_row("MR", a, messages))
    return rows


def ril_rows(
    answers: list[SourceAnswer],
    contexts: list[Row],
    rng: random.Random,
    dropped: Counter[str],
) -> list[Row]:
    """One RIL row per question-RoT pair that has an ME or MR context and a Q_new."""
    by_rot: dict[tuple[str, str], list[SourceAnswer]] = defaultdict(list)
    for a in answers:
        if a.stance == "agree":
            by_rot[(a.split, normalise(a.rot.text))].append(a)
    by_pair: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in contexts:
        by_pair[(row.source, row.question_id, normalise(row.rot))].append(row)
    rows = []
    for (source, qid, rot_key), options in by_pair.items():
        question = options[0].messages[0]["content"]
        candidates = [
            a
            for a in by_rot[(options[0].split, rot_key)]
            if (a.source, a.question_id) != (source, qid)
            and normalise(a.question) != normalise(question)
        ]
        if not candidates:
            dropped["RIL: no other question with a reference answer shares the RoT"] += 1
            continue
        context, new = rng.choice(options), rng.choice(candidates)
        messages = [*context.messages, _user(pick("base", rng) + new.question), _bot(new.answer)]
        rows.append(Row("RIL", context.split, source, qid, context.rot, tuple(messages)))
    return rows


def pt_rows(corpus: Corpus, config: DiscussionConfig, report: BuildReport) -> list[Row]:
    rng = random.Random(f"{config.seed}:PT")
    seen: set[str] = set()
    rows = []
    for record in corpus.rots:
        key = normalise(record.rot.text)
        if key in seen:
            report.dropped["PT: RoT already stated"] += 1
            continue
        seen.add(key)
        statement = pt_statement(
            record.rot,
            rng,
            include_situation_prob=config.pt_include_situation_prob,
            swap_prob=config.pt_swap_prob,
        )
        how = "judgment+action(+situation)" if statement.from_fields else "RoT text as written"
        report.pt_statements[f"{record.source}: {how}"] += 1
        rows.append(
            Row(
                "PT",
                record.split,
                record.source,
                record.question_id,
                record.rot.text,
                (_bot(statement.text),),
            )
        )
    return rows


def load_corpus(config: DiscussionConfig, questions: list[MoralQuestion] | None = None) -> Corpus:
    """The configured sources, before the split-leak guard; `questions` replaces the pack."""
    corpus = Corpus()
    if questions is not None:
        corpus.extend(core_corpus(list(questions), source="questions"))
    elif config.pack:
        pack = load_pack(config.pack).pack
        corpus.extend(core_corpus(pack.questions, source=pack.name))
        corpus.extend(verdict_corpus(pack, config.verdicts, config.seed))
    for name in config.mic_files:
        rows, _ = load_mic(name)
        corpus.extend(mic_corpus(rows, Path(name)))
    for name in config.social_chem_files:
        rows_sc, _ = load_social_chem(name)
        corpus.extend(social_chem_corpus(rows_sc))
    for name in config.gd_files:
        corpus.dialogues += load_general_dialogues(name)
    return corpus


def _cap(rows: list[Row], config: DiscussionConfig, report: BuildReport) -> list[Row]:
    if config.max_per_flow is None:
        return rows
    by_cell: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_cell[(row.flow, row.split)].append(i)
    keep: set[int] = set()
    for (flow, split), indices in sorted(by_cell.items()):
        if len(indices) > config.max_per_flow:
            rng = random.Random(f"{config.seed}:cap:{flow}:{split}")
            indices = rng.sample(indices, config.max_per_flow)
            report.capped[f"{flow}/{split}"] = len(by_cell[(flow, split)]) - len(indices)
        keep.update(indices)
    return [row for i, row in enumerate(rows) if i in keep]


def build_discussions(
    config: DiscussionConfig,
    *,
    questions: list[MoralQuestion] | None = None,
    report: BuildReport | None = None,
) -> DatasetDict:
    """Build the flows in `config.flows` as a train/dev/test DatasetDict.

    Args:
        config: sources, flows, seed and caps.
        questions: MoralQuestions to use instead of `config.pack` (source "questions").
        report: filled in with what was dropped and how PT statements were made.

    Raises:
        ScenarioLoadError: a corpus file has a bad record (names file, line and field).
        DiscussionError: the built splits share a question or RoT (should never happen).
    """
    report = report if report is not None else BuildReport()
    corpus = drop_split_leaks(load_corpus(config, questions))
    report.dropped.update(corpus.dropped)
    # Verdict answers already carry their RoT as the reason: MA rows only (see verdict_answers).
    discussed = [a for a in corpus.answers if a.source != VERDICT_SOURCE]
    groups = _groups(discussed)
    drops: dict[str, Counter[str]] = defaultdict(Counter)
    built: dict[str, list[Row]] = {
        "MA": ma_rows(corpus.answers, drops["MA"]),
        "ME": me_rows(groups, random.Random(f"{config.seed}:ME")),
        "MR": mr_rows(groups, random.Random(f"{config.seed}:MR"), drops["MR"]),
    }
    built["RIL"] = ril_rows(
        discussed,
        built["ME"] + built["MR"],
        random.Random(f"{config.seed}:RIL"),
        drops["RIL"],
    )
    built["PT"] = pt_rows(corpus, config, report) if "PT" in config.flows else []
    built["GD"] = [
        Row("GD", d.split, d.source, d.dialogue_id, "", tuple(_msg(r, c) for r, c in d.messages))
        for d in corpus.dialogues
    ]
    rows: list[Row] = []
    for flow in config.flows:
        rows += built[flow]
        report.dropped.update(drops.get(flow, Counter()))
    rows = _cap(rows, config, report)
    dataset = DatasetDict(
        {split: to_dataset([r.as_record() for r in rows if r.split == split]) for split in SPLITS}
    )
    check_disjoint_splits(dataset)
    return dataset


def to_dataset(records: list[dict[str, Any]]) -> Dataset:
    """Rows in the discussion schema as a Dataset (column-wise, so an empty split keeps it)."""
    return Dataset.from_dict({k: [r[k] for r in records] for k in FEATURES}, features=FEATURES)


def _msg(role: str, content: str) -> Message:
    return {"role": role, "content": content}


def check_disjoint_splits(dataset: DatasetDict) -> None:
    """Raise unless no question id and no RoT is shared between any two splits."""
    seen: dict[str, dict[str, set[str]]] = {}
    for split, part in dataset.items():
        seen[split] = {
            "question": {
                f"{s}:{q}" for s, q in zip(part["source"], part["question_id"], strict=True)
            },
            "RoT": {normalise(r) for r in part["rot"] if r},
        }
    names = list(seen)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for kind in ("question", "RoT"):
                shared = seen[a][kind] & seen[b][kind]
                if shared:
                    example = sorted(shared)[0]
                    raise DiscussionError(
                        f"{len(shared)} {kind}(s) shared between {a} and {b}, e.g. {example!r}"
                    )
