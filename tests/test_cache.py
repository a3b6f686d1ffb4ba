"""The response cache: keys, hits and misses, one batched call for misses, persistence, threads."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agents.base import AgentInfo, ChatAgent, GenerationSettings, History
from agents.cache import CachedAgent, ResponseCache, adapter_hash, cache_key
from scenarios.records import Turn


class CountingAgent:
    """Numbers its replies, so a reply from the cache is told apart from a fresh one."""

    def __init__(self) -> None:
        self.info = AgentInfo(model="counting", backend="fake")
        self.batches: list[list[str]] = []
        self._lock = threading.Lock()
        self._n = 0

    def respond(self, histories: Sequence[History]) -> list[str]:
        with self._lock:
            self.batches.append([h[-1].text for h in histories])
            out = []
            for h in histories:
                self._n += 1
                out.append(f"{h[-1].text}#{self._n}")
            return out


def h(text: str) -> list[Turn]:
    return [Turn("user", text)]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "replies.sqlite") as c:
        yield c


def test_cached_agent_is_a_chat_agent(cache: ResponseCache) -> None:
    agent = CachedAgent(CountingAgent(), cache, "m")
    assert isinstance(agent, ChatAgent)
    assert agent.info.model == "counting"


def test_hits_misses_and_one_inner_call_for_all_misses(cache: ResponseCache) -> None:
    inner = CountingAgent()
    agent = CachedAgent(inner, cache, "m")
    assert agent.respond([h("a"), h("b")]) == ["a#1", "b#2"]
    assert (agent.hits, agent.misses) == (0, 2)

    # a and b are hits; c and d are misses, asked in one batch, in order
    assert agent.respond([h("c"), h("a"), h("d"), h("b")]) == ["c#3", "a#1", "d#4", "b#2"]
    assert inner.batches == [["a", "b"], ["c", "d"]]
    assert (agent.hits, agent.misses) == (2, 4)

    assert agent.respond([h("a"), h("d")]) == ["a#1", "d#4"]
    assert len(inner.batches) == 2  # all hits: the inner agent is not called
    stats = agent.stats()
    # 4 hits of 8 lookups = 0.5; entries a, b, c, d
    assert stats == {"hits": 4, "misses": 4, "hit_rate": 0.5, "entries": 4}


def test_duplicate_misses_in_one_batch_are_asked_once(cache: ResponseCache) -> None:
    inner = CountingAgent()
    agent = CachedAgent(inner, cache, "m")
    assert agent.respond([h("x"), h("y"), h("x")]) == ["x#1", "y#2", "x#1"]
    assert inner.batches == [["x", "y"]]


def test_empty_batch_does_not_call_the_agent(cache: ResponseCache) -> None:
    inner = CountingAgent()
    assert CachedAgent(inner, cache, "m").respond([]) == []
    assert inner.batches == []


def test_key_matches_a_hand_built_canonical_json() -> None:
    settings = GenerationSettings()
    history = [Turn("user", "Is it okay?", meta={"phrase": "q"}), Turn("bot", "No.")]
    material = (
        '{"adapter":"ab","model":"m","prompt":{"system":"Be kind.","turns":'
        '[{"role":"user","text":"Is it okay?"},{"role":"bot","text":"No."}]},'
        '"settings":"max_new_tokens=60;do_sample=False;temperature=1.0;top_p=1.0;'
        'num_beams=1;seed=0"}'
    )
    want = hashlib.sha256(material.encode()).hexdigest()
    assert cache_key("m", "ab", history, "Be kind.", settings) == want


def test_everything_that_changes_a_reply_changes_the_key() -> None:
    base = ("m", "", h("q"), None, GenerationSettings())
    key = cache_key(*base)
    variants = [
        ("m2", "", h("q"), None, GenerationSettings()),
        ("m", "abc", h("q"), None, GenerationSettings()),
        ("m", "", h("q2"), None, GenerationSettings()),
        ("m", "", [Turn("bot", "q")], None, GenerationSettings()),
        ("m", "", h("q"), "Follow rules.", GenerationSettings()),
        ("m", "", h("q"), None, GenerationSettings(seed=1)),
        ("m", "", h("q"), None, GenerationSettings(num_beams=10)),
        ("m", "", h("q"), None, GenerationSettings(do_sample=True)),
    ]
    keys = [cache_key(*v) for v in variants]
    assert key not in keys and len(set(keys)) == len(keys)
    # turn meta is not seen by the model, so it is not part of the key
    assert cache_key("m", "", [Turn("user", "q", meta={"x": 1})], None, GenerationSettings()) == key


def test_different_settings_or_adapter_do_not_share_replies(cache: ResponseCache) -> None:
    inner = CountingAgent()
    plain = CachedAgent(inner, cache, "m")
    beams = CachedAgent(inner, cache, "m", settings=GenerationSettings(num_beams=10))
    tuned = CachedAgent(inner, cache, "m", adapter_hash="f00d")
    assert plain.respond([h("q")]) == ["q#1"]
    assert beams.respond([h("q")]) == ["q#2"]
    assert tuned.respond([h("q")]) == ["q#3"]
    assert plain.respond([h("q")]) == ["q#1"]
    assert len(cache) == 3


def test_replies_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "replies.sqlite"
    inner = CountingAgent()
    with ResponseCache(path) as first:
        assert CachedAgent(inner, first, "m").respond([h("a"), h("b")]) == ["a#1", "b#2"]
    with ResponseCache(path) as second:
        again = CachedAgent(inner, second, "m")
        assert again.respond([h("b"), h("a")]) == ["b#2", "a#1"]
        assert (again.hits, again.misses) == (2, 0)
    assert len(inner.batches) == 1


def test_concurrent_respond_from_threads(cache: ResponseCache) -> None:
    inner = CountingAgent()
    agent = CachedAgent(inner, cache, "m")
    texts = [f"q{i}" for i in range(20)]
    results: list[list[str]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker(offset: int) -> None:
        try:
            start.wait()
            for round_ in range(5):
                batch = [h(texts[(offset + round_ + j) % 20]) for j in range(4)]
                out = agent.respond(batch)
                results.append([r.split("#")[0] for r in out])
                assert [r.split("#")[0] for r in out] == [b[-1].text for b in batch]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i * 3,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 8 * 5
    # 8 threads x 5 rounds x 4 histories = 160 lookups, every one counted once
    assert agent.hits + agent.misses == 160
    # offsets 0, 3, ..., 21 each reach 8 consecutive texts (5 rounds + 4 per batch - 1), so
    # together they cover all 20 texts: exactly 20 entries, however the threads interleaved
    assert len(cache) == 20
    stored = {t: cache.get(agent.key(h(t))) for t in texts}
    calls = len(inner.batches)
    assert agent.respond([h(t) for t in texts]) == [stored[t] for t in texts]
    assert len(inner.batches) == calls


def test_adapter_hash_follows_content_not_path(tmp_path: Path) -> None:
    assert adapter_hash(None) == ""
    one = tmp_path / "one"
    one.mkdir()
    (one / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (one / "adapter_model.safetensors").write_bytes(b"\x00weights")
    (one / "README.md").write_text("not part of the adapter")
    first = adapter_hash(one)
    assert len(first) == 64

    two = tmp_path / "two"
    two.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (two / name).write_bytes((one / name).read_bytes())
    assert adapter_hash(two) == first  # a copy elsewhere keeps its replies

    (one / "README.md").write_text("edited")
    assert adapter_hash(one) == first  # files that are not the adapter do not count
    (one / "adapter_model.safetensors").write_bytes(b"\x00weightz")
    assert adapter_hash(one) != first  # retrained weights: new key
    (two / "adapter_config.json").write_text(json.dumps({"r": 16}))
    assert adapter_hash(two) != first


def test_adapter_hash_refuses_a_folder_that_is_not_an_adapter(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"adapter_config\.json"):
        adapter_hash(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="adapter weights"):
        adapter_hash(tmp_path)
