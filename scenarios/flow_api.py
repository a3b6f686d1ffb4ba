"""The Flow contract: one kind of dialogue or probe a run can include, as a plugin.

A flow is one class, registered by name with the `@flow` decorator (or from another package
through the entry-point group `moralsim.flows`). It owns everything about itself:

- `Options`: its config dataclass (YAML `probes.<name>.<key>`, checked key by key like every
  other section, with did-you-mean), or None when it has no options;
- `check(plan)`: refuse a plan it cannot run (before any model loads);
- `run(ctx)`: produce records through the run's agent, scorers and writer;
- `section(ctx)`: its question-level results at the end of a run, from the records (kept in
  probes.json, so a copied run folder can be re-reported without models);
- `summarize(dialogues, probes)`: its entry in summary.json (`summary_key`);
- `rows`, `notes`, `html`, `compare`: what the terminal table, report.html and
  `moralsim compare` show of it.

The run, the summary, the report, `compare` and the CLI loop over registered flows and know
none by name. This module is in the bottom layer (no model, no upper-layer import), so every
layer can name the contract; the built-in flows live in the `flows` package and are imported
on the first registry lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from scenarios.registry import FLOWS
from scenarios.types import Dilemma, MoralQuestion

__all__ = [
    "Flow",
    "FlowPlan",
    "FlowRun",
    "Note",
    "Row",
    "RunData",
    "SectionContext",
    "below",
    "flow",
    "flows_in_order",
]


@dataclass(frozen=True)
class Row:
    """One line of the terminal table: an estimate (mean, ci95, n) shown x scale."""

    label: str
    estimate: Mapping[str, Any] | None
    scale: float = 100.0


@dataclass(frozen=True)
class Note:
    """A line under the terminal table; warnings are what a reader must not miss."""

    text: str
    warning: bool = False


@dataclass(frozen=True)
class FlowPlan:
    """What a flow may check before anything loads: the config, its options and the pack."""

    config: Any
    options: Any
    pack: Any


@dataclass
class FlowRun:
    """What `run` gets: the questions drawn for this run, the whole split's pool, the backend
    (agent, turn scorer, agreement scorer, embedder, interactive runner), the record writer,
    the ids already written (resume) and the meta every record carries.

    `step(label, work, turns_per_record)` shows a progress line around `work` (which returns
    the records it wrote) and counts their bot turns; a flow with its own live progress uses
    `bar`, `live` (its counters) and `say` instead, and reports `skipped` / `retried` in
    `outcome`.
    """

    config: Any
    options: Any
    pack: Any
    questions: list[MoralQuestion]
    pool: list[MoralQuestion]
    backend: Any
    writer: Any
    done: set[str]
    meta: dict[str, Any]
    step: Callable[[str, Callable[[], int], int], None]
    bar: Any
    live: Any
    say: Callable[[str], None]
    outcome: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SectionContext:
    """What `section` gets at the end of a run: every record (id order) and the models."""

    config: Any
    options: Any
    dilemmas: Sequence[Dilemma]
    dialogues: Sequence[Any]
    embed: Callable[[Sequence[str]], Any]


@dataclass(frozen=True)
class RunData:
    """One run folder as `compare` reads it: its records and probes.json."""

    dialogues: Sequence[Any]
    probes: Mapping[str, Any]


class Flow:
    """Base class of flows: every hook has a do-nothing default but `run`."""

    name: ClassVar[str] = ""
    summary_key: ClassVar[str] = ""
    """summary.json key of its entry (default: its name); flows may share one (sage-rot)."""
    order: ClassVar[int] = 100
    """Where it runs and shows among flows (built-ins 0-50; plugins after them)."""
    Options: ClassVar[type | None] = None
    legacy_keys: ClassVar[Mapping[str, str]] = {}
    """Flat `probes.<old_key>` names of earlier releases, mapped to this flow's option."""
    requires: ClassVar[tuple[str, ...]] = ()
    """Flows that must run with it (a flow reported inside another's section)."""
    probe: ClassVar[bool] = False
    """Run by `moralsim eval` by default: it needs no simulated user."""
    enabled_by: ClassVar[str | None] = None
    """A flat `probes.<key>: true` of earlier releases that switched this flow on."""

    @classmethod
    def key(cls) -> str:
        return cls.summary_key or cls.name

    def check(self, plan: FlowPlan) -> None:
        """Raise ValueError with a one-line reason when this plan cannot run (by default:
        a flow it `requires` is missing)."""
        missing = [name for name in self.requires if name not in plan.config.flows]
        if missing:
            raise ValueError(
                f"'flows': {self.name} needs {', '.join(missing)} in the same run; add it"
            )

    def run(self, ctx: FlowRun) -> None:
        """Write this flow's records (resume: skip ids in `ctx.done`)."""
        raise NotImplementedError

    def section(self, ctx: SectionContext) -> Any:
        """Question-level results for probes.json (a dataclass with `to_dict`), or None."""
        return None

    def summarize(self, dialogues: Sequence[Any], probes: Mapping[str, Any]) -> Any:
        """This flow's summary.json entry, from records and probes.json (None: not run)."""
        entry = probes.get(self.key())
        return dict(entry) if isinstance(entry, Mapping) else None

    def rows(self, entry: Mapping[str, Any]) -> list[Row]:
        return []

    def notes(self, entry: Mapping[str, Any]) -> list[Note]:
        return []

    def html(self, entry: Mapping[str, Any] | None) -> str:
        """Its report.html fragment; called with None when the run did not include it."""
        return ""

    def compare(self, a: RunData, b: RunData) -> list[Any]:
        """`evaluators.compare.Comparison` rows for two runs (empty: nothing to compare)."""
        return []


def below(key: str, value: float, low: float) -> list[tuple[str, str]]:
    """The `problems()` entry of an option under its minimum (none when it is fine)."""
    return [] if value >= low else [(key, f"must be >= {low}, got {value!r}")]


F = TypeVar("F", bound=type[Flow])


def flow(cls: F) -> F:
    """Class decorator: register a Flow subclass under its `name`."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__}: a flow needs a non-empty `name`")
    FLOWS.add(cls.name, cls)
    return cls


def flow_class(name: str) -> type[Flow]:
    """The registered flow class `name` (RegistryError, with the known names, if none)."""
    found = FLOWS.get(name)
    if not (isinstance(found, type) and issubclass(found, Flow)):
        raise TypeError(f"flow '{name}' is registered as {found!r}, not a Flow subclass")
    return found


def flows_in_order(names: Sequence[str] | None = None) -> list[Flow]:
    """Instances of the named flows (default: every registered one), in their display order;
    a class registered under two names (decorator and entry point) comes once."""
    chosen = FLOWS.names() if names is None else list(dict.fromkeys(names))
    classes = list(dict.fromkeys(flow_class(n) for n in chosen))
    return [c() for c in sorted(classes, key=lambda c: (c.order, c.name))]
