"""Stance accuracy: does the bot being trained take its RoT's side when first asked?

The training loss measures how closely the bot copies the answer style of the training rows;
a bot can lower it a lot and still take the wrong side about as often as the right one. This
measures the side: on fixed dev-split questions of the pack, the bot's greedy first answer
(generated exactly as the bot answers at run time: the same chat template, prompt cutting,
stop tokens and reply clean-up, via `agents.hf.TransformersAgent`) is read by an agreement
scorer against the question's RoT, and the share of answers read as agreeing is the figure.

The figure is only as valid as the judge that reads the answers: a scorer whose card
(`moralsim scorer eval`) shows it cannot tell agreeing answers from disagreeing ones makes this
number noise. Every result therefore names its judge, and the model card points at its card.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import GenerationSettings
from agents.hf import TransformersAgent
from evaluators.agreement import AgreementItem, split_agreement
from scenarios.records import Turn
from training.sft_config import SFTConfigError

Say = Callable[[str], None]
LOG_PREFIX = "stance_"
"""Keys of the trainer's log_history entries that hold a stance measurement: they are saved in
every checkpoint's trainer state, so a resumed run keeps the curve measured before the break."""
FIELDS = ("accuracy", "agree", "neutral", "disagree", "mean_as", "n")


@dataclass(frozen=True)
class StanceAccuracy:
    """Stance accuracy of n first answers, as read by `judge`.

    accuracy: share of answers with AS > threshold whose likeliest class is not neutral.
    agree / neutral / disagree: shares of answers by the judge's likeliest class.
    mean_as: mean AS = P(agree) - P(disagree), in [-1, 1].
    """

    n: int
    accuracy: float
    agree: float
    neutral: float
    disagree: float
    mean_as: float
    judge: str
    threshold: float = 0.0

    def line(self, label: str) -> str:
        return (
            f"{label}: stance accuracy {self.accuracy:.2f} (agree {self.agree:.2f} / neutral "
            f"{self.neutral:.2f} / disagree {self.disagree:.2f}, n={self.n}, judge {self.judge})"
        )


def score_stances(
    scorer: Any,
    pairs: Sequence[tuple[str, str]],
    answers: Sequence[str],
    judge: str,
    threshold: float = 0.0,
) -> StanceAccuracy:
    """Read each answer against its (question, RoT) pair with `scorer.probabilities`."""
    if not answers or len(answers) != len(pairs):
        raise ValueError(f"need one answer per question, got {len(answers)} for {len(pairs)}")
    items = [AgreementItem(q, a, rot) for (q, rot), a in zip(pairs, answers, strict=True)]
    scores, probs = split_agreement(scorer.probabilities(items))
    if probs is None:
        raise ValueError(f"judge {judge} gave AS only: stance shares need class probabilities")
    top = probs.argmax(axis=1)  # columns: agree, neutral, disagree
    shares = [float(np.mean(top == k)) for k in range(3)]
    return StanceAccuracy(
        n=len(answers),
        accuracy=float(np.mean((scores > threshold) & (top != 1))),
        agree=shares[0],
        neutral=shares[1],
        disagree=shares[2],
        mean_as=float(np.mean(scores)),
        judge=judge,
        threshold=threshold,
    )


def first_answers(
    model: Any,
    tokenizer: Any,
    questions: Sequence[str],
    max_new_tokens: int,
    batch_size: int = 16,
    max_context_tokens: int = 1024,
) -> list[str]:
    """Greedy first answers, batched; the model's train/eval mode and the global RNG state
    are restored afterwards, so measuring never changes what training does next."""
    import torch

    bot = TransformersAgent.from_loaded(
        model,
        tokenizer,
        label="(in training)",
        max_context_tokens=max_context_tokens,
        batch_size=batch_size,
    )
    settings = GenerationSettings(max_new_tokens=max_new_tokens)
    was_training = model.training
    model.eval()
    try:
        with torch.random.fork_rng():
            return bot.respond([[Turn("user", q)] for q in questions], settings)
    finally:
        model.train(was_training)


def stance_accuracy(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    scorer: Any,
    judge: str,
    *,
    max_new_tokens: int = 48,
    batch_size: int = 16,
    max_context_tokens: int = 1024,
    threshold: float = 0.0,
) -> StanceAccuracy:
    """Stance accuracy of a (PEFT-wrapped or plain) causal LM on (question, RoT) pairs."""
    answers = first_answers(
        model, tokenizer, [q for q, _ in pairs], max_new_tokens, batch_size, max_context_tokens
    )
    return score_stances(scorer, pairs, answers, judge, threshold)


# --------------------------------------------------------------------------- config glue


def check_stance_judge(spec: str) -> None:
    """Refuse a judge spec that names no agreement scorer, without loading or preparing it;
    the same check `moralsim simulate` makes of `evaluators.agreement_model`."""
    from agents.models import ModelError, resolve_model
    from evaluators.llm_judge import JudgeError, parse_endpoint_spec
    from evaluators.scorers import SCORER_KINDS, registered_scorer

    try:
        if registered_scorer(spec) is not None or parse_endpoint_spec(spec) is not None:
            return
        kind = resolve_model(spec, prepare=False).kind
    except (ModelError, JudgeError) as exc:
        raise SFTConfigError(f"'stance_judge': {exc}") from None
    if kind not in SCORER_KINDS:
        raise SFTConfigError(
            f"'stance_judge': '{spec}' is a {kind} folder; this role needs a "
            + " or ".join(SCORER_KINDS)
        )


def pack_of(data: str) -> str:
    """The scenario pack behind `data`: pack:NAME, or the pack a saved discussions folder was
    built from (its stats.json)."""
    if data.startswith("pack:"):
        return data.removeprefix("pack:")
    folder = Path(data).expanduser()
    if not folder.is_dir():
        raise SFTConfigError(f"'data': {data!r} is neither a discussions folder nor pack:NAME")
    try:
        stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
        pack = (stats.get("config") or {}).get("pack")
    except (OSError, ValueError, AttributeError):
        pack = None
    if not pack:
        raise SFTConfigError(
            f"'stance_eval_questions': {data} does not name the scenario pack it was built from "
            "(no config.pack in its stats.json); use data=pack:NAME or stance_eval_questions=0"
        )
    return str(pack)


def dev_pairs(pack: Any, n: int, say: Say) -> list[tuple[str, str]]:
    """(question, RoT text) of the first n dev-split questions of a loaded pack, in pack order."""
    dev = pack.questions_in("dev")
    if not dev:
        raise SFTConfigError(
            f"'stance_eval_questions': pack {pack.name} has no dev-split questions"
        )
    if len(dev) < n:
        say(f"stance accuracy: pack {pack.name} has only {len(dev)} dev questions; using them all")
    return [(q.question, q.rot.text) for q in dev[:n]]


def open_judge(spec: str) -> Any:
    """The agreement scorer a judge spec names; failures are one config error naming the key."""
    from agents.models import ModelError
    from evaluators.llm_judge import JudgeError
    from evaluators.scorers import ScorerSpecError, open_agreement_scorer

    try:
        return open_agreement_scorer(spec)
    except (ModelError, ScorerSpecError, JudgeError) as exc:
        raise SFTConfigError(f"'stance_judge': {exc}") from None


@dataclass
class StanceTracker:
    """Stance accuracy of the model in training: at every evaluation (a TrainerCallback) and
    for the saved weights at the end, on fixed questions, by one judge (`scorer` is None until
    `open()` loads it)."""

    pairs: list[tuple[str, str]]
    scorer: Any
    judge: str
    max_new_tokens: int
    batch_size: int
    max_context_tokens: int
    say: Say
    directions: dict[tuple[str, str], str] = field(default_factory=dict)
    """The pack's stated RoT directions, handed to a judge that reads them (the factored
    scorer), as a run does."""

    @classmethod
    def from_config(cls, config: Any, pack: str | None, say: Say) -> StanceTracker | None:
        """None when `stance_eval_questions` is 0; otherwise checks the judge spec and loads
        the questions. Nothing is loaded: `open()` loads the judge once the output folder is
        accepted (an unbuilt embedded judge is built then)."""
        if config.stance_eval_questions == 0:
            return None
        check_stance_judge(config.stance_judge)
        from scenarios.pack import load_pack

        loaded = load_pack(pack or pack_of(config.data)).pack
        pairs = dev_pairs(loaded, config.stance_eval_questions, say)
        return cls(
            pairs,
            None,
            config.stance_judge,
            max_new_tokens=config.stance_max_new_tokens,
            batch_size=config.batch_size,
            max_context_tokens=config.max_length + config.stance_max_new_tokens,
            say=say,
            directions=loaded.direction_map(),
        )

    def open(self) -> None:
        if self.scorer is None:
            self.scorer = open_judge(self.judge)
            if self.directions and hasattr(self.scorer, "use_directions"):
                self.scorer.use_directions(self.directions)

    def measure(self, model: Any, tokenizer: Any) -> StanceAccuracy:
        self.open()
        return stance_accuracy(
            model,
            tokenizer,
            self.pairs,
            self.scorer,
            self.judge,
            max_new_tokens=self.max_new_tokens,
            batch_size=self.batch_size,
            max_context_tokens=self.max_context_tokens,
        )

    def callback(self) -> Any:
        """Measures after each evaluation, says the line, and adds a `stance_*` entry to the
        trainer's log_history (so checkpoints, and a resumed run, keep the curve)."""
        from transformers import TrainerCallback

        tracker = self

        class StanceCallback(TrainerCallback):
            def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                result = tracker.measure(kwargs["model"], kwargs["processing_class"])
                tracker.say(result.line(f"step {state.global_step}"))
                state.log_history.append(
                    _log_entry(result, state.global_step, tracker.max_new_tokens)
                )

        return StanceCallback()

    def final(
        self, model: Any, tokenizer: Any, step: int, log_history: Sequence[dict[str, Any]]
    ) -> StanceAccuracy:
        """The saved weights' figure: the evaluation of the same step when there was one
        (same weights, greedy decoding: the same answers), else measured now."""
        for entry in reversed(log_history):
            if entry.get("step") == step and _matches(entry, self):
                result = StanceAccuracy(
                    **{k: entry[LOG_PREFIX + k] for k in FIELDS}, judge=self.judge
                )
                break
        else:
            result = self.measure(model, tokenizer)
        self.say(result.line(f"final (step {step})"))
        return result


def _log_entry(result: StanceAccuracy, step: int, max_new_tokens: int) -> dict[str, Any]:
    return {
        **{LOG_PREFIX + k: getattr(result, k) for k in FIELDS},
        "stance_judge": result.judge,
        "stance_max_new_tokens": max_new_tokens,
        "step": step,
    }


def _matches(entry: dict[str, Any], tracker: StanceTracker) -> bool:
    """Measured with this tracker's judge, questions and reply length (a resumed run may
    have changed them: earlier measurements are then not part of its curve)."""
    return (
        entry.get("stance_judge") == tracker.judge
        and entry.get("stance_n") == len(tracker.pairs)
        and entry.get("stance_max_new_tokens") == tracker.max_new_tokens
    )


def stance_metrics(
    log_history: Sequence[dict[str, Any]],
    final: StanceAccuracy | None,
    step: int | None,
    tracker: StanceTracker | None = None,
) -> dict[str, Any]:
    """metrics.json's `stance_curve` (one entry per evaluation with the tracker's settings),
    `stance_final` (the saved weights, with the step they are from) and `stance_judge_card`
    (the key figures and warning of the judge's scorer card); empty when stance accuracy was
    off."""
    curve = [
        {"step": e["step"], **{k: e[LOG_PREFIX + k] for k in FIELDS[:4]}}
        for e in log_history
        if LOG_PREFIX + "accuracy" in e
        and "step" in e
        and (tracker is None or _matches(e, tracker))
    ]
    card = None
    if final is not None:
        from agents.models import ModelError
        from evaluators.scorer_eval import scorer_record, scorer_summary

        try:  # never lose a finished run's metrics to a judge folder gone since it scored
            summary = scorer_summary(scorer_record(final.judge))
        except ModelError:
            summary = {"has_card": False, "key_figures": {}, "warning": None}
        keys = summary["key_figures"]
        card = {
            "has_card": summary["has_card"],
            "real_data_pairwise_accuracy": keys.get("real_data_pairwise_accuracy"),
            "verdict": keys.get("verdict"),
            "warning": summary["warning"],
        }
    return {
        "stance_curve": curve,
        "stance_final": None if final is None else {"step": step, **asdict(final)},
        "stance_judge_card": card,
    }


def stance_card_line(metrics: dict[str, Any]) -> str | None:
    """The model card's line (a Markdown list item), or None when stance accuracy was off."""
    final = metrics.get("stance_final")
    if not final:
        return None
    card = metrics.get("stance_judge_card") or {}
    pairwise = card.get("real_data_pairwise_accuracy")
    if not card.get("has_card"):
        figures = "it has none yet"
    elif pairwise is None:
        figures = "its card has no real-data figures"
    else:
        figures = f"its card: real-data pairwise accuracy {pairwise:.2f}, {card.get('verdict')}"
    warning = f" Warning: {card['warning']}." if card.get("warning") else ""
    return (
        f"- Stance accuracy (step {final['step']}): {final['accuracy']:.2f} of {final['n']} "
        f"greedy first answers to dev questions take the RoT's side (agree {final['agree']:.2f} "
        f"/ neutral {final['neutral']:.2f} / disagree {final['disagree']:.2f}; mean AS "
        f"{final['mean_as']:+.2f}), as read by the judge `{final['judge']}`. The figure is "
        "only as valid as that judge's scorer card (`moralsim scorer eval "
        f"{final['judge']}`): {figures}.{warning}"
    )
