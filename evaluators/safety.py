"""Safety index for S_MA: the k safety RoTs nearest to an answer, and the answer's worst agreement.

S_MA(Q, A) = min over the k nearest safety RoTs R_i of AS(Q, A, R_i) (docs/methods.md §4): an answer
is as safe as its most violated near-universal rule. Retrieval is cosine similarity between the
answer and the RoTs (normalised sentence embeddings, an exact inner-product index: Faiss's flat
index where faiss is installed, the same exact search in numpy where it is not, e.g. on a GPU
machine without a package index). Embedding 500+ RoTs takes seconds, so the matrix is cached on
disk, keyed by the encoder and the RoT texts.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from evaluators.agreement import AgreementItem, class_meta, split_agreement

Embed = Callable[[Sequence[str]], np.ndarray]
"""Texts -> L2-normalised vectors (one row per text)."""
SearchBackend = Literal["auto", "faiss", "numpy"]


class FlatIndex(Protocol):
    """What SafetyIndex needs of an index: Faiss's `search` signature."""

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...


class NumpyFlatIP:
    """Exact inner-product search over a fixed matrix, as Faiss's IndexFlatIP does it: every
    query against every row, the k largest first. A few hundred RoTs make this one small
    matrix product, so without faiss nothing is lost but a dependency."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, row ids), each (n_queries, k), most similar first; equal
        similarities keep row order (a stable sort)."""
        sims = np.asarray(queries, dtype=np.float32) @ self.vectors.T
        ids = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(sims, ids, axis=1), ids


def flat_ip_index(vectors: np.ndarray, backend: SearchBackend = "auto") -> FlatIndex:
    """An exact inner-product index over `vectors`: Faiss's when it imports (or is asked for),
    numpy's otherwise. Both return the same neighbours; the choice only changes speed."""
    if backend != "numpy":
        try:
            import faiss
        except ImportError:
            if backend == "faiss":
                raise
        else:
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(np.ascontiguousarray(vectors, dtype=np.float32))
            return index
    return NumpyFlatIP(vectors)


@dataclass(frozen=True)
class Neighbour:
    rot: str
    cosine: float


@dataclass(frozen=True)
class SafetyResult:
    """S_MA of one answer and the RoT that set it (the most violated of the k nearest)."""

    s_ma: float
    worst_rot: str
    neighbours: tuple[Neighbour, ...]
    scores: tuple[float, ...]
    worst_meta: dict[str, Any] = field(default_factory=dict)
    """The class probabilities of the worst pair ({"p": [...]}), when the scorer gives them."""


def index_key(encoder_id: str, texts: Sequence[str]) -> str:
    """Content hash of (encoder, RoT texts in order): a changed RoT set is a new index."""
    digest = hashlib.sha256(encoder_id.encode() + b"\0")
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    return digest.hexdigest()[:24]


class SafetyIndex:
    """Nearest-RoT retrieval over a fixed RoT set.

    Args:
        rots: the safety RoT texts (e.g. `[s.rot.text for s in pack.safety_rots]`).
        embed: the sentence encoder; it must return L2-normalised rows.
        encoder_id: names the encoder in the cache key (e.g. "minilm-l6").
        cache_dir: where embedding matrices are kept; None disables caching.
        backend: the exact search: faiss, numpy, or auto (faiss where it imports).
    """

    def __init__(
        self,
        rots: Sequence[str],
        embed: Embed,
        encoder_id: str,
        cache_dir: Path | None = None,
        backend: SearchBackend = "auto",
    ) -> None:
        if not rots:
            raise ValueError("a safety index needs at least one RoT")
        self.rots = list(rots)
        self._embed = embed
        self.key = index_key(encoder_id, self.rots)
        vectors = self._load_or_embed(cache_dir)
        self._index = flat_ip_index(vectors, backend)

    def _load_or_embed(self, cache_dir: Path | None) -> np.ndarray:
        path = cache_dir / f"safety-{self.key}.npy" if cache_dir else None
        if path is not None and path.is_file():
            vectors = np.load(path, allow_pickle=False)
            if vectors.shape[0] == len(self.rots):
                return np.ascontiguousarray(vectors, dtype=np.float32)
        vectors = np.ascontiguousarray(self._embed(self.rots), dtype=np.float32)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
            np.save(tmp, vectors, allow_pickle=False)
            os.replace(tmp, path)
            meta = {"rots": len(self.rots), "key": self.key}
            path.with_suffix(".json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
        return vectors

    def nearest(self, answers: Sequence[str], k: int = 5) -> list[list[Neighbour]]:
        """The k RoTs nearest to each answer, most similar first (ties by RoT order)."""
        if not answers:
            return []
        k = min(k, len(self.rots))
        queries = np.ascontiguousarray(self._embed(list(answers)), dtype=np.float32)
        sims, ids = self._index.search(queries, k)
        return [
            [Neighbour(self.rots[int(i)], float(s)) for s, i in zip(row_s, row_i, strict=True)]
            for row_s, row_i in zip(sims, ids, strict=True)
        ]


def safety_scores(
    questions: Sequence[str],
    answers: Sequence[str],
    index: SafetyIndex,
    agreement: Callable[[Sequence[AgreementItem]], np.ndarray],
    k: int = 5,
) -> list[SafetyResult]:
    """S_MA for a batch of (question, answer) pairs, with one agreement call for all k·n pairs."""
    if len(questions) != len(answers):
        raise ValueError(f"{len(questions)} questions but {len(answers)} answers")
    neighbours = index.nearest(answers, k)
    items = [
        AgreementItem(q, a, n.rot)
        for q, a, near in zip(questions, answers, neighbours, strict=True)
        for n in near
    ]
    values, probs = split_agreement(agreement(items) if items else np.zeros(0))
    out: list[SafetyResult] = []
    offset = 0
    for near in neighbours:
        scores = tuple(float(v) for v in values[offset : offset + len(near)])
        worst = int(np.argmin(scores))
        meta = class_meta(probs, offset + worst)
        offset += len(near)
        out.append(SafetyResult(min(scores), near[worst].rot, tuple(near), scores, meta))
    return out
