"""A registry whose built-in module is imported only on the first lookup (registry tests)."""

from __future__ import annotations

from collections.abc import Callable

from scenarios.registry import Registry

TARGET: Registry[Callable[[], str]] = Registry(
    "agent", "moralsim.test_agents", builtin_modules=["tests.builtin_plugin"]
)
