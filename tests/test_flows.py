"""Flows as plugins: the contract, the config of a flow's options, and a custom flow end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from moralsim.config import ConfigError, load_config, save_config
from scenarios.flow_api import flows_in_order

ROOT = Path(__file__).resolve().parents[1]
FLOW_AGNOSTIC = [
    "moralsim/run_simulation.py",
    "evaluators/summary.py",
    "evaluators/compare.py",
    "evaluators/report_html.py",
    "moralsim/cli.py",
]


def test_the_run_summary_report_compare_and_cli_name_no_flow() -> None:
    names = [f.name for f in flows_in_order()]
    assert {"moraldial", "static-ril", "sage", "sage-rot", "dit", "prudence"} <= set(names)
    words = {n for name in names for n in (name, name.replace("-", "_"))}
    words |= {"MoralDial", "SaGE", "DIT", "p_mean_ci", "rot_prompted"}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    for path in FLOW_AGNOSTIC:
        found = pattern.findall((ROOT / path).read_text(encoding="utf-8"))
        assert not found, f"{path} names {sorted(set(found))}"


def test_flows_run_and_show_in_their_own_order() -> None:
    names = [f.name for f in flows_in_order(["prudence", "moraldial", "sage-rot", "sage"])]
    assert names == ["moraldial", "sage", "sage-rot", "prudence"]


def test_flow_options_are_checked_and_earlier_flat_keys_still_read(tmp_path: Path) -> None:
    config = load_config(
        None, ["probes.sage_questions=3", "probes.sage_rot_prompt=true", "probes.dit.orders=4"]
    )
    assert config.probes["sage"].questions == 3 and config.probes["sage-rot"].questions == 3
    assert config.probes["dit"].orders == 4 and "sage-rot" in config.flows
    saved = save_config(config, tmp_path / "config.yaml")
    again = load_config(saved)
    assert again.probes == config.probes and again.flows == config.flows
    with pytest.raises(ConfigError, match=r"unknown key 'probes.dit.order' \(did you mean "):
        load_config(None, ["probes.dit.order=4"])
    with pytest.raises(ConfigError, match=r"'probes.dit.orders' must be between 1 and 48"):
        load_config(None, ["probes.dit.orders=50"])
    with pytest.raises(ConfigError, match=r"'flows': sage-rot needs sage in the same run"):
        from moralsim.run_simulation import check_flows
        from scenarios.pack import load_pack

        plan = load_config(None, ["flows=[sage-rot]"])
        check_flows(plan, flows_in_order(plan.flows), load_pack("core").pack)


def test_a_missing_plugin_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("plugins: [nowhere.py]\nflows: [echo]\n")
    with pytest.raises(ConfigError, match=r"run.yaml: 'plugins\[0\]': plugin file 'nowhere.py'"):
        load_config(config)


def test_the_echo_example_runs_as_documented(
    tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    """`python simulate.py --config examples/echo_flow.yaml --no-ray`, on tiny models."""
    command = [
        sys.executable, "simulate.py", "--config", "examples/echo_flow.yaml", "--no-ray",
        "--output-dir", str(tmp_path), "--set", f"bot.model={tiny_causal_lm}",
        "--set", f"evaluators.agreement_model={tiny_classifier}",
        "--set", "bot.generation.max_new_tokens=4",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "echo: identical answers" in done.stdout  # the terminal table
    folder = tmp_path / "echo-demo"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["dialogues"]["by_flow"] == {"echo": 4}
    assert summary["echo"]["identical"]["n"] == 4 and len(summary["echo"]["per_question"]) == 4
    assert "<h2>Echo</h2>" in (folder / "report.html").read_text()
    # the saved config names the plugin by absolute path, so a report rebuilds anywhere
    assert load_config(folder / "config.yaml").plugins == [str(ROOT / "examples/echo_flow.py")]
    rebuilt = subprocess.run(
        [sys.executable, "-m", "moralsim", "report", str(folder)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert json.loads((folder / "summary.json").read_text())["echo"] == summary["echo"]


def test_a_registered_agreement_scorer_is_used_by_name() -> None:
    import numpy as np

    from evaluators.agreement import AgreementItem
    from evaluators.scorer_eval import scorer_kind, scorer_record
    from evaluators.scorers import open_agreement_scorer
    from scenarios.registry import SCORERS

    class AlwaysAgree:
        def probabilities(self, items: list[AgreementItem]) -> np.ndarray:
            return np.tile([1.0, 0.0, 0.0], (len(items), 1))

    SCORERS.add("test-always-agree", AlwaysAgree, replace=True)
    scorer = open_agreement_scorer("test-always-agree")
    assert scorer.probabilities([AgreementItem("q", "a", "r")]).tolist() == [[1.0, 0.0, 0.0]]
    assert scorer_kind("test-always-agree") == "registered scorer (plugin)"
    assert scorer_record("test-always-agree")["card"] is None


def test_a_registered_user_policy_decides_the_moves() -> None:
    from evaluators.moraldial import MoralDialParams
    from scenarios.pack import load_pack
    from scenarios.registry import USER_POLICIES
    from simulators.moraldial_user import MoralDialUser, open_dialogue

    class NeverPushesBack(MoralDialUser):
        pass

    USER_POLICIES.add("test-never-pushes-back", NeverPushesBack, replace=True)
    question = load_pack("core").pack.questions[0]
    _, user = open_dialogue(question, MoralDialParams(), 0, {}, "test-never-pushes-back")
    assert isinstance(user, NeverPushesBack)
    with pytest.raises(
        ConfigError, match=r"unknown user policy 'moraldail' \(did you mean 'moraldial'"
    ):
        load_config(None, ["user.policy=moraldail"])
