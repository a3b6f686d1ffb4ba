"""Fit the RoT-direction probe (evaluators.lm_probe) on a pack's direction examples.

The examples are the factored scorer's direction half's (training.factored_data): each
(act, RoT) of the pack's train split with the RoT's direction on the act, the act being the
question, a narrated action or a labelled reason read as a rule. A seeded sample of them is
read once by the frozen LM; a standardised multinomial logistic regression is fitted on the
states with a fixed regularisation C. The defaults are the recipe measured in
docs/experiments/2026-12-04-probe-direction (9,000 examples, layers 15/20/25/30, C = 0.03,
chosen there by 3-fold cross-validation on the training examples).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluators.agreement import AGREEMENT_LABELS
from evaluators.lm_probe import (
    HEAD_FILE,
    PROBE_MARKER,
    PROMPT_VERSION,
    LastTokenStates,
    LinearHead,
    probe_prompt,
)
from scenarios.pack import ScenarioPack

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ProbeRecipe:
    model: str = "smollm2-135m-instruct"
    layers: tuple[int, ...] = (15, 20, 25, 30)
    examples: int = 9000
    """A sample of the ~26,500 direction examples: reading them is the build's cost (about
    13 per second on 2 CPU cores)."""
    c: float = 0.03
    seed: int = 0


DEFAULT_PROBE_RECIPE = ProbeRecipe()


def probe_examples(pack: ScenarioPack, recipe: ProbeRecipe) -> list[tuple[str, str, str]]:
    """(act, RoT, direction label) of a seeded sample of the pack's train direction examples."""
    from training.factored_data import with_explanation_directions
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE, factored_splits

    stated = pack.direction_map()
    if not stated:
        raise ValueError(
            f"pack '{pack.name}' states no RoT directions (pack.yaml: agreement_directions); "
            "the probe learns directions from them"
        )
    labelled = with_explanation_directions(pack.questions, stated)
    train, _ = factored_splits(pack, DEFAULT_FACTORED_RECIPE, labelled)["direction"]
    random.Random(recipe.seed).shuffle(train)
    return [(e.answer, e.rot, e.label) for e in train[: recipe.examples]]


def fit_head(x: np.ndarray, labels: list[str], c: float) -> LinearHead:
    """Standardise, then an L2 multinomial logistic regression (sklearn, lbfgs)."""
    from sklearn.linear_model import LogisticRegression

    missing = sorted(set(AGREEMENT_LABELS) - set(labels))
    if missing:
        raise ValueError(f"probe training examples have no '{missing[0]}' direction")
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    fit = LogisticRegression(C=c, max_iter=3000).fit(z, np.array(labels))
    order = [list(fit.classes_).index(label) for label in AGREEMENT_LABELS]
    return LinearHead(mean, scale, fit.coef_[order], fit.intercept_[order])


def train_probe(
    pack: ScenarioPack,
    output_dir: str | Path,
    recipe: ProbeRecipe = DEFAULT_PROBE_RECIPE,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Read the sample with the LM, fit the head, write the probe folder; its probe.json."""
    say = progress or (lambda message: None)
    examples = probe_examples(pack, recipe)
    states = LastTokenStates(recipe.model, recipe.layers)
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
    head = fit_head(x, [label for _, _, label in examples], recipe.c)
    fit_seconds = time.perf_counter() - start - read_seconds
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    head.save(out / HEAD_FILE)
    info = {
        "task": "P(for, unrelated, against) of (act, RoT): a logistic head on a frozen LM",
        "model": recipe.model,
        "layers": list(recipe.layers),
        "prompt_version": PROMPT_VERSION,
        "recipe": asdict(recipe),
        "examples": {label: sum(e[2] == label for e in examples) for label in AGREEMENT_LABELS},
        "seconds": {
            "read": round(read_seconds, 1),
            "fit": round(fit_seconds, 1),
        },
    }
    (out / PROBE_MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    say(f"probe: read in {read_seconds:.0f} s, fitted in {fit_seconds:.0f} s")
    return info


def add_probe(
    pack: ScenarioPack,
    folder: str | Path,
    recipe: ProbeRecipe = DEFAULT_PROBE_RECIPE,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Fit a probe into a stated scorer folder (`probe/`) and make it read, with `agreement/`,
    every pair the pack does not state (factored.json `unstated: agreement+probe`).

    Raises ValueError when the folder is not a stated scorer or the pack states nothing."""
    from evaluators.factored import FACTORED_MARKER, unstated_reader

    out = Path(folder)
    if unstated_reader(out) != "agreement" or not (out / "agreement").is_dir():
        raise ValueError(f"{out}: not a stated scorer folder (stance/, agreement/)")
    probe = train_probe(pack, out / "probe", recipe, progress=progress)
    marker = out / FACTORED_MARKER
    info = json.loads(marker.read_text(encoding="utf-8"))
    info["task"] = (
        "answer-RoT agreement = stance(question, answer) x the pack's stated direction; "
        "pairs without one: mean of agreement/ whole and stance x probe/ direction"
    )
    info["unstated"] = "agreement+probe"
    info["probe"] = {k: probe[k] for k in ("model", "layers", "recipe", "examples", "seconds")}
    marker.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return probe


def build_embedded_probe_scorer(pack_dir: Path, out_dir: Path) -> None:
    """Builder of the embedded `agreement-probe`: a copy of the embedded `agreement-stated`
    (built first if it is not yet) with a probe fitted on the pack, then its card, measured
    without and with the pack's stated directions. Moral Stories is not shipped, so its card
    has no real-data figure until `moralsim scorer eval --moral-stories` measures one."""
    import shutil

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
