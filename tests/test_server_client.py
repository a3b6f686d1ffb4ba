"""The OpenAI-compatible server and client, end to end over a real socket (fake agents only)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence

import httpx
import pytest
import torch
import typer
import uvicorn
from fastapi import FastAPI
from typer.testing import CliRunner

from agents.base import AgentInfo, GenerationSettings, History
from agents.openai_client import AgentError, OpenAIChatAgent
from agents.server import IGNORED_HEADER, AgentUnavailableError, Batcher, create_app
from scenarios.records import Turn
from scenarios.registry import AGENTS

MODEL = "fake-bot"
KEY = "sesame-test-key"


def expected_reply(history: History) -> str:
    """What FakeAgent answers, written out independently of it: last text, turn count."""
    return f"echo {history[-1].text} /{len(history)}"


class FakeAgent:
    """Echoes the last turn; records every batch (size and roles) it was asked."""

    def __init__(self, fail: Callable[[int], Exception | None] | None = None) -> None:
        self.info = AgentInfo(model=MODEL, backend="fake")
        self.batches: list[int] = []
        self.roles: list[list[str]] = []
        self.calls = 0
        self._fail = fail
        self._lock = threading.Lock()

    def respond(self, histories: Sequence[History]) -> list[str]:
        with self._lock:
            self.calls += 1
            call = self.calls
            self.batches.append(len(histories))
            self.roles.extend([t.role for t in h] for h in histories)
        error = self._fail(call) if self._fail else None
        if error is not None:
            raise error
        return [f"echo {h[-1].text} /{len(h)}" for h in histories]


class SettingsAgent(FakeAgent):
    """A fake whose respond takes per-call settings, as the transformers agent does."""

    def __init__(self) -> None:
        super().__init__()
        self.generation = GenerationSettings(num_beams=10, max_new_tokens=60)
        self.settings: list[GenerationSettings | None] = []

    def respond(
        self, histories: Sequence[History], settings: GenerationSettings | None = None
    ) -> list[str]:
        self.settings.append(settings)
        return super().respond(histories)


class ContextAgent(SettingsAgent):
    """A fake with a known context, as the transformers agent reports it."""

    def context_length(self) -> int:
        return 64


class CharTokenAgent(SettingsAgent):
    """A fake with a tokenizer: one token per character, so tokens never equal words."""

    def count_tokens(self, text: str) -> int:
        return len(text)


class StuckAgent(FakeAgent):
    """Its first call hangs until the test releases it; it cannot be told to stop."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def respond(self, histories: Sequence[History]) -> list[str]:
        first = self.calls == 0
        replies = super().respond(histories)
        if first:
            self.release.wait(30)
        return replies


class CancellableAgent(FakeAgent):
    """Its first call hangs until cancelled (as generation with a `cancel` event does)."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = threading.Event()

    def respond(
        self, histories: Sequence[History], cancel: threading.Event | None = None
    ) -> list[str]:
        first = self.calls == 0
        replies = super().respond(histories)
        if first and cancel is not None and cancel.wait(30):
            self.cancelled.set()
            return [reply[:3] for reply in replies]  # what a stopped generation has so far
        return replies


def _run_server(app: FastAPI) -> tuple[str, Callable[[], None]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))  # the OS picks a free port; no race with other tests
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

    return f"http://127.0.0.1:{port}", stop


@pytest.fixture
def serve() -> Iterator[Callable[..., str]]:
    """Start a real server around an agent; returns its root URL; stops all at teardown."""
    stops: list[Callable[[], None]] = []

    def start(agent: object, **options: object) -> str:
        url, stop = _run_server(create_app(agent, MODEL, **options))  # type: ignore[arg-type]
        stops.append(stop)
        return url

    yield start
    for stop in stops:
        stop()


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MORALSIM_TEST_KEY", KEY)
    return "MORALSIM_TEST_KEY"


def dialogue(i: int) -> list[Turn]:
    return [
        Turn("user", f"question-{i}"),
        Turn("bot", "an answer"),
        Turn("user", f"why-{i}"),
    ][: 1 + i % 3]


def body(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    data.update(overrides)
    return data


def completions(url: str, **overrides: object) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", json=body(**overrides), timeout=30)


def sse_payloads(text: str) -> list[str]:
    """The `data:` payloads of a server-sent-event stream, read as an OpenAI client does."""
    assert text.endswith("\n\n"), text
    events = text.split("\n\n")[:-1]
    assert all(event.startswith("data: ") for event in events), events
    return [event.removeprefix("data: ") for event in events]


# --------------------------------------------------------------------------- client ↔ server


def test_client_replies_come_back_in_order(serve: Callable[..., str]) -> None:
    agent = FakeAgent()
    url = serve(agent)
    histories = [dialogue(i) for i in range(6)]
    with OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env=None) as client:
        replies = client.respond(histories)
    assert replies == [expected_reply(h) for h in histories]
    assert sum(agent.batches) == 6
    # bot turns travel as "assistant" and come back as "bot"; the system prompt comes first
    assert ["user", "bot", "user"] in agent.roles


def test_system_prompt_and_rots_are_sent_first(serve: Callable[..., str]) -> None:
    agent = FakeAgent()
    url = serve(agent)
    client = OpenAIChatAgent(
        f"{url}/v1", MODEL, api_key_env=None, system_prompt="Be kind.", rots=["Don't lie."]
    )
    assert client.respond([[Turn("user", "hello")]]) == ["echo hello /2"]
    assert agent.roles == [["system", "user"]]
    assert client.info.model == MODEL and client.info.backend == "openai"
    client.close()


def test_concurrent_histories_are_batched(serve: Callable[..., str]) -> None:
    agent = FakeAgent()
    url = serve(agent, max_wait_ms=150)
    histories = [[Turn("user", f"q{i}")] for i in range(8)]
    with OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env=None, concurrency=8) as client:
        replies = client.respond(histories)
    assert replies == [f"echo q{i} /1" for i in range(8)]
    assert sum(agent.batches) == 8
    assert len(agent.batches) < 8, agent.batches


def test_max_batch_size_caps_a_batch(serve: Callable[..., str]) -> None:
    agent = FakeAgent()
    url = serve(agent, max_wait_ms=150, max_batch_size=3)
    with OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env=None, concurrency=8) as client:
        client.respond([[Turn("user", f"q{i}")] for i in range(8)])
    assert sum(agent.batches) == 8
    assert max(agent.batches) <= 3


def test_models_endpoint(serve: Callable[..., str]) -> None:
    url = serve(FakeAgent())
    data = httpx.get(f"{url}/v1/models").json()
    assert data["object"] == "list"
    assert [(m["id"], m["object"], m["owned_by"]) for m in data["data"]] == [
        (MODEL, "model", "moralsim")
    ]


def test_completion_shape_and_estimated_usage(serve: Callable[..., str]) -> None:
    url = serve(FakeAgent())
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "is it okay to lie"},
    ]
    response = httpx.post(f"{url}/v1/chat/completions", json=body(messages=messages))
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion" and data["model"] == MODEL
    assert data["id"].startswith("chatcmpl-") and isinstance(data["created"], int)
    assert data["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "echo is it okay to lie /2"},
            "finish_reason": "stop",
        }
    ]
    # words: "be brief" 2 + "is it okay to lie" 5 = 7; reply "echo is it okay to lie /2" = 7
    assert data["usage"] == {"prompt_tokens": 7, "completion_tokens": 7, "total_tokens": 14}


def test_generation_params_reach_an_agent_that_takes_settings(serve: Callable[..., str]) -> None:
    agent = SettingsAgent()
    url = serve(agent)
    payload = body(max_tokens=5, temperature=0.7, seed=3)
    response = httpx.post(f"{url}/v1/chat/completions", json=payload)
    assert response.status_code == 200
    assert IGNORED_HEADER not in response.headers
    # overrides on top of the agent's own defaults (num_beams=10 stays)
    assert agent.settings == [
        GenerationSettings(max_new_tokens=5, do_sample=True, temperature=0.7, num_beams=10, seed=3)
    ]
    httpx.post(f"{url}/v1/chat/completions", json=body(temperature=0))
    assert agent.settings[-1] == GenerationSettings(num_beams=10, do_sample=False)
    httpx.post(f"{url}/v1/chat/completions", json=body())
    assert agent.settings[-1] is None  # nothing asked: the agent's defaults, untouched


def test_generation_params_are_reported_when_ignored(serve: Callable[..., str]) -> None:
    url = serve(FakeAgent())
    response = httpx.post(
        f"{url}/v1/chat/completions", json=body(temperature=0.5, top_p=0.9, stop=["\n"])
    )
    assert response.status_code == 200
    assert response.headers[IGNORED_HEADER] == "stop,temperature,top_p"
    plain = httpx.post(f"{url}/v1/chat/completions", json=body())
    assert IGNORED_HEADER not in plain.headers


# --------------------------------------------------------------------------- refusals


def test_malformed_json_is_400_with_a_message(serve: Callable[..., str]) -> None:
    url = serve(FakeAgent())
    response = httpx.post(
        f"{url}/v1/chat/completions",
        content=b'{"model": "fake-bot", "messages": [',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert "not valid JSON" in error["message"]
    assert error["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (body(n=2), "'n'"),
        (body(stream_options={"include_usage": True}), "'stream_options'"),
        (body(stream=True, logprobs=True, max_tokens=1), "'stream'"),
        (body(stream=True, stream_options={"include_usage": "yes"}), "'stream_options."),
        (body(max_tokens="5"), "'max_tokens'"),
        (body(max_completion_tokens="5"), "'max_completion_tokens'"),
        (body(temperature="0.5"), "'temperature'"),
        (body(top_p="0.9"), "'top_p'"),
        (body(seed="3"), "'seed'"),
        (body(n="1"), "'n'"),
        (body(top_logprobs="2"), "'top_logprobs'"),
        (body(stream="true"), "'stream'"),
        ({"model": MODEL}, "'messages'"),
        (body(messages=[]), "'messages'"),
        (body(messages=[{"role": "robot", "content": "x"}]), "'messages[0].role'"),
        (body(messages=[{"role": "user", "content": 5}]), "'messages[0].content'"),
        (body(model="gpt-4"), "'model'"),
        (body(temperature=9), "'temperature'"),
        ([1, 2], "request body"),
    ],
)
def test_schema_errors_are_400_naming_the_field(
    serve: Callable[..., str], payload: object, field: str
) -> None:
    agent = FakeAgent()
    url = serve(agent)
    response = httpx.post(f"{url}/v1/chat/completions", json=payload)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["message"]
    assert agent.calls == 0


def test_oversized_body_is_413(serve: Callable[..., str]) -> None:
    agent = FakeAgent()
    url = serve(agent, max_request_bytes=2_000)
    big = body(messages=[{"role": "user", "content": "x" * 5_000}])
    response = httpx.post(f"{url}/v1/chat/completions", json=big)  # with Content-Length
    assert response.status_code == 413
    assert "2000" in response.json()["error"]["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the real length must be counted
        data = json.dumps(big).encode()
        for i in range(0, len(data), 1_000):
            yield data[i : i + 1_000]

    response = httpx.post(f"{url}/v1/chat/completions", content=chunks())
    assert response.status_code == 413
    assert agent.calls == 0
    small = httpx.post(f"{url}/v1/chat/completions", json=body())
    assert small.status_code == 200


def test_api_key_is_required_when_set(serve: Callable[..., str], key_env: str) -> None:
    url = serve(FakeAgent(), api_key=KEY)
    endpoint = f"{url}/v1/chat/completions"
    missing = httpx.post(endpoint, json=body())
    wrong = httpx.post(endpoint, json=body(), headers={"Authorization": "Bearer nope"})
    right = httpx.post(endpoint, json=body(), headers={"Authorization": f"Bearer {KEY}"})
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert "missing API key" in missing.json()["error"]["message"]
    assert httpx.get(f"{url}/v1/models").status_code == 401

    with OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env=key_env) as client:
        assert client.respond([[Turn("user", "hi")]]) == ["echo hi /1"]


def test_client_names_a_missing_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MORALSIM_NO_SUCH_KEY", raising=False)
    with pytest.raises(AgentError, match="MORALSIM_NO_SUCH_KEY"):
        OpenAIChatAgent("http://127.0.0.1:9/v1", MODEL, api_key_env="MORALSIM_NO_SUCH_KEY")


def test_wrong_key_is_not_retried(serve: Callable[..., str], monkeypatch: pytest.MonkeyPatch):
    url = serve(FakeAgent(), api_key=KEY)
    monkeypatch.setenv("MORALSIM_BAD_KEY", "wrong")
    client = OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env="MORALSIM_BAD_KEY", backoff=0.01)
    with pytest.raises(AgentError, match=r"HTTP 401.*invalid API key"):
        client.respond([[Turn("user", "hi")]])
    assert client.retries == 0
    client.close()


def test_agent_failure_is_500_with_the_message(serve: Callable[..., str]) -> None:
    url = serve(FakeAgent(fail=lambda call: ValueError("the model exploded")))
    response = httpx.post(f"{url}/v1/chat/completions", json=body())
    assert response.status_code == 500
    assert "the model exploded" in response.json()["error"]["message"]
    streamed = completions(url, stream=True)  # the reply is made before the stream starts
    assert streamed.status_code == 500
    assert "the model exploded" in streamed.json()["error"]["message"]


# --------------------------------------------------------------------------- bounds


def test_a_reply_limit_beyond_the_context_is_400_naming_field_and_limit(
    serve: Callable[..., str],
) -> None:
    agent = ContextAgent()
    url = serve(agent)
    for field, value in [("max_tokens", 65), ("max_completion_tokens", 100_000)]:
        response = completions(url, **{field: value})
        assert response.status_code == 400, response.text
        message = response.json()["error"]["message"]
        assert f"'{field}'" in message and "64" in message and "\n" not in message
    assert agent.calls == 0
    assert completions(url, max_tokens=64).status_code == 200
    assert agent.settings[-1] is not None and agent.settings[-1].max_new_tokens == 64


def test_without_a_known_context_a_large_limit_is_passed_on(serve: Callable[..., str]) -> None:
    agent = SettingsAgent()
    url = serve(agent)
    assert completions(url, max_tokens=100_000).status_code == 200
    assert agent.settings[-1] is not None and agent.settings[-1].max_new_tokens == 100_000


def test_a_stuck_agent_gets_a_504_and_the_server_keeps_answering(
    serve: Callable[..., str],
) -> None:
    agent = StuckAgent()
    url = serve(agent, request_timeout=1.0, max_wait_ms=0)
    try:
        late = completions(url)
        assert late.status_code == 504, late.text
        error = late.json()["error"]
        assert error["type"] == "server_error" and error["code"] == 504
        assert "timed out" in error["message"] and "1 s" in error["message"]
        assert httpx.get(f"{url}/v1/models").status_code == 200  # the event loop is free
        assert completions(url, n=2).status_code == 400
    finally:
        agent.release.set()
    assert completions(url).json()["choices"][0]["message"]["content"] == "echo hi /1"


def test_a_timed_out_generation_is_cancelled_and_its_cut_reply_not_sent(
    serve: Callable[..., str],
) -> None:
    agent = CancellableAgent()
    url = serve(agent, request_timeout=1.0, max_wait_ms=0)
    late = completions(url)
    assert late.status_code == 504, late.text
    assert agent.cancelled.wait(10), "the agent was never told to stop"
    after = completions(url)
    assert after.status_code == 200, after.text
    assert after.json()["choices"][0]["message"]["content"] == "echo hi /1"


def test_create_app_refuses_a_non_positive_timeout() -> None:
    with pytest.raises(ValueError, match="request_timeout"):
        create_app(FakeAgent(), MODEL, request_timeout=0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- usage, finish


def test_usage_and_finish_reason_come_from_the_agent_tokenizer(
    serve: Callable[..., str],
) -> None:
    url = serve(CharTokenAgent())
    reply = "echo hi /1"  # 10 characters, so 10 tokens for this agent (3 words)
    cut = completions(url, max_tokens=len(reply)).json()
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["usage"] == {"prompt_tokens": 2, "completion_tokens": 10, "total_tokens": 12}
    whole = completions(url, max_completion_tokens=len(reply) + 1).json()
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert whole["choices"][0]["message"]["content"] == reply


def test_tiny_transformers_bot_reports_real_tokens_limits_and_finish_reason(
    serve: Callable[..., str], tiny_causal_lm
) -> None:
    from agents.hf import TransformersAgent, plain_prompt

    bot = TransformersAgent(str(tiny_causal_lm))  # 1024 max_context_tokens, 128 positions
    bot.model.lm_head.weight.data.zero_()  # all logits tie: greedy always picks token 0
    url = serve(bot)
    question = "is it okay to lie ?"
    messages = [{"role": "user", "content": question}]
    prompt = bot.tokenizer(plain_prompt([Turn("user", question)], None), add_special_tokens=True)
    prompt_tokens = len(prompt["input_ids"])
    assert prompt_tokens != len(question.split())  # words would not pass for tokens

    cut = completions(url, messages=messages, max_tokens=4).json()
    assert cut["choices"][0]["finish_reason"] == "length"  # token 0 is no stop token
    assert cut["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 4,
        "total_tokens": prompt_tokens + 4,
    }
    bot.stop_ids = [0]  # now the token it always picks ends its turn
    stopped = completions(url, messages=messages, max_tokens=4).json()
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert stopped["usage"]["completion_tokens"] == 1

    judged = completions(url, messages=messages, max_tokens=1, logprobs=True, top_logprobs=2)
    assert judged.status_code == 200, judged.text
    assert judged.json()["usage"]["prompt_tokens"] == prompt_tokens
    assert len(judged.json()["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == 2

    refused = completions(url, messages=messages, max_tokens=100_000)
    assert refused.status_code == 400
    assert "'max_tokens'" in refused.json()["error"]["message"]
    assert "context of 128 tokens" in refused.json()["error"]["message"]
    assert completions(url, messages=messages, max_tokens=129).status_code == 400


# --------------------------------------------------------------------------- streaming


def test_stream_sends_role_content_finish_chunks_then_done(serve: Callable[..., str]) -> None:
    url = serve(FakeAgent())
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body(stream=True)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        payloads = sse_payloads(response.read().decode())
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert all(c["model"] == MODEL and "usage" not in c for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0]["role"] == "assistant"
    assert "".join(d.get("content", "") for d in deltas) == "echo hi /1"
    finishes = [c["choices"][0]["finish_reason"] for c in chunks]
    assert finishes == [None] * (len(chunks) - 1) + ["stop"]


def test_stream_include_usage_ends_with_a_usage_chunk(serve: Callable[..., str]) -> None:
    url = serve(CharTokenAgent())
    options = {"include_usage": True}
    response = completions(url, stream=True, stream_options=options, max_tokens=10)
    assert response.status_code == 200
    payloads = sse_payloads(response.text)
    assert payloads[-1] == "[DONE]"
    *chunks, last = [json.loads(p) for p in payloads[:-1]]
    assert last["choices"] == []
    assert last["usage"] == {"prompt_tokens": 2, "completion_tokens": 10, "total_tokens": 12}
    assert all(c["usage"] is None for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


# --------------------------------------------------------------------------- client retries


def test_client_retries_503_then_succeeds(serve: Callable[..., str]) -> None:
    def flaky(call: int) -> Exception | None:
        return AgentUnavailableError("reloading") if call <= 2 else None

    agent = FakeAgent(fail=flaky)
    url = serve(agent, max_wait_ms=0)
    client = OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env=None, backoff=0.01)
    assert client.respond([[Turn("user", "hi")]]) == ["echo hi /1"]
    assert client.retries == 2
    assert agent.calls == 3
    assert client.stats() == {"retries": 2}
    client.close()


def test_client_gives_up_after_the_last_retry(serve: Callable[..., str]) -> None:
    agent = FakeAgent(fail=lambda call: AgentUnavailableError("still loading"))
    url = serve(agent, max_wait_ms=0)
    client = OpenAIChatAgent(f"{url}/v1", MODEL, api_key_env=None, max_retries=2, backoff=0.01)
    with pytest.raises(AgentError, match=r"after 3 attempts.*503.*still loading"):
        client.respond([[Turn("user", "hi")]])
    assert agent.calls == 3 and client.retries == 2
    client.close()


def test_client_does_not_retry_a_400(serve: Callable[..., str]) -> None:
    agent = FakeAgent()
    url = serve(agent)
    client = OpenAIChatAgent(f"{url}/v1", "not-the-served-model", api_key_env=None, backoff=0.01)
    with pytest.raises(AgentError, match=r"HTTP 400.*this server serves 'fake-bot'"):
        client.respond([[Turn("user", "hi")]])
    assert client.retries == 0
    client.close()


def test_client_retries_connection_errors() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAIChatAgent(
        f"http://127.0.0.1:{port}/v1", MODEL, api_key_env=None, max_retries=2, backoff=0.01
    )
    with pytest.raises(AgentError, match=r"after 3 attempts.*Connect"):
        client.respond([[Turn("user", "hi")]])
    assert client.retries == 2
    client.close()


def test_openai_agent_is_registered() -> None:
    assert AGENTS.get("openai") is OpenAIChatAgent


# --------------------------------------------------------------------------- the batcher alone


def _recording_runner(
    calls: list[tuple[int, GenerationSettings | None]],
) -> Callable[[list[History], GenerationSettings | None], list[str]]:
    def run(histories: list[History], settings: GenerationSettings | None) -> list[str]:
        calls.append((len(histories), settings))
        return [h[-1].text.upper() for h in histories]

    return run


def test_batcher_groups_concurrent_requests_and_keeps_order() -> None:
    calls: list[tuple[int, GenerationSettings | None]] = []

    async def main() -> list[str]:
        batcher = Batcher(_recording_runner(calls), max_batch_size=16, max_wait_ms=50)
        texts = [f"t{i}" for i in range(5)]
        replies = await asyncio.gather(*(batcher.submit([Turn("user", t)]) for t in texts))
        await batcher.aclose()
        return list(replies)

    assert asyncio.run(main()) == ["T0", "T1", "T2", "T3", "T4"]
    assert calls == [(5, None)]


@pytest.mark.parametrize(("wait_ms", "one_batch"), [(300, True), (0, False)])
def test_batcher_waits_max_wait_ms_for_late_arrivals(wait_ms: int, one_batch: bool) -> None:
    calls: list[tuple[int, GenerationSettings | None]] = []

    async def main() -> None:
        batcher = Batcher(_recording_runner(calls), max_wait_ms=wait_ms)

        async def arrive(i: int) -> str:
            await asyncio.sleep(0.02 * i)  # 0, 20, 40, 60 ms
            return await batcher.submit([Turn("user", f"t{i}")])

        assert await asyncio.gather(*(arrive(i) for i in range(4))) == ["T0", "T1", "T2", "T3"]
        await batcher.aclose()

    asyncio.run(main())
    assert sum(n for n, _ in calls) == 4
    assert (calls == [(4, None)]) is one_batch


def test_batcher_respects_max_batch_size_and_settings() -> None:
    calls: list[tuple[int, GenerationSettings | None]] = []
    hot = GenerationSettings(do_sample=True, temperature=0.9)

    async def main() -> list[str]:
        batcher = Batcher(_recording_runner(calls), max_batch_size=2, max_wait_ms=50)
        jobs = [batcher.submit([Turn("user", f"a{i}")]) for i in range(5)]
        jobs += [batcher.submit([Turn("user", f"b{i}")], hot) for i in range(2)]
        replies = await asyncio.gather(*jobs)
        await batcher.aclose()
        return list(replies)

    assert asyncio.run(main()) == ["A0", "A1", "A2", "A3", "A4", "B0", "B1"]
    assert sorted(calls, key=lambda c: (c[1] is not None, -c[0])) == [
        (2, None),
        (2, None),
        (1, None),
        (2, hot),
    ]


def test_batcher_gives_every_request_the_agent_error() -> None:
    def broken(histories: list[History], settings: GenerationSettings | None) -> list[str]:
        raise RuntimeError("no GPU")

    async def main() -> list[object]:
        batcher = Batcher(broken, max_wait_ms=20)
        jobs = [batcher.submit([Turn("user", "x")]) for _ in range(3)]
        results = await asyncio.gather(*jobs, return_exceptions=True)
        await batcher.aclose()
        return list(results)

    results = asyncio.run(main())
    assert [str(r) for r in results] == ["no GPU"] * 3


def test_batcher_rejects_a_wrong_reply_count() -> None:
    async def main() -> None:
        batcher = Batcher(lambda histories, settings: ["only one"], max_wait_ms=20)
        with pytest.raises(RuntimeError, match="1 replies for 2 histories"):
            await asyncio.gather(*(batcher.submit([Turn("user", "x")]) for _ in range(2)))
        await batcher.aclose()

    asyncio.run(main())


# --------------------------------------------------------------------------- the serve command


def test_serve_command_builds_the_agent_and_app(monkeypatch: pytest.MonkeyPatch) -> None:
    from moralsim.serve_cmd import serve as serve_command

    made: dict[str, object] = {}

    class StubTransformersAgent(FakeAgent):
        def __init__(self, model: str, **options: object) -> None:
            super().__init__()
            made.update(model=model, **options)

    fake_hf = types.ModuleType("agents.hf")
    fake_hf.TransformersAgent = StubTransformersAgent  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agents.hf", fake_hf)
    ran: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: ran.update(app=app, **kw))
    monkeypatch.setenv("MORALSIM_SERVE_KEY", KEY)

    cli = typer.Typer()
    cli.command("serve")(serve_command)
    cli.command("other")(lambda: None)  # two commands, so "serve" is a subcommand
    result = CliRunner().invoke(
        cli,
        ["serve", "--model", "tiny", "--port", "8123", "--api-key-env", "MORALSIM_SERVE_KEY"],
    )
    assert result.exit_code == 0, result.output
    assert made == {
        "model": "tiny", "adapter": None, "merge": False, "system_prompt": None,
        "max_context_tokens": 2048,  # a run's default, so served and local replies match
        "device": "cpu" if not torch.cuda.is_available() else "cuda", "dtype": made["dtype"],
        "batch_size": 16,  # --max-batch-size: the agent generates what the server batches
    }  # fmt: skip
    assert (ran["host"], ran["port"]) == ("127.0.0.1", 8123)
    assert isinstance(ran["app"], FastAPI)
    assert ran["app"].state.request_timeout == 300

    timed = CliRunner().invoke(cli, ["serve", "--request-timeout", "42.5"])
    assert timed.exit_code == 0, timed.output
    assert ran["app"].state.request_timeout == 42.5  # type: ignore[attr-defined]
    zero = CliRunner().invoke(cli, ["serve", "--request-timeout", "0"])
    assert zero.exit_code == 2
    assert "--request-timeout" in zero.output

    missing = CliRunner().invoke(cli, ["serve", "--api-key-env", "MORALSIM_UNSET_KEY_X"])
    assert missing.exit_code == 2
    assert "MORALSIM_UNSET_KEY_X" in missing.output


def test_client_against_a_served_tiny_transformers_bot(
    serve: Callable[..., str], tiny_causal_lm
) -> None:
    from agents.hf import TransformersAgent

    bot = TransformersAgent(str(tiny_causal_lm), generation=GenerationSettings(max_new_tokens=5))
    url = serve(bot, max_wait_ms=100)
    histories = [[Turn("user", "is it okay to lie ?")], [Turn("user", "why ?")]]
    settings = GenerationSettings(max_new_tokens=5)
    client = OpenAIChatAgent(
        f"{url}/v1", MODEL, api_key_env=None, concurrency=2, generation=settings
    )
    assert client.respond(histories) == bot.respond(histories)  # same greedy replies over HTTP
