"""A ChatAgent backed by any OpenAI-compatible chat-completions server.

This is how moralsim evaluates bots it cannot load itself (a hosted model, a vLLM server, or
another moralsim `serve` process). The chat-completions API takes one conversation per request,
so a batch becomes concurrent requests, with a cap so a large simulation does not flood the
server. Transient failures (429, 5xx, dropped connections, timeouts) are retried with
exponential backoff because a long simulation should survive a server restart; every other
refusal is a bug in the request and fails at once with the server's own message.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from agents.base import AgentInfo, GenerationSettings, History, system_text
from scenarios.registry import AGENTS

_TURN_TO_ROLE = {"user": "user", "bot": "assistant", "system": "system"}


class AgentError(RuntimeError):
    """A bot that could not answer; the message says which server, what status and why."""


def _server_message(response: httpx.Response) -> str:
    """The error message an OpenAI-style server put in its body, or the start of the body."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
        if isinstance(data.get("detail"), str):
            return data["detail"]
    return response.text[:500]


def auth_headers(base_url: str, api_key_env: str | None) -> dict[str, str]:
    """The Authorization header for a key read from `api_key_env` (none for None): keys live
    in the environment, never in configs, so configs can be shared and committed."""
    if not api_key_env:
        return {}
    key = os.environ.get(api_key_env)
    if not key:
        raise AgentError(
            f"the environment variable {api_key_env} is not set: export the API key "
            f"for {base_url} there (or set api_key_env to null for a server without keys)"
        )
    return {"Authorization": f"Bearer {key}"}


def served_models(base_url: str, api_key_env: str | None, timeout: float = 10.0) -> list[str]:
    """The model names `GET {base_url}/models` lists, so a run can check its bot before anything
    loads: an unreachable server, a refused key or a mistyped model name is then one line, not
    a run that fails at its first bot turn. Empty when the server keeps no such list (404).

    Raises AgentError when the server cannot be reached or refuses the request.
    """
    url = f"{base_url.rstrip('/')}/models"
    try:
        response = httpx.get(url, headers=auth_headers(base_url, api_key_env), timeout=timeout)
    except httpx.HTTPError as exc:
        raise AgentError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from None
    if response.status_code in (404, 405):
        return []
    if response.status_code >= 400:
        raise AgentError(
            f"{url} refused the request (HTTP {response.status_code}): {_server_message(response)}"
        )
    try:
        entries = response.json()["data"]
        return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
    except (ValueError, KeyError, TypeError):
        return []  # not OpenAI's list shape: nothing to check the name against


def _endpoint_and_model(names: tuple[str, ...], base_url: str | None) -> tuple[str, str]:
    """(base_url, model) from either call form: the registry passes the model first and every
    other option by keyword (`AGENTS.get(name)(model, **options)`), while direct callers
    have always named the endpoint first."""
    if base_url is not None and len(names) == 1:
        return base_url, names[0]
    if base_url is None and len(names) == 2:
        return names[0], names[1]
    raise TypeError(
        "OpenAIChatAgent takes (model, base_url=URL) or (base_url, model), got "
        f"{len(names)} positional names and base_url={base_url!r}"
    )


@AGENTS.register("openai")
class OpenAIChatAgent:
    """Talks to `{base_url}/chat/completions` (base_url ends in `/v1`, as OpenAI's does).

    Decoding maps onto the OpenAI fields: greedy (`do_sample=False`) is sent as temperature 0;
    `max_new_tokens` as `max_tokens`; `top_p` and `seed` as they are. OpenAI has no beam search,
    so `num_beams` is not sent: the server decides.

    Built the way the agent registry builds every backend, `OpenAIChatAgent(model,
    base_url=URL, ...)` (what `bot.agent: openai` in a run config does), or endpoint first,
    `OpenAIChatAgent(base_url, model, ...)`, as direct callers write it.

    Args:
        model: the server's model name (sent as `model`, recorded in `info`).
        base_url: e.g. `http://127.0.0.1:8000/v1`.
        api_key_env: environment variable holding the API key; None for a server without keys.
            Keys never appear in configs, so configs can be shared and committed.
        timeout: seconds per request attempt.
        max_retries: retries after the first attempt for 429, 5xx, connection errors, timeouts.
        backoff: seconds before the first retry; doubles each retry (backoff * 2**attempt).
        concurrency: most requests in flight at once.
        generation: decoding parameters sent with every request.
        system_prompt: instruction prepended as a system message.
        rots: rules of thumb to follow, added to the system message (SaGE §5.5).
    """

    def __init__(
        self,
        *names: str,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        concurrency: int = 8,
        generation: GenerationSettings = GenerationSettings(),  # noqa: B008 (frozen dataclass)
        system_prompt: str | None = None,
        rots: Sequence[str] = (),
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must not be negative, got {max_retries}")
        base_url, model = _endpoint_and_model(names, base_url)
        headers = {"Content-Type": "application/json", **auth_headers(base_url, api_key_env)}
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_retries = max_retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.generation = generation
        self.system = system_text(system_prompt, rots)
        self.info = AgentInfo(model=model, backend="openai", extra={"base_url": self.base_url})
        self.retries = 0
        self._lock = threading.Lock()
        self._client = httpx.Client(
            timeout=timeout,
            headers=headers,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="openai")

    def respond(self, histories: Sequence[History]) -> list[str]:
        """One reply per history, in order; raises AgentError if any request finally fails."""
        if not histories:
            return []
        payloads = [self._payload(history) for history in histories]
        return list(self._pool.map(self._complete, payloads))

    def stats(self) -> dict[str, int]:
        return {"retries": self.retries}

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()

    def __enter__(self) -> OpenAIChatAgent:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _payload(self, history: History) -> dict[str, Any]:
        messages = [{"role": "system", "content": self.system}] if self.system else []
        messages += [{"role": _TURN_TO_ROLE[t.role], "content": t.text} for t in history]
        gen = self.generation
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": gen.max_new_tokens,
            "temperature": gen.temperature if gen.do_sample else 0.0,
            "top_p": gen.top_p,
            "seed": gen.seed,
            "n": 1,
            "stream": False,
        }

    def _complete(self, payload: dict[str, Any]) -> str:
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                with self._lock:
                    self.retries += 1
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._client.post(url, json=payload)
            except httpx.TransportError as exc:  # connection refused/reset, timeouts
                last = f"{type(exc).__name__}: {exc}"
                continue
            status = response.status_code
            if status == 429 or status >= 500:
                last = f"HTTP {status}: {_server_message(response)}"
                continue
            if status >= 400:
                raise AgentError(
                    f"{url} refused the request (HTTP {status}): {_server_message(response)}"
                )
            return self._reply(url, response)
        raise AgentError(f"{url} failed after {self.max_retries + 1} attempts; last error: {last}")

    @staticmethod
    def _reply(url: str, response: httpx.Response) -> str:
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise AgentError(
                f"{url} answered HTTP {response.status_code} without a chat completion: "
                f"{response.text[:300]}"
            ) from None
        if not isinstance(content, str):
            raise AgentError(f"{url} answered a completion whose content is not text: {content!r}")
        return content
