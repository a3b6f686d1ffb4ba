"""Train the default recipe's stance half with a seed, with or without the `concessions`
source, and put it in place of the stance half of a copy of a prepared `agreement-probe`
(`agreement-minilm` and the probe stay as built). Then read the copy with the sign-dev
experiment's script:

    PYTHONPATH=. python docs/experiments/2026-12-05-concessions/stance_seed.py OUT 1 with
    PYTHONPATH=. python docs/experiments/2026-12-05-sign-dev/sign_dev.py OUT/probe OUT/figures.json

About 15 minutes for the training on 2 cores, 3 for the reading.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

from scenarios.pack import load_pack
from training.factored_scorer import DEFAULT_FACTORED_RECIPE, train_factored_scorer

PREPARED = Path.home() / ".cache/moralsim/models/agreement-probe"


def main(out: Path, seed: int, with_concessions: bool) -> None:
    base = DEFAULT_FACTORED_RECIPE
    sources = tuple(s for s in base.sources if s != "concessions")
    sources += ("concessions",) if with_concessions else ()
    recipe = replace(base, sources=sources, stance=replace(base.stance, seed=seed))
    pack = load_pack("core").pack
    train_factored_scorer(
        pack, out / "stance_build", recipe, halves=("stance",), progress=print, show_bar=False
    )
    shutil.copytree(PREPARED, out / "probe", ignore=shutil.ignore_patterns("stance"))
    shutil.copytree(out / "stance_build" / "stance", out / "probe" / "stance")
    print("made", out / "probe")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "with")
