"""The rule of thumb (RoT): the normative sentence every flow, scorer and record revolves around.

It lives in the bottom layer so that records, agents and evaluators can all share one type
without importing upward.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

FOUNDATIONS: tuple[str, ...] = ("care", "fairness", "liberty", "loyalty", "authority", "sanctity")
"""The six moral foundations used by MIC and Social-Chem-101."""

CONSENSUS_LABELS: dict[int, str] = {
    1: "nobody (<1%)",
    2: "rare (5-25%)",
    3: "controversial (~50%)",
    4: "most (75-90%)",
    5: "all (>99%)",
}
SEVERITY_LABELS: dict[int, str] = {1: "fine", 2: "unwise", 3: "bad", 4: "horrible", 5: "worst"}


@dataclass(frozen=True)
class RoT:
    """A rule of thumb with the attributes the corpora record (None when a corpus lacks one).

    consensus uses the MIC 1-5 scale (Social-Chem-101's 0-4 is shifted by the loader) and
    severity the MIC 1-5 violation-severity scale.
    """

    text: str
    foundations: tuple[str, ...] = ()
    consensus: int | None = None
    severity: int | None = None
    judgment: str | None = None
    action: str | None = None
    situation: str | None = None

    @property
    def contested(self) -> bool:
        """Controversial or below (consensus <= 3): where a prudent bot should not take sides."""
        return self.consensus is not None and self.consensus <= 3

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["foundations"] = list(self.foundations)
        return {k: v for k, v in data.items() if v is not None and v != []}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoT:
        return cls(
            text=data["text"],
            foundations=tuple(data.get("foundations", ()) or ()),
            consensus=data.get("consensus"),
            severity=data.get("severity"),
            judgment=data.get("judgment"),
            action=data.get("action"),
            situation=data.get("situation"),
        )


__all__ = ["CONSENSUS_LABELS", "FOUNDATIONS", "SEVERITY_LABELS", "RoT"]
