"""What a running simulation shows while it runs: dialogues done, bot turns per second and the
running mean of every score as the evaluators return it.

Scores exist while dialogues run (the evaluators score each bot turn as it arrives), so a
researcher can watch S_MA or S_ME settle and stop a hopeless run early instead of waiting for
summary.json. Both runtimes feed one `LiveStats`; the progress bar only reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from scenarios.records import Score

LIVE_METRICS = ("S_MA", "S_ME", "S_MR1", "S_MR2", "S_RIL")


@dataclass
class LiveStats:
    """Counters and running means; `on_change` (e.g. a progress-bar refresh) runs after each
    update."""

    total: int = 0
    dialogues: int = 0
    bot_turns: int = 0
    retried: int = 0
    started: float = field(default_factory=time.perf_counter)
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    lags: list[float] = field(default_factory=list)
    on_change: Callable[[LiveStats], None] | None = None

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def expect(self, total: int) -> None:
        self.total = total
        self._changed()

    def turns(self, n: int = 1) -> None:
        self.bot_turns += n
        self._changed()

    def scored(self, scores: Iterable[Score], lag: float | None = None) -> None:
        """Scores of one bot turn; `lag` is seconds from the bot's reply to these scores."""
        for s in scores:
            self.sums[s.name] = self.sums.get(s.name, 0.0) + s.value
            self.counts[s.name] = self.counts.get(s.name, 0) + 1
        if lag is not None:
            self.lags.append(lag)
        self._changed()

    def finished(self, n: int = 1) -> None:
        self.dialogues += n
        self._changed()

    def retry(self) -> None:
        self.retried += 1
        self._changed()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def turns_per_second(self) -> float:
        elapsed = self.seconds
        return self.bot_turns / elapsed if elapsed > 0 else 0.0

    def means(self) -> dict[str, float]:
        return {k: self.sums[k] / self.counts[k] for k in self.sums if self.counts[k]}

    def line(self) -> str:
        """One status line: turns/s and the live means (x100, as reports show them)."""
        means = self.means()
        parts = [f"{self.turns_per_second():.2f} turns/s"]
        parts += [f"{m} {100 * means[m]:+.0f}" for m in LIVE_METRICS if m in means]
        if self.retried:
            parts.append(f"{self.retried} re-run")
        return " · ".join(parts)
