"""Built-in scenario packs, registered by name."""

from __future__ import annotations

from pathlib import Path

from scenarios.registry import SCENARIO_PACKS

PACKS_DIR = Path(__file__).resolve().parent


@SCENARIO_PACKS.register("core")
def core() -> Path:
    """The project's own English pack: questions, safety RoTs, agreement examples, dilemmas."""
    return PACKS_DIR / "core"
