"""A linear probe on a frozen causal LM that reads which way a RoT points on an act.

MiniLM-L6 classifiers read real, human-written norm/action text at about chance after any
training that fits on two CPU cores, while the hidden states of the embedded SmolLM2-135M,
read by a logistic-regression head and never fine-tuned, rank most such pairs right
(docs/experiments/2026-12-03-lm-probe, 2026-12-04-probe-direction). This module is that
reader: the prompt's hidden states at a few layers (the last token's, and with `last+mean`
pooling also the mean over every token), standardised, then a three-way softmax head,
P(for, unrelated, against) of (act, RoT). The head is fitted by `training.lm_probe`; a probe
folder holds `probe.json` (the LM, layers, pooling, prompt version) and `head.npz` (the
standardisation and the head's weights).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluators.agreement import AgreementItem

PROBE_MARKER = "probe.json"
HEAD_FILE = "head.npz"
PROMPT_VERSION = 1
POOLINGS = ("last", "last+mean")
"""How a prompt's states become features: the last token's state at each layer, or that and
the mean over all the prompt's tokens side by side (docs/experiments/2026-12-06-probe-pooling:
the mean carries direction the last token alone misses). A folder that names none is `last`."""


def probe_prompt(rot: str, act: str) -> str:
    """The text whose last token's state the head reads: where the model would go on to say
    which way the rule points on the act (prompt version 1)."""
    return (
        f"Rule of thumb: {rot}\nAct: {act}\n"
        "Is the rule of thumb for this act, against it, or unrelated to it?\n"
        "Answer: The rule of thumb is"
    )


class PromptStates:
    """Each text's features from a frozen causal LM: at each of `layers`, the last token's
    hidden state, and with `last+mean` pooling also the mean over the text's tokens. Texts go
    in batches of similar length (left padding, so the last position is every text's last
    token), in bfloat16 autocast: the fastest CPU step, and the one the head was fitted on."""

    def __init__(
        self,
        model: str,
        layers: Sequence[int],
        *,
        pooling: str = "last",
        batch_size: int = 32,
        device: str = "cpu",
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from agents.models import resolve_model

        if pooling not in POOLINGS:
            raise ValueError(f"pooling '{pooling}' is not one of {', '.join(POOLINGS)}")
        folder = resolve_model(model).path
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        lm = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        # the base model: the states are all the head reads, so no vocabulary projection
        self.model = lm.base_model.to(device).eval()
        self.layers = list(layers)
        self.pooling = pooling
        self.batch_size = batch_size
        self.device = device

    @property
    def width(self) -> int:
        one_readout = int(self.model.config.hidden_size) * len(self.layers)
        return one_readout * (2 if self.pooling == "last+mean" else 1)

    def __call__(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        import torch

        out = np.zeros((len(texts), self.width), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with torch.no_grad():
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                enc = self.tokenizer([texts[i] for i in batch], return_tensors="pt", padding=True)
                enc = enc.to(self.device)
                with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16):
                    states = self.model(**enc, output_hidden_states=True).hidden_states
                picked = [states[k][:, -1, :].float() for k in self.layers]
                if self.pooling == "last+mean":
                    mask = enc["attention_mask"].unsqueeze(-1).float()
                    picked += [(states[k].float() * mask).sum(1) / mask.sum(1) for k in self.layers]
                out[batch] = torch.cat(picked, dim=1).cpu().numpy()
                if progress is not None:
                    progress(min(start + self.batch_size, len(order)), len(order))
        return out


@dataclass(frozen=True)
class LinearHead:
    """Standardisation then a multinomial logistic head: softmax(((x - mean) / scale) W^T + b),
    its classes ordered agree/for, neutral/unrelated, disagree/against."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        logits = ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.coef.T
        logits = logits + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    def save(self, path: Path) -> None:
        np.savez(path, mean=self.mean, scale=self.scale, coef=self.coef, intercept=self.intercept)

    @classmethod
    def load(cls, path: Path) -> LinearHead:
        with np.load(path) as data:
            return cls(data["mean"], data["scale"], data["coef"], data["intercept"])


def read_probe_info(folder: Path) -> dict[str, Any]:
    """probe.json of a probe folder (a folder that names no pooling reads `last`); ValueError
    naming the file and field when it is not one."""
    marker = Path(folder) / PROBE_MARKER
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{marker}: not readable as JSON ({exc})") from None
    for key, kind in (("model", str), ("layers", list), ("prompt_version", int)):
        if not isinstance(info.get(key) if isinstance(info, dict) else None, kind):
            raise ValueError(f"{marker}: field '{key}' missing or not a {kind.__name__}")
    info.setdefault("pooling", "last")  # folders written before pooling was a choice
    if info["pooling"] not in POOLINGS:
        raise ValueError(f"{marker}: field 'pooling' is not one of {', '.join(POOLINGS)}")
    if info["prompt_version"] != PROMPT_VERSION:
        raise ValueError(
            f"{marker}: field 'prompt_version' is {info['prompt_version']}, this moralsim "
            f"reads version {PROMPT_VERSION}; rebuild the probe"
        )
    return info


class ProbeDirection:
    """P(for, unrelated, against) of (act, RoT) items, given as AgreementItem("", act, rot)
    like the factored scorer's direction half, from a probe folder."""

    def __init__(self, folder: str | Path, *, device: str = "cpu") -> None:
        self.path = Path(folder)
        info = read_probe_info(self.path)
        self.head = LinearHead.load(self.path / HEAD_FILE)
        self.states = PromptStates(
            info["model"], info["layers"], pooling=info["pooling"], device=device
        )
        if self.head.coef.shape != (3, self.states.width):
            raise ValueError(
                f"{self.path / HEAD_FILE}: head of shape {self.head.coef.shape} does not fit "
                f"{info['model']} at layers {info['layers']} with {self.states.pooling} pooling "
                f"({self.states.width} features)"
            )

    def probabilities(self, items: Sequence[AgreementItem]) -> np.ndarray:
        if not items:
            return np.zeros((0, 3))
        return self.head.probabilities(self.states([probe_prompt(i.rot, i.answer) for i in items]))
