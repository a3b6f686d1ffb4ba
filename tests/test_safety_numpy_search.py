"""The numpy search behind SafetyIndex where faiss is missing: the same exact neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.safety import NumpyFlatIP, SafetyIndex, flat_ip_index


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_numpy_search_matches_faiss() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    rots, queries = unit_rows(rng, 200, 32), unit_rows(rng, 25, 32)
    numpy_sims, numpy_ids = flat_ip_index(rots, "numpy").search(queries, 7)
    faiss_sims, faiss_ids = flat_ip_index(rots, "faiss").search(queries, 7)
    np.testing.assert_array_equal(numpy_ids, faiss_ids)
    np.testing.assert_allclose(numpy_sims, faiss_sims, rtol=0, atol=1e-5)


def test_numpy_search_orders_ties_by_row() -> None:
    rows = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    sims, ids = NumpyFlatIP(rows).search(np.array([[1.0, 0.0]], dtype=np.float32), 3)
    assert ids.tolist() == [[0, 2, 1]]
    assert sims.tolist() == [[1.0, 1.0, 0.0]]


def test_safety_index_on_numpy_backend() -> None:
    rots = ["be kind", "do not steal", "tell the truth"]
    table = {t: v for t, v in zip(rots, np.eye(3, dtype=np.float32), strict=True)}
    table["I took it"] = np.array([0.1, 0.9, 0.2], dtype=np.float32)

    def embed(texts):
        return np.stack([table[t] for t in texts])

    index = SafetyIndex(rots, embed, "test-encoder", backend="numpy")
    near = index.nearest(["I took it"], k=2)[0]
    assert [n.rot for n in near] == ["do not steal", "tell the truth"]
    assert near[0].cosine == pytest.approx(0.9)
