"""Dialogue records: what a simulation writes, a report reads, and a REPL session saves.

One finished dialogue is one JSON object; the field names here are the on-disk format, so
they change only with a format version bump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from scenarios.rot import RoT

RECORD_VERSION = 1
Role = Literal["user", "bot", "system"]
ROLES: tuple[str, ...] = ("user", "bot", "system")


class RecordError(ValueError):
    """A record that cannot be read; the message names the field."""


def _require(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise RecordError(f"{where}: missing field '{key}'")
    value = data[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RecordError(f"{where}: field '{key}' must be {names}, got {type(value).__name__}")
    return value


@dataclass
class Turn:
    """One utterance. `meta` carries what produced it (phrase class, flow step, model params)."""

    role: Role
    text: str
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.meta:
            out["meta"] = self.meta
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "turn") -> Turn:
        role = _require(data, "role", str, where)
        if role not in ROLES:
            raise RecordError(f"{where}: field 'role' must be one of {ROLES}, got {role!r}")
        return cls(
            role=role,
            text=_require(data, "text", str, where),
            meta=dict(data.get("meta") or {}),
        )


@dataclass
class Score:
    """A named value a scorer gave one turn (`turn` indexes `Dialogue.turns`; None = dialogue).

    Values are in [-1, 1] (agreement-based) or [0, 1] (indicators, consistency); NaN is never
    stored: a turn that could not be scored has no Score and an `invalid` reason in meta.
    """

    name: str
    value: float
    turn: int | None = None
    scorer: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "value": self.value, "turn": self.turn}
        if self.scorer:
            out["scorer"] = self.scorer
        if self.meta:
            out["meta"] = self.meta
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "score") -> Score:
        value = _require(data, "value", (int, float), where)
        turn = data.get("turn")
        if turn is not None and not isinstance(turn, int):
            raise RecordError(f"{where}: field 'turn' must be int or null")
        return cls(
            name=_require(data, "name", str, where),
            value=float(value),
            turn=turn,
            scorer=str(data.get("scorer", "")),
            meta=dict(data.get("meta") or {}),
        )


@dataclass
class Dialogue:
    """A finished (or saved) conversation with its hidden RoT and every score it received.

    `id` is deterministic (scenario, flow, seed, repeat), which is what makes runs resumable.
    """

    id: str
    scenario_id: str
    flow: str
    turns: list[Turn] = field(default_factory=list)
    hidden_rot: RoT | None = None
    scores: list[Score] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def scores_named(self, name: str) -> list[Score]:
        return [s for s in self.scores if s.name == name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "id": self.id,
            "scenario_id": self.scenario_id,
            "flow": self.flow,
            "hidden_rot": self.hidden_rot.to_dict() if self.hidden_rot else None,
            "turns": [t.to_dict() for t in self.turns],
            "scores": [s.to_dict() for s in self.scores],
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "dialogue") -> Dialogue:
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, got {type(data).__name__}")
        version = data.get("version", RECORD_VERSION)
        if version != RECORD_VERSION:
            raise RecordError(f"{where}: record version {version} is not supported")
        rot = data.get("hidden_rot")
        if rot is not None:
            if not isinstance(rot, dict) or not isinstance(rot.get("text"), str):
                raise RecordError(f"{where}: field 'hidden_rot' must be an object with 'text'")
            rot = RoT.from_dict(rot)
        ident = _require(data, "id", str, where)
        scenario_id = _require(data, "scenario_id", str, where)
        flow = _require(data, "flow", str, where)
        turns = _require(data, "turns", list, where)
        scores = data.get("scores") or []
        return cls(
            id=ident,
            scenario_id=scenario_id,
            flow=flow,
            turns=[Turn.from_dict(t, f"{where}.turns[{i}]") for i, t in enumerate(turns)],
            hidden_rot=rot,
            scores=[Score.from_dict(s, f"{where}.scores[{i}]") for i, s in enumerate(scores)],
            meta=dict(data.get("meta") or {}),
        )
