"""Is the probe's reading complementary to `agreement-minilm`'s? For every pair the pack
does not state, average the two readings: the stated scorer's whole classifier, and stance x
the probe's direction (probe_direction.py, C fixed at the 9,000-example run's CV choice).

    python docs/experiments/2026-12-04-probe-direction/ensemble.py \\
        --moral-stories ../shared/data/moral_stories/dev.jsonl --cache /tmp/probe-direction
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_direction import CORE_PACK, probe_scorer

from evaluators.agreement import AgreementScorer
from evaluators.scorer_eval import PairSet, evaluate_scorer, pack_sets
from scenarios.loaders.moral_stories import load_moral_stories
from scenarios.pack import load_pack


class Averaged:
    """Stated pairs as the probe scorer reads them (stance x stated direction); every other
    pair the mean of the probe scorer's and the whole classifier's probabilities."""

    def __init__(self, probe, whole: AgreementScorer) -> None:
        self.probe, self.whole = probe, whole

    def use_directions(self, directions) -> None:
        self.probe.use_directions(directions)

    def probabilities(self, items):
        out = self.probe.probabilities(items)
        stated = self.probe.stated
        rest = [
            i
            for i, it in enumerate(items)
            if not it.question.strip()
            or stated.get((it.question, it.rot)) not in ("for", "against", "unrelated")
        ]
        if rest:
            whole = self.whole.probabilities([items[i] for i in rest])
            out[rest] = (out[rest] + whole) / 2
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moral-stories", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/probe-direction"))
    args = parser.parse_args()
    probe, _ = probe_scorer(cache=args.cache, c_grid=(0.03,))
    whole = AgreementScorer(str(probe.path / "agreement"))
    scorer = Averaged(probe, whole)
    pack = load_pack(CORE_PACK).pack
    ms = args.moral_stories
    pairs = [PairSet("moral-stories", load_moral_stories(ms)[0])] if ms else []
    for stated in (False, True):
        scorer.use_directions(pack.direction_map() if stated else {})
        got = evaluate_scorer(scorer, pack_sets(pack), [] if stated else pairs)
        for name, fig in got.items():
            keys = ("macro_f1", "sign_accuracy", "pairwise_accuracy")
            shown = ", ".join(f"{k} {fig[k]:.3f}" for k in keys if k in fig)
            print(f"{name}{'+stated' if stated else ''}: {shown}", flush=True)


if __name__ == "__main__":
    main()
