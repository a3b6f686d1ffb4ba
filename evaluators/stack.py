"""The evaluator models a run or a REPL needs, loaded once and shared by every scorer.

One sentence encoder serves safety retrieval and SaGE; one agreement classifier serves every
MoralDial metric, the safety minimum and prudence. Loading them in one place keeps a process
(or a Ray evaluator actor) from holding two copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.placement import CPU, Placement
from evaluators.moraldial import MoralDialParams, MoralDialScorer
from evaluators.safety import SafetyIndex
from evaluators.scorers import DEFAULT_SCORER, open_agreement_scorer


@dataclass
class Evaluators:
    agreement: Any
    """Any agreement scorer (`evaluators.scorers`): cross-encoder or LLM judge."""
    encoder: Any
    encoder_id: str
    safety: SafetyIndex
    moraldial: MoralDialScorer
    placement: Placement = CPU
    """Where the encoder and a local scorer run."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return encode_normalized(self.encoder, texts, model_batch(self.placement))


def model_batch(placement: Placement) -> int:
    """Pairs or sentences per forward pass of the evaluator models: 64 suits a CPU; a GPU is
    launch-bound at that size and needs larger batches to keep up with a bot at batch 64-256."""
    return 512 if placement.on_cuda else 64


def encode_normalized(encoder: Any, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """L2-normalised float32 sentence embeddings, one row per text."""
    vectors = encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=True)
    return np.asarray(vectors, dtype=np.float32)


def encoder_cache_id(spec: str, placement: Placement) -> str:
    """What names the encoder in the safety index's cache: its spec, its weights (a folder
    retrained in place is a new encoder) and its precision (bfloat16 vectors are not float32's)."""
    from agents.models import resolve_model

    weights = sorted(resolve_model(spec).path.rglob("*.safetensors"))
    stamp = ",".join(f"{w.name}:{w.stat().st_size}:{w.stat().st_mtime_ns}" for w in weights)
    return f"{spec}|{stamp}|{placement.dtype}"


def load_evaluators(
    agreement_model: str = DEFAULT_SCORER,
    embedding_model: str = "minilm-l6",
    safety_rots: Sequence[str] | None = None,
    params: MoralDialParams | None = None,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    rot_directions: Mapping[tuple[str, str], str] | None = None,
) -> Evaluators:
    """Load the encoder, the agreement scorer and the safety index (default: core pack RoTs),
    both models on `device`/`dtype` (agents.placement). `rot_directions` (the run's pack's
    stated directions) go to a scorer that reads them (evaluators.factored); others ignore
    them."""
    from agents.models import cache_dir, load_sentence_encoder
    from agents.placement import resolve_placement

    if safety_rots is None:
        from scenarios.pack import load_pack

        safety_rots = [s.rot.text for s in load_pack("core").pack.safety_rots]
    placement = resolve_placement(device, dtype, prefix="evaluators.")
    encoder = load_sentence_encoder(embedding_model, placement=placement)
    agreement = open_agreement_scorer(
        agreement_model, model_batch(placement), device=placement.device, dtype=placement.dtype
    )
    if rot_directions and hasattr(agreement, "use_directions"):
        agreement.use_directions(rot_directions)
    safety = SafetyIndex(
        safety_rots,
        lambda texts: encode_normalized(encoder, texts, model_batch(placement)),
        encoder_cache_id(embedding_model, placement),
        cache_dir() / "indexes",
    )
    moraldial = MoralDialScorer(agreement.probabilities, safety, params)
    return Evaluators(agreement, encoder, embedding_model, safety, moraldial, placement)
