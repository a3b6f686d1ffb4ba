"""`moralsim serve`: put a local bot (plus an optional LoRA adapter) behind an OpenAI API.

The default bind address is 127.0.0.1 so a bot is not exposed to the network by accident;
pass `--host 0.0.0.0` together with `--api-key-env` to serve other machines. A request whose
reply is not ready within `--request-timeout` seconds gets a 504, so one slow request cannot
hold every client (the default is 300 s, also the server's own default).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agents.placement import DEVICE_HELP, DTYPE_HELP, PlacementError, resolve_placement

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _fail(console: Console, message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)


def served_name(model: str, adapter: str | None) -> str:
    """The `model` name clients must send: the model spec, plus the adapter folder's name."""
    if adapter is None:
        return model
    return f"{model}+{Path(adapter).expanduser().resolve().name}"


def serve(
    model: Annotated[
        str, typer.Option(help="Model folder or embedded model name.")
    ] = "smollm2-135m-instruct",
    adapter: Annotated[str | None, typer.Option(help="PEFT (LoRA) adapter folder.")] = None,
    merge: Annotated[
        bool, typer.Option(help="Merge the adapter into the weights (faster replies).")
    ] = False,
    host: Annotated[
        str, typer.Option(help="Bind address; 127.0.0.1 keeps the bot on this machine.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    api_key_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding the API key clients must send."),
    ] = None,
    max_batch_size: Annotated[int, typer.Option(help="Most requests per model call.")] = 16,
    max_wait_ms: Annotated[
        int, typer.Option(help="How long a request waits for others to batch with.")
    ] = 20,
    system_prompt: Annotated[
        str | None, typer.Option(help="System prompt prepended to every conversation.")
    ] = None,
    request_timeout: Annotated[
        float,
        typer.Option(help="Seconds a request may wait for its reply before a 504 (timeout)."),
    ] = 300.0,
    max_context_tokens: Annotated[
        int,
        typer.Option(
            min=1,
            help="Prompt + reply token budget; longer histories lose their oldest turns (the "
            "same default as a run's bot.max_context_tokens, so served and local replies match).",
        ),
    ] = 2048,
    device: Annotated[str, typer.Option(help="Where the bot runs: " + DEVICE_HELP)] = "auto",
    dtype: Annotated[str, typer.Option(help="The bot's precision: " + DTYPE_HELP)] = "auto",
) -> None:
    """Serve a bot over an OpenAI-compatible API (POST /v1/chat/completions)."""
    console = Console(stderr=True, soft_wrap=True)
    try:
        placement = resolve_placement(device, dtype, prefix="--")
    except PlacementError as exc:
        raise _fail(console, str(exc)) from None
    if not request_timeout > 0:
        raise _fail(console, f"--request-timeout must be positive, got {request_timeout:g}")
    api_key: str | None = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise _fail(console, f"--api-key-env: the environment variable {api_key_env} is unset")
    if host not in _LOCAL_HOSTS and api_key is None:
        console.print(
            f"[yellow]warning:[/] serving on {host} without an API key: anyone who can reach "
            "this port can use the bot (add --api-key-env)",
            highlight=False,
        )

    import uvicorn

    from agents.hf import TransformersAgent  # heavy (torch); only when serving
    from agents.models import ModelError
    from agents.server import create_app

    try:
        agent = TransformersAgent(
            model, adapter=adapter, merge=merge, system_prompt=system_prompt,
            max_context_tokens=max_context_tokens, batch_size=max_batch_size,
            device=placement.device,
            dtype=placement.dtype,
        )  # fmt: skip
    except (ModelError, FileNotFoundError, ValueError) as exc:
        raise _fail(console, str(exc)) from None
    name = served_name(model, adapter)
    app = create_app(
        agent,
        name,
        api_key=api_key,
        max_batch_size=max_batch_size,
        max_wait_ms=max_wait_ms,
        request_timeout=request_timeout,
    )
    console.print(
        f"serving '{name}' ({placement}) at http://{host}:{port}/v1 (OpenAI chat "
        "completions); Ctrl-C stops",
        highlight=False,
    )
    uvicorn.run(app, host=host, port=port, log_level="info")
