"""Do the two direction readers miss the same RoTs? (a second look, 2026-12-06)

Reads the pack's direction dev split and signs-dev's RoT directions with the shipped probe
head (states through the direction-pairs experiment's cache) and with a MiniLM direction half
(`../2026-12-05-direction-pairs/minilm_direction.py`, its `base` folder), then their mean, and
counts the signs-dev RoTs each misses and both miss.

    PYTHONPATH=. python docs/experiments/2026-12-06-probe-pooling/two_readers.py \
        --cache /tmp/states.npz --minilm /tmp/md/base/direction
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "2026-12-05-direction-pairs"))

from direction_pairs import StateCache, figures, sign_dev_directions  # noqa: E402

from evaluators.agreement import AgreementItem, AgreementScorer  # noqa: E402
from evaluators.lm_probe import HEAD_FILE, LinearHead, probe_prompt  # noqa: E402
from scenarios.pack import load_pack  # noqa: E402
from training.lm_probe import SHIPPED_PROBE, direction_split  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--minilm", type=Path, required=True)
    args = parser.parse_args()
    pack = load_pack("core").pack
    sets = {"pack dev": direction_split(pack)[1], "signs-dev": sign_dev_directions(pack)}
    cache = StateCache(args.cache)
    head = LinearHead.load(SHIPPED_PROBE / HEAD_FILE)
    minilm = AgreementScorer(str(args.minilm))
    for name, examples in sets.items():
        probe = head.probabilities(cache([probe_prompt(rot, act) for act, rot, _ in examples]))
        items = [AgreementItem("", act, rot) for act, rot, _ in examples]
        tuned = np.asarray(minilm.probabilities(items))
        for reader, p in (("probe", probe), ("minilm", tuned), ("mean", (probe + tuned) / 2)):
            print(name, reader, figures(p, examples), flush=True)
        gold = np.array([label for _, _, label in examples])
        signed = gold != "neutral"
        missed = [
            (np.where(p[:, 0] > p[:, 2], "agree", "disagree") != gold) & signed
            for p in (probe, tuned)
        ]
        print(
            f"{name}: signed {int(signed.sum())}, probe misses {int(missed[0].sum())}, "
            f"minilm {int(missed[1].sum())}, both {int((missed[0] & missed[1]).sum())}"
        )


if __name__ == "__main__":
    main()
