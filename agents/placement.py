"""Where a model runs and in which precision: `device` and `dtype` as a user writes them
(`auto`, `cpu`, `cuda`, `cuda:1`; `auto`, `float32`, `bfloat16`, `float16`) turned into the
concrete pair a loader needs.

Every model moralsim loads (the bot, the agreement scorer, the sentence encoder, the user's
phraser, the models being trained) goes through `resolve_placement`, so `auto` means the same
thing everywhere: the GPU with bfloat16 where torch sees one, else the CPU in float32. Asking for
CUDA where there is none is an error before anything loads, never a quiet fall back to the CPU:
a run's config must describe where it actually ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

DEVICE_HELP = (
    "auto (the GPU where torch sees one, else the CPU), cpu, cuda or cuda:N; under Ray a "
    "component on a GPU also needs its runtime.*_num_gpus."
)
DTYPE_HELP = (
    "auto (bfloat16 on a GPU, float32 on the CPU), float32, bfloat16 or float16: the weights' "
    "precision."
)
DTYPES = ("auto", "float32", "bfloat16", "float16")
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


class PlacementError(ValueError):
    """A device or dtype that cannot be used here; the message says what to write instead."""


@dataclass(frozen=True)
class Placement:
    """A resolved (device, dtype): `cpu` / `cuda` / `cuda:N` and a concrete precision name."""

    device: str
    dtype: str

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def torch_dtype(self) -> Any:
        import torch

        return getattr(torch, self.dtype)

    def synchronize(self) -> None:
        """Wait for queued GPU work, so a timer read next measures it (no-op on the CPU)."""
        if self.on_cuda:
            import torch

            torch.cuda.synchronize()

    def __str__(self) -> str:
        return f"{self.device} {self.dtype}"


CPU = Placement("cpu", "float32")


def device_problem(device: str) -> str | None:
    """Why `device` is not a device name (syntax only; no torch), or None."""
    if _DEVICE.match(device):
        return None
    return f"must be auto, cpu, cuda or cuda:N (N a GPU index), got {device!r}"


def dtype_problem(dtype: str) -> str | None:
    """Why `dtype` is not a precision name, or None."""
    if dtype in DTYPES:
        return None
    return f"must be one of {', '.join(DTYPES)}, got {dtype!r}"


def cuda_state() -> tuple[int, bool]:
    """(GPUs torch sees, whether they do bfloat16) on this process."""
    import torch

    if not torch.cuda.is_available():
        return 0, False
    try:  # emulated bfloat16 (T4, V100) is slower than float16: count only the real thing
        bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # a torch without the argument
        bf16 = torch.cuda.is_bf16_supported()
    return torch.cuda.device_count(), bool(bf16)


def resolve_placement(
    device: str = "auto",
    dtype: str = "auto",
    *,
    prefix: str = "",
    gpus: tuple[int, bool] | None = None,
) -> Placement:
    """The concrete placement for a component.

    Args:
        device, dtype: as written in a config (see DEVICE_HELP, DTYPE_HELP).
        prefix: what comes before `device` / `dtype` in the user's words, for the error
            message ("bot.", "evaluators.", "--").
        gpus: (count, bfloat16 support) instead of asking torch (tests).
    """
    for key, problem in (("device", device_problem(device)), ("dtype", dtype_problem(dtype))):
        if problem:
            raise PlacementError(f"{prefix}{key}: {problem}")
    count, bf16 = gpus if gpus is not None else cuda_state()
    if device == "auto":
        device = "cuda" if count > 0 else "cpu"
    elif device.startswith("cuda"):
        _check_cuda(device, count, f"{prefix}device")
    if dtype == "auto":
        dtype = ("bfloat16" if bf16 else "float16") if device.startswith("cuda") else "float32"
    return Placement(device, dtype)


def _check_cuda(device: str, count: int, what: str) -> None:
    if count == 0:
        import torch

        raise PlacementError(
            f"{what} is {device}, but torch {torch.__version__} sees no CUDA GPU here "
            "(torch.cuda.is_available() is False); use cpu or auto, or install a CUDA build "
            "of torch on a machine with a GPU"
        )
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        raise PlacementError(
            f"{what} is {device}, but torch sees {count} GPU(s) here (cuda:0"
            f"{f' to cuda:{count - 1}' if count > 1 else ''})"
        )


def placement_record(placement: Placement) -> dict[str, str]:
    """What a run's summary and report say about where a component ran."""
    return {"device": placement.device, "dtype": placement.dtype}
