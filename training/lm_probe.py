"""Fit the RoT-direction probe (evaluators.lm_probe) on a pack's direction examples.

The examples are the factored scorer's direction half's (training.factored_data): each
(act, RoT) of the pack's train split with the RoT's direction on the act, the act being the
question, a narrated action or a labelled reason read as a rule. They (or a seeded sample)
are read once by the frozen LM; a standardised multinomial logistic regression is fitted on
the states with a fixed regularisation C. The defaults: the layers of
docs/experiments/2026-12-04-probe-direction (15/20/25/30), the last token's state and the mean
over the prompt's tokens at each (docs/experiments/2026-12-06-probe-pooling), every train
example, C = 0.003 chosen by direction dev macro-F1.

Reading ~26,500 examples takes about 30-38 minutes on 2 CPU cores, so the core pack's head is
fitted once by the maintainers and shipped in `training/probe_head/` (a 3 x 4,608 logistic
layer and its standardisation, 93 KB). A first use installs it only when it was fitted on
exactly this pack's examples with this recipe and it reproduces, on this machine's LM, the
probabilities it gave the shipped check pairs; otherwise the probe is fitted here.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluators.agreement import AGREEMENT_LABELS
from evaluators.lm_probe import (
    HEAD_FILE,
    PROBE_MARKER,
    PROMPT_VERSION,
    LinearHead,
    PromptStates,
    probe_prompt,
    read_probe_info,
)
from scenarios.pack import ScenarioPack

if TYPE_CHECKING:
    from training.factored_scorer import FactoredRecipe

Progress = Callable[[str], None]


Example = tuple[str, str, str]
"""(act, RoT, direction label)"""

SHIPPED_PROBE = Path(__file__).resolve().parent / "probe_head"
CHECK_FILE = "check.json"
SHIPPED_FILES = (PROBE_MARKER, HEAD_FILE, CHECK_FILE)
CHECK_PAIRS = 32
CHECK_TOLERANCE = 0.2
"""The largest |difference| in a check pair's probability that still counts as the same LM.
bfloat16 rounding depends on how texts are batched: two readers that batch the 1,616 dev
pairs differently move a probability by up to 0.15 (99th percentile 0.10)
(docs/experiments/2026-12-04-shipped-probe)."""


@dataclass(frozen=True)
class ProbeRecipe:
    model: str = "smollm2-135m-instruct"
    layers: tuple[int, ...] = (15, 20, 25, 30)
    examples: int | None = None
    """None: every train direction example; a number: a seeded sample of that many (reading
    is the fit's cost, about 13 examples per second on 2 CPU cores)."""
    c: float = 0.003
    seed: int = 0
    pooling: str = "last+mean"
    """`last` or `last+mean` (evaluators.lm_probe.POOLINGS). The default reads both, with C
    0.003 chosen by direction dev macro-F1 (docs/experiments/2026-12-06-probe-pooling)."""


DEFAULT_PROBE_RECIPE = ProbeRecipe()


def direction_split(
    pack: ScenarioPack, recipe: FactoredRecipe | None = None
) -> tuple[list[Example], list[Example]]:
    """(train, dev) direction examples of the pack: the factored recipe's direction half's
    (the default recipe's unless another is named, as an experiment does)."""
    from training.factored_data import with_explanation_directions
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE, factored_splits

    stated = pack.direction_map()
    if not stated:
        raise ValueError(
            f"pack '{pack.name}' states no RoT directions (pack.yaml: agreement_directions); "
            "the probe learns directions from them"
        )
    labelled = with_explanation_directions(pack.questions, stated)
    chosen = recipe or DEFAULT_FACTORED_RECIPE
    train, dev = factored_splits(pack, chosen, labelled)["direction"]
    return [(e.answer, e.rot, e.label) for e in train], [(e.answer, e.rot, e.label) for e in dev]


def recipe_states(recipe: ProbeRecipe) -> PromptStates:
    """The reader of the recipe's LM, layers and pooling."""
    return PromptStates(recipe.model, recipe.layers, pooling=recipe.pooling)


def probe_examples(pack: ScenarioPack, recipe: ProbeRecipe) -> list[Example]:
    """The recipe's train examples: a seeded shuffle of the pack's train direction examples,
    all of them or the first `recipe.examples`."""
    train, _ = direction_split(pack)
    random.Random(recipe.seed).shuffle(train)
    return train if recipe.examples is None else train[: recipe.examples]


def examples_digest(examples: list[Example]) -> str:
    """sha256 of the examples a head was fitted on: a shipped head fits a pack only when the
    pack yields exactly these."""
    return hashlib.sha256(json.dumps(examples).encode("utf-8")).hexdigest()


def fit_head(
    x: np.ndarray, labels: list[str], c: float, weight: np.ndarray | None = None
) -> LinearHead:
    """Standardise, then an L2 multinomial logistic regression (sklearn, lbfgs); `weight`
    counts each example that many times (an experiment's; the recipe weighs all alike)."""
    from sklearn.linear_model import LogisticRegression

    missing = sorted(set(AGREEMENT_LABELS) - set(labels))
    if missing:
        raise ValueError(f"probe training examples have no '{missing[0]}' direction")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    fit = LogisticRegression(C=c, max_iter=3000).fit(z, np.array(labels), sample_weight=weight)
    order = [list(fit.classes_).index(label) for label in AGREEMENT_LABELS]
    return LinearHead(mean, scale, fit.coef_[order], fit.intercept_[order])


def train_probe(
    pack: ScenarioPack,
    output_dir: str | Path,
    recipe: ProbeRecipe = DEFAULT_PROBE_RECIPE,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Read the examples with the LM, fit the head, write the probe folder; its probe.json."""
    say = progress or (lambda message: None)
    examples = probe_examples(pack, recipe)
    states = recipe_states(recipe)
    start = time.perf_counter()
    say(f"probe: reading {len(examples)} direction examples with {recipe.model}")
    said = [0]

    def tick(done: int, total: int) -> None:
        tenth = done * 10 // total
        if tenth > said[0]:  # a line per tenth read
            said[0] = tenth
            say(f"probe: {done}/{total} read ({time.perf_counter() - start:.0f} s)")

    x = states([probe_prompt(rot, act) for act, rot, _ in examples], progress=tick)
    read_seconds = time.perf_counter() - start
    info = write_probe(
        Path(output_dir), examples, x, recipe, read_seconds, head={"source": "fitted here"}
    )
    write_check(Path(output_dir), pack, states)
    say(f"probe: read in {read_seconds:.0f} s, fitted in {info['seconds']['fit']:.0f} s")
    return info


def write_probe(
    out: Path,
    examples: list[Example],
    x: np.ndarray,
    recipe: ProbeRecipe,
    read_seconds: float,
    head: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fit the head on the examples' states `x` and write head.npz and probe.json (with
    `head`, where the head came from, when it is known: a shipped head gets it on install)."""
    start = time.perf_counter()
    fitted = fit_head(x, [label for _, _, label in examples], recipe.c)
    out.mkdir(parents=True, exist_ok=True)
    fitted.save(out / HEAD_FILE)
    info = {
        "task": "P(for, unrelated, against) of (act, RoT): a logistic head on a frozen LM",
        "model": recipe.model,
        "layers": list(recipe.layers),
        "pooling": recipe.pooling,
        "prompt_version": PROMPT_VERSION,
        "recipe": asdict(recipe),
        "examples": {label: sum(e[2] == label for e in examples) for label in AGREEMENT_LABELS},
        "examples_sha256": examples_digest(examples),
        "seconds": {
            "read": round(read_seconds, 1),
            "fit": round(time.perf_counter() - start, 1),
        },
    } | ({"head": head} if head else {})
    (out / PROBE_MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def check_items(pack: ScenarioPack) -> list[Example]:
    """The pairs whose probabilities a head carries to prove it reads the same LM: the first
    CHECK_PAIRS of the pack's dev direction examples."""
    return direction_split(pack)[1][:CHECK_PAIRS]


def write_check(folder: Path, pack: ScenarioPack, states: PromptStates) -> None:
    """check.json: the check pairs and the probabilities the folder's head gives them."""
    items = check_items(pack)
    head = LinearHead.load(folder / HEAD_FILE)
    probs = head.probabilities(states([probe_prompt(rot, act) for act, rot, _ in items]))
    rows = [
        {"act": act, "rot": rot, "p": [round(float(v), 6) for v in p]}
        for (act, rot, _), p in zip(items, probs, strict=True)
    ]
    (folder / CHECK_FILE).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def check_difference(folder: Path, states: PromptStates) -> tuple[float, int]:
    """(the largest |difference| between the probabilities the head gives its check pairs on
    this machine's LM and those it carries, how many pairs); ValueError naming the file when
    the check file or the head is missing or malformed."""
    path = folder / CHECK_FILE
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        prompts = [probe_prompt(r["rot"], r["act"]) for r in rows]
        carried = np.array([r["p"] for r in rows], dtype=np.float64)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a probe check file ({exc})") from None
    if not rows or carried.shape != (len(rows), 3) or not np.isfinite(carried).all():
        raise ValueError(f"{path}: needs check pairs with three finite probabilities each")
    try:
        head = LinearHead.load(folder / HEAD_FILE)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{folder / HEAD_FILE}: not a probe head ({exc})") from None
    got = head.probabilities(states(prompts))
    if got.shape != carried.shape:
        raise ValueError(f"{folder / HEAD_FILE}: gives {got.shape[1]} classes, not 3")
    return float(np.abs(got - carried).max()), len(rows)


def install_shipped_probe(
    pack: ScenarioPack, out: Path, recipe: ProbeRecipe = DEFAULT_PROBE_RECIPE
) -> tuple[dict[str, Any] | None, str]:
    """Copy the shipped head into `out` when it is this pack's and recipe's and reproduces
    its check pairs here: (its probe.json, what was checked), or (None, why not)."""
    try:
        shipped = read_probe_info(SHIPPED_PROBE)
    except ValueError as exc:
        return None, f"no usable shipped head ({exc})"
    if shipped.get("recipe") != json.loads(json.dumps(asdict(recipe))):
        return None, "the shipped head was fitted with another recipe"
    if shipped.get("examples_sha256") != examples_digest(probe_examples(pack, recipe)):
        return None, f"the shipped head was not fitted on pack '{pack.name}' as it is now"
    out.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED_FILES:  # copyfile: an install's read-only modes do not come along
        if (SHIPPED_PROBE / name).is_file():
            shutil.copyfile(SHIPPED_PROBE / name, out / name)
    try:
        diff, pairs = check_difference(out, recipe_states(recipe))
    except ValueError as exc:
        shutil.rmtree(out)
        return None, str(exc)
    if not diff <= CHECK_TOLERANCE:  # NaN fails too
        shutil.rmtree(out)
        return None, (
            f"the shipped head does not reproduce on this machine's {recipe.model} "
            f"(max |probability difference| {diff:.3f} on {pairs} check pairs, "
            f"allowed {CHECK_TOLERANCE})"
        )
    shipped["head"] = {"source": "shipped", "check_pairs": pairs, "max_difference": diff}
    (out / PROBE_MARKER).write_text(json.dumps(shipped, indent=2) + "\n", encoding="utf-8")
    return shipped, f"shipped head reproduced (max |probability difference| {diff:.4f})"


def add_probe(
    pack: ScenarioPack,
    folder: str | Path,
    recipe: ProbeRecipe = DEFAULT_PROBE_RECIPE,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Put a probe into a stated scorer folder (`probe/`: the shipped head when
    `install_shipped_probe` accepts it, else one fitted here) and make it read, with
    `agreement/`, every pair the pack does not state (factored.json `unstated: agreement+probe`).

    Raises ValueError when the folder is not a stated scorer or the pack states nothing."""
    from evaluators.factored import FACTORED_MARKER, unstated_reader

    say = progress or (lambda message: None)
    out = Path(folder)
    if unstated_reader(out) != "agreement" or not (out / "agreement").is_dir():
        raise ValueError(f"{out}: not a stated scorer folder (stance/, agreement/)")
    probe, why = install_shipped_probe(pack, out / "probe", recipe)
    if probe is None:
        say(f"probe: {why}; fitting it on this machine")
        probe = train_probe(pack, out / "probe", recipe, progress=progress)
    else:
        say(f"probe: {why}")
    marker = out / FACTORED_MARKER
    info = json.loads(marker.read_text(encoding="utf-8"))
    info["task"] = (
        "answer-RoT agreement = stance(question, answer) x the pack's stated direction; "
        "pairs without one: mean of agreement/ whole and stance x probe/ direction; "
        "a bot's own reason: agreement/ alone"
    )
    info["unstated"] = "agreement+probe"
    keys = ("model", "layers", "pooling", "recipe", "examples", "seconds", "head")
    info["probe"] = {k: probe[k] for k in keys}
    marker.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return probe


def build_embedded_probe_scorer(pack_dir: Path, out_dir: Path) -> None:
    """Builder of the embedded `agreement-probe`: a copy of the embedded `agreement-stated`
    (built first if it is not yet) with the shipped probe head (or one fitted here, see
    `install_shipped_probe`), then its card, measured without and with the pack's stated
    directions. Moral Stories is not shipped, so its card has no real-data figure until
    `moralsim scorer eval --moral-stories` measures one."""
    from agents.models import prepare_model
    from evaluators.factored import FACTORED_MARKER
    from scenarios.pack import load_pack
    from training.scorer import write_pack_card

    pack = load_pack(pack_dir).pack
    stated = prepare_model("agreement-stated").path
    for part in ("stance", "agreement"):  # not its card or its cache marker
        shutil.copytree(stated / part, Path(out_dir) / part, dirs_exist_ok=True)
    shutil.copy2(stated / FACTORED_MARKER, Path(out_dir) / FACTORED_MARKER)
    add_probe(pack, out_dir, progress=lambda message: print(message, flush=True))
    card = write_pack_card(Path(out_dir), pack, "agreement-probe", directions=pack.direction_map())
    figure = card["figures"].get("signs-test", {}).get("sign_accuracy")
    if figure is not None:
        print(f"agreement-probe: sign test sign accuracy {figure:.3f}", flush=True)
