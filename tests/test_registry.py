from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from scenarios import registry as registry_module
from scenarios.registry import REGISTRIES, Registry, RegistryError


def plugin_factory() -> str:
    return "from a plugin"


def test_decorator_registers_and_resolves() -> None:
    reg: Registry = Registry("agent", "moralsim.test_agents")

    @reg.register("echo")
    def make_echo() -> str:
        return "echo"

    @reg.register()
    def parrot() -> str:
        return "parrot"

    assert reg.get("echo") is make_echo
    assert reg.get("parrot") is parrot
    assert reg.names() == ["echo", "parrot"]
    assert "echo" in reg and "nope" not in reg


def test_duplicate_names_are_refused_unless_replaced() -> None:
    reg: Registry = Registry("scorer", "moralsim.test_scorers")
    reg.add("x", len)
    with pytest.raises(RegistryError, match="scorer 'x' is already registered"):
        reg.add("x", print)
    reg.add("x", print, replace=True)
    assert reg.get("x") is print


def test_unknown_name_lists_known_ones_and_the_plugin_group() -> None:
    reg: Registry = Registry("user policy", "moralsim.test_policies")
    reg.add("moraldial", len)
    with pytest.raises(
        RegistryError,
        match=r"unknown user policy 'x'\. Known: moraldial\..*moralsim\.test_policies",
    ):
        reg.get("x")


def test_module_object_references_resolve() -> None:
    reg: Registry = Registry("agent", "moralsim.test_agents")
    assert reg.get("tests.test_registry:plugin_factory") is plugin_factory
    with pytest.raises(RegistryError, match="has no 'missing'"):
        reg.get("tests.test_registry:missing")
    with pytest.raises(RegistryError, match="cannot import"):
        reg.get("no_such_module_xyz:thing")


def test_entry_points_are_discovered_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(
        name="plugged", value="tests.test_registry:plugin_factory", group="moralsim.agents"
    )

    def fake_entry_points(group: str) -> list[EntryPoint]:
        return [ep] if group == "moralsim.agents" else []

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    reg: Registry = Registry("agent", "moralsim.agents")
    assert reg.get("plugged") is plugin_factory
    assert "entry point" in reg.origin("plugged")


def test_broken_plugin_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(name="broken", value="no_such_module_xyz:f", group="moralsim.scorers")
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [ep])
    reg: Registry = Registry("scorer", "moralsim.scorers")
    with pytest.raises(RegistryError, match=r"plugin 'broken'.*failed to load"):
        reg.get("anything")


def test_builtin_modules_load_on_first_lookup() -> None:
    import sys

    from tests.registry_target import TARGET

    assert "tests.builtin_plugin" not in sys.modules
    assert TARGET.get("builtin-one")() == "one"
    assert "tests.builtin_plugin" in sys.modules


def test_the_four_registries_exist() -> None:
    assert set(REGISTRIES) == {"agents", "user_policies", "scorers", "scenario_packs"}
