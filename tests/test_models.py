from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents import models
from agents.models import (
    MARKER,
    EmbeddedModel,
    ModelError,
    cache_dir,
    detect_kind,
    load_causal_lm,
    prepare_model,
    resolve_model,
)


def test_cache_dir_honours_env(isolated_cache: Path) -> None:
    assert cache_dir() == isolated_cache


def test_cache_dir_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORALSIM_CACHE", raising=False)
    assert cache_dir() == Path.home() / ".cache" / "moralsim"


def test_hub_name_gets_instructions_to_use_a_folder(isolated_cache: Path) -> None:
    with pytest.raises(ModelError) as info:
        resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")
    message = str(info.value)
    assert "never downloads from the Hub" in message
    assert "--local-dir models/SmolLM2-135M-Instruct" in message
    assert "smollm2-135m-instruct" in message  # the embedded alternatives are listed


@pytest.mark.parametrize("spec", ["./missing-model", "/no/such/dir", "not-a-model"])
def test_missing_folder_is_explained(isolated_cache: Path, spec: str) -> None:
    with pytest.raises(ModelError, match="not found: it is not an existing folder"):
        resolve_model(spec)


def test_empty_spec_and_file_spec(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="empty model spec"):
        resolve_model(" ")
    f = tmp_path / "weights.bin"
    f.write_bytes(b"x")
    with pytest.raises(ModelError, match="is a file, not a model folder"):
        resolve_model(str(f))


def test_folder_without_config_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"has no config\.json"):
        resolve_model(str(tmp_path))


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        ({"architectures": ["LlamaForCausalLM"]}, "causal-lm"),
        (
            {"architectures": ["T5ForConditionalGeneration"], "is_encoder_decoder": True},
            "seq2seq-lm",
        ),
        ({"architectures": ["BertForSequenceClassification"]}, "sequence-classifier"),
        ({"architectures": ["BertModel"]}, "encoder"),
    ],
)
def test_kind_is_read_from_config(tmp_path: Path, config: dict, kind: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert detect_kind(tmp_path) == kind


def test_sentence_transformers_folder_is_an_encoder(tmp_path: Path) -> None:
    (tmp_path / "modules.json").write_text("[]")
    assert detect_kind(tmp_path) == "sentence-encoder"


def test_local_tiny_causal_lm_loads_left_padded(tiny_causal_lm: Path) -> None:
    resolved = resolve_model(str(tiny_causal_lm))
    assert resolved.kind == "causal-lm" and not resolved.embedded
    model, tokenizer = load_causal_lm(str(tiny_causal_lm))
    assert tokenizer.padding_side == "left"
    assert not model.training
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_wrong_kind_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(ModelError, match="is a encoder, not a causal LM"):
        load_causal_lm(str(tmp_path))


# ------------------------------------------------------------------ preparation, with a fake model


class FakeBuild:
    """Writes a folder file by file; can be told to crash half-way, like an interrupted run."""

    def __init__(self) -> None:
        self.calls = 0
        self.crash = False

    def __call__(self, source: Path, out: Path) -> None:
        self.calls += 1
        (out / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
        if self.crash:
            raise KeyboardInterrupt("interrupted mid-preparation")
        (out / "model.safetensors").write_bytes(source.read_bytes())


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path):
    source = tmp_path / "fake.gguf"
    source.write_bytes(b"weights-v1")
    build = FakeBuild()
    fake = EmbeddedModel(
        name="fake-lm",
        kind="causal-lm",
        package="pytest",  # any installed package: its version goes into the marker
        description="test model",
        locate=lambda: source,
        build=build,
        estimate="~0 s",
    )
    monkeypatch.setattr(models, "embedded_models", lambda: {"fake-lm": fake})
    return build, source


def test_prepare_builds_once_then_is_a_no_op(fake_model, isolated_cache: Path) -> None:
    build, _ = fake_model
    messages: list[str] = []
    first = prepare_model("fake-lm", progress=messages.append)
    assert first.built and build.calls == 1
    assert messages[0].startswith("preparing fake-lm (one-time, ~0 s)")
    second = prepare_model("fake-lm", progress=messages.append)
    assert not second.built and build.calls == 1
    assert (first.path / MARKER).is_file()
    assert resolve_model("fake-lm").path == first.path


def test_interrupted_preparation_leaves_nothing_trusted(fake_model, isolated_cache: Path) -> None:
    build, _ = fake_model
    build.crash = True
    with pytest.raises(KeyboardInterrupt):
        prepare_model("fake-lm", progress=lambda m: None)
    target = isolated_cache / "models" / "fake-lm"
    assert not target.exists()
    assert not list((isolated_cache / "models").glob(".fake-lm.partial-*"))
    build.crash = False
    result = prepare_model("fake-lm", progress=lambda m: None)
    assert result.built and (target / "model.safetensors").read_bytes() == b"weights-v1"


def test_folder_without_marker_is_rebuilt(fake_model, isolated_cache: Path) -> None:
    build, _ = fake_model
    path = prepare_model("fake-lm", progress=lambda m: None).path
    (path / MARKER).unlink()  # e.g. a half-copied cache
    assert prepare_model("fake-lm", progress=lambda m: None).built
    assert build.calls == 2


def test_changed_source_is_rebuilt(fake_model, isolated_cache: Path) -> None:
    build, source = fake_model
    prepare_model("fake-lm", progress=lambda m: None)
    fake = models.embedded_models()["fake-lm"]
    assert models.is_current(fake, source)  # what `models list` calls "prepared"
    source.write_bytes(b"weights-v2-longer")
    assert not models.is_current(fake, source)  # "stale": the next use rebuilds it
    path = prepare_model("fake-lm", progress=lambda m: None).path
    assert build.calls == 2
    assert (path / "model.safetensors").read_bytes() == b"weights-v2-longer"


def test_deleted_cache_is_prepared_again(fake_model, isolated_cache: Path) -> None:
    import shutil

    build, _ = fake_model
    path = prepare_model("fake-lm", progress=lambda m: None).path
    shutil.rmtree(path)
    assert prepare_model("fake-lm", progress=lambda m: None).built
    assert build.calls == 2


def test_unknown_embedded_name(isolated_cache: Path) -> None:
    with pytest.raises(ModelError, match="unknown embedded model 'nope'"):
        prepare_model("nope")
