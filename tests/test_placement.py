"""Device and dtype: spelled in configs, resolved once per component, refused before anything
loads when the GPU is not there, and carried to every model, Ray actor and trainer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from agents.placement import Placement, PlacementError, resolve_placement
from moralsim.backend_specs import (
    actor_device,
    agent_spec,
    evaluator_and_agent_specs,
    placement_problem,
    ray_options,
)
from moralsim.cli import app
from moralsim.config import ConfigError, config_from_dict
from simulators.ray_runtime import RayOptions, actor_options, resource_refusal

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")


# --------------------------------------------------------------------------- resolving


def test_auto_is_the_cpu_in_float32_without_a_gpu_and_the_gpu_in_bfloat16_with_one() -> None:
    assert resolve_placement(gpus=(0, False)) == Placement("cpu", "float32")
    assert resolve_placement(gpus=(2, True)) == Placement("cuda", "bfloat16")
    assert resolve_placement(gpus=(1, False)) == Placement("cuda", "float16")  # no bf16 (V100)
    assert resolve_placement("cpu", "bfloat16", gpus=(1, True)) == Placement("cpu", "bfloat16")
    assert resolve_placement("cuda:1", "float32", gpus=(2, True)) == Placement("cuda:1", "float32")


def test_cuda_where_there_is_none_is_an_error_naming_the_key() -> None:
    with pytest.raises(PlacementError, match=r"^bot\.device is cuda, but torch .* no CUDA GPU"):
        resolve_placement("cuda", prefix="bot.", gpus=(0, False))
    with pytest.raises(PlacementError, match=r"cuda:2, but torch sees 2 GPU\(s\) here"):
        resolve_placement("cuda:2", gpus=(2, True))
    with pytest.raises(PlacementError, match=r"^--device: must be auto, cpu, cuda or cuda:N"):
        resolve_placement("gpu", prefix="--", gpus=(1, True))
    with pytest.raises(PlacementError, match=r"^dtype: must be one of auto, float32"):
        resolve_placement("cpu", "fp16", gpus=(0, False))


@NO_CUDA
def test_auto_resolves_to_the_cpu_on_this_machine() -> None:
    assert resolve_placement() == Placement("cpu", "float32")


# --------------------------------------------------------------------------- the run config


def test_config_checks_the_spelling_of_every_device_and_dtype() -> None:
    with pytest.raises(ConfigError, match=r"'bot\.device' must be auto, cpu, cuda or cuda:N"):
        config_from_dict({"bot": {"device": "gpu"}})
    with pytest.raises(ConfigError, match=r"'evaluators\.dtype' must be one of auto"):
        config_from_dict({"evaluators": {"dtype": "half"}})
    with pytest.raises(ConfigError, match=r"'runtime\.bot_num_gpus' must be >= 0"):
        config_from_dict({"runtime": {"bot_num_gpus": -1}})
    endpoint = {"agent": "openai", "base_url": "http://127.0.0.1:1/v1", "device": "cuda"}
    with pytest.raises(ConfigError, match=r"'bot\.device' and bot\.dtype are not read"):
        config_from_dict({"bot": endpoint})


def test_specs_carry_the_devices_to_the_bot_and_the_evaluators() -> None:
    run = config_from_dict(
        {
            "bot": {"device": "cpu", "dtype": "bfloat16"},
            "evaluators": {"device": "cpu", "dtype": "float32"},
            "runtime": {"ray": False},
        }
    )
    agent, evaluators = evaluator_and_agent_specs(run, ["It's good to help."])
    assert (agent.kwargs["device"], agent.kwargs["dtype"]) == ("cpu", "bfloat16")
    assert (evaluators.device, evaluators.dtype) == ("cpu", "float32")


def test_under_ray_auto_means_the_gpu_only_for_an_actor_that_reserved_one() -> None:
    assert actor_device("auto", on_ray=False, num_gpus=0) == "auto"
    assert actor_device("auto", on_ray=True, num_gpus=0) == "cpu"
    assert actor_device("auto", on_ray=True, num_gpus=0.5) == "cuda"
    assert actor_device("cpu", on_ray=True, num_gpus=1) == "cpu"
    run = config_from_dict({"runtime": {"bot_num_gpus": 1, "evaluator_num_gpus": 0.25}})
    agent, evaluators = evaluator_and_agent_specs(run, [])
    assert agent.kwargs["device"] == "cuda" and evaluators.device == "cuda"
    assert agent_spec(run, on_ray=False).kwargs["device"] == "auto"  # moralsim chat
    options = ray_options(run)
    assert (options.bot_num_gpus, options.evaluator_num_gpus) == (1.0, 0.25)


def test_ray_plans_that_cannot_reach_a_gpu_are_refused_before_loading() -> None:
    cuda_no_gpus = config_from_dict({"bot": {"device": "cuda"}})
    assert "runtime.bot_num_gpus is 0" in placement_problem(cuda_no_gpus)
    indexed = config_from_dict(
        {"evaluators": {"device": "cuda:1"}, "runtime": {"evaluator_num_gpus": 1}}
    )
    assert "numbers its own reserved GPUs from cuda:0" in placement_problem(indexed)
    fine = config_from_dict({"bot": {"device": "cuda"}, "runtime": {"bot_num_gpus": 1}})
    assert placement_problem(fine) is None  # the workers' GPUs are checked on the cluster


@NO_CUDA
def test_an_in_process_plan_on_cuda_is_refused_on_a_machine_without_it() -> None:
    run = config_from_dict({"bot": {"device": "cuda"}, "runtime": {"ray": False}})
    assert placement_problem(run).startswith("bot.device is cuda, but torch")
    scripted = config_from_dict(
        {"bot": {"agent": "scripted:rot-follower", "device": "cuda"}, "runtime": {"ray": False}}
    )
    assert placement_problem(scripted) is None  # a scripted bot loads no model


def test_gpu_reservations_reach_the_actors_and_the_cluster_check() -> None:
    assert actor_options(1.0, 0.5) == {
        "num_cpus": 1.0,
        "num_gpus": 0.5,
        "max_restarts": -1,
        "max_task_retries": 0,
    }
    two_bots = RayOptions(bot_replicas=2, bot_num_gpus=1.0, evaluator_num_gpus=0.5)
    assert resource_refusal(two_bots, cpus=8, gpus=2) is not None
    assert "asks for 2.5 GPUs" in resource_refusal(two_bots, cpus=8, gpus=2)
    assert resource_refusal(two_bots, cpus=8, gpus=3) is None
    assert resource_refusal(RayOptions(), cpus=2, gpus=0) is None


@NO_CUDA
def test_simulate_on_cuda_without_it_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    args = [
        "simulate", "--output-dir", str(tmp_path), "--name", "gpu", "--no-ray",
        "--set", "bot.device=cuda", "--num-dialogues", "1",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 2, result.output
    assert "bot.device is cuda, but torch" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "gpu").exists()


# --------------------------------------------------------------------------- models


def test_the_bot_loads_in_the_placement_it_names_and_says_so(tiny_causal_lm: Path) -> None:
    from agents.base import GenerationSettings
    from agents.hf import TransformersAgent
    from scenarios.records import Turn

    agent = TransformersAgent(
        str(tiny_causal_lm),
        device="cpu",
        dtype="bfloat16",
        generation=GenerationSettings(max_new_tokens=3),
    )
    assert next(agent.model.parameters()).dtype == torch.bfloat16
    assert agent.info.extra == {"device": "cpu", "dtype": "bfloat16"}
    assert len(agent.respond([[Turn("user", "Is it fine to lie?")]])) == 1


def test_the_evaluators_load_in_their_placement(
    tiny_classifier: Path, tiny_encoder: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    from evaluators.agreement import AgreementItem
    from evaluators.stack import load_evaluators

    stack = load_evaluators(
        str(tiny_classifier), str(tiny_encoder), ["It's good to help."],
        device="cpu", dtype="bfloat16",
    )  # fmt: skip
    assert stack.placement == Placement("cpu", "bfloat16")
    assert next(stack.agreement._model.parameters()).dtype == torch.bfloat16
    assert next(stack.encoder.parameters()).dtype == torch.bfloat16
    p = stack.agreement.probabilities([AgreementItem("Q?", "Yes.", "It's good to help.")])
    assert p.shape == (1, 3) and abs(p.sum() - 1) < 1e-6
    assert stack.embed(["one sentence"]).dtype.name == "float32"


# --------------------------------------------------------------------------- training


def test_training_configs_check_and_settle_their_placement() -> None:
    from training.sft import settle_placement, shared_trainer_args
    from training.sft_config import SFTConfigError, SFTRunConfig

    with pytest.raises(SFTConfigError, match=r"'device' must be auto, cpu, cuda"):
        SFTRunConfig(device="tpu").validate()
    with pytest.raises(SFTConfigError, match=r"CUDA_VISIBLE_DEVICES"):
        SFTRunConfig(device="cuda:1").validate()
    with pytest.raises(SFTConfigError, match=r"'use_cpu' is true but 'device' is cuda"):
        SFTRunConfig(device="cuda", use_cpu=True).validate()
    old_style = settle_placement(SFTRunConfig(use_cpu=True, dtype="bfloat16"))
    assert (old_style.device, old_style.dtype, old_style.use_cpu) == ("cpu", "bfloat16", False)
    args = shared_trainer_args(old_style, Path("ckpt"), evaluate=False)
    assert (args["use_cpu"], args["bf16"], args["fp16"]) == (True, True, False)
    if not torch.cuda.is_available():
        settled = settle_placement(SFTRunConfig())
        assert (settled.device, settled.dtype) == ("cpu", "float32")
        with pytest.raises(SFTConfigError, match=r"device is cuda, but torch"):
            settle_placement(SFTRunConfig(device="cuda"))


def test_the_safety_cache_knows_the_encoders_weights_and_precision(tiny_encoder: Path) -> None:
    import os

    from evaluators.stack import encoder_cache_id

    fp32 = encoder_cache_id(str(tiny_encoder), Placement("cpu", "float32"))
    assert fp32 != encoder_cache_id(str(tiny_encoder), Placement("cpu", "bfloat16"))
    weights = next(tiny_encoder.rglob("*.safetensors"))
    os.utime(weights, ns=(1, 1))  # a folder retrained in place
    assert fp32 != encoder_cache_id(str(tiny_encoder), Placement("cpu", "float32"))


@NO_CUDA
@pytest.mark.parametrize(
    "args",
    [
        ["chat", "--set", "evaluators.device=cuda"],
        ["serve", "--device", "cuda"],
        ["train", "scorer", "--output", "never-written", "--device", "cuda"],
    ],
)
def test_every_command_refuses_cuda_without_it_before_loading(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 2, result.output
    assert "device is cuda, but torch" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "never-written").exists()


def test_cached_replies_are_kept_apart_by_placement() -> None:
    from agents.base import AgentInfo
    from simulators.ray_actors import cached_model_id

    def info(device: str, dtype: str) -> AgentInfo:
        return AgentInfo("m", extra={"device": device, "dtype": dtype})

    assert cached_model_id("m", None, info("cpu", "float32")) == "m"  # earlier caches stay valid
    assert cached_model_id("m", None, info("cuda:1", "bfloat16")) == "m|cuda bfloat16"
    assert cached_model_id("m", None, AgentInfo("m")) == "m"  # a scripted bot
    assert cached_model_id("m", "http://h/v1", info("cpu", "float32")) == "m@http://h/v1"


def test_a_resumed_run_must_place_its_models_as_its_first_part(tmp_path: Path) -> None:
    from moralsim.run_simulation import check_same_placements, write_runtime

    here = {"bot": "cpu float32", "scorers": "cpu float32"}
    check_same_placements(tmp_path, here)  # no runtime.json: an earlier release, CPU float32
    gpu = {"bot": "cuda bfloat16", "scorers": "cpu float32"}
    with pytest.raises(ConfigError, match=r"its bot ran on cpu float32, this run would run it on"):
        check_same_placements(tmp_path, gpu)
    write_runtime(tmp_path, "in process; bot cuda bfloat16, scorers cpu float32", gpu)
    check_same_placements(tmp_path, gpu)
    with pytest.raises(ConfigError, match=r"set bot\.device / bot\.dtype to match"):
        check_same_placements(tmp_path, here)


def test_resuming_may_state_the_device_that_matches(tmp_path: Path) -> None:
    from moralsim.config import save_config
    from moralsim.resume import resumable_config

    run = config_from_dict({"name": "r", "output_dir": str(tmp_path)})
    save_config(run, tmp_path / "r" / "config.yaml")
    stated = ["name=r", f"output_dir={tmp_path}", "bot.device=cpu", "bot.dtype=float32"]
    assert resumable_config(None, stated).bot.device == "cpu"
    with pytest.raises(ConfigError, match="seed"):
        resumable_config(None, [*stated, "seed=3"])


def test_gpu_reservations_follow_rays_rule_and_the_phraser_is_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"'runtime\.bot_num_gpus' must be a fraction"):
        config_from_dict({"runtime": {"bot_num_gpus": 1.5}})
    assert config_from_dict({"runtime": {"bot_num_gpus": 2}}).runtime.bot_num_gpus == 2.0
    if torch.cuda.is_available():
        return
    run = config_from_dict(
        {
            "bot": {"device": "cuda"},
            "user": {"policy": "llm", "phraser_model": "smollm2-135m-instruct"},
            "runtime": {"bot_num_gpus": 1},
        }
    )
    assert placement_problem(run).startswith("the simulated user's phraser runs in this process")


def test_training_refuses_what_its_trainer_cannot_do() -> None:
    from training.sft import keys_it_lacked, settle_placement
    from training.sft_config import SFTConfigError, SFTRunConfig

    with pytest.raises(SFTConfigError, match=r"float16 trains only on a GPU"):
        settle_placement(SFTRunConfig(device="cpu", dtype="float16"))
    assert keys_it_lacked({"use_cpu": True})["device"] == "cpu"
    assert keys_it_lacked({"use_cpu": False}) == {
        "group_by_length": False,
        "device": "cuda",
        "dtype": "float32",
    }
    assert "device" not in keys_it_lacked({"device": "cuda", "use_cpu": False})


def test_evaluators_batch_for_their_device() -> None:
    from evaluators.stack import model_batch

    assert model_batch(Placement("cpu", "float32")) == 64
    assert model_batch(Placement("cuda", "bfloat16")) == 512
