"""Load the plugin files or modules a run config names, so their registrations take effect.

A plugin is a Python file (`examples/echo_flow.py`) or an importable module (`my_pkg.flows`)
whose import registers flows, agents or scorers by decorator. A file is imported once per
process under a name derived from its absolute path, so loading a config twice (a resume, a
report rebuild) never registers the same flow twice.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path


class PluginError(ValueError):
    """A plugin that cannot be found or imported; the message names it and why."""


def resolve_plugin(spec: str, base: Path | None = None) -> str:
    """A file spec as an absolute path (relative to `base`, the config's folder, first, then
    the working directory); a module spec unchanged."""
    if not spec.endswith(".py") and "/" not in spec and "\\" not in spec:
        return spec
    for root in (base, Path.cwd()) if base is not None else (Path.cwd(),):
        candidate = (root / spec).resolve()
        if candidate.is_file():
            return str(candidate)
    raise PluginError(f"plugin file '{spec}' not found" + (f" (looked in {base})" if base else ""))


def load_plugins(specs: Sequence[str]) -> None:
    """Import every plugin (resolved specs); the first failure raises PluginError."""
    for spec in specs:
        try:
            if spec.endswith(".py"):
                _import_file(Path(spec))
            else:
                importlib.import_module(spec)
        except PluginError:
            raise
        except Exception as exc:  # any error in a user's plugin becomes one line
            raise PluginError(
                f"plugin '{spec}' failed to import: {type(exc).__name__}: {exc}"
            ) from exc


def _import_file(path: Path) -> None:
    name = "moralsim_plugin_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin file '{path}' cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
