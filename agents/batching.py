"""Dynamic batching for models behind an event loop (the HTTP server, Ray actors).

Why: the agent and scorer contracts are batched, and on a CPU one call over eight inputs costs
little more than one call over one. Requests that arrive close together (many dialogues
waiting on the same bot or scorer) are therefore gathered for a moment and run as one call.
Generic over the item (a history, a turn to score), the key that must match within a batch
(generation settings) and the result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")
R = TypeVar("R")
BatchRunner = Callable[[list[T], K | None], list[R]]


@dataclass
class _Pending(Generic[T, K, R]):
    history: T
    settings: K | None
    future: asyncio.Future[R]
    arrived: float


class Batcher(Generic[T, K, R]):
    """Groups concurrent requests with equal settings into one blocking `run` call.

    The oldest waiting request decides: its batch closes `max_wait_ms` after it arrived, or as
    soon as `max_batch_size` requests with its settings are queued, and takes those requests in
    arrival order. Requests with other settings wait for the next round. One batch runs at a
    time, in a worker thread; while it runs, new requests queue up, so under load the next
    batch is already full when the thread comes back.

    Args:
        run: blocking function mapping (histories, settings) to one reply per history.
        max_batch_size: most histories in one `run` call.
        max_wait_ms: how long the oldest request may wait for company.
    """

    def __init__(
        self, run: BatchRunner[T, K, R], *, max_batch_size: int = 16, max_wait_ms: int = 20
    ):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must not be negative, got {max_wait_ms}")
        self._run = run
        self.max_batch_size = max_batch_size
        self.max_wait = max_wait_ms / 1000.0
        self._queue: list[_Pending[T, K, R]] = []
        self._changed: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: list[_Pending[T, K, R]] = []

    async def submit(self, history: T, settings: K | None = None) -> R:
        """Queue one history and wait for its reply (or the agent's exception)."""
        loop = asyncio.get_running_loop()
        self._ensure_worker(loop)
        assert self._changed is not None
        future: asyncio.Future[R] = loop.create_future()
        self._queue.append(_Pending(history, settings, future, loop.time()))
        self._changed.set()
        return await future

    async def aclose(self) -> None:
        """Stop the worker; requests still queued fail with CancelledError."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with suppress(asyncio.CancelledError):
                await worker
        for item in [*self._running, *self._queue]:
            if not item.future.done():
                item.future.cancel()
        self._queue.clear()
        self._running = []

    def _ensure_worker(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._worker is not None and self._loop is loop and not self._worker.done():
            return
        self._loop = loop
        self._changed = asyncio.Event()
        self._worker = loop.create_task(self._work(), name="moralsim-batcher")

    def _matching(self, settings: K | None) -> int:
        return sum(1 for item in self._queue if item.settings == settings)

    async def _work(self) -> None:
        assert self._changed is not None and self._loop is not None
        loop = self._loop
        while True:
            self._queue = [item for item in self._queue if not item.future.done()]
            if not self._queue:
                self._changed.clear()
                await self._changed.wait()
                continue
            head = self._queue[0]
            deadline = head.arrived + self.max_wait
            while self._matching(head.settings) < self.max_batch_size:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    break
            batch = self._take(head.settings)
            if batch:
                await self._run_batch(batch, head.settings)

    def _take(self, settings: K | None) -> list[_Pending[T, K, R]]:
        batch: list[_Pending[T, K, R]] = []
        rest: list[_Pending[T, K, R]] = []
        for item in self._queue:
            wanted = len(batch) < self.max_batch_size and item.settings == settings
            if wanted and not item.future.done():
                batch.append(item)
            elif not item.future.done():
                rest.append(item)
        self._queue = rest
        return batch

    async def _run_batch(self, batch: list[_Pending[T, K, R]], settings: K | None) -> None:
        histories = [item.history for item in batch]
        self._running = batch
        try:
            replies = await asyncio.to_thread(self._run, histories, settings)
            if len(replies) != len(histories):
                raise RuntimeError(
                    f"agent returned {len(replies)} replies for {len(histories)} histories"
                )
        except Exception as exc:
            for item in batch:
                if not item.future.done():
                    item.future.set_exception(exc)
            return
        finally:
            self._running = []
        for item, reply in zip(batch, replies, strict=True):
            if not item.future.done():
                item.future.set_result(reply)
