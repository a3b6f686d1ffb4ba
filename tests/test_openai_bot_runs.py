"""`bot.agent: openai` in a run config: a bot behind an OpenAI-compatible server runs the same
simulation, probes, eval and chat as the same bot loaded in process, and a config that cannot
reach it is refused with one line before any model loads."""

from __future__ import annotations

import pickle
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from agents.server import create_app
from moralsim.cli import app
from moralsim.serve_cmd import served_name
from scenarios.jsonl import read_dialogues
from tests.test_server_client import _run_server

FLOWS = ["moraldial", "static-ril", "sage", "sage-rot", "prudence", "dit"]
PROBES = {
    "sage": {"questions": 2},
    "sage-rot": {"questions": 2},  # the RoT goes in a system turn of the history
    "prudence": {"questions": 2},
    "dit": {"dilemmas": 1, "orders": 2, "mode": "generation"},  # an endpoint has no logprobs
}


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), terminal_width=200)


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the OS freed the port this picked)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@pytest.fixture
def talkative_lm(tiny_causal_lm: Path) -> Path:
    """The tiny Llama with weights large enough that its greedy replies depend on the prompt
    (the plain random one says "is is is" to everything, which would make two runs agree
    whatever each bot was sent)."""
    import torch
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(tiny_causal_lm)
    torch.manual_seed(1)
    with torch.no_grad():
        for weight in (p for p in model.parameters() if p.dim() == 2):
            weight.normal_(0.0, 3.0 / weight.shape[1] ** 0.5)
    model.save_pretrained(tiny_causal_lm)
    return tiny_causal_lm


@pytest.fixture
def served(talkative_lm: Path) -> Iterator[str]:
    """`moralsim serve --model TINY`'s app (agent and served name built as the command builds
    them) on a free loopback port; yields its base URL."""
    from agents.hf import TransformersAgent

    model = str(talkative_lm)
    bot = TransformersAgent(model, adapter=None, merge=False, system_prompt=None)
    url, stop = _run_server(create_app(bot, served_name(model, None)))
    yield f"{url}/v1"
    stop()


def write_run(tmp_path: Path, name: str, bot: dict[str, Any], models: dict[str, Path]) -> Path:
    """A short greedy run of the core pack on the tiny scorers, as a YAML file."""
    config = {
        "name": name,
        "output_dir": str(tmp_path / "runs"),
        "seed": 3,
        "num_dialogues": 3,
        "flows": FLOWS,
        "probes": PROBES,
        "bot": {
            **bot,
            "system_prompt": "Answer in a few words .",
            "generation": {"max_new_tokens": 6, "do_sample": False},
        },
        "evaluators": {
            "agreement_model": str(models["agreement"]),
            "embedding_model": str(models["encoder"]),
        },
        "runtime": {"ray": False},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def models(talkative_lm: Path, tiny_classifier: Path, tiny_encoder: Path) -> dict[str, Path]:
    return {"bot": talkative_lm, "agreement": tiny_classifier, "encoder": tiny_encoder}


def endpoint_bot(models: dict[str, Path], base_url: str) -> dict[str, Any]:
    """The served tiny model as a run's bot: its served name, the URL, no key."""
    return {
        "agent": "openai",
        "model": served_name(str(models["bot"]), None),
        "base_url": base_url,
        "api_key_env": None,
    }


def records(run_dir: Path) -> list[tuple[Any, ...]]:
    """What two runs of the same bot must share: every turn's text and every score."""
    return [
        (
            d.id,
            d.flow,
            [(t.role, t.text) for t in d.turns],
            sorted((s.name, s.turn, s.value) for s in d.scores),
        )
        for d in sorted(read_dialogues(run_dir / "dialogues.jsonl"), key=lambda d: d.id)
    ]


# --------------------------------------------------------------------------- same bot, same run


def test_a_served_bot_runs_the_same_simulation_as_the_local_one(
    models: dict[str, Path], served: str, tmp_path: Path, isolated_cache: Path
) -> None:
    local = write_run(
        tmp_path, "local", {"agent": "transformers", "model": str(models["bot"])}, models
    )
    remote = write_run(tmp_path, "remote", endpoint_bot(models, served), models)
    for config in (local, remote):
        result = cli("simulate", "--config", str(config))
        assert result.exit_code == 0, result.output
    expected, got = records(tmp_path / "runs" / "local"), records(tmp_path / "runs" / "remote")
    assert {flow for _, flow, _, _ in expected} == set(FLOWS)
    replies = [text for _, _, turns, _ in expected for role, text in turns if role == "bot"]
    assert len(set(replies)) > len(replies) // 2, "replies that ignore the prompt prove nothing"
    assert got == expected


def test_eval_probes_a_served_bot(
    models: dict[str, Path], served: str, tmp_path: Path, isolated_cache: Path
) -> None:
    config = write_run(tmp_path, "probed", endpoint_bot(models, served), models)
    # --model: `eval` sets bot.model itself, which would replace the config's served name
    result = cli(
        "eval", "--config", str(config), "--model", served_name(str(models["bot"]), None),
        "--probes", "prudence,dit", "--name", "probed", "--output-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    flows = {d.flow for d in read_dialogues(tmp_path / "runs" / "probed" / "dialogues.jsonl")}
    assert flows == {"prudence", "dit"}


def test_the_spec_a_ray_actor_gets_builds_the_served_bot(
    models: dict[str, Path], served: str, tmp_path: Path
) -> None:
    """A Ray bot actor receives the AgentSpec pickled and builds the agent from it."""
    from agents.hf import TransformersAgent
    from moralsim.backend_specs import agent_spec
    from moralsim.config import load_config
    from scenarios.records import Turn
    from simulators.ray_actors import AgentSpec

    run = load_config(write_run(tmp_path, "ray", endpoint_bot(models, served), models))
    spec = pickle.loads(pickle.dumps(agent_spec(run)))
    assert isinstance(spec, AgentSpec) and "adapter" not in spec.kwargs
    agent = spec.build()
    local = TransformersAgent(
        str(models["bot"]), system_prompt=run.bot.system_prompt, generation=agent.generation
    )
    histories = [[Turn("user", "is it okay to lie ?")], [Turn("user", "why ?")]]
    try:
        assert agent.respond(histories) == local.respond(histories)
        assert agent.concurrency == run.bot.batch_size and agent.model == run.bot.model
    finally:
        agent.close()


def test_chat_builds_the_bot_from_the_run_config(
    models: dict[str, Path], served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.hf import TransformersAgent
    from agents.openai_client import OpenAIChatAgent

    sessions: list[Any] = []
    monkeypatch.setattr("moralsim.repl.run_repl", lambda session, **_: sessions.append(session))
    config = write_run(tmp_path, "chat", endpoint_bot(models, served), models)
    result = cli("chat", "--config", str(config), "--no-scores")
    assert result.exit_code == 0, result.output
    (session,) = sessions
    assert isinstance(session.agent, OpenAIChatAgent)
    local = TransformersAgent(
        str(models["bot"]), system_prompt="Answer in a few words .",
        generation=session.agent.generation,
    )  # fmt: skip
    reply = session.say("is it okay to lie ?")
    assert reply.text == local.respond([session.dialogue.turns[:1]])[0]


def test_a_chat_turn_the_server_did_not_answer_is_rolled_back() -> None:
    """The dialogue is as it was, so the REPL goes on and the turn can simply be sent again."""
    from agents.openai_client import AgentError, OpenAIChatAgent
    from moralsim.repl import ChatSession

    agent = OpenAIChatAgent("m", base_url=closed_port_url(), api_key_env=None, backoff=0)
    session = ChatSession(agent)
    with pytest.raises(AgentError, match="failed after"):
        session.say("is it okay to lie ?")
    assert session.dialogue.turns == []
    agent.close()


# --------------------------------------------------------------------------- refused plans


def one_line_refusal(result: Result, *expected: str) -> None:
    """Exit 2, one line naming what to fix, no traceback."""
    assert result.exit_code == 2, result.output
    assert result.output.strip().count("\n") == 0, result.output
    assert "Traceback" not in result.output
    for text in expected:
        assert text in result.output


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        (["bot.agent=openai"], ["'bot.base_url' is required when bot.agent is openai"]),
        (
            ["bot.agent=openai", "bot.base_url=http://127.0.0.1:9/v1", "bot.adapter=./lora"],
            ["'bot.adapter' cannot be used with bot.agent openai"],
        ),
        (
            ["bot.agent=openai", "bot.base_url=127.0.0.1:9/v1"],
            ["'bot.base_url' must start with http:// or https://"],
        ),
        (
            ["bot.agent=openai", "bot.base_url=http://127.0.0.1:9/v1",
             "bot.generation.num_beams=4"],
            ["'bot.generation.num_beams' is 4", "no beam search"],
        ),
        (["bot.base_url=http://127.0.0.1:9/v1"], ["'bot.base_url' is only read when"]),
        (
            ["bot.agent=openai", "bot.base_url=http://127.0.0.1:9/v1", "bot.api_key_env=null"],
            ["probes.dit.mode: likelihood", "probes.dit.mode=generation"],
        ),
        (
            [
                "bot.agent=openai", "bot.base_url=http://127.0.0.1:9/v1", "flows=[moraldial]",
                "bot.api_key_env=MORALSIM_TEST_UNSET_KEY",
            ],
            ["bot.api_key_env: the environment variable MORALSIM_TEST_UNSET_KEY is not set"],
        ),
    ],
)  # fmt: skip
def test_a_bot_config_an_endpoint_cannot_run_is_refused_before_anything_loads(
    sets: list[str], expected: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MORALSIM_TEST_UNSET_KEY", raising=False)
    args = ["simulate", "--output-dir", str(tmp_path / "runs"), "--no-ray"]
    # A scorer that does not exist: reaching the model loading would fail on it instead.
    args += ["--set", f"evaluators.agreement_model={tmp_path / 'no-such-scorer'}"]
    for assignment in sets:
        args += ["--set", assignment]
    one_line_refusal(cli(*args), *expected)
    assert not (tmp_path / "runs").exists()


def test_an_unreachable_server_or_unserved_model_is_refused_before_anything_loads(
    models: dict[str, Path], served: str, tmp_path: Path
) -> None:
    closed = closed_port_url()
    config = write_run(tmp_path, "refused", endpoint_bot(models, served), models)
    unreachable = cli("simulate", "--config", str(config), "--set", f"bot.base_url={closed}")
    one_line_refusal(unreachable, "bot.base_url: cannot reach", closed)
    typo = cli("simulate", "--config", str(config), "--set", "bot.model=tiny-lama")
    one_line_refusal(typo, "bot.model:", "not 'tiny-lama'")
    assert not (tmp_path / "runs").exists()


def test_chat_refuses_an_unset_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORALSIM_TEST_UNSET_KEY", raising=False)
    result = cli(
        "chat", "--endpoint", "http://127.0.0.1:9/v1", "--api-key-env",
        "MORALSIM_TEST_UNSET_KEY", "--no-scores",
    )  # fmt: skip
    one_line_refusal(result, "MORALSIM_TEST_UNSET_KEY is not set")


def test_other_agents_get_the_options_they_always_got() -> None:
    from moralsim.backend_specs import agent_spec
    from moralsim.config import load_config

    scripted_options = {"adapter", "system_prompt", "generation", "batch_size"}
    local = agent_spec(load_config(None, ["bot.adapter=./lora"])).kwargs
    assert set(local) == {"max_context_tokens", "device", "dtype", *scripted_options}
    scripted = agent_spec(load_config(None, ["bot.agent=scripted:rot-follower"])).kwargs
    assert set(scripted) == scripted_options
    served = agent_spec(
        load_config(None, ["bot.agent=openai", "bot.base_url=http://h/v1", "bot.batch_size=4"])
    ).kwargs
    assert served["concurrency"] == 4 and served["api_key_env"] == "OPENAI_API_KEY"
    assert set(served) == {"system_prompt", "generation", "base_url", "api_key_env", "concurrency"}


def test_both_call_forms_of_the_client_name_the_same_endpoint() -> None:
    from agents.openai_client import OpenAIChatAgent

    for agent in (
        OpenAIChatAgent("m", base_url="http://h/v1/", api_key_env=None),
        OpenAIChatAgent("http://h/v1/", "m", api_key_env=None),
    ):
        assert (agent.base_url, agent.model) == ("http://h/v1", "m")
        agent.close()
    with pytest.raises(TypeError, match="takes"):
        OpenAIChatAgent("http://h/v1", "m", base_url="http://h/v1", api_key_env=None)
