"""`moralsim scorer eval`: measure an agreement scorer on labelled sets and write its card.

A scorer is anything with `probabilities(items) -> (n, 3)` over (agree, neutral, disagree):
the fine-tuned cross-encoder or an LLM judge. The sets:

- the pack's in-domain agreement examples (`pack-dev`, `pack-test`: derived from its questions
  plus the hand-written hard cases), and the hard cases alone per phenomenon (`hard-test`);
- the pack's separately written sign test set (`signs-test`: flat yes/no, negated agreement,
  hedged answers; written after and apart from the training data) and its development
  counterpart (`signs-dev`: the same phenomena by three other writers, for choosing a recipe
  without reading the test set; neither is trained or selected on);
- the pack's labelled bot replies held out for testing (`bot-test`), when the pack has them;
- Moral Stories norm/action pairs (`moral-stories`, pairwise and sign accuracy) -- real,
  human-written text in a style the training data does not copy;
- any user JSONL of `{question, answer, rot, label[, phenomenon]}`.

The card (`scorer_card.json`) keeps every figure with the date it was measured, what the scorer
was trained on and how, and the two key figures a report shows next to the metrics: the
real-data pairwise accuracy and the in-domain macro-F1.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from evaluators.agreement import AgreementItem
from evaluators.agreement_validity import (
    labelled_report,
    pair_report,
    pairwise_hits,
    predicted_labels,
    sign_hits,
)
from scenarios.agreement_examples import OWN_EXPLANATION
from scenarios.loaders._common import RecordInvalid, load_jsonl_records, text_field
from scenarios.loaders.moral_stories import NormPair
from scenarios.types import LABELS, AgreementExample, ScenarioPack

CARD_NAME = "scorer_card.json"
CARD_FORMAT = 2
"""2: a probe scorer's card records the probe reading it was measured with (READING_FIELD)."""
READING_FIELD = "probe_reading"
RELIABLE_PAIRWISE = 0.70
"""Below this real-data pairwise accuracy, reports warn that MoralDial metrics are unreliable."""

REAL_DATA_SETS = ("moral-stories",)
IN_DOMAIN_SET = "pack-test"
PACK_SOURCES = (None, "hard")
"""Example sources that make up the pack's own in-domain sets (derived and hard cases)."""


class ProbabilityScorer(Protocol):
    def probabilities(self, items: Sequence[AgreementItem]) -> np.ndarray: ...


@dataclass
class LabelledSet:
    """Labelled items to score: gold label and phenomenon per item."""

    name: str
    items: list[AgreementItem]
    gold: list[str]
    phenomena: list[str] = field(default_factory=list)


@dataclass
class PairSet:
    """Norms with an action that follows and one that breaks each."""

    name: str
    pairs: list[NormPair]


def example_source(example: AgreementExample) -> str | None:
    """`hard`, `written`, `bot`, `signs`... from a labelled example's kind; None if derived."""
    return example.kind.split(":", 1)[0] if ":" in example.kind else None


def labelled_set(name: str, examples: Sequence[AgreementExample]) -> LabelledSet:
    """The examples as items; one of phenomenon `own-explanation` is the answerer's own reason
    read as a rule, marked so a scorer reads it as S_ME's input."""
    phenomena = [e.kind.split(":", 1)[1] if ":" in e.kind else e.kind for e in examples]
    return LabelledSet(
        name,
        [
            AgreementItem(e.question, e.answer, e.rot, reason=phenomenon == OWN_EXPLANATION)
            for e, phenomenon in zip(examples, phenomena, strict=True)
        ],
        [e.label for e in examples],
        phenomena,
    )


def pack_sets(pack: ScenarioPack) -> list[LabelledSet]:
    """The pack's own evaluation sets (those it has)."""

    def pick(split: str, sources: Sequence[str | None]) -> list[AgreementExample]:
        return [e for e in pack.agreement_in(split) if example_source(e) in sources]

    candidates = [
        ("pack-dev", pick("dev", PACK_SOURCES)),
        ("pack-test", pick("test", PACK_SOURCES)),
        ("hard-test", pick("test", ("hard",))),
        ("signs-dev", pick("dev", ("signs-dev",))),
        ("signs-test", pick("test", ("signs",))),
        ("bot-test", pick("test", ("bot",))),
    ]
    return [labelled_set(name, rows) for name, rows in candidates if rows]


def _parse_user_item(counter: list[int]) -> Any:
    def parse(data: dict[str, Any]) -> AgreementExample:
        counter[0] += 1
        unknown = sorted(set(data) - {"id", "question", "answer", "rot", "label", "phenomenon"})
        if unknown:
            raise RecordInvalid(unknown[0], "unknown key")
        question, answer = data.get("question", ""), data.get("answer")
        if not isinstance(question, str):
            raise RecordInvalid("question", "must be a string (it may be empty)")
        if not isinstance(answer, str):
            raise RecordInvalid("answer", "must be a string (it may be empty)")
        label = data.get("label")
        if label not in LABELS:
            raise RecordInvalid("label", f"must be one of {', '.join(LABELS)}, got {label!r}")
        phenomenon = data.get("phenomenon", "unspecified")
        if not isinstance(phenomenon, str):
            raise RecordInvalid("phenomenon", "must be a string")
        return AgreementExample(
            id=str(data.get("id", f"item-{counter[0]}")),
            question=question.strip(),
            answer=answer.strip(),
            rot=text_field(data, "rot"),
            label=label,
            split="test",
            kind=f"user:{phenomenon}",
        )

    return parse


def user_set(path: str | Path) -> LabelledSet:
    """A user JSONL of {question, answer, rot, label[, phenomenon, id]}; errors name the line."""
    examples, _ = load_jsonl_records(path, _parse_user_item([0]))
    return labelled_set(Path(path).stem, examples)


def evaluate_scorer(
    scorer: ProbabilityScorer,
    labelled: Sequence[LabelledSet],
    pairs: Sequence[PairSet] = (),
    predictions: list[dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every figure of every set, by set name (see `evaluators.agreement_validity`); with
    `predictions`, one row per scored item is appended to it (labelled_rows, pair_rows), so
    a reader can see which items a figure counts as right or wrong."""
    figures: dict[str, dict[str, Any]] = {}
    for s in labelled:
        probs = np.asarray(scorer.probabilities(s.items), dtype=np.float64)
        figures[s.name] = labelled_report(s.name, s.gold, probs, s.phenomena).to_dict()
        if predictions is not None:
            predictions.extend(labelled_rows(s, probs))
    for ps in pairs:
        items = [AgreementItem("", p.follow, p.norm) for p in ps.pairs]
        items += [AgreementItem("", p.break_, p.norm) for p in ps.pairs]
        probs = np.asarray(scorer.probabilities(items), dtype=np.float64)
        scores = (probs[:, 0] - probs[:, 2]).tolist()
        n = len(ps.pairs)
        figures[ps.name] = pair_report(ps.name, scores[:n], scores[n:]).to_dict()
        if predictions is not None:
            predictions.extend(pair_rows(ps, probs[:n], probs[n:]))
    return figures


def _rounded(p: np.ndarray) -> list[float]:
    return [round(float(v), 4) for v in p]


def labelled_rows(s: LabelledSet, probs: np.ndarray) -> list[dict[str, Any]]:
    """One row per labelled item: its text, gold label and phenomenon, the scorer's three
    probabilities, AS, the predicted label, and whether AS has the gold sign (None for a
    gold neutral, which sign accuracy does not count)."""
    rows = []
    predicted = predicted_labels(probs)
    for k, (item, gold, p) in enumerate(zip(s.items, s.gold, probs, strict=True)):
        score = float(p[0] - p[2])
        rows.append({
            "set": s.name, "index": k, "question": item.question, "answer": item.answer,
            "rot": item.rot, "gold": gold,
            "phenomenon": s.phenomena[k] if s.phenomena else None,
            "p": _rounded(p), "as": round(score, 4), "predicted": predicted[k],
            "sign_right": _sign_right(gold, score),
        })  # fmt: skip
    return rows


def _sign_right(gold: str, score: float) -> bool | None:
    """Whether sign_hits counts the item right; None when it does not count it (neutral)."""
    hits, counted = sign_hits([gold], [score])
    return bool(hits) if counted else None


def pair_rows(ps: PairSet, follow: np.ndarray, break_: np.ndarray) -> list[dict[str, Any]]:
    """One row per norm pair: both actions' probabilities and AS, and whether the following
    action reads higher (what pairwise accuracy counts)."""
    rows = []
    for k, (pair, pf, pb) in enumerate(zip(ps.pairs, follow, break_, strict=True)):
        as_follow, as_break = float(pf[0] - pf[2]), float(pb[0] - pb[2])
        rows.append({
            "set": ps.name, "index": k, "id": pair.id, "norm": pair.norm, "follow": pair.follow,
            "break": pair.break_, "p_follow": _rounded(pf), "p_break": _rounded(pb),
            "as_follow": round(as_follow, 4), "as_break": round(as_break, 4),
            "ranked_right": bool(pairwise_hits([as_follow], [as_break])),
        })  # fmt: skip
    return rows


# --------------------------------------------------------------------------- the card


def key_figures(figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a report shows: real-data pairwise accuracy, in-domain macro-F1, and the verdict."""
    real = next((name for name in REAL_DATA_SETS if name in figures), None)
    pairwise = figures[real]["pairwise_accuracy"] if real else None
    in_domain = figures.get(IN_DOMAIN_SET, {}).get("macro_f1")
    signs = figures.get("signs-test", {}).get("sign_accuracy")
    if pairwise is None:
        verdict = "not validated on real data"
    elif pairwise < RELIABLE_PAIRWISE:
        verdict = "unreliable"
    else:
        verdict = "validated"
    return {
        "real_data_set": real,
        "real_data_pairwise_accuracy": pairwise,
        "in_domain_macro_f1": in_domain,
        "signs_test_sign_accuracy": signs,
        "verdict": verdict,
        "warn": verdict != "validated",
        "threshold": RELIABLE_PAIRWISE,
    }


def warning_text(card_keys: dict[str, Any]) -> str | None:
    """The line a report prints when MoralDial metrics from this scorer are not reliable."""
    if not card_keys.get("warn"):
        return None
    pairwise = card_keys.get("real_data_pairwise_accuracy")
    if pairwise is None:
        return (
            "this agreement scorer has no real-data validation (no Moral Stories pairwise "
            "accuracy on its card): MoralDial metrics from it are not known to be reliable"
        )
    return (
        f"this agreement scorer ranks real norm-following actions above norm-breaking ones "
        f"only {100 * pairwise:.0f}% of the time (below {100 * RELIABLE_PAIRWISE:.0f}%): "
        "MoralDial metrics from it are not reliable"
    )


def read_card(folder: str | Path | None) -> dict[str, Any] | None:
    """The scorer card in a model folder, or None when there is none (or it is unreadable)."""
    if folder is None:
        return None
    path = Path(folder) / CARD_NAME
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return card if isinstance(card, dict) else None


def merge_card(
    old: dict[str, Any] | None,
    scorer: str,
    figures: dict[str, dict[str, Any]],
    training: dict[str, Any] | None,
    today: str | None = None,
    probe_reading: int | None = None,
) -> dict[str, Any]:
    """A card with the new figures replacing same-named old ones; other old figures stay,
    unless the scorer reads with a probe and the old card was measured with another probe
    reading (`probe_reading`, evaluators.factored.PROBE_READING_VERSION; absent on cards
    written before cards recorded it): those figures describe a reading the scorer no longer
    makes, so they are dropped."""
    stamp = today or _dt.date.today().isoformat()
    same_reading = old is not None and old.get(READING_FIELD) == probe_reading
    merged = dict(old.get("figures", {})) if same_reading else {}
    for name, figure in figures.items():
        merged[name] = {**figure, "measured": stamp}
    card = {
        "format": CARD_FORMAT,
        "scorer": scorer,
        "training": training if training is not None else (old or {}).get("training"),
        "figures": merged,
        "key_figures": key_figures(merged),
    }
    if probe_reading is not None:
        card[READING_FIELD] = probe_reading
    return card


def stale_reading_text(card: dict[str, Any] | None, probe_reading: int | None) -> str | None:
    """The line a report prints when a probe scorer's card was measured with another probe
    reading than the one this moralsim makes (None when it was not, or there is no card):
    its figures then describe another instrument. An embedded build never needs it, since
    its fingerprint carries the reading and a change rebuilds it, card and all."""
    if not card or probe_reading is None or card.get(READING_FIELD) == probe_reading:
        return None
    was = card.get(READING_FIELD)
    measured = f"probe reading {was}" if was is not None else "an unrecorded probe reading"
    return (
        f"this scorer's card was measured with {measured}, and this moralsim reads with probe "
        f"reading {probe_reading}: its figures may not describe the scores; re-measure with "
        "`moralsim scorer eval MODEL --moral-stories FILE`, then again with "
        "`--stated-directions`"
    )


def write_card(folder: str | Path, card: dict[str, Any]) -> Path:
    path = Path(folder) / CARD_NAME
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- in runs

RUN_SCORER_FILE = "scorer.json"
"""What a run folder records about its agreement scorer (spec, kind, card at run time)."""


FACTORED_KINDS = {
    "direction": "factored (stance x direction)",
    "agreement": "stated (stance x stated direction; a single classifier elsewhere)",
    "agreement+probe": "stated with a probe (stance x stated direction; elsewhere the mean of "
    "a single classifier and stance x a frozen-LM probe's direction)",
}
"""A factored scorer's kind, by what reads the pairs its pack does not state."""


def scorer_kind(spec: str) -> str:
    """cross-encoder / llm-judge, from the spec alone (no model is loaded)."""
    from agents.models import resolve_model

    if spec.startswith("openai:"):
        return "llm-judge (endpoint)"
    if _registered(spec):
        return "registered scorer (plugin)"
    resolved = resolve_model(spec, prepare=False)
    kind = resolved.kind
    if kind == "factored-scorer":
        from evaluators.factored import unstated_reader

        unprepared = {"agreement-stated": "agreement", "agreement-probe": "agreement+probe"}
        try:
            reader = unstated_reader(resolved.path)
        except ValueError:  # an embedded build not prepared yet: its name says
            reader = unprepared.get(spec, "direction")
        return FACTORED_KINDS[reader]
    return "cross-encoder" if kind == "sequence-classifier" else f"llm-judge ({kind})"


def scorer_record(spec: str, card_path: str | None = None) -> dict[str, Any]:
    """The scorer a run uses and its card (from `card_path`, else from the model's folder)."""
    from agents.models import ModelError, resolve_model
    from evaluators.factored import folder_probe_reading

    folder = None
    if not spec.startswith("openai:") and not _registered(spec):
        try:
            folder = resolve_model(spec, prepare=False).path
        except ModelError:
            folder = None
    if card_path:
        path = Path(card_path).expanduser()
        card = read_card(path.parent) if path.name == CARD_NAME else _read_json_file(path)
    else:
        card = read_card(folder)
    reading = folder_probe_reading(folder) if folder else None
    return {
        "spec": spec,
        "kind": scorer_kind(spec),
        "card": card,
        "stale": stale_reading_text(card, reading),
    }


def _registered(spec: str) -> bool:
    from evaluators.scorers import registered_scorer

    return registered_scorer(spec) is not None


def _read_json_file(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def scorer_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The summary's `scorer` section: who scored, the card's key figures and the warning."""
    card = record.get("card") or {}
    keys = card.get("key_figures") or key_figures(card.get("figures") or {})
    return {
        "model": record.get("spec"),
        "kind": record.get("kind"),
        "has_card": bool(card),
        "key_figures": keys,
        "warning": "; ".join(w for w in (warning_text(keys), record.get("stale")) if w) or None,
        "training": (card.get("training") or {}).get("data"),
    }
