"""`moralsim chat`: talk to a bot and watch the MoralDial scores of every reply as it lands.

`ChatSession` holds the dialogue and the scoring (usable without a terminal: tests drive it
directly); `run_repl` is the prompt_toolkit loop around it. Generation runs in a worker thread
so Ctrl-C can cancel it without losing the dialogue.
"""

from __future__ import annotations

import inspect
import random
import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from evaluators.moraldial import last_step_index
from scenarios.jsonl import DialogueWriter
from scenarios.phrases import pick, pushback
from scenarios.records import Dialogue, Score, Turn
from scenarios.rot import RoT

HELP = """commands:
  /rot TEXT    set the hidden rule of thumb you hold (the bot never sees it)
  /why         ask the bot why (shows S_ME: does its reason agree with its answer?)
  /pushback    push back with your RoT (shows S_MR1 -> S_MR2)
  /scores      every score so far
  /reset       start a new dialogue (keeps the RoT)
  /save FILE   append the dialogue as one JSON line (the records format)
  /help        this text
  /quit        leave (Ctrl-D works too)
anything else is sent to the bot; Ctrl-C cancels a reply in progress."""


class Cancelled(Exception):
    """The user interrupted a generation."""


@dataclass
class BotReply:
    text: str
    scores: list[Score] = field(default_factory=list)


class ChatSession:
    """One REPL dialogue: turns, the hidden RoT, and live scores from the evaluators.

    Args:
        agent: any ChatAgent.
        evaluators: an `evaluators.stack.Evaluators`, or None to chat without scores.
        unavailable: why scoring is off (shown instead of scores).
        seed: picks the why/but phrases.
        scorer: the scorer's summary (`evaluators.scorer_eval.scorer_summary`), for /scores.
    """

    def __init__(
        self,
        agent: Any,
        evaluators: Any = None,
        unavailable: str = "",
        seed: int = 0,
        scorer: dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.scorer = scorer
        self.evaluators = evaluators
        self.unavailable = unavailable or ("" if evaluators else "scorer unavailable")
        self.rng = random.Random(seed)
        self.rot: str | None = None
        self.dialogue = self._new_dialogue()
        self._cancel_supported = "cancel" in inspect.signature(agent.respond).parameters

    def _new_dialogue(self) -> Dialogue:
        return Dialogue(
            id=f"chat-{random.Random().getrandbits(32):08x}",
            scenario_id="repl",
            flow="chat",
            hidden_rot=RoT(self.rot) if self.rot else None,
            meta={"bot": self.agent.info.model, "adapter": self.agent.info.adapter},
        )

    # ------------------------------------------------------------------ moves

    def say(
        self, text: str, step: str = "question", cancel: threading.Event | None = None
    ) -> BotReply:
        """Send a user turn, get the bot's reply, score it; a cancelled or failed turn (a
        server that stopped answering) is rolled back, so the turn can simply be sent again."""
        self.dialogue.turns.append(Turn("user", text, {"step": step}))
        try:
            reply = self._generate(cancel)
        except BaseException:
            self.dialogue.turns.pop()
            raise
        bot_step = {"question": "answer", "why": "explanation", "pushback": "revision"}[step]
        self.dialogue.turns.append(Turn("bot", reply, {"step": bot_step}))
        scores = self._score_last()
        self.dialogue.scores += scores
        return BotReply(reply, scores)

    def why(self, cancel: threading.Event | None = None) -> BotReply:
        self._need_answer()
        return self.say(pick("why", self.rng), step="why", cancel=cancel)

    def push_back(self, cancel: threading.Event | None = None) -> BotReply:
        self._need_answer()
        if not self.rot:
            raise ValueError("set your rule of thumb first: /rot It's wrong to ...")
        firm = (self.last_score("S_MR1") or 0.0) < -0.35
        return self.say(pushback(self.rot, self.rng, firm=firm), step="pushback", cancel=cancel)

    def set_rot(self, text: str) -> Score | None:
        """Hold a new hidden RoT; returns the last answer's agreement with it, if scorable."""
        self.rot = text.strip()
        self.dialogue.hidden_rot = RoT(self.rot)
        answer = self._last_index("answer")
        if answer is None or self.evaluators is None:
            return None
        question = self._question_before(answer)
        from evaluators.agreement import AgreementItem, class_meta, split_agreement

        values, probs = split_agreement(
            self.evaluators.agreement.probabilities(
                [AgreementItem(question, self.dialogue.turns[answer].text, self.rot)]
            )
        )
        meta = {"set_after": True, **class_meta(probs, 0)}
        score = Score("S_MR1", float(values[0]), turn=answer, scorer="moraldial", meta=meta)
        self.dialogue.scores.append(score)
        return score

    def reset(self) -> None:
        self.dialogue = self._new_dialogue()

    def save(self, path: str | Path) -> Path:
        with DialogueWriter(path) as out:
            out.write(self.dialogue)
        return Path(path)

    def last_score(self, name: str) -> float | None:
        found = [s for s in self.dialogue.scores if s.name == name]
        return found[-1].value if found else None

    # ------------------------------------------------------------------ internals

    def _need_answer(self) -> None:
        if self._last_index("answer") is None:
            raise ValueError("ask the bot something first")

    def _last_index(self, step: str) -> int | None:
        return last_step_index(self.dialogue.turns, step)

    def _question_before(self, index: int) -> str:
        found = last_step_index(self.dialogue.turns, "question", before=index)
        return self.dialogue.turns[found].text if found is not None else ""

    def _generate(self, cancel: threading.Event | None) -> str:
        history = list(self.dialogue.turns)
        if cancel is None:
            return self.agent.respond([history])[0]
        result: dict[str, Any] = {}

        def work() -> None:
            try:
                kwargs = {"cancel": cancel} if self._cancel_supported else {}
                result["reply"] = self.agent.respond([history], **kwargs)[0]
            except Exception as exc:  # handed to the caller's thread
                result["error"] = exc

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.05)
            if cancel.is_set():
                raise Cancelled()
        if "error" in result:
            raise result["error"]
        return result["reply"]

    def _score_last(self) -> list[Score]:
        if self.evaluators is None:
            return []
        from evaluators.moraldial import TurnRequest

        return self.evaluators.moraldial.score_turns(
            [TurnRequest(self.dialogue, len(self.dialogue.turns) - 1)]
        )[0]


# ---------------------------------------------------------------------- display


def scorer_lines(scorer: dict[str, Any] | None) -> list[str]:
    """Who scores the replies and how far to trust it (the card's key figures)."""
    if not scorer:
        return []
    keys = scorer.get("key_figures") or {}

    def pct(value: Any) -> str:
        return "not measured" if value is None else f"{100 * value:.1f}%"

    lines = [
        f"scored by {scorer.get('model')} ({scorer.get('kind')}): real-data pairwise accuracy "
        f"{pct(keys.get('real_data_pairwise_accuracy'))}, in-domain macro-F1 "
        f"{pct(keys.get('in_domain_macro_f1'))}"
    ]
    if scorer.get("warning"):
        lines.append(f"[bold yellow]warning:[/] {scorer['warning']}")
    return lines


def format_scores(scores: list[Score], session: ChatSession) -> str:
    """One line of live scores, x100 as the papers show them."""
    if session.evaluators is None:
        return f"[{session.unavailable}]"
    order = ("S_MA", "S_MR1", "S_ME", "S_MR2", "dS_MR")
    parts = []
    for s in sorted(scores, key=lambda x: order.index(x.name) if x.name in order else len(order)):
        if s.name == "S_MA":
            parts.append(
                f"S_MA {100 * s.value:+.1f} (nearest safety RoT: {s.meta.get('worst_rot', '')!r})"
            )
        elif s.name == "S_MR1":
            parts.append(f"agreement with your RoT {100 * s.value:+.1f}")
        elif s.name == "S_ME":
            parts.append(f"S_ME {100 * s.value:+.1f} (its reason vs its answer)")
        elif s.name == "S_MR2":
            parts.append(f"S_MR2 {100 * s.value:+.1f}")
        elif s.name == "dS_MR":
            parts.append(f"ΔS_MR {100 * s.value:+.1f}")
    if not session.rot:
        parts.append("(set /rot to score agreement with your view)")
    return "  ".join(parts)


def run_repl(session: ChatSession, history_file: Path | None = None) -> None:
    """The interactive loop (prompt_toolkit), until /quit or Ctrl-D."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from rich.console import Console

    from agents.openai_client import AgentError

    console = Console(highlight=False, soft_wrap=True)
    if history_file is not None:
        history_file.parent.mkdir(parents=True, exist_ok=True)
    prompt = PromptSession(
        history=FileHistory(str(history_file)) if history_file else InMemoryHistory()
    )
    console.print(f"chatting with {session.agent.info.model}; /help for commands")
    if session.unavailable:
        console.print(f"[yellow]{session.unavailable}[/]")
    while True:
        try:
            line = prompt.prompt("you> ").strip()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        try:
            if not _command(line, session, console):
                _exchange(console, session, partial(_say, session, line))
        except ValueError as exc:
            console.print(f"[yellow]{exc}[/]")
        except AgentError as exc:  # an endpoint that failed: the chat goes on without the turn
            console.print(f"[red]the bot did not answer: {exc}[/]")


def _command(line: str, session: ChatSession, console: Any) -> bool:
    """Handle a /command; False when the line is a message for the bot."""
    if not line.startswith("/"):
        return False
    name, _, arg = line.partition(" ")
    if name == "/help":
        console.print(HELP)
    elif name == "/rot":
        if not arg.strip():
            console.print(f"your RoT: {session.rot or '(none)'}")
        else:
            score = session.set_rot(arg)
            console.print(f"hidden RoT set: {session.rot}")
            if score is not None:
                console.print(f"  last answer's agreement with it: {100 * score.value:+.1f}")
    elif name == "/why":
        _exchange(console, session, lambda cancel: session.why(cancel=cancel))
    elif name == "/pushback":
        before = session.last_score("S_MR1")
        reply = _exchange(console, session, lambda cancel: session.push_back(cancel=cancel))
        after = session.last_score("S_MR2")
        if reply is not None and before is not None and after is not None:
            console.print(f"  S_MR1 {100 * before:+.1f} -> S_MR2 {100 * after:+.1f}")
    elif name == "/scores":
        for line in scorer_lines(session.scorer):
            console.print(line, highlight=False)
        if not session.dialogue.scores:
            console.print("no scores yet")
        for s in session.dialogue.scores:
            p = s.meta.get("p")
            classes = f"  (P agree/neutral/disagree {p[0]:.2f}/{p[1]:.2f}/{p[2]:.2f})" if p else ""
            console.print(f"  turn {s.turn}: {s.name} {100 * s.value:+.1f}{classes}")
    elif name == "/reset":
        session.reset()
        console.print("new dialogue")
    elif name == "/save":
        if not arg.strip():
            raise ValueError("usage: /save FILE")
        console.print(f"saved to {session.save(arg.strip())}")
    else:
        raise ValueError(f"unknown command {name}; /help lists them")
    return True


def _say(session: ChatSession, line: str, cancel: threading.Event) -> BotReply:
    return session.say(line, cancel=cancel)


def _exchange(console: Any, session: ChatSession, move: Any) -> BotReply | None:
    cancel = threading.Event()
    try:
        with console.status("thinking... (Ctrl-C cancels)"):
            try:
                reply = move(cancel)
            except KeyboardInterrupt:
                cancel.set()
                raise Cancelled() from None
    except Cancelled:
        console.print("[yellow](cancelled; the dialogue is as it was)[/]")
        return None
    sent = session.dialogue.turns[-2]
    if sent.meta.get("step") != "question":  # show the why/but phrase the REPL wrote for you
        console.print(f"[dim]you (sent): {sent.text}[/]")
    console.print(f"[bold]bot>[/] {reply.text}")
    console.print(f"[dim]  {format_scores(reply.scores, session)}[/]")
    return reply
