"""Fine-tune an encoder as the 3-way answer-RoT agreement classifier (docs/methods.md §3).

Shared by `moralsim train scorer` and by the embedded default `agreement-minilm`, which is
this recipe run on the core pack on first use. A plain PyTorch loop keeps it small, seeded and
CPU-friendly: dynamic padding, AdamW with linear warm-up/decay, dev macro-F1 after each epoch,
the best epoch kept, test metrics reported once at the end.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from agents.placement import CPU, Placement
from evaluators.agreement import ROT_DIRECTION_KEY
from evaluators.agreement_format import AGREEMENT_LABELS, format_qa
from scenarios.types import AgreementExample
from training.classification_metrics import ClassificationReport, classification_report

Progress = Callable[[str], None]


@dataclass
class ScorerTrainingConfig:
    base_model: str = field(
        default="minilm-l6", metadata={"help": "Encoder folder or embedded name."}
    )
    epochs: int = field(default=3, metadata={"help": "Passes over the training examples."})
    batch_size: int = field(default=16, metadata={"help": "Examples per optimisation step."})
    learning_rate: float = field(default=1e-4, metadata={"help": "Peak AdamW learning rate."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay."})
    warmup_ratio: float = field(
        default=0.1, metadata={"help": "Share of steps for linear warm-up."}
    )
    max_length: int = field(default=128, metadata={"help": "Tokens per (QA, RoT) pair."})
    seed: int = field(default=0, metadata={"help": "Seed for initialisation and data order."})
    freeze_embeddings: bool = field(
        default=True,
        metadata={
            "help": "Keep the word-embedding matrix fixed (half of MiniLM's weights; faster)."
        },
    )
    frozen_layers: int = field(
        default=0,
        metadata={
            "help": "Lowest encoder layers kept fixed, with all the embeddings: back-propagation "
            "stops above them, so a step costs less on CPU while the upper layers still adapt."
        },
    )
    length_buckets: bool = field(
        default=True,
        metadata={"help": "Batch examples of similar length together (less padding, same data)."},
    )
    class_balance: bool = field(
        default=False,
        metadata={"help": "Weight the loss by inverse label frequency (rare labels count more)."},
    )
    sources: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "Example sources trained on (derived, hard, written, bot...; empty: all)."
        },
    )
    source_repeats: dict[str, int] = field(
        default_factory=dict,
        metadata={
            "help": "Times a source's (or a kind's) examples are seen per epoch (e.g. derived: "
            "3), so a small in-style set keeps its weight next to a large broad one."
        },
    )
    source_caps: dict[str, int] = field(
        default_factory=dict,
        metadata={
            "help": "At most N examples of a source or kind (a seeded sample), e.g. written: "
            "6000; a kind named on its own is capped apart from its source."
        },
    )
    rot_flips: dict[str, int] = field(
        default_factory=dict,
        metadata={
            "help": "Counterfactual twins added per source (e.g. written: 1500): a seeded sample "
            "of its agree/disagree examples with the RoT's direction reversed and the label "
            "swapped, so the classifier must read which way the RoT points."
        },
    )
    rot_direction: bool = field(
        default=False,
        metadata={
            "help": "Read every answer against its RoT turned to recommend the act (\"It's "
            'wrong to X" -> "It\'s good to X", agree and disagree swapped), so the classifier '
            "judges the answer's stance on an act and never has to learn the RoT's sign flip "
            "(scenarios.rot_direction); the scorer reads RoTs the same way."
        },
    )
    exclude_kinds: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "Example kinds left out of training (e.g. the pack's reference answers, "
            "which a moral bot is fine-tuned on: a judge trained on them rewards their style)."
        },
    )


EVALUATION_ONLY_SOURCES: tuple[str, ...] = ("signs", "signs-dev")
"""Labelled sets kept for measuring scorers (the sign test and its development set): never
trained on, nor used to pick a training epoch, so a figure on them stays a held-out one."""


def trainable(examples: Sequence[AgreementExample]) -> list[AgreementExample]:
    """The examples a scorer may train or select its epoch on: all but the evaluation-only sets."""
    return [e for e in examples if e.source not in EVALUATION_ONLY_SOURCES]


REFERENCE_ANSWER_KINDS: tuple[str, ...] = (
    "own-rot",
    "own-rot-paraphrase",
    "mismatched-rot",
    "restated-answer",
    "own-explanation",
)
"""Derived examples whose text is the pack's reference answers: the moral bot's SFT targets."""

DEFAULT_SCORER_RECIPE = ScorerTrainingConfig(
    epochs=1,
    frozen_layers=3,
    sources=("derived", "hard", "written", "bot"),
    source_repeats={"derived": 3, "hard": 3},
    source_caps={"written": 6000},
)
"""The recipe behind the embedded `agreement-minilm`: one pass over a mix of the pack's sources.

The pack's own examples (derived and hard, 2,498 on the core pack) are seen three times,
6,000 of the written corpus's 11,414 once (a seeded sample) and the 2,348 labelled bot replies
once: 15,842 examples, with the embeddings and the three lowest encoder layers fixed so the
pass fits the first-use build on 2 CPU cores (631 s of training, 754 s in all, 2026-12-02).
Earlier recipes were chosen by real-data validation (docs/agreement-scorer.md, "What was
tried"); this one, whose Moral Stories figure sits inside the previous recipe's seed spread, by
the dev split's known-answer checks (`moralsim validate --split dev`; the test split's was read
first): Moral Stories pairwise 63.1 (the previous data's three seeds: 68.6, 56.1, 57.0),
pack-test macro-F1 83.2, sign test 67.7, bot-reply macro-F1 45.1; the factorial and norm-action
sources are not in it (no better in one confounded single-seed run; docs/agreement-scorer.md,
"What was tried").
"""


PLAIN_RECIPE = ScorerTrainingConfig()
"""Every example of the given data, 3 epochs, nothing but the embeddings fixed (MIC, own data)."""


def scorer_recipe(
    pack_recipe: bool = True,
    extra_sources: tuple[str, ...] = (),
    independent: bool = False,
    **overrides: Any,
) -> ScorerTrainingConfig:
    """The recipe `moralsim train scorer` runs: the default's on a pack, the plain one on other
    data, with any option the user gave (None: not given) replacing the recipe's value.

    `extra_sources` keeps added data (e.g. Social-Chem examples) that the default's source list
    would drop; `independent` leaves out the pack's reference answers.
    """
    base = DEFAULT_SCORER_RECIPE if pack_recipe else PLAIN_RECIPE
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - {f.name for f in fields(ScorerTrainingConfig)}
    if unknown:
        raise TypeError(f"not a scorer recipe key: {', '.join(sorted(unknown))}")
    cfg = replace(base, **given)
    if base.sources and extra_sources:
        cfg = replace(cfg, sources=(*cfg.sources, *extra_sources))
    if independent:
        cfg = replace(cfg, exclude_kinds=(*cfg.exclude_kinds, *REFERENCE_ANSWER_KINDS))
    return cfg


def describe_recipe(cfg: ScorerTrainingConfig) -> str:
    """One line naming what differs from the plain recipe (what a log reader needs)."""
    plain = asdict(PLAIN_RECIPE)
    changed = {k: v for k, v in asdict(cfg).items() if v != plain[k]}
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "plain (every example, 3 epochs)"


@dataclass
class ScorerTrainingResult:
    output_dir: Path
    best_epoch: int
    dev: ClassificationReport
    test: ClassificationReport | None
    seconds: float
    train_examples: int


def mix_sources(
    examples: Sequence[AgreementExample],
    repeats: dict[str, int],
    caps: dict[str, int],
    seed: int,
) -> list[AgreementExample]:
    """Cap some groups to a seeded sample and repeat others.

    A key names a source ("written") or one kind ("written:flat-yes-no", "non-answer"). A kind
    named on its own is capped and repeated apart from its source, so a recipe can keep the
    phenomena it needs whole, sample the rest of the source, and not repeat trivial kinds.
    Groups come out in first-seen order.
    """
    if not repeats and not caps:
        return list(examples)
    rng = random.Random(seed)
    by_group: dict[str, list[AgreementExample]] = {}
    for e in examples:
        group = e.kind if e.kind in caps else e.source
        by_group.setdefault(group, []).append(e)
    mixed: list[AgreementExample] = []
    for name, items in by_group.items():
        if name in caps and caps[name] < len(items):
            items = rng.sample(items, caps[name])
        times = [repeats.get(e.kind, repeats.get(e.source, 1)) for e in items]
        for round_ in range(max(times, default=0)):  # whole passes, as `items * n` would give
            mixed.extend(e for e, n in zip(items, times, strict=True) if n > round_)
    return mixed


def add_rot_flips(
    examples: Sequence[AgreementExample], flips: dict[str, int], seed: int
) -> list[AgreementExample]:
    """The examples plus, per named source, up to N twins with the RoT reversed and the label
    swapped (kind "flipped:<kind>"); only RoTs `scenarios.rot_flip` can reverse safely."""
    from dataclasses import replace as with_fields

    from scenarios.rot_flip import flip_rot

    if not flips:
        return list(examples)
    rng = random.Random(f"{seed}/flips")
    swapped = {"agree": "disagree", "disagree": "agree"}
    out = list(examples)
    for source, n in flips.items():
        unique = {e.id: e for e in examples if e.source == source and e.label in swapped}
        pool = [(e, flip_rot(e.rot)) for e in unique.values()]
        pool = [(e, rot) for e, rot in pool if rot is not None]
        for e, rot in rng.sample(pool, min(n, len(pool))):
            out.append(
                with_fields(
                    e, id=f"{e.id}/flipped", rot=rot, label=swapped[e.label],
                    kind=f"flipped:{e.kind}",
                )  # type: ignore[arg-type]
            )  # fmt: skip
    return out


def recommending_form(examples: Sequence[AgreementExample]) -> list[AgreementExample]:
    """Each example against its RoT turned to recommend the act, agree/disagree swapped where
    the RoT forbids it: the same facts, with the RoT's sign taken out of what is learned."""
    from dataclasses import replace as with_fields

    from scenarios.rot_direction import SWAPPED_LABEL, rot_direction

    out = []
    for e in examples:
        direction = rot_direction(e.rot)
        label = SWAPPED_LABEL[e.label] if direction.forbids else e.label
        out.append(with_fields(e, rot=direction.recommending, label=label))  # type: ignore[arg-type]
    return out


def _batches(items: Sequence[AgreementExample], size: int) -> list[Sequence[AgreementExample]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _epoch_batches(
    items: Sequence[AgreementExample], size: int, rng: random.Random, buckets: bool
) -> list[Sequence[AgreementExample]]:
    """Shuffled batches; with buckets, examples are grouped by length within windows of 50
    batches and the batches are then shuffled, so padding shrinks but the order stays random."""
    order = list(items)
    rng.shuffle(order)
    if not buckets:
        return _batches(order, size)
    window = size * 50
    grouped: list[AgreementExample] = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        grouped += sorted(chunk, key=lambda e: len(e.question) + len(e.answer) + len(e.rot))
    batches = _batches(grouped, size)
    rng.shuffle(batches)
    return batches


def _freeze(model: Any, cfg: ScorerTrainingConfig) -> None:
    """Fix the embeddings and/or the lowest layers; with no trainable weight below them,
    autograd never goes down there."""
    if cfg.freeze_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    if not cfg.frozen_layers:
        return
    layers = getattr(getattr(model.base_model, "encoder", None), "layer", None)
    if layers is None or not 0 < cfg.frozen_layers <= len(layers):
        found = "no BERT-style encoder.layer list" if layers is None else f"{len(layers)} layers"
        raise ValueError(
            f"'frozen_layers': {cfg.frozen_layers} cannot be frozen in this encoder ({found}); "
            "use 0 or a number up to its layer count"
        )
    for param in model.base_model.embeddings.parameters():  # all of them: nothing below moves
        param.requires_grad_(False)
    for layer in layers[: cfg.frozen_layers]:
        for param in layer.parameters():
            param.requires_grad_(False)


def _encode(tokenizer: Any, batch: Sequence[AgreementExample], max_length: int) -> Any:
    return tokenizer(
        [format_qa(e.question, e.answer) for e in batch],
        [e.rot for e in batch],
        truncation="longest_first",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def predict_labels(
    model: Any,
    tokenizer: Any,
    examples: Sequence[AgreementExample],
    cfg: ScorerTrainingConfig,
    dtype: str = "float32",
) -> list[str]:
    import torch

    model.eval()
    out: list[str] = []
    with torch.no_grad(), _autocast(model, dtype):
        for batch in _batches(examples, 64):
            inputs = _encode(tokenizer, batch, cfg.max_length).to(model.device)
            logits = model(**inputs).logits
            out += [model.config.id2label[int(i)] for i in logits.argmax(-1)]
    return out


def _autocast(model: Any, dtype: str) -> Any:
    """Mixed precision for a model trained on a bfloat16 placement; a no-op in float32."""
    import torch

    return torch.autocast(
        model.device.type, dtype=getattr(torch, dtype), enabled=dtype != "float32"
    )


def train_agreement_classifier(
    train: Sequence[AgreementExample],
    dev: Sequence[AgreementExample],
    test: Sequence[AgreementExample] | None,
    output_dir: str | Path,
    config: ScorerTrainingConfig | None = None,
    progress: Progress | None = None,
    show_bar: bool = True,
    on_epoch: Callable[[Any, Any, int], dict[str, float]] | None = None,
    placement: Placement = CPU,
) -> ScorerTrainingResult:
    """Train, select the epoch with the best dev macro-F1, save a Hugging Face folder.

    `on_epoch(model, tokenizer, epoch)` may measure anything else after each epoch (a recipe
    search reads Moral Stories pairwise accuracy there); its figures are printed and kept in
    metrics.json, but never used to choose the epoch. `placement` is where it trains: the
    weights stay float32 and a bfloat16 placement runs the forward passes under autocast.
    """
    if placement.dtype == "float16":
        raise ValueError(
            "scorer training runs in float32 or bfloat16 (autocast); float16 needs loss "
            "scaling, which it does not do: use --dtype bfloat16"
        )
    cfg = config or ScorerTrainingConfig()
    say = progress or (lambda message: None)
    train = [
        e
        for e in train
        if e.kind not in cfg.exclude_kinds and (not cfg.sources or e.source in cfg.sources)
    ]
    train = mix_sources(train, cfg.source_repeats, cfg.source_caps, cfg.seed)
    train = add_rot_flips(train, cfg.rot_flips, cfg.seed)
    if cfg.rot_direction:
        train, dev = recommending_form(train), recommending_form(dev)
        test = recommending_form(test) if test else test
    if not train or not dev:
        raise ValueError("scorer training needs non-empty train and dev examples")
    start = time.perf_counter()
    model, tokenizer = _load_classifier(cfg)
    model.to(placement.device)
    fit = _fit(model, tokenizer, train, dev, cfg, say, show_bar, on_epoch, placement.dtype)
    model.load_state_dict(fit.best_state)
    dev_report = classification_report(
        [e.label for e in dev],
        predict_labels(model, tokenizer, dev, cfg, placement.dtype),
        AGREEMENT_LABELS,
    )
    test_report = None
    if test:
        test_report = classification_report(
            [e.label for e in test],
            predict_labels(model, tokenizer, test, cfg, placement.dtype),
            AGREEMENT_LABELS,
        )
    model.to("cpu")  # saved and reloaded like any CPU build
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    setattr(model.config, ROT_DIRECTION_KEY, cfg.rot_direction)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    seconds = time.perf_counter() - start
    metrics = {
        "task": "answer-rot agreement (agree / neutral / disagree)",
        "input": '("Q: {question} A: {answer}", rot)'
        + (" with the RoT in its recommending form" if cfg.rot_direction else ""),
        "base_model": cfg.base_model,
        "best_epoch": fit.best_epoch,
        "train_examples": len(train),
        "dev": dev_report.to_dict(),
        "test": test_report.to_dict() if test_report else None,
        "config": asdict(cfg),
        "epochs": fit.epoch_log,
        "data": data_counts(train, dev, test),
        "seconds": round(seconds, 1),
        "device": str(placement),
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return ScorerTrainingResult(out, fit.best_epoch, dev_report, test_report, seconds, len(train))


def _load_classifier(cfg: ScorerTrainingConfig) -> tuple[Any, Any]:
    """The base encoder with a new 3-way head (seeded), its lower part frozen as configured."""
    from agents.models import force_offline, resolve_model

    force_offline()
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = resolve_model(cfg.base_model)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    id2label = dict(enumerate(AGREEMENT_LABELS))
    tokenizer = AutoTokenizer.from_pretrained(base.path)
    model = AutoModelForSequenceClassification.from_pretrained(
        base.path,
        num_labels=len(AGREEMENT_LABELS),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
        use_safetensors=True,
    )
    _freeze(model, cfg)
    return model, tokenizer


def _optimizer(model: Any, cfg: ScorerTrainingConfig, total_steps: int) -> tuple[Any, Any]:
    """AdamW (no decay on biases and LayerNorm weights) with linear warm-up and decay."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    no_decay = ("bias", "LayerNorm.weight")
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {
            "params": [p for n, p in trainable if not n.endswith(no_decay)],
            "weight_decay": cfg.weight_decay,
        },
        {"params": [p for n, p in trainable if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=cfg.learning_rate)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(cfg.warmup_ratio * total_steps), total_steps
    )
    return optimizer, scheduler


def _class_weights(train: Sequence[AgreementExample], cfg: ScorerTrainingConfig) -> Any:
    """Inverse label frequency as loss weights (None: every label counts the same)."""
    import torch

    if not cfg.class_balance:
        return None
    counts = [sum(e.label == label for e in train) for label in AGREEMENT_LABELS]
    return torch.tensor(
        [len(train) / (len(counts) * max(c, 1)) for c in counts], dtype=torch.float32
    )


@dataclass
class _Fit:
    best_epoch: int
    best_state: dict[str, Any]
    epoch_log: list[dict[str, Any]]


def train_step(
    model: Any, optimizer: Any, inputs: Any, labels: Any, dtype: str, weights: Any = None
) -> Any:
    """One optimisation step of the classifier (forward under the placement's autocast, loss in
    float32, gradients clipped at 1.0); the loss tensor. The build and the dtype benchmark
    (benchmarks/scorer_step_dtype.py) both step with it, so the benchmark times the build's step."""
    import torch

    with _autocast(model, dtype):
        logits = model(**inputs).logits
    loss = torch.nn.functional.cross_entropy(logits.float(), labels, weight=weights)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
    return loss


def _fit(
    model: Any,
    tokenizer: Any,
    train: Sequence[AgreementExample],
    dev: Sequence[AgreementExample],
    cfg: ScorerTrainingConfig,
    say: Progress,
    show_bar: bool,
    on_epoch: Callable[[Any, Any, int], dict[str, float]] | None,
    dtype: str = "float32",
) -> _Fit:
    """Every epoch of training, each followed by dev macro-F1; the best epoch's weights."""
    import torch
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.progress import (
        Progress as Bar,
    )

    steps_per_epoch = (len(train) + cfg.batch_size - 1) // cfg.batch_size
    total_steps = steps_per_epoch * cfg.epochs
    optimizer, scheduler = _optimizer(model, cfg, total_steps)
    rng = random.Random(cfg.seed)
    loss_weights = _class_weights(train, cfg)
    loss_weights = loss_weights.to(model.device) if loss_weights is not None else None
    label_index = {label: i for i, label in enumerate(AGREEMENT_LABELS)}
    epoch_log: list[dict[str, Any]] = []
    best: tuple[float, int, dict[str, Any]] | None = None
    gold_dev = [e.label for e in dev]
    say(
        f"training the agreement classifier on {len(train)} examples "
        f"({cfg.epochs} epochs, {total_steps} steps)"
    )
    with Bar(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        disable=not show_bar, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("agreement scorer", total=total_steps)
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            for batch in _epoch_batches(train, cfg.batch_size, rng, cfg.length_buckets):
                inputs = _encode(tokenizer, batch, cfg.max_length).to(model.device)
                labels = torch.tensor([label_index[e.label] for e in batch], device=model.device)
                loss = train_step(model, optimizer, inputs, labels, dtype, loss_weights)
                scheduler.step()
                bar.update(
                    task,
                    advance=1,
                    description=f"agreement scorer epoch {epoch} loss {loss.item():.3f}",
                )
            report = classification_report(
                gold_dev, predict_labels(model, tokenizer, dev, cfg, dtype), AGREEMENT_LABELS
            )
            extra = on_epoch(model, tokenizer, epoch) if on_epoch else {}
            model.train()
            epoch_log.append({"epoch": epoch, "dev_macro_f1": report.macro_f1, **extra})
            say(
                f"epoch {epoch}: dev accuracy {report.accuracy:.3f}, macro-F1 {report.macro_f1:.3f}"
                + "".join(f", {k} {v:.3f}" for k, v in extra.items())
            )
            if best is None or report.macro_f1 > best[0]:
                state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                best = (report.macro_f1, epoch, state)
    assert best is not None
    return _Fit(best[1], best[2], epoch_log)


def data_counts(
    train: Sequence[AgreementExample],
    dev: Sequence[AgreementExample],
    test: Sequence[AgreementExample] | None,
) -> dict[str, dict[str, int]]:
    """Examples per split and source (derived, hard, written, bot, signs...): the card's data."""
    out: dict[str, dict[str, int]] = {}
    for split, rows in (("train", train), ("dev", dev), ("test", test or [])):
        counts: dict[str, int] = {}
        for e in rows:
            counts[e.source] = counts.get(e.source, 0) + 1
        out[split] = dict(sorted(counts.items()))
    return out


REFERENCE_FILE = Path(__file__).with_name("scorer_reference.json")
"""Real-data figures the developers measured for the default recipe (see `reference_figures`)."""


LATER_RECIPE_OPTIONS: dict[str, Any] = {"rot_direction": False}
"""Recipe keys added after the embedded default was first built, with their off value."""


def recipe_key(recipe: ScorerTrainingConfig) -> dict[str, Any]:
    """A recipe as the JSON that identifies it (the embedded build's fingerprint, the reference
    figures' recipe). Options added later are left out while off: they build the same model, so
    an existing build and its reference figures stay valid."""
    key = json.loads(json.dumps(asdict(recipe)))
    for name, off in LATER_RECIPE_OPTIONS.items():
        if key.get(name) == off:
            key.pop(name, None)
    return key


def recipe_examples(pack: Any, sources: Sequence[str], split: str) -> list[AgreementExample]:
    """A split's examples from a recipe's sources (all of them when it names none)."""
    return [e for e in trainable(pack.agreement_in(split)) if not sources or e.source in sources]


def training_data_digest(*splits: Sequence[AgreementExample]) -> str:
    """A fingerprint of the examples a build trains and selects on (their text and labels).

    The pack's files alone do not fix them: examples are also derived from the questions by
    code, and a change there changes the model as much as a change of data.
    """
    digest = hashlib.sha256()
    for rows in splits:
        for e in rows:
            for part in (e.question, e.answer, e.rot, e.label, e.split):
                digest.update(part.encode() + b"\0")
        digest.update(b"\1")
    return digest.hexdigest()


def reference_figures(
    measured_dev_macro_f1: float, tolerance: float = 0.01, data_sha256: str | None = None
) -> dict[str, Any]:
    """The developers' Moral Stories figures for this recipe, if this build reproduces theirs.

    Moral Stories is not shipped (it is validation data under its own licence), so a user's
    build cannot measure it. The reference file records what the developers measured for the
    same recipe and data, with the pack-dev macro-F1 of their build. A build whose own pack-dev
    macro-F1 is within `tolerance` of that is the same model up to float noise, and its card
    carries the reference figures, marked as such; any other build carries none, and reports
    then say the scorer is not validated on real data until `moralsim scorer eval
    --moral-stories FILE` measures it. When the reference records the digest of its training
    data (`training_data_digest`) and `data_sha256` is given, they must match too: a build on
    other examples is another model even if its pack-dev macro-F1 lands close.
    """
    try:
        ref = json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if ref.get("recipe") != recipe_key(DEFAULT_SCORER_RECIPE):
        return {}
    if abs(float(ref["pack_dev_macro_f1"]) - measured_dev_macro_f1) > tolerance:
        return {}
    if data_sha256 is not None and ref.get("data_sha256", data_sha256) != data_sha256:
        return {}
    return {
        name: {**figure, "measured_by": "moralsim developers (reference build of this recipe)"}
        for name, figure in ref.get("figures", {}).items()
    }


def build_default_agreement_scorer(pack_dir: Path, out_dir: Path) -> None:
    """Builder of the embedded `agreement-minilm`: the default recipe on a pack's examples.

    Trains on every train-split example of the pack (derived, hard cases, written corpus,
    labelled bot replies), selects the epoch on dev, and writes `metrics.json` and the scorer
    card (`scorer_card.json`: every in-pack figure of `moralsim scorer eval`, plus the
    developers' Moral Stories figures when this build reproduces theirs).
    """
    from evaluators.scorer_eval import IN_DOMAIN_SET
    from scenarios.pack import load_pack

    pack = load_pack(pack_dir).pack
    recipe = DEFAULT_SCORER_RECIPE

    def chosen(split: str) -> list[AgreementExample]:
        return recipe_examples(pack, recipe.sources, split)

    # Train and select the epoch on the recipe's sources; report test on the pack's own set.
    train_agreement_classifier(
        chosen("train"),
        chosen("dev"),
        [e for e in pack.agreement_in("test") if e.source in ("derived", "hard")],
        out_dir,
        DEFAULT_SCORER_RECIPE,
        progress=lambda message: print(message, flush=True),
    )  # fmt: skip
    card = write_pack_card(
        out_dir,
        pack,
        "agreement-minilm",
        reference=True,
        data_sha256=training_data_digest(chosen("train"), chosen("dev")),
    )
    keys = card["key_figures"]
    pairwise = keys["real_data_pairwise_accuracy"]
    print(
        f"agreement-minilm: pack test macro-F1 {card['figures'][IN_DOMAIN_SET]['macro_f1']:.3f} "
        f"(n={card['figures'][IN_DOMAIN_SET]['n']}); Moral Stories pairwise "
        + (f"{pairwise:.3f} (reference)" if pairwise is not None else "not measured"),
        flush=True,
    )


def write_pack_card(
    out_dir: Path,
    pack: Any,
    name: str,
    reference: bool = False,
    data_sha256: str | None = None,
    directions: dict[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """Measure a freshly trained scorer on the pack's labelled sets and write its card.

    `reference` adds the developers' Moral Stories figures when the build reproduces the
    default recipe's reference build (only the embedded default can). `directions` (a
    factored scorer only) measures the pack's sets a second time with the pack's stated
    directions, as a run of the pack reads them, under the names SET+stated; a stated
    folder's card then takes its `agreement/` classifier's real-data pair figures
    (training.factored_scorer.question_less_figures).
    """
    from evaluators.scorer_eval import (
        evaluate_scorer,
        key_figures,
        merge_card,
        pack_sets,
        write_card,
    )
    from evaluators.scorers import open_agreement_scorer

    scorer = open_agreement_scorer(str(out_dir))
    sets = pack_sets(pack)
    figures = evaluate_scorer(scorer, sets)
    if directions:
        scorer.use_directions(directions)
        figures.update(evaluate_scorer(scorer, [replace(s, name=f"{s.name}+stated") for s in sets]))
    from evaluators.factored import FACTORED_MARKER

    record = "metrics.json" if (Path(out_dir) / "metrics.json").is_file() else FACTORED_MARKER
    metrics = json.loads((Path(out_dir) / record).read_text(encoding="utf-8"))
    card = merge_card(
        None, name, figures, metrics, probe_reading=getattr(scorer, "probe_reading", None)
    )
    if reference:
        card["figures"].update(
            reference_figures(figures["pack-dev"]["macro_f1"], data_sha256=data_sha256)
        )
    if directions:  # a stated folder reads question-less real-data pairs with agreement/
        from training.factored_scorer import copied_classifier_figures

        card["figures"].update(copied_classifier_figures(Path(out_dir)))
    card["key_figures"] = key_figures(card["figures"])
    write_card(out_dir, card)
    return card
