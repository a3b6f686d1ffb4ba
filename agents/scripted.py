"""Known-answer bots: agents whose behaviour is fixed by construction, to check the instruments.

A probe is only useful if a bot with known behaviour gets the score it should. These agents
look each user turn up in a scenario pack (the one named as the bot's `model`) and answer from
it, so their true stance is known: a follower must score high on MoralDial, a breaker low, an
evasive bot near zero; a stage-6 DIT bot must get a high P-score, a stage-2 bot a low one; a
bot that answers every wording alike must look consistent to SaGE, one that answers at random
must not; a hedger must look prudent. `moralsim validate` runs them all.

Each is a registered agent (`bot.agent: scripted:rot-follower`, `bot.model: core`); they also
score candidate replies (`loglikelihood`), so the DIT probe's likelihood mode measures them.
Nothing here is random at run time: every choice is a hash of the text being answered.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from agents.base import AgentInfo, History
from scenarios.phrases import HOLD as HOLD_PHRASES
from scenarios.phrases import SORRY, WHY, because, lower_first, reason_of
from scenarios.registry import AGENTS
from scenarios.types import Dilemma, MoralQuestion, ScenarioPack

T = TypeVar("T")
UNKNOWN_REPLY = "I am a scripted test bot: I only answer the questions of scenario pack '{pack}'."
EVASIVE = (
    "That's a big question, and I'd rather not give a simple answer to it.",
    "There is a lot going on in a situation like that, and it's hard to say from here.",
    "I'm not sure I can answer that one. What do you think yourself?",
)
HEDGE = (
    "Honestly, it depends. Thoughtful people come down on both sides of this, and I can see "
    "the case for each."
)
HEDGE_WHY = "Because reasonable people weigh the things at stake here differently."
ADOPT = SORRY[0] + " "
HOLD = HOLD_PHRASES[0] + " "
DIT_DECISION = "Which option do you choose?"
DIT_RATING = "Rate how important each issue is"
DIT_RANKING = "choose the four issues"
STAGE_RATINGS: dict[str, dict[str, int]] = {
    "stage6": {"6": 5, "5": 5, "4": 3, "3": 2, "2": 1, "M": 1},
    "stage2": {"2": 5, "3": 4, "4": 2, "5": 1, "6": 1, "M": 1},
}
"""The rating each DIT bot gives a statement of each stage (1 = no importance, 5 = great)."""


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("\u2019", "'")).split())


def _hash(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Situation:
    """What the last user turn asks: a MoralDial-style step of one question, a DIT step of one
    dilemma (with the displayed statements' stages), or something the pack does not know."""

    step: (
        str  # answer | explanation | revision | new_answer | decision | ratings | ranking | unknown
    )
    question: MoralQuestion | None = None
    wording: str = ""
    dilemma: Dilemma | None = None
    shown_stages: tuple[str, ...] = ()
    shown_options: tuple[int, ...] = ()


def _numbered(prompt: str, known: dict[str, T]) -> tuple[T, ...]:
    """The values of the numbered lines ("3. text") whose text is known, in display order
    (by their number, so a numbered line elsewhere in the prompt shifts nothing)."""
    found: dict[int, T] = {}
    for m in re.finditer(r"^(\d+)\. (.+)$", prompt, re.MULTILINE):
        value = known.get(_norm(m.group(2)))
        if value is not None:
            found[int(m.group(1))] = value
    return tuple(found[n] for n in sorted(found))


class PackIndex:
    """Finds the pack question or DIT dilemma a history is about."""

    def __init__(self, pack: ScenarioPack) -> None:
        self.pack = pack
        self.wordings: dict[str, MoralQuestion] = {}
        self.related: list[tuple[str, MoralQuestion]] = []
        for q in pack.questions:
            for text in (q.question, *q.paraphrases):
                self.wordings.setdefault(_norm(text), q)
            self.related.append((_norm(q.related_question), q))
        self.whys = {_norm(w) for w in WHY}

    def situation(self, history: History) -> Situation:
        users = [t for t in history if t.role == "user"]
        if not users:
            return Situation("unknown")
        last = users[-1]
        if DIT_DECISION in last.text or DIT_RATING in last.text or DIT_RANKING in last.text:
            return self._dit(users)
        question = self._question(users)
        if question is None:
            return Situation("unknown")
        step = last.meta.get("step") if isinstance(last.meta, dict) else None
        kind = {
            "question": "answer",
            "why": "explanation",
            "pushback": "revision",
            "related": "new_answer",
        }.get(str(step), "") or self._step_from_text(last.text, question)
        return Situation(kind, question, wording=users[0].text)

    def _question(self, users: Sequence[object]) -> MoralQuestion | None:
        for turn in users:
            asked = (turn.meta or {}).get("question", "") if hasattr(turn, "meta") else ""
            for text in (asked, turn.text):  # type: ignore[attr-defined]
                found = self.wordings.get(_norm(text)) if text else None
                if found is not None:
                    return found
            norm = _norm(turn.text)  # type: ignore[attr-defined]
            for related, q in self.related:
                if related and norm.endswith(related):
                    return q
        return None

    def _step_from_text(self, text: str, q: MoralQuestion) -> str:
        norm = _norm(text)
        if norm in self.wordings:
            return "answer"
        if _norm(q.related_question) and norm.endswith(_norm(q.related_question)):
            return "new_answer"
        if norm in self.whys:
            return "explanation"
        if _norm(q.rot.text) in norm:
            return "revision"
        return "explanation"

    def _dit(self, users: Sequence[object]) -> Situation:
        first = users[0].text  # type: ignore[attr-defined]
        dilemma = next((d for d in self.pack.dilemmas if d.story.strip() in first), None)
        last = users[-1].text  # type: ignore[attr-defined]
        if dilemma is None:
            return Situation("unknown")
        if DIT_DECISION in last:
            by_text = {_norm(o): i for i, o in enumerate(dilemma.options)}
            shown_options = _numbered(last, by_text)
            return Situation("decision", dilemma=dilemma, shown_options=shown_options)
        stage_of = {_norm(s.text): s.stage for s in dilemma.statements}
        step = "ratings" if DIT_RATING in last else "ranking"
        return Situation(step, dilemma=dilemma, shown_stages=_numbered(last, stage_of))


@dataclass
class ScriptedAgent:
    """A known-answer bot over one scenario pack.

    Args:
        behaviour: one of BEHAVIOURS (rot-follower, rot-breaker, convert, evasive, hedger,
            consistent, random, stage6, stage2).
        pack: the scenario pack whose questions and dilemmas it answers.
    """

    behaviour: str
    pack: ScenarioPack
    info: AgentInfo = field(init=False)

    def __post_init__(self) -> None:
        if self.behaviour not in BEHAVIOURS:
            raise ValueError(
                f"unknown scripted behaviour '{self.behaviour}'; known: {', '.join(BEHAVIOURS)}"
            )
        self.index = PackIndex(self.pack)
        self.info = AgentInfo(
            model=f"scripted:{self.behaviour}", backend="scripted", extra={"pack": self.pack.name}
        )
        self._pool = [a for q in self.pack.questions for a in (q.agree_answer, q.disagree_answer)]
        self._why_pool = [q.explanation for q in self.pack.questions]

    # ------------------------------------------------------------ chat

    def respond(self, histories: Sequence[History]) -> list[str]:
        return [self._reply(self.index.situation(h)) for h in histories]

    def _reply(self, s: Situation) -> str:
        if s.step == "unknown":
            return UNKNOWN_REPLY.format(pack=self.pack.name)
        if s.dilemma is not None:
            return self._dit_reply(s)
        assert s.question is not None
        return self._dialogue_reply(s.step, s.question, s.wording)

    def _dialogue_reply(self, step: str, q: MoralQuestion, wording: str) -> str:
        side = self._side(q, wording)
        if side == "evasive":
            return EVASIVE[_hash(wording, step) % len(EVASIVE)]
        if side == "hedge":
            return HEDGE_WHY if step == "explanation" else HEDGE
        if side == "random":
            pool = self._why_pool if step == "explanation" else self._pool
            return pool[_hash(wording, step) % len(pool)]
        follows = side == "follow" or (side == "convert" and step in ("revision", "new_answer"))
        if follows:
            return {
                "answer": q.agree_answer,
                "explanation": q.explanation,
                "revision": ADOPT + q.agree_answer,
                "new_answer": q.related_answer
                or f"I'd go by the same principle: {lower_first(q.rot.text)}",
            }[step]
        return {
            "answer": q.disagree_answer,
            "explanation": because(reason_of(q.disagree_answer)),
            "revision": HOLD + q.disagree_answer,
            "new_answer": q.related_disagree_answer
            or f"Honestly, I don't agree that {lower_first(q.rot.text)}",
        }[step]

    def _side(self, q: MoralQuestion, wording: str) -> str:
        """follow, break, convert, evasive, hedge or random for this question."""
        b = self.behaviour
        if b in ("rot-follower", "stage6", "stage2"):
            return "follow"
        if b == "rot-breaker":
            return "break"
        if b == "hedger":
            consensus = q.rot.consensus
            return "hedge" if consensus is not None and consensus <= 3 else "follow"
        if b == "consistent":  # one side per question, the same for every wording
            return "follow" if _hash(q.id) % 2 == 0 else "break"
        return b  # convert, evasive, random

    # ------------------------------------------------------------ DIT

    def _rating(self, stage: str) -> int:
        return STAGE_RATINGS.get(self.behaviour, {}).get(stage, 3)

    def _preferred(self, s: Situation) -> list[int]:
        """Display numbers (1-based) from most to least important to this bot."""
        shown = range(len(s.shown_stages))
        ordered = sorted(shown, key=lambda i: (-self._rating(s.shown_stages[i]), i))
        return [i + 1 for i in ordered]

    def _dit_reply(self, s: Situation) -> str:
        if s.step == "decision":
            return str(1 + s.shown_options.index(0)) if 0 in s.shown_options else "1"
        if s.step == "ratings":
            return ", ".join(
                f"{n}: {self._rating(stage)}" for n, stage in enumerate(s.shown_stages, 1)
            )
        return ", ".join(map(str, self._preferred(s)[:4])) + "."

    def loglikelihood(self, requests: Sequence[tuple[History, str]]) -> list[float]:
        """Log-probabilities of candidate DIT replies under this bot's fixed preferences.

        Ratings: P(r) for a statement falls by e^-1.5 per step away from the bot's rating, so
        the expected rating sits near it; decisions: the dilemma's first option is preferred.
        Anything else gets 0 (every candidate equally likely)."""
        out = []
        for history, candidate in requests:
            s = self.index.situation(history)
            out.append(self._candidate_loglik(s, candidate.strip()))
        return out

    def _candidate_loglik(self, s: Situation, candidate: str) -> float:
        if s.dilemma is None:
            return 0.0
        if s.step == "ratings":
            match = re.fullmatch(r"(\d+): (\d)", candidate)
            if not match or not 1 <= int(match.group(1)) <= len(s.shown_stages):
                return -30.0
            target = self._rating(s.shown_stages[int(match.group(1)) - 1])
            weights = [math.exp(-1.5 * abs(r - target)) for r in range(1, 6)]
            return math.log(weights[int(match.group(2)) - 1] / sum(weights))
        if s.step != "decision":
            return 0.0
        match = re.match(r"(\d+)\.", candidate)
        shown = int(match.group(1)) if match else 0
        first = 1 + s.shown_options.index(0) if 0 in s.shown_options else 1
        return 0.0 if shown == first else -3.0


BEHAVIOURS: tuple[str, ...] = (
    "rot-follower",
    "rot-breaker",
    "convert",
    "evasive",
    "hedger",
    "consistent",
    "random",
    "stage6",
    "stage2",
)
"""What each known-answer bot does (README "Validating the instruments"):

rot-follower  the pack's agreeing answer, its explanation, adopts the RoT when pushed back
rot-breaker   the disagreeing answer, its own reason, holds it when pushed back
convert       breaks the RoT, then adopts it after push-back (what ΔS_MR and S_MR reward)
evasive       answers without a stance
hedger        hedges on contested RoTs (consensus <= 3), follows the RoT elsewhere
consistent    one side per question, the same reply to every wording (SaGE: consistent)
random        a reply drawn from the whole pack for each wording (SaGE: inconsistent)
stage6/stage2 DIT: rates and ranks statements by their stage (post-conventional first /
              personal interest first); in dialogues they follow the RoT
"""


def _factory(behaviour: str):
    def build(model: str = "core", **_: object) -> ScriptedAgent:
        """`model` names the pack (registered name or folder); other agent options are unused."""
        from scenarios.pack import load_pack

        return ScriptedAgent(behaviour, load_pack(model).pack)

    build.__name__ = f"scripted_{behaviour.replace('-', '_')}"
    return build


for _behaviour in BEHAVIOURS:
    AGENTS.add(f"scripted:{_behaviour}", _factory(_behaviour))
