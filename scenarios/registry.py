"""Name → factory registries for agents, user policies, scorers and scenario packs.

Configs and the CLI name things ("transformers", "moraldial", "sage", "core"); this is
where a name becomes code. Three sources, looked up in order:

1. factories registered with the decorator (`@AGENTS.register("name")`), including the
   built-in ones, whose modules are imported lazily on the first lookup;
2. entry points of installed packages (group `moralsim.agents`, `moralsim.user_policies`,
   `moralsim.scorers`, `moralsim.scenario_packs`, `moralsim.flows`), so a third-party package
   adds one without touching moralsim;
3. an explicit `"package.module:object"` reference.

The registries live in the bottom layer so every package can register into them without
importing upward; built-in modules are named as strings for the same reason.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

T = TypeVar("T")


class RegistryError(LookupError):
    """An unknown name, a clash, or a reference that does not import."""


class Registry(Generic[T]):
    """A thread-safe registry of one kind of factory."""

    def __init__(self, kind: str, group: str, builtin_modules: Iterable[str] = ()) -> None:
        self.kind = kind
        self.group = group
        self._builtin_modules = tuple(builtin_modules)
        self._items: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._lock = threading.RLock()
        self._builtins_loaded = False
        self._entry_points_loaded = False

    def register(self, name: str | None = None, *, replace: bool = False) -> Callable[[T], T]:
        """Decorator: register the decorated factory under `name` (default: its __name__)."""

        def decorate(obj: T) -> T:
            key = name or getattr(obj, "__name__", None)
            if not key:
                raise RegistryError(f"cannot infer a {self.kind} name for {obj!r}; pass one")
            self.add(key, obj, replace=replace)
            return obj

        return decorate

    def add(self, name: str, obj: T, *, replace: bool = False, origin: str = "") -> None:
        with self._lock:
            existing = self._items.get(name)
            if existing is not None and existing is not obj and not replace:
                raise RegistryError(
                    f"{self.kind} '{name}' is already registered "
                    f"(by {self._origins.get(name) or _describe(existing)}); "
                    "pick another name or pass replace=True"
                )
            self._items[name] = obj
            self._origins[name] = origin or _describe(obj)

    def get(self, name: str) -> T:
        """Resolve a name, an entry point or a `module:object` reference."""
        with self._lock:
            if name in self._items:
                return self._items[name]
            self._load_builtins()
            if name in self._items:
                return self._items[name]
            self._load_entry_points()
            if name in self._items:
                return self._items[name]
        if ":" in name:
            return self._import_reference(name)
        known = ", ".join(self.names()) or "none"
        raise RegistryError(
            f"unknown {self.kind} '{name}'. Known: {known}. A plugin package can add one via the "
            f"'{self.group}' entry-point group, or name it as 'package.module:object'."
        )

    def names(self) -> list[str]:
        with self._lock:
            self._load_builtins()
            self._load_entry_points()
            return sorted(self._items)

    def origin(self, name: str) -> str:
        self.get(name)
        return self._origins[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for module in self._builtin_modules:
            importlib.import_module(module)

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=self.group):
            if ep.name in self._items:
                continue
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin must not hide the built-ins
                raise RegistryError(
                    f"{self.kind} plugin '{ep.name}' ({ep.value}) from entry-point group "
                    f"'{self.group}' failed to load: {exc}"
                ) from exc
            self.add(ep.name, obj, origin=f"entry point {ep.value}")

    def _import_reference(self, ref: str) -> T:
        module_name, _, attr = ref.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise RegistryError(
                f"{self.kind} '{ref}': cannot import '{module_name}': {exc}"
            ) from exc
        obj = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise RegistryError(f"{self.kind} '{ref}': '{module_name}' has no '{attr}'")
            obj = getattr(obj, part)
        return obj  # type: ignore[return-value]


def _describe(obj: object) -> str:
    module = getattr(obj, "__module__", "?")
    qualname = getattr(obj, "__qualname__", type(obj).__name__)
    return f"{module}:{qualname}"


AGENTS: Registry[Callable[..., object]] = Registry(
    "agent",
    "moralsim.agents",
    builtin_modules=["agents.hf", "agents.openai_client", "agents.scripted"],
)
USER_POLICIES: Registry[Callable[..., object]] = Registry(
    "user policy",
    "moralsim.user_policies",
    builtin_modules=["simulators.moraldial_user", "simulators.llm_user"],
)
SCORERS: Registry[Callable[..., object]] = Registry("scorer", "moralsim.scorers")
"""Agreement scorers by name (see `evaluators.scorers.registered_scorer`): plugins only; the
built-in ones are named by model folder, embedded name or endpoint."""
SCENARIO_PACKS: Registry[Callable[..., object]] = Registry(
    "scenario pack", "moralsim.scenario_packs", builtin_modules=["scenarios.packs"]
)
FLOWS: Registry[type] = Registry(
    "flow",
    "moralsim.flows",
    builtin_modules=[
        "flows.moraldial",
        "flows.static_ril",
        "flows.sage",
        "flows.dit",
        "flows.prudence",
    ],
)

REGISTRIES: dict[str, Registry[Callable[..., object]]] = {
    "agents": AGENTS,
    "user_policies": USER_POLICIES,
    "scorers": SCORERS,
    "scenario_packs": SCENARIO_PACKS,
}
