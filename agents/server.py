"""Serve any ChatAgent over the OpenAI chat-completions API.

Why OpenAI's shape: every evaluation harness and chat UI already speaks it, so a trained moral
bot can be probed by tools that know nothing about moralsim. Only the subset a dialogue needs
is served: `GET /v1/models` and non-streaming `POST /v1/chat/completions` with `n=1`.

Concurrent requests are batched (`Batcher`) because the agent contract is batched: a GPU
answers eight histories in one `respond` call nearly as fast as one. Agent calls run one at a
time in a worker thread, which keeps the event loop free to accept and queue new requests and
keeps models that are not thread-safe out of trouble.

Generation parameters: when the agent's `respond` accepts a `settings` keyword, a request's
`max_tokens`, `temperature`, `top_p` and `seed` become a `GenerationSettings` (on top of the
agent's own `generation` defaults when it has them). When it does not, they are ignored and the
`x-moralsim-ignored-params` response header names them, as it also names any request field
this server does not understand, so a client can tell that its setting had no effect.
"""

from __future__ import annotations

import dataclasses
import hmac
import inspect
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic import ValidationError as PydanticValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.base import ChatAgent, GenerationSettings, History
from agents.batching import Batcher
from scenarios.records import Role, Turn

IGNORED_HEADER = "x-moralsim-ignored-params"
GENERATION_FIELDS = ("max_tokens", "max_completion_tokens", "temperature", "top_p", "seed")
_ROLE_TO_TURN: dict[str, Role] = {"system": "system", "user": "user", "assistant": "bot"}


class AgentUnavailableError(RuntimeError):
    """Raise from an agent for a transient failure (model reloading, out of memory).

    The server answers 503 instead of 500, which OpenAI clients (ours included) retry.
    """


class _RequestError(Exception):
    """A request the server refuses; carries the HTTP status and the OpenAI error type."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


# --------------------------------------------------------------------------- request schema


class ChatMessage(BaseModel):
    """One OpenAI message; content must be plain text (no image or tool parts)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant"]
    content: StrictStr


class ChatCompletionRequest(BaseModel):
    """The OpenAI request fields this server reads; unknown fields are kept to be reported."""

    model_config = ConfigDict(extra="allow")

    model: StrictStr
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    max_completion_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: StrictInt | None = None
    n: StrictInt = 1
    stream: StrictBool = False
    logprobs: StrictBool = False
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20)

    def given_generation_fields(self) -> list[str]:
        return [name for name in GENERATION_FIELDS if getattr(self, name) is not None]

    def unknown_fields(self) -> list[str]:
        extra = self.model_extra or {}
        return sorted(name for name, value in extra.items() if value is not None)


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


def accepts_settings(agent: ChatAgent) -> bool:
    """Whether `agent.respond` takes a `settings` keyword (an explicit one or **kwargs)."""
    try:
        params = inspect.signature(agent.respond).parameters
    except (TypeError, ValueError):
        return False
    if "settings" in params:
        return params["settings"].kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


# --------------------------------------------------------------------------- the app


def _error(
    status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def _count_words(text: str) -> int:
    return len(text.split())


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


@dataclasses.dataclass(frozen=True)
class _TopLogprobs:
    """Batch key of a logprobs request: its batch reads next-token log-probabilities."""

    k: int


async def _logprob_reply(
    body: ChatCompletionRequest,
    model_name: str,
    batcher: Batcher,
    agent: ChatAgent,
    count: Callable[[str], int],
) -> JSONResponse:
    """One token with its log-probabilities (what an LLM judge asks for).

    Only a one-token reply is served with logprobs: that is the judge's request, and a bot
    whose log-probabilities are read for longer replies should be loaded locally instead.
    """
    limit = body.max_completion_tokens or body.max_tokens
    if limit != 1:
        raise _RequestError(
            400, "field 'logprobs': this server returns logprobs only with max_tokens=1"
        )
    if not callable(getattr(agent, "next_token_logprobs", None)):
        raise _RequestError(400, "field 'logprobs': this bot cannot return log-probabilities")
    history = [Turn(role=_ROLE_TO_TURN[m.role], text=m.content) for m in body.messages]
    try:
        first = await batcher.submit(history, _TopLogprobs(body.top_logprobs or 0))
    except AgentUnavailableError as exc:
        return _error(503, f"agent unavailable: {exc}", "server_error", {"retry-after": "1"})
    except Exception as exc:
        return _error(500, f"agent failed: {type(exc).__name__}: {exc}", "server_error")
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": first["token"]},
        "logprobs": {"content": [first]},
        "finish_reason": "length",
    }
    prompt_tokens = sum(count(m.content) for m in body.messages)
    return JSONResponse(_completion(model_name, choice, prompt_tokens, 1))


def _completion(
    model_name: str, choice: dict[str, Any], prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    """An OpenAI chat.completion body with one choice."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def create_app(
    agent: ChatAgent,
    model_name: str,
    *,
    api_key: str | None = None,
    max_request_bytes: int = 1_000_000,
    max_batch_size: int = 16,
    max_wait_ms: int = 20,
) -> FastAPI:
    """An OpenAI-compatible app around one agent.

    Token counts in `usage` come from the agent's `count_tokens(text) -> int` when it has one;
    otherwise they are estimates: the number of whitespace-separated words, which is what an
    agent without a tokenizer (or behind another API) can honestly offer.

    Args:
        agent: the bot; its `respond` is called from a worker thread, one batch at a time.
        model_name: the only name accepted in a request's `model` field.
        api_key: when set, every request must send `Authorization: Bearer <api_key>`.
        max_request_bytes: larger bodies are refused with 413 before they are parsed.
        max_batch_size: most requests answered by one `respond` call.
        max_wait_ms: how long a request waits for others to share its batch.
    """
    with_settings = accepts_settings(agent)
    base_settings = getattr(agent, "generation", None)
    if not isinstance(base_settings, GenerationSettings):
        base_settings = GenerationSettings()
    counter = getattr(agent, "count_tokens", None)
    count: Callable[[str], int] = counter if callable(counter) else _count_words

    def run(histories: list[History], settings: Any) -> list[Any]:
        if isinstance(settings, _TopLogprobs):
            return list(agent.next_token_logprobs(histories, settings.k))  # type: ignore[attr-defined]
        if settings is None:
            return list(agent.respond(histories))
        return list(agent.respond(histories, settings=settings))  # type: ignore[call-arg]

    batcher = Batcher(run, max_batch_size=max_batch_size, max_wait_ms=max_wait_ms)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await batcher.aclose()

    app = FastAPI(title=f"moralsim: {model_name}", lifespan=lifespan)
    app.state.batcher = batcher

    @app.exception_handler(_RequestError)
    async def _refused(_: Request, exc: _RequestError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.kind)

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
    async def chat_completions(request: Request) -> JSONResponse:
        _check_key(request, api_key)
        raw = await _read_body(request, max_request_bytes)
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _RequestError(400, f"request body is not valid JSON: {exc}") from None
        try:
            body = ChatCompletionRequest.model_validate(data)
        except PydanticValidationError as exc:
            raise _RequestError(400, _describe_validation(exc.errors())) from None
        if body.model != model_name:
            raise _RequestError(
                400, f"field 'model': this server serves '{model_name}', not '{body.model}'"
            )
        if body.n != 1:
            raise _RequestError(400, f"field 'n': only n=1 is supported, got {body.n}")
        if body.stream:
            raise _RequestError(400, "field 'stream': streaming is not supported; send false")

        if body.logprobs:
            return await _logprob_reply(body, model_name, batcher, agent, count)

        ignored = body.unknown_fields()
        settings: GenerationSettings | None = None
        given = body.given_generation_fields()
        if given and with_settings:
            settings = request_settings(
                base_settings,
                max_tokens=body.max_completion_tokens or body.max_tokens,
                temperature=body.temperature,
                top_p=body.top_p,
                seed=body.seed,
            )
        elif given:
            ignored = sorted([*given, *ignored])

        history = [Turn(role=_ROLE_TO_TURN[m.role], text=m.content) for m in body.messages]
        try:
            reply = await batcher.submit(history, settings)
        except AgentUnavailableError as exc:
            return _error(503, f"agent unavailable: {exc}", "server_error", {"retry-after": "1"})
        except Exception as exc:
            return _error(500, f"agent failed: {type(exc).__name__}: {exc}", "server_error")

        prompt_tokens = sum(count(m.content) for m in body.messages)
        completion_tokens = count(reply)
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": reply},
            "finish_reason": "stop",
        }
        payload = _completion(model_name, choice, prompt_tokens, completion_tokens)
        headers = {IGNORED_HEADER: ",".join(ignored)} if ignored else None
        return JSONResponse(payload, headers=headers)

    return app
