"""Serve any ChatAgent over the OpenAI chat-completions API.

Why OpenAI's shape: every evaluation harness and chat UI already speaks it, so a trained moral
bot can be probed by tools that know nothing about moralsim. Only the subset a dialogue needs
is served: `GET /v1/models` and `POST /v1/chat/completions` with `n=1`, streamed or not.

Concurrent requests are batched (`Batcher`) because the agent contract is batched: a GPU
answers eight histories in one `respond` call nearly as fast as one. Agent calls run one at a
time in a worker thread, which keeps the event loop free to accept and queue new requests and
keeps models that are not thread-safe out of trouble.

Generation parameters: when the agent's `respond` accepts a `settings` keyword, a request's
`max_tokens`, `temperature`, `top_p` and `seed` become a `GenerationSettings` (on top of the
agent's own `generation` defaults when it has them). When it does not, they are ignored and the
`x-moralsim-ignored-params` response header names them, as it also names any request field
this server does not understand, so a client can tell that its setting had no effect.

Bounds, because one careless request must not stall every client for minutes:
- an agent with `context_length() -> int` refuses (400) a `max_tokens` or
  `max_completion_tokens` larger than that context;
- a request whose reply is not ready within `request_timeout` seconds (queueing included) gets
  a 504. An agent whose `respond` (or `generate_replies`) takes a `cancel` event is told to stop
  once every request of its batch is past its deadline, so the worker is free again for the
  others; an agent without one keeps the worker until it returns, and requests queue behind it.

Usage and finish reason: an agent with `generate_replies(histories, settings=, cancel=)` (the
transformers agent) returns per reply `text`, `prompt_tokens` (the prompt it really fed the
model), `completion_tokens` (the tokens it generated) and `cut` (generation stopped at the
token limit, not at a stop token: `finish_reason: "length"`). Other agents are counted with
their `count_tokens(text) -> int` when they have one ("length" when a reply's count reaches the
limit), otherwise in whitespace-separated words, always with `finish_reason: "stop"` since
nothing tells a cut reply from a whole one.

Streaming (`stream: true`) sends OpenAI's server-sent events, but only once the whole reply
is generated (agents answer whole replies): its failures are ordinary JSON errors, and the
content comes as one chunk.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import inspect
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic import ValidationError as PydanticValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.base import ChatAgent, GenerationSettings, History
from agents.batching import Batcher
from scenarios.records import Role, Turn

IGNORED_HEADER = "x-moralsim-ignored-params"
GENERATION_FIELDS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "seed")
LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
DEFAULT_REQUEST_TIMEOUT = 300.0
_ROLE_TO_TURN: dict[str, Role] = {"system": "system", "user": "user", "assistant": "bot"}


class AgentUnavailableError(RuntimeError):
    """Raise from an agent for a transient failure (model reloading, out of memory).

    The server answers 503 instead of 500, which OpenAI clients (ours included) retry.
    """


class _RequestError(Exception):
    """A request the server refuses; carries the HTTP status and the OpenAI error type."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.headers = headers


class _GenerationTimeout(Exception):
    """The agent was stopped at its batch's deadline: its replies are cut and must not be sent."""


# --------------------------------------------------------------------------- request schema


class ChatMessage(BaseModel):
    """One OpenAI message; content must be plain text (no image or tool parts)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant"]
    content: StrictStr


class StreamOptions(BaseModel):
    """OpenAI's `stream_options`; only `include_usage` means something here."""

    model_config = ConfigDict(extra="ignore")

    include_usage: StrictBool = False


class ChatCompletionRequest(BaseModel):
    """The OpenAI request fields this server reads; unknown fields are kept to be reported.

    Numbers are strict: a string such as `"max_tokens": "5"` is refused, naming the field,
    rather than silently converted (OpenAI refuses it too).
    """

    model_config = ConfigDict(extra="allow")

    model: StrictStr
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    max_completion_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: StrictFloat | None = Field(default=None, ge=0.0, le=2.0)
    top_p: StrictFloat | None = Field(default=None, gt=0.0, le=1.0)
    seed: StrictInt | None = None
    n: StrictInt = 1
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    logprobs: StrictBool = False
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20)

    def given_generation_fields(self) -> list[str]:
        return [name for name in GENERATION_FIELDS if getattr(self, name) is not None]

    def unknown_fields(self) -> list[str]:
        extra = self.model_extra or {}
        return sorted(name for name, value in extra.items() if value is not None)

    def reply_limit(self) -> int | None:
        """The reply-token limit asked for; OpenAI's newer name wins when both are sent."""
        return self.max_completion_tokens or self.max_tokens

    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


def _describe_validation(errors: Sequence[Any]) -> str:
    """Turn pydantic errors into `field 'messages[0].role': ...` messages a person can act on."""
    parts = []
    for err in errors:
        loc = [p for p in err.get("loc", ()) if p != "body"]
        where = ""
        for piece in loc:
            where += f"[{piece}]" if isinstance(piece, int) else (f".{piece}" if where else piece)
        label = f"field '{where}'" if where else "request body"
        parts.append(f"{label}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _parse_request(raw: bytes) -> ChatCompletionRequest:
    """The validated request, or a 400 that names what is wrong."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _RequestError(400, f"request body is not valid JSON: {exc}") from None
    try:
        return ChatCompletionRequest.model_validate(data)
    except PydanticValidationError as exc:
        raise _RequestError(400, _describe_validation(exc.errors())) from None


def _check_request(body: ChatCompletionRequest, model_name: str, context: int | None) -> None:
    """Refuse what this server cannot serve before it costs the agent anything."""
    if body.model != model_name:
        raise _RequestError(
            400, f"field 'model': this server serves '{model_name}', not '{body.model}'"
        )
    if body.n != 1:
        raise _RequestError(400, f"field 'n': only n=1 is supported, got {body.n}")
    if body.stream_options is not None and not body.stream:
        raise _RequestError(400, "field 'stream_options': only allowed when 'stream' is true")
    if body.stream and body.logprobs:
        raise _RequestError(400, "field 'stream': logprobs are only served without streaming")
    _check_limits(body, context)


def _check_limits(body: ChatCompletionRequest, context: int | None) -> None:
    """A reply budget beyond the model's context cannot be honoured, only ground through for
    minutes while every other client waits, so it is refused; no known context, no check."""
    if context is None:
        return
    for name in LIMIT_FIELDS:
        value = getattr(body, name)
        if value is not None and value > context:
            raise _RequestError(
                400,
                f"field '{name}': {value} is more than this model's context of {context} "
                f"tokens; ask for at most {context}",
            )


def request_settings(
    base: GenerationSettings,
    *,
    max_tokens: int | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
) -> GenerationSettings:
    """Overlay OpenAI request parameters on an agent's default decoding.

    OpenAI has no `do_sample`: temperature 0 means greedy, so it switches sampling off;
    a positive temperature (or, without a temperature, top_p < 1) switches it on. Anything the
    request leaves out, num_beams included, stays as the agent's default.
    """
    changes: dict[str, Any] = {}
    if max_tokens is not None:
        changes["max_new_tokens"] = max_tokens
    if seed is not None:
        changes["seed"] = seed
    if top_p is not None:
        changes["top_p"] = top_p
    if temperature is not None:
        if temperature == 0:
            changes["do_sample"] = False
        else:
            changes["do_sample"] = True
            changes["temperature"] = temperature
    elif top_p is not None and top_p < 1:
        changes["do_sample"] = True
    return dataclasses.replace(base, **changes)


def _accepts_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether `function` takes the keyword `name` (explicitly or through **kwargs)."""
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    if name in params:
        return params[name].kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def accepts_settings(agent: ChatAgent) -> bool:
    """Whether `agent.respond` takes a `settings` keyword (an explicit one or **kwargs)."""
    return _accepts_keyword(agent.respond, "settings")


def agent_context(agent: object) -> int | None:
    """The agent's context in tokens, from its `context_length()`; None when it has none."""
    reporter = getattr(agent, "context_length", None)
    if not callable(reporter):
        return None
    context = reporter()
    return context if isinstance(context, int) and context > 0 else None


def _settings_for(
    body: ChatCompletionRequest, with_settings: bool, base: GenerationSettings
) -> tuple[GenerationSettings | None, list[str]]:
    """The request's decoding settings (None: the agent's defaults) and the ignored fields."""
    ignored = body.unknown_fields()
    given = body.given_generation_fields()
    if not given:
        return None, ignored
    if not with_settings:
        return None, sorted([*given, *ignored])
    settings = request_settings(
        base,
        max_tokens=body.reply_limit(),
        temperature=body.temperature,
        top_p=body.top_p,
        seed=body.seed,
    )
    return settings, ignored


# --------------------------------------------------------------------------- agent calls


@dataclasses.dataclass(frozen=True)
class _TopLogprobs:
    """Batch key of a logprobs request: its batch reads next-token log-probabilities."""

    k: int


@dataclasses.dataclass(frozen=True)
class _Job:
    """One request in a batch: its history and the monotonic time its reply is due by."""

    history: History
    deadline: float | None


@dataclasses.dataclass(frozen=True)
class _Reply:
    """What a request gets back from a batch: text, usage and why generation ended."""

    content: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: Literal["stop", "length"]
    logprobs: dict[str, Any] | None = None


def _count_words(text: str) -> int:
    return len(text.split())


def _same_length(replies: Sequence[Any], histories: Sequence[History]) -> None:
    if len(replies) != len(histories):
        raise RuntimeError(f"agent returned {len(replies)} replies for {len(histories)} histories")


class _AgentCalls:
    """The blocking side of the server: one batch of jobs through the agent, in the worker.

    Counting happens here too, not in the event loop: a Hugging Face fast tokenizer used by
    two threads at once fails ("Already borrowed"), and the worker is the only thread that
    touches the agent.
    """

    def __init__(self, agent: ChatAgent) -> None:
        self.agent = agent
        detailed = getattr(agent, "generate_replies", None)
        self.detailed: Callable[..., Sequence[Any]] | None = (
            detailed if callable(detailed) else None
        )
        self.with_settings = accepts_settings(agent)
        self.with_cancel = _accepts_keyword(self.detailed or agent.respond, "cancel")
        generation = getattr(agent, "generation", None)
        self.generation = generation if isinstance(generation, GenerationSettings) else None
        counter = getattr(agent, "count_tokens", None)
        self.count_tokens: Callable[[str], int] | None = counter if callable(counter) else None

    def __call__(
        self, jobs: list[_Job], key: GenerationSettings | _TopLogprobs | None
    ) -> list[_Reply]:
        histories = [job.history for job in jobs]
        if isinstance(key, _TopLogprobs):
            return self._logprobs(histories, key.k)
        cancel, timer = self._deadline_event(jobs)
        try:
            replies = self._generate(histories, key, cancel)
        finally:
            if timer is not None:
                timer.cancel()
        if cancel is not None and cancel.is_set():
            raise _GenerationTimeout("generation was stopped at the request deadline")
        return replies

    def _deadline_event(
        self, jobs: list[_Job]
    ) -> tuple[threading.Event | None, threading.Timer | None]:
        """An event set once the batch's last deadline passes, for an agent that can stop
        early: by then every request in the batch has had its 504, so nobody waits for it."""
        deadlines = [job.deadline for job in jobs if job.deadline is not None]
        if not self.with_cancel or len(deadlines) < len(jobs):
            return None, None
        cancel = threading.Event()
        timer = threading.Timer(max(0.0, max(deadlines) - time.monotonic()), cancel.set)
        timer.daemon = True
        timer.start()
        return cancel, timer

    def _generate(
        self,
        histories: list[History],
        settings: GenerationSettings | None,
        cancel: threading.Event | None,
    ) -> list[_Reply]:
        options: dict[str, Any] = {}
        if settings is not None:
            options["settings"] = settings
        if cancel is not None:
            options["cancel"] = cancel
        if self.detailed is not None:
            generated = list(self.detailed(histories, **options))
            _same_length(generated, histories)
            return [
                _Reply(g.text, g.prompt_tokens, g.completion_tokens, _finish(g.cut))
                for g in generated
            ]
        texts = list(self.agent.respond(histories, **options))
        _same_length(texts, histories)
        limit_from = settings or self.generation
        limit = limit_from.max_new_tokens if limit_from is not None else None
        return [self._counted(h, t, limit) for h, t in zip(histories, texts, strict=True)]

    def _counted(self, history: History, text: str, limit: int | None) -> _Reply:
        """Usage for an agent that reports none: its `count_tokens`, or words (then a cut
        reply cannot be told from a whole one, and "stop" is all that can be said)."""
        count = self.count_tokens or _count_words
        completion = count(text)
        cut = self.count_tokens is not None and limit is not None and completion >= limit
        return _Reply(text, self._prompt_count(history, count), completion, _finish(cut))

    def _prompt_count(self, history: History, count: Callable[[str], int]) -> int:
        return sum(count(turn.text) for turn in history)

    def _logprobs(self, histories: list[History], k: int) -> list[_Reply]:
        firsts = list(self.agent.next_token_logprobs(histories, k))  # type: ignore[attr-defined]
        _same_length(firsts, histories)
        return [
            _Reply(
                first["token"], self._logprob_prompt_tokens(h), 1, "length", {"content": [first]}
            )
            for h, first in zip(histories, firsts, strict=True)
        ]

    def _logprob_prompt_tokens(self, history: History) -> int:
        """The prompt the log-probabilities were read from, in tokens where the agent says."""
        prompt_ids = getattr(self.agent, "prompt_ids", None)
        if callable(prompt_ids):
            return len(prompt_ids(history, 1))
        return self._prompt_count(history, self.count_tokens or _count_words)


def _finish(cut: bool) -> Literal["stop", "length"]:
    return "length" if cut else "stop"


async def _await_reply(
    batcher: Batcher[_Job, Any, _Reply], history: History, key: Any, timeout: float | None
) -> _Reply:
    """The agent's reply for one request, its failures turned into what OpenAI clients know."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        pending = batcher.submit(_Job(history, deadline), key)
        return await (pending if timeout is None else asyncio.wait_for(pending, timeout))
    except (TimeoutError, _GenerationTimeout):
        raise _RequestError(
            504,
            f"request timed out: the reply was not ready within {timeout:g} s (the server's "
            "--request-timeout); ask for fewer tokens or retry later",
            "server_error",
        ) from None
    except AgentUnavailableError as exc:
        raise _RequestError(
            503, f"agent unavailable: {exc}", "server_error", {"retry-after": "1"}
        ) from None
    except Exception as exc:
        raise _RequestError(
            500, f"agent failed: {type(exc).__name__}: {exc}", "server_error"
        ) from None


# --------------------------------------------------------------------------- responses


def _error(
    status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def _usage(reply: _Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _header(model_name: str, kind: str) -> dict[str, Any]:
    """The fields every completion (or every chunk of one streamed completion) shares."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": kind,
        "created": int(time.time()),
        "model": model_name,
    }


def _completion(model_name: str, reply: _Reply) -> dict[str, Any]:
    """An OpenAI chat.completion body with one choice."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": reply.content},
        "finish_reason": reply.finish_reason,
    }
    if reply.logprobs is not None:
        choice["logprobs"] = reply.logprobs
    return {**_header(model_name, "chat.completion"), "choices": [choice], "usage": _usage(reply)}


def _stream_chunks(model_name: str, reply: _Reply, include_usage: bool) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects of a streamed reply, as OpenAI sends them.

    The agent generates whole replies, so the content arrives as one chunk, after the chunk
    that carries the role and before the one that carries `finish_reason`; a client that joins
    the deltas gets exactly the non-streamed reply. With `include_usage`, every chunk has
    `"usage": null` and one last chunk with no choices carries the usage.
    """
    header = _header(model_name, "chat.completion.chunk")

    def chunk(delta: dict[str, str], finish_reason: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        extra = {"usage": None} if include_usage else {}
        return {**header, "choices": [choice], **extra}

    chunks = [
        chunk({"role": "assistant", "content": ""}, None),
        chunk({"content": reply.content}, None),
        chunk({}, reply.finish_reason),
    ]
    if include_usage:
        chunks.append({**header, "choices": [], "usage": _usage(reply)})
    return chunks


async def _server_sent_events(chunks: list[dict[str, Any]]) -> AsyncIterator[str]:
    """`data: <json>` events, then the `data: [DONE]` that ends an OpenAI stream."""
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


# --------------------------------------------------------------------------- the app


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused as soon as it is known to be too large (declared or actual size)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise _RequestError(400, f"invalid Content-Length header {declared!r}") from None
        if size > limit:
            raise _RequestError(
                413, f"request body is {size} bytes; this server accepts at most {limit} bytes"
            )
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise _RequestError(413, f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _check_key(request: Request, api_key: str | None) -> None:
    if api_key is None:
        return
    header = request.headers.get("authorization")
    if not header:
        raise _RequestError(
            401, "missing API key: send 'Authorization: Bearer <key>'", "authentication_error"
        )
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        token.strip().encode(), api_key.encode()
    ):
        raise _RequestError(401, "invalid API key", "authentication_error")


def _check_logprobs(body: ChatCompletionRequest, agent: ChatAgent) -> None:
    """Only a one-token reply is served with logprobs: that is what an LLM judge asks for,
    and a bot whose log-probabilities are read for longer replies should be loaded locally."""
    if body.reply_limit() != 1:
        raise _RequestError(
            400, "field 'logprobs': this server returns logprobs only with max_tokens=1"
        )
    if not callable(getattr(agent, "next_token_logprobs", None)):
        raise _RequestError(400, "field 'logprobs': this bot cannot return log-probabilities")


def create_app(
    agent: ChatAgent,
    model_name: str,
    *,
    api_key: str | None = None,
    max_request_bytes: int = 1_000_000,
    max_batch_size: int = 16,
    max_wait_ms: int = 20,
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
) -> FastAPI:
    """An OpenAI-compatible app around one agent.

    Args:
        agent: the bot; its `respond` is called from a worker thread, one batch at a time.
        model_name: the only name accepted in a request's `model` field.
        api_key: when set, every request must send `Authorization: Bearer <api_key>`.
        max_request_bytes: larger bodies are refused with 413 before they are parsed.
        max_batch_size: most requests answered by one `respond` call.
        max_wait_ms: how long a request waits for others to share its batch.
        request_timeout: seconds a request may wait for its reply (queueing included) before
            it gets a 504; None waits forever.
    """
    if request_timeout is not None and request_timeout <= 0:
        raise ValueError(f"request_timeout must be positive, got {request_timeout}")
    calls = _AgentCalls(agent)
    context = agent_context(agent)
    base_settings = calls.generation or GenerationSettings()
    batcher: Batcher[_Job, Any, _Reply] = Batcher(
        calls, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await batcher.aclose()

    app = FastAPI(title=f"moralsim: {model_name}", lifespan=lifespan)
    app.state.batcher = batcher
    app.state.request_timeout = request_timeout
    app.state.context = context

    @app.exception_handler(_RequestError)
    async def _refused(_: Request, exc: _RequestError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.kind, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(400, _describe_validation(exc.errors()), "invalid_request_error")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), "invalid_request_error")

    @app.get("/v1/models")
    async def list_models(request: Request) -> dict[str, Any]:
        _check_key(request, api_key)
        entry = {"id": model_name, "object": "model", "created": 0, "owned_by": "moralsim"}
        return {"object": "list", "data": [entry]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        _check_key(request, api_key)
        body = _parse_request(await _read_body(request, max_request_bytes))
        _check_request(body, model_name, context)
        key: GenerationSettings | _TopLogprobs | None
        if body.logprobs:
            _check_logprobs(body, agent)
            key, ignored = _TopLogprobs(body.top_logprobs or 0), []
        else:
            key, ignored = _settings_for(body, calls.with_settings, base_settings)
        history = [Turn(role=_ROLE_TO_TURN[m.role], text=m.content) for m in body.messages]
        reply = await _await_reply(batcher, history, key, request_timeout)
        headers = {IGNORED_HEADER: ",".join(ignored)} if ignored else {}
        if body.stream:
            events = _server_sent_events(_stream_chunks(model_name, reply, body.include_usage()))
            headers["cache-control"] = "no-cache"
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        return JSONResponse(_completion(model_name, reply), headers=headers or None)

    return app
