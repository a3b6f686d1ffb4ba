"""A persistent response cache, so reruns and resumed runs do not pay for the same generation.

Agents are deterministic given (model, adapter, prompt, decoding settings, seed), so a reply can
be reused whenever all of those match. Everything that changes the reply is in the key; nothing
else is (turn `meta` is bookkeeping the model never sees). SQLite in WAL mode lets several
processes of one run share a cache file while one of them writes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from agents.base import AgentInfo, ChatAgent, GenerationSettings, History

ADAPTER_CONFIG = "adapter_config.json"
_ADAPTER_WEIGHTS = ("adapter_model*.safetensors", "adapter_model*.bin")


def cache_key(
    model_id: str,
    adapter: str,
    history: History,
    system: str | None,
    settings: GenerationSettings,
) -> str:
    """sha256 of a canonical JSON of everything that decides a reply.

    Canonical JSON (sorted keys, fixed separators) rather than string concatenation, so no two
    different prompts can run together into the same text.
    """
    prompt = {
        "system": system,
        "turns": [{"role": turn.role, "text": turn.text} for turn in history],
    }
    material = {
        "model": model_id,
        "adapter": adapter,
        "prompt": prompt,
        "settings": settings.key(),
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def adapter_hash(folder: str | Path | None) -> str:
    """Content hash of a PEFT adapter (its config and weights); "" for no adapter.

    Hashes content, not the path, so retraining into the same folder invalidates old replies and
    copying an adapter elsewhere keeps them.
    """
    if folder is None:
        return ""
    root = Path(folder)
    config = root / ADAPTER_CONFIG
    if not config.is_file():
        raise FileNotFoundError(f"{root} has no {ADAPTER_CONFIG}: it is not a PEFT adapter folder")
    weights = sorted({p for pattern in _ADAPTER_WEIGHTS for p in root.glob(pattern) if p.is_file()})
    if not weights:
        raise FileNotFoundError(
            f"{root} has no adapter weights (adapter_model.safetensors or adapter_model.bin)"
        )
    digest = hashlib.sha256()
    for path in [config, *weights]:
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(str(path.stat().st_size).encode("ascii") + b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


class ResponseCache:
    """key → reply in one SQLite file; safe to share between threads (one locked connection).

    Args:
        path: the database file; created (with its folder) when missing.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        with self._lock, self._conn:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                "key TEXT PRIMARY KEY, reply TEXT NOT NULL, created REAL NOT NULL)"
            )

    def get(self, key: str) -> str | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        """The cached replies among `keys` (missing keys are absent from the result)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):  # stay under SQLite's variable limit
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, reply FROM responses WHERE key IN ({marks})", chunk
                )
                found.update(rows.fetchall())
        return found

    def put(self, key: str, reply: str) -> None:
        self.put_many([(key, reply)])

    def put_many(self, items: Iterable[tuple[str, str]]) -> None:
        """Store replies in one transaction; an existing key is overwritten."""
        now = time.time()
        rows = [(key, reply, now) for key, reply in items]
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO responses (key, reply, created) VALUES (?, ?, ?)", rows
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class CachedAgent:
    """A ChatAgent that answers from the cache and asks the inner agent only for misses.

    All misses of one call go to the inner agent in ONE batched `respond` (duplicates in the
    batch are asked once), so caching never shrinks the batches a GPU sees.

    Args:
        agent: the bot that generates on a miss.
        cache: where replies live.
        model_id: names the model in the key (a path or embedded name plus version is best).
        adapter_hash: `adapter_hash(folder)` of the bot's adapter, "" for none.
        settings: the decoding settings the inner agent generates with.
        system: the system text the inner agent prepends (`system_text(prompt, rots)`); it is
            part of the prompt the model sees, so part of the key.
    """

    def __init__(
        self,
        agent: ChatAgent,
        cache: ResponseCache,
        model_id: str,
        adapter_hash: str = "",
        settings: GenerationSettings = GenerationSettings(),  # noqa: B008 (frozen dataclass)
        *,
        system: str | None = None,
    ) -> None:
        self.agent = agent
        self.cache = cache
        self.model_id = model_id
        self.adapter_hash = adapter_hash
        self.settings = settings
        self.system = system
        self.info: AgentInfo = agent.info
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def key(self, history: History) -> str:
        return cache_key(self.model_id, self.adapter_hash, history, self.system, self.settings)

    def respond(self, histories: Sequence[History]) -> list[str]:
        keys = [self.key(h) for h in histories]
        found = self.cache.get_many(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        first_of: dict[str, int] = {}
        for i in missing:
            first_of.setdefault(keys[i], i)
        if first_of:
            asked = list(first_of.values())
            replies = self.agent.respond([histories[i] for i in asked])
            if len(replies) != len(asked):
                raise RuntimeError(
                    f"inner agent returned {len(replies)} replies for {len(asked)} histories"
                )
            fresh = {keys[i]: reply for i, reply in zip(asked, replies, strict=True)}
            self.cache.put_many(fresh.items())
            found.update(fresh)
        with self._lock:
            self.hits += len(keys) - len(missing)
            self.misses += len(missing)
        return [found[k] for k in keys]

    def stats(self) -> dict[str, float]:
        """hits, misses and hit rate since this wrapper was made; entries in the cache file."""
        with self._lock:
            hits, misses = self.hits, self.misses
        looked = hits + misses
        return {
            "hits": hits,
            "misses": misses,
            "hit_rate": hits / looked if looked else 0.0,
            "entries": len(self.cache),
        }
