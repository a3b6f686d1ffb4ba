"""`simulate.py` end to end on tiny random models, the way users run it: as a script (Ray in
process), killed and resumed, and as a `ray job submit` job on a local cluster."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from evaluators.moraldial import METRICS
from scenarios.jsonl import read_dialogues

ROOT = Path(__file__).resolve().parents[1]


def tiny_config(
    tmp_path: Path, models: dict[str, Path], name: str, **extra: object
) -> dict[str, object]:
    config: dict[str, object] = {
        "name": name,
        "output_dir": str(tmp_path / "runs"),
        "seed": 3,
        "num_dialogues": 6,
        "flows": ["moraldial"],
        "bot": {"model": str(models["bot"]), "generation": {"max_new_tokens": 6}},
        "evaluators": {
            "agreement_model": str(models["agreement"]),
            "embedding_model": str(models["encoder"]),
        },
    }
    config.update(extra)
    return config


def write_config(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / f"{config['name']}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def models(tiny_causal_lm: Path, tiny_classifier: Path, tmp_path: Path) -> dict[str, Path]:
    import torch
    from transformers import BertModel

    from tests.conftest import build_tiny_tokenizer, tiny_bert_config

    encoder = tmp_path / "tiny-encoder-st"
    torch.manual_seed(0)
    BertModel(tiny_bert_config()).save_pretrained(encoder)
    build_tiny_tokenizer(encoder)
    return {"bot": tiny_causal_lm, "agreement": tiny_classifier, "encoder": encoder}


def env_for(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["MORALSIM_CACHE"] = str(tmp_path / "cache")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("RAY_ADDRESS", None)
    env["COLUMNS"] = "200"  # rich wraps at 80 columns without a terminal
    return env


def simulate(config: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "simulate.py"), "--config", str(config), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.mark.slow
def test_a_full_run_has_every_metric_and_probe_and_a_report(
    models: dict[str, Path], tmp_path: Path
) -> None:
    config = tiny_config(
        tmp_path,
        models,
        "full",
        flows=["moraldial", "static-ril", "sage", "dit", "prudence"],
        probes={"sage_questions": 2, "dit_dilemmas": 2, "dit_orders": 2, "prudence_questions": 4},
    )
    result = simulate(write_config(tmp_path, config), env_for(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    folder = tmp_path / "runs" / "full"
    summary = json.loads((folder / "summary.json").read_text())
    for metric in METRICS:  # the random tiny scorer keeps S_MR1 below 0.35: always a push-back
        assert summary["metrics"][metric]["n"] > 0, metric
    pushed = [d for d in read_dialogues(folder / "dialogues.jsonl") if d.flow == "moraldial"]
    pushed = [d for d in pushed if any(t.meta.get("step") == "pushback" for t in d.turns)]
    assert summary["metrics"]["S_MR2"]["n"] == len(pushed)
    assert summary["sage"] and summary["dit"] and summary["prudence"]
    html = (folder / "report.html").read_text()
    parser = _Tags()
    parser.feed(html)
    assert parser.tags.count("table") >= 3 and "svg" in parser.tags
    text = " ".join(parser.text)
    for heading in ("S_MA", "SaGE", "P-score", "rudence"):
        assert heading in text, heading
    assert "ray (" in result.stdout + result.stderr  # the default runtime


def _summary_without_run_info(folder: Path) -> dict[str, object]:
    summary = json.loads((folder / "summary.json").read_text())
    summary.pop("run", None)
    return summary


@pytest.mark.slow
def test_a_driver_killed_mid_run_resumes_to_the_uninterrupted_result(
    models: dict[str, Path], tmp_path: Path
) -> None:
    env = env_for(tmp_path)
    slow = {"max_concurrent_dialogues": 1}
    killed = write_config(
        tmp_path,
        tiny_config(tmp_path, models, "killed", num_dialogues=16, runtime=slow),
    )
    records = tmp_path / "runs" / "killed" / "dialogues.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "simulate.py"), "--config", str(killed)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if records.exists() and records.read_text().count("\n") >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and every process it started
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = len(read_dialogues(records))
    assert 3 <= before < 16
    resumed = simulate(killed, env, "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"({before} already done)" in resumed.stdout + resumed.stderr
    whole = write_config(
        tmp_path, tiny_config(tmp_path, models, "whole", num_dialogues=16, runtime=slow)
    )
    assert simulate(whole, env).returncode == 0
    ids = [d.id for d in read_dialogues(records)]
    assert len(ids) == 16 == len(set(ids))
    assert_close(
        _summary_without_run_info(records.parent),
        _summary_without_run_info(tmp_path / "runs" / "whole"),
    )


def assert_close(a: object, b: object, tol: float = 1e-6, where: str = "summary") -> None:
    """Equal structure and text, numbers within `tol`: scores of the same turn differ by ~1e-9
    when dynamic batching groups it with other turns (a resumed run batches differently)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for key in a:
            assert_close(a[key], b[key], tol, f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, tol, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), where
        assert abs(a - b) <= tol, f"{where}: {a} vs {b}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_ray_job_submit_runs_simulate_on_a_local_cluster(
    models: dict[str, Path], tmp_path: Path
) -> None:
    ray_bin = Path(sys.executable).parent / "ray"
    env = env_for(tmp_path)
    if (Path.home() / ".ray" / "auth_token").exists():
        env["RAY_AUTH_MODE"] = "token"  # after any ray.init(), ray start and job submit need it
    dashboard = _free_port()
    # Ray's socket paths must stay under 107 bytes, which pytest's tmp_path can exceed.
    ray_tmp = Path(tempfile.mkdtemp(prefix="msray-", dir="/tmp"))
    head = [
        str(ray_bin), "start", "--head", "--node-ip-address=127.0.0.1",
        f"--port={_free_port()}", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
        f"--ray-client-server-port={_free_port()}", "--num-cpus=2", "--disable-usage-stats",
        f"--temp-dir={ray_tmp}",
    ]  # fmt: skip
    started = subprocess.run(head, env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        job_dir = tmp_path / "job"
        job_dir.mkdir()
        shutil.copy(ROOT / "simulate.py", job_dir / "simulate.py")
        config = tiny_config(tmp_path, models, "job")
        (job_dir / "run.yaml").write_text(yaml.safe_dump(config))
        submit = [
            str(ray_bin), "job", "submit", "--address", f"http://127.0.0.1:{dashboard}",
            "--working-dir", str(job_dir), "--", "python", "simulate.py", "--config", "run.yaml",
        ]  # fmt: skip
        job = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=400)
        assert job.returncode == 0, job.stdout + job.stderr
        assert "succeeded" in (job.stdout + job.stderr).lower()
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    folder = tmp_path / "runs" / "job"
    assert len(read_dialogues(folder / "dialogues.jsonl")) == 6
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["metrics"]["S_MA"]["n"] == 6
    assert (folder / "report.html").is_file() and (folder / "config.yaml").is_file()
