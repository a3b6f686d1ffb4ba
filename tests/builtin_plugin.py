"""Stands in for a built-in module that registers a factory when it is imported."""

from __future__ import annotations

from tests.registry_target import TARGET


@TARGET.register("builtin-one")
def one() -> str:
    return "one"
