"""Scenario packs: a folder with a `pack.yaml` manifest and plain data files.

```yaml
name: core
description: ...
version: "1"
questions: questions.jsonl        # required
safety_rots: safety_rots.jsonl    # optional
agreement: agreement_hard.jsonl   # optional labelled examples: one file or a list of files
agreement_directions: dirs.jsonl  # optional: which way each question's RoTs point on its act
direction_pairs: pairs.jsonl      # optional: written (question, RoT, direction) training pairs
dilemmas: dilemmas.yaml           # optional
min_paraphrases: 5
derive_agreement: true            # add examples derived from the questions
seed: 0
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from scenarios.agreement_examples import derive_agreement_examples
from scenarios.loaders import (
    LoadIssue,
    ScenarioLoadError,
    load_agreement_examples,
    load_dilemmas,
    load_direction_pairs,
    load_questions,
    load_rot_directions,
    load_safety_rots,
)
from scenarios.registry import SCENARIO_PACKS
from scenarios.types import ScenarioPack

MANIFEST = "pack.yaml"
MANIFEST_KEYS = (
    "name",
    "description",
    "version",
    "license",
    "questions",
    "safety_rots",
    "agreement",
    "agreement_directions",
    "direction_pairs",
    "dilemmas",
    "min_paraphrases",
    "derive_agreement",
    "seed",
)


@dataclass
class PackLoad:
    """A loaded pack and every record a lenient load left out."""

    pack: ScenarioPack
    issues: list[LoadIssue] = field(default_factory=list)


def resolve_pack_path(spec: str | Path) -> Path:
    """A pack folder, or the name of a registered pack."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    if isinstance(spec, str) and "/" not in spec and not spec.startswith("."):
        factory = SCENARIO_PACKS.get(spec)
        return Path(factory())  # type: ignore[arg-type]
    raise ScenarioLoadError(path, "folder", None, "no such scenario pack folder")


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise ScenarioLoadError(path, "file", None, "missing pack manifest (pack.yaml)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ScenarioLoadError(path, "file", None, f"cannot be parsed: {exc}") from None
    if not isinstance(data, dict):
        raise ScenarioLoadError(path, "file", None, "must be a mapping of keys")
    for key in data:
        if key not in MANIFEST_KEYS:
            raise ScenarioLoadError(
                path, "manifest", str(key), f"unknown key; valid: {', '.join(MANIFEST_KEYS)}"
            )
    if "questions" not in data:
        raise ScenarioLoadError(path, "manifest", "questions", "missing (the question file name)")
    return data


def _file_list(manifest: dict[str, Any], key: str, folder: Path) -> list[str]:
    """A manifest entry naming one file or a list of files."""
    value = manifest.get(key)
    if not value:
        return []
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ScenarioLoadError(
            folder / MANIFEST, "manifest", key, "must be a file name or a list of file names"
        )
    return names


def load_pack(spec: str | Path, *, skip_invalid: bool = False) -> PackLoad:
    """Load a pack by folder or registered name; with skip_invalid, bad records are reported."""
    folder = resolve_pack_path(spec)
    manifest = _manifest(folder)
    issues: list[LoadIssue] = []
    min_paraphrases = int(manifest.get("min_paraphrases", 5))
    questions, found = load_questions(
        folder / manifest["questions"], min_paraphrases=min_paraphrases, skip_invalid=skip_invalid
    )
    issues += found
    pack = ScenarioPack(
        name=str(manifest.get("name", folder.name)),
        path=folder,
        description=str(manifest.get("description", "")),
        version=str(manifest.get("version", "")),
        questions=questions,
    )
    if manifest.get("safety_rots"):
        pack.safety_rots, found = load_safety_rots(
            folder / manifest["safety_rots"], skip_invalid=skip_invalid
        )
        issues += found
    if manifest.get("derive_agreement", True):
        pack.agreement_examples += derive_agreement_examples(
            questions, seed=int(manifest.get("seed", 0))
        )
    for name in _file_list(manifest, "agreement", folder):
        labelled, found = load_agreement_examples(folder / name, skip_invalid=skip_invalid)
        pack.agreement_examples += labelled
        issues += found
    for name in _file_list(manifest, "agreement_directions", folder):
        directions, found = load_rot_directions(folder / name, skip_invalid=skip_invalid)
        pack.rot_directions += directions
        issues += found
    for name in _file_list(manifest, "direction_pairs", folder):
        pairs, found = load_direction_pairs(folder / name, skip_invalid=skip_invalid)
        pack.direction_pairs += pairs
        issues += found
    if manifest.get("dilemmas"):
        pack.dilemmas, found = load_dilemmas(
            folder / manifest["dilemmas"], skip_invalid=skip_invalid
        )
        issues += found
    return PackLoad(pack, issues)
