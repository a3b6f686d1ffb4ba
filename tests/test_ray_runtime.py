"""The Ray runtime against the in-process reference: same records for the same seed, and a
killed bot actor costs nothing but time."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.base import GenerationSettings
from evaluators.moraldial import MoralDialParams
from scenarios.jsonl import DialogueWriter, read_dialogues
from scenarios.loaders import load_questions
from scenarios.records import Dialogue
from simulators.backend import open_backend
from simulators.live import LiveStats
from simulators.ray_actors import AgentSpec, EvaluatorSpec
from simulators.ray_runtime import RayOptions, RayRunner, start_bots, start_evaluators
from tests.conftest import build_tiny_tokenizer, make_tiny_causal_lm, make_tiny_classifier

DATA = Path(__file__).parent / "data"
SAFETY = ("It's wrong to hurt people.", "You should not steal.", "It's good to be honest.")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import torch
    from transformers import BertModel

    from tests.conftest import tiny_bert_config

    root = tmp_path_factory.mktemp("ray-models")
    encoder = root / "tiny-encoder"
    torch.manual_seed(0)
    BertModel(tiny_bert_config()).save_pretrained(encoder)
    build_tiny_tokenizer(encoder)
    return {
        "bot": make_tiny_causal_lm(root / "tiny-llama"),
        "agreement": make_tiny_classifier(root / "tiny-agreement"),
        "encoder": encoder,
        "cache": root / "cache",
    }


@pytest.fixture(scope="module")
def ray_cluster(models: dict[str, Path]) -> Iterator[None]:
    import ray

    old = os.environ.get("MORALSIM_CACHE")
    os.environ["MORALSIM_CACHE"] = str(models["cache"])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    if old is None:
        os.environ.pop("MORALSIM_CACHE", None)
    else:
        os.environ["MORALSIM_CACHE"] = old


def specs(models: dict[str, Path]) -> tuple[AgentSpec, EvaluatorSpec]:
    agent = AgentSpec(
        "transformers",
        str(models["bot"]),
        {"generation": GenerationSettings(max_new_tokens=6), "batch_size": 4},
    )
    evaluators = EvaluatorSpec(
        str(models["agreement"]), str(models["encoder"]), SAFETY, MoralDialParams()
    )
    return agent, evaluators


def run_backend(models: dict[str, Path], path: Path, ray: RayOptions | None) -> list[Dialogue]:
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    agent, evaluators = specs(models)
    with (
        open_backend(agent, evaluators, seed=7, meta={"run": "t"}, batch_size=4, ray=ray) as be,
        DialogueWriter(path) as writer,
    ):
        be.runner.run(questions, writer, set(), LiveStats())
    return read_dialogues(path)


def as_comparable(dialogue: Dialogue) -> tuple:
    turns = tuple((t.role, t.text, tuple(sorted(t.meta.items()))) for t in dialogue.turns)
    scores = tuple((s.name, s.turn, round(s.value, 5)) for s in dialogue.scores)
    return dialogue.id, turns, scores, dialogue.meta.get("seed")


def test_ray_gives_the_records_of_the_in_process_runner(
    models: dict[str, Path], ray_cluster: None, tmp_path: Path
) -> None:
    reference = run_backend(models, tmp_path / "inprocess.jsonl", None)
    on_ray = run_backend(models, tmp_path / "ray.jsonl", RayOptions(max_wait_ms=5))
    assert len(reference) == 4
    assert sorted(map(as_comparable, on_ray)) == sorted(map(as_comparable, reference))
    # every MoralDial step happened and was scored live
    names = {s.name for d in on_ray for s in d.scores}
    assert {"S_MA", "S_MR1", "S_ME", "S_RIL", "S_MR"} <= names


@pytest.fixture
def busy_cores() -> Iterator[Callable[[], None]]:
    """Starts two processes that keep both cores busy, as on a loaded 2-core laptop, when
    called: an actor restart (process start + model load) then takes far longer than any fixed
    retry budget."""
    import subprocess
    import sys

    hogs: list[subprocess.Popen] = []

    def start() -> None:
        # niced, so the test ends in minutes; the cores stay fully taken all the same
        hogs.extend(
            subprocess.Popen(
                [sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.nice(10)
            )
            for _ in range(2)
        )

    try:
        yield start
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.slow
@pytest.mark.parametrize("which", ["bot", "evaluator"])
def test_a_killed_actor_under_load_is_waited_for_and_the_run_completes(
    which: str,
    models: dict[str, Path],
    ray_cluster: None,
    busy_cores: Callable[[], None],
    tmp_path: Path,
) -> None:
    """kill -9 of the bot or evaluator actor while both cores are busy: the run waits for the
    restarted actor (readiness, not a retry budget), and every dialogue is on disk once."""
    import signal

    import ray

    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    agent, evaluators = specs(models)
    options = RayOptions(max_wait_ms=5)
    bots = start_bots(agent, options, 4)
    scorers = start_evaluators(evaluators, options)
    victim = (bots if which == "bot" else scorers).handles[0]
    pid_before = ray.get(victim.pid.remote())
    killed: list[int] = []

    def kill_once(live: LiveStats) -> None:
        if live.bot_turns == 3 and not killed:
            killed.append(pid_before)
            busy_cores()  # the restart happens while both cores are taken
            os.kill(pid_before, signal.SIGKILL)

    runner = RayRunner(bots, scorers, MoralDialParams(), seed=7, meta={"run": "t"})
    path = tmp_path / f"killed-{which}.jsonl"
    try:
        with DialogueWriter(path) as writer:
            stats = runner.run(questions, writer, set(), LiveStats(on_change=kill_once))
        pid_after = ray.get(victim.pid.remote())
    finally:
        bots.kill()
        scorers.kill()
    ids = [d.id for d in read_dialogues(path)]
    assert killed and pid_after != pid_before and stats.dialogues == len(questions)
    assert len(ids) == len(questions) == len(set(ids))


def test_a_killed_bot_actor_is_restarted_and_its_dialogues_rerun(
    models: dict[str, Path], ray_cluster: None, tmp_path: Path
) -> None:
    import ray

    reference = run_backend(models, tmp_path / "inprocess.jsonl", None)
    questions, _ = load_questions(DATA / "questions_sample.jsonl")
    agent, evaluators = specs(models)
    options = RayOptions(max_wait_ms=5)
    bots = start_bots(agent, options, 4)
    scorers = start_evaluators(evaluators, options)
    pid_before = ray.get(bots.handles[0].pid.remote())
    killed: list[int] = []

    def kill_once(live: LiveStats) -> None:
        if live.bot_turns == 3 and not killed:
            killed.append(live.bot_turns)
            ray.kill(bots.handles[0], no_restart=False)

    live = LiveStats(on_change=kill_once)
    runner = RayRunner(bots, scorers, MoralDialParams(), seed=7, meta={"run": "t"})
    path = tmp_path / "killed.jsonl"
    try:
        with DialogueWriter(path) as writer:
            stats = runner.run(questions, writer, set(), live)
        pid_after = ray.get(bots.handles[0].pid.remote())
    finally:
        bots.kill()
        scorers.kill()
    dialogues = read_dialogues(path)
    ids = [d.id for d in dialogues]
    assert killed and stats.retried >= 1 and pid_after != pid_before
    assert sorted(ids) == sorted({d.id for d in reference}) and len(ids) == len(set(ids))
    assert sorted(map(as_comparable, dialogues)) == sorted(map(as_comparable, reference))


def test_a_local_ray_tolerates_a_loaded_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Ray moralsim starts itself gets lenient health checks (a busy node was declared
    dead); one it joins keeps the cluster's own settings."""
    import ray

    from simulators.ray_runtime import LOCAL_HEALTH_CHECKS, ray_session

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr("simulators.ray_runtime._check_resources", lambda options: None)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with ray_session(RayOptions()):
        pass
    with ray_session(RayOptions(address="ray://head:10001")):
        pass
    assert calls[0]["_system_config"] == LOCAL_HEALTH_CHECKS
    assert LOCAL_HEALTH_CHECKS["health_check_failure_threshold"] >= 10
    assert "_system_config" not in calls[1]
