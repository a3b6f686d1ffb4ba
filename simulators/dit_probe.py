"""The DIT probe inside a run: each dilemma in several presentations, three questions per dialogue.

One dialogue is one administration (docs/methods.md §6): the decision, then a 1-5 rating of every
statement, then the four most important statements, asked in sequence so each answer sees the
ones before. Every pending dialogue moves one step per batched bot call.

Two modes, recorded in each dialogue's meta and in the section:

- "generation": the bot writes free text, read by `evaluators.dit_parse`; what it cannot read
  stays in the record and counts as invalid.
- "likelihood": the bot's log-probabilities give its PREFERENCES, so a small model that cannot
  follow the format is still measured, and what is read is the bot's view of each statement,
  not where the statement was shown:
  * decision: the three option lines as displayed ("2. Should not move him"), number included
    because the prompt asks for the number; the most likely one is the reply;
  * ratings: for each displayed statement N, "N: r" for r = 1..5 is scored right after the
    rating question; the five values give P(r) and the EXPECTED rating E[r] = sum r P(r).
    Statements are scored independently (the DIT treats ratings as separate judgments);
  * ranking: the four statements with the highest expected ratings (ties broken by a hash of
    the statement, never by position). The ranking question is still asked, so the record
    reads like a generation-mode one, but the reply is built from the ratings. (An earlier
    release picked the likeliest number greedily; small bots then ranked "the first four
    shown" every time, which is position, not preference.)
  The bot turn's text is the picked reply itself, which the normal parser reads back to the
  same answer (checked), so both modes are scored by one code path. Decision and rating turns
  keep their candidates' log-likelihoods (and P(r), E[r]) in meta; ranking turns keep the pick
  and `"from": "expected ratings"`. `dit_section` also averages each statement's E[r] over the
  presentations of its dilemma, which reduces the pull of display position (`order_averaged`,
  over dilemmas shown in at least two statement orders), and marks the P-score unreliable
  when rankings still favour the first statements shown more than chance allows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agents.base import LikelihoodAgent
from evaluators.dit import (
    POINTS,
    RATINGS,
    DitResponse,
    expected_rating,
    order_averaged_p,
    parse_response,
    position_reliable,
    rank_by_expected,
    rating_probabilities,
    score_dit,
)
from evaluators.dit_prompts import Presentation, order_protocol, render_prompts
from evaluators.stats import mean_ci
from scenarios.jsonl import DialogueWriter
from scenarios.records import Dialogue, RecordError, Turn
from scenarios.types import Dilemma

FLOW = "dit"
MODES: tuple[str, str] = ("generation", "likelihood")
STEPS: tuple[str, str, str] = ("decision", "ratings", "ranking")
STATEMENT_ORDERS = 8
"""With the six option orders, the 48 presentations of docs/methods.md §6."""
SCHEMA_KEYS = ("personal_interest", "maintaining_norms", "postconventional")


def dit_dialogue_id(dilemma_id: str, mode: str, order: int, seed: int) -> str:
    """`order` is the presentation's index in the full 48, so ids survive a change of subset."""
    return f"{dilemma_id}/dit-{mode}/o{order}/s{seed}"


def presentations(dilemma: Dilemma, seed: int, orders: int) -> list[tuple[int, Presentation]]:
    """(index in the full protocol, presentation): all 48, or a seeded subset of `orders`."""
    full = order_protocol(dilemma, seed, STATEMENT_ORDERS)
    if not 1 <= orders <= len(full):
        raise ValueError(
            f"probes.dit.orders (earlier probes.dit_orders) must be 1..{len(full)}, got {orders}"
        )
    sample = None if orders == len(full) else orders
    chosen = order_protocol(dilemma, seed, STATEMENT_ORDERS, sample=sample)
    index = {p: k for k, p in enumerate(full)}
    return [(index[p], p) for p in chosen]


@dataclass
class _Pending:
    """A dialogue being built, with what the likelihood picks need to know about it."""

    dialogue: Dialogue
    dilemma: Dilemma
    presentation: Presentation

    def prompt(self, step: str) -> str:
        prompts = render_prompts(self.dilemma, self.presentation)
        return {
            "decision": prompts.decision,
            "ratings": prompts.rating,
            "ranking": prompts.ranking,
        }[step]


def run_dit_probe(
    dilemmas: Sequence[Dilemma],
    agent: Any,
    writer: DialogueWriter,
    *,
    seed: int,
    orders: int,
    mode: str,
    done: Collection[str] = frozenset(),
    meta: dict[str, Any] | None = None,
) -> int:
    """Administer every dilemma in `orders` presentations; returns dialogues written.

    Args:
        dilemmas: the dilemmas to ask (a run picks how many).
        agent: a ChatAgent; in likelihood mode it, or the agent behind its response cache,
            must also be a LikelihoodAgent.
        writer: where finished dialogues go (all at the end, each whole).
        seed: run seed; it fixes the presentations and is part of each id.
        orders: presentations per dilemma, 1..48 (48 = the full protocol).
        mode: "generation" or "likelihood".
        done: ids already on disk (resume); they are skipped.
        meta: run-level fields copied into each dialogue's meta.
    """
    if mode not in MODES:
        raise ValueError(
            f"probes.dit.mode (earlier probes.dit_mode) must be one of {', '.join(MODES)}, "
            f"got {mode!r}"
        )
    scorer = _likelihood_scorer(agent) if mode == "likelihood" else None
    pending = [
        _Pending(_new_dialogue(d, k, p, mode, seed, meta), d, p)
        for d in dilemmas
        for k, p in presentations(d, seed, orders)
        if dit_dialogue_id(d.id, mode, k, seed) not in done
    ]
    if not pending:
        return 0
    for step in STEPS:
        for item in pending:
            item.dialogue.turns.append(Turn("user", item.prompt(step), {"step": step}))
        if mode == "generation":
            replies = agent.respond([item.dialogue.turns for item in pending])
            for item, reply in zip(pending, replies, strict=True):
                item.dialogue.turns.append(Turn("bot", reply, {"step": step}))
        else:
            for item, turn in zip(pending, _PICKS[step](scorer, pending), strict=True):
                item.dialogue.turns.append(turn)
    if mode == "likelihood":
        for item in pending:
            _check_readback(item)
    for item in pending:
        writer.write(item.dialogue)
    return len(pending)


def _likelihood_scorer(agent: Any) -> LikelihoodAgent:
    """The agent, or the one behind its response cache: likelihoods are not cached replies."""
    for candidate in (agent, getattr(agent, "agent", None)):
        if isinstance(candidate, LikelihoodAgent):
            return candidate
    backend = getattr(getattr(agent, "info", None), "backend", "") or type(agent).__name__
    raise TypeError(
        "probes.dit.mode (earlier probes.dit_mode) 'likelihood' needs a bot that scores "
        f"log-probabilities (a local transformers model); this bot ({backend}) cannot. Set "
        "probes.dit.mode to 'generation'."
    )


def _new_dialogue(
    dilemma: Dilemma,
    order: int,
    presentation: Presentation,
    mode: str,
    seed: int,
    meta: dict[str, Any] | None,
) -> Dialogue:
    return Dialogue(
        id=dit_dialogue_id(dilemma.id, mode, order, seed),
        scenario_id=dilemma.id,
        flow=FLOW,
        meta={
            **(meta or {}),
            "mode": mode,
            "seed": seed,
            "order": order,
            "presentation": {
                "statement_order": list(presentation.statement_order),
                "option_order": list(presentation.option_order),
            },
        },
    )


# ------------------------------------------------------------------ likelihood picks


def _argmax(values: Sequence[float]) -> int:
    """First index of the largest value: ties go to the candidate shown first."""
    return max(range(len(values)), key=lambda i: (values[i], -i))


def _score(agent: Any, requests: list[tuple[list[Turn], str]]) -> list[float]:
    values = agent.loglikelihood(requests)
    if len(values) != len(requests):
        raise RuntimeError(
            f"{type(agent).__name__}.loglikelihood returned {len(values)} values "
            f"for {len(requests)} requests"
        )
    return [float(v) for v in values]


def _pick_decisions(agent: Any, pending: Sequence[_Pending]) -> list[Turn]:
    options = [
        [f"{d}. {item.dilemma.options[o]}" for d, o in enumerate(item.presentation.option_order, 1)]
        for item in pending
    ]
    flat = _score(
        agent,
        [(item.dialogue.turns, c) for item, cs in zip(pending, options, strict=True) for c in cs],
    )
    turns = []
    for i, candidates in enumerate(options):
        values = flat[3 * i : 3 * i + 3]
        best = _argmax(values)
        meta = {"step": "decision", "candidates": candidates, "loglik": values, "picked": best + 1}
        turns.append(Turn("bot", candidates[best], meta))
    return turns


def _pick_ratings(agent: Any, pending: Sequence[_Pending]) -> list[Turn]:
    sizes = [len(item.presentation.statement_order) for item in pending]
    requests = [
        (item.dialogue.turns, f"{n}: {r}")
        for item, size in zip(pending, sizes, strict=True)
        for n in range(1, size + 1)
        for r in RATINGS
    ]
    flat = _score(agent, requests)
    turns, at = [], 0
    for size in sizes:
        loglik = [flat[at + j * len(RATINGS) : at + (j + 1) * len(RATINGS)] for j in range(size)]
        at += size * len(RATINGS)
        picked = [RATINGS[_argmax(v)] for v in loglik]
        probs = [rating_probabilities(v) for v in loglik]
        expected = [expected_rating(p) for p in probs]
        text = ", ".join(f"{n}: {r}" for n, r in enumerate(picked, 1))
        meta = {
            "step": "ratings",
            "loglik": loglik,
            "p": probs,
            "expected": expected,
            "picked": picked,
        }
        turns.append(Turn("bot", text, meta))
    return turns


def _pick_rankings(agent: Any, pending: Sequence[_Pending]) -> list[Turn]:
    """The four statements the bot rated most important (by expected rating), no new scoring."""
    turns = []
    for item in pending:
        ratings = next(
            t.meta
            for t in item.dialogue.turns
            if t.role == "bot" and t.meta.get("step") == "ratings"
        )
        originals = item.presentation.statement_order
        ranked = rank_by_expected(
            ratings["expected"], [f"{item.dilemma.id}/{i}" for i in originals]
        )
        picked = [n + 1 for n in ranked[: len(POINTS)]]
        meta = {"step": "ranking", "from": "expected ratings", "picked": picked}
        turns.append(Turn("bot", ", ".join(map(str, picked)) + ".", meta))
    return turns


def _check_readback(item: _Pending) -> None:
    """The parser must read a likelihood reply as the pick; otherwise scores would drift."""
    d, p = item.dilemma, item.presentation
    response = _response(item.dialogue, d, p)
    picks = {t.meta["step"]: t.meta["picked"] for t in item.dialogue.turns if t.role == "bot"}
    expected = (
        p.option_order[picks["decision"] - 1],
        tuple(picks["ratings"][p.display_position(i)] for i in range(len(d.statements))),
        tuple(p.statement_order[n - 1] for n in picks["ranking"]),
    )
    got = (response.decision.value, response.ratings.value, response.ranking.value)
    if got != expected:
        raise RuntimeError(
            f"dialogue {item.dialogue.id}: the DIT parser reads the likelihood replies as "
            f"{got}, not the picks {expected}; the reply format and the parser disagree"
        )


_PICKS = {"decision": _pick_decisions, "ratings": _pick_ratings, "ranking": _pick_rankings}


# ------------------------------------------------------------------ section


def _bot_text(d: Dialogue, step: str) -> str:
    return next((t.text for t in d.turns if t.role == "bot" and t.meta.get("step") == step), "")


def _presentation(d: Dialogue) -> Presentation:
    shown = d.meta.get("presentation")
    if not isinstance(shown, dict) or not {"statement_order", "option_order"} <= shown.keys():
        raise RecordError(
            f"dialogue {d.id}: meta field 'presentation' with statement_order and option_order "
            "is missing"
        )
    try:
        return Presentation(tuple(shown["statement_order"]), tuple(shown["option_order"]))
    except (TypeError, ValueError) as err:
        raise RecordError(f"dialogue {d.id}: meta field 'presentation': {err}") from err


def _response(d: Dialogue, dilemma: Dilemma, presentation: Presentation) -> DitResponse:
    texts = [_bot_text(d, step) for step in STEPS]
    return parse_response(dilemma, presentation, *texts)


def _mode_section(dialogues: Sequence[Dialogue], by_id: dict[str, Dilemma], mode: str) -> dict:
    responses = []
    for d in dialogues:
        if d.scenario_id not in by_id:
            raise RecordError(f"dialogue {d.id}: dilemma '{d.scenario_id}' is not in the pack")
        responses.append(_response(d, by_id[d.scenario_id], _presentation(d)))
    scores = asdict(score_dit(responses, by_id.values()))
    section: dict[str, Any] = {"mode": mode, "n_dialogues": len(dialogues)}
    section |= {k: v for k, v in scores.items() if k not in SCHEMA_KEYS}
    section["schema"] = {k: scores[k] for k in SCHEMA_KEYS}
    section["p_values"] = list(scores["p_values"])
    section["p_mean_ci"] = mean_ci(scores["p_values"], bounds=(0.0, 100.0)).to_dict()
    section["valid_share"] = {
        kind: v["valid"] / len(responses) for kind, v in scores["validity"].items()
    }
    section["orders_per_dilemma"] = dict(sorted(Counter(d.scenario_id for d in dialogues).items()))
    reliable = position_reliable(
        scores["positional_bias"], scores["positional_chance"], scores["n_valid_rankings"]
    )
    section["position_reliable"] = reliable
    if reliable is False:
        section["unreliable"] = (
            f"rankings favour the statements shown first: positional bias "
            f"{100 * scores['positional_bias']:.0f}% against "
            f"{100 * scores['positional_chance']:.0f}% by chance, so the P-score reflects "
            "presentation order more than the bot"
        )
    if mode == "likelihood":
        averaged = order_averaged_p(_expected_ratings(dialogues), by_id.values())
        if averaged is not None:
            section["order_averaged"] = averaged
    return section


def _expected_ratings(
    dialogues: Sequence[Dialogue],
) -> list[tuple[str, tuple[int, ...], list[float]]]:
    """(dilemma, statement order, E[r] per ORIGINAL statement) for every likelihood record."""
    out = []
    for d in dialogues:
        ratings = next(
            (t.meta for t in d.turns if t.role == "bot" and t.meta.get("step") == "ratings"), None
        )
        shown = ratings.get("expected") if ratings else None
        if not isinstance(shown, list):
            continue
        presentation = _presentation(d)
        if len(shown) != len(presentation.statement_order):
            raise RecordError(f"dialogue {d.id}: meta field 'expected' has the wrong length")
        original = [0.0] * len(shown)
        for position, index in enumerate(presentation.statement_order):
            original[index] = float(shown[position])
        out.append((d.scenario_id, presentation.statement_order, original))
    return out


GREEDY = "likelihood-greedy"
"""Likelihood records of the earlier release, ranked greedily by position-prone number picks:
scored apart (never pooled with rankings read from expected ratings)."""


def _scoring_group(d: Dialogue, mode: str) -> str:
    if mode != "likelihood":
        return mode
    ranking = next(
        (t.meta for t in d.turns if t.role == "bot" and t.meta.get("step") == "ranking"), {}
    )
    return mode if ranking.get("from") == "expected ratings" else GREEDY


def dit_section(
    dialogues: Sequence[Dialogue], dilemmas: Sequence[Dilemma], mode: str | None = None
) -> dict[str, Any] | None:
    """probes.json's "dit" section, rebuilt from the records alone (so resume just works).

    Modes are never pooled: a reply picked by likelihood and a generated one measure different
    things. The section's top level is `mode` (the run's configured mode) when it has
    dialogues, else generation, else likelihood; any other mode present (a run resumed with
    another probes.dit.mode) is scored on its own under "other_modes". None when the run has no
    DIT dialogues.
    """
    if mode is not None and mode not in MODES:
        raise ValueError(
            f"probes.dit.mode (earlier probes.dit_mode) must be one of {', '.join(MODES)}, "
            f"got {mode!r}"
        )
    groups: dict[str, list[Dialogue]] = {}
    for d in dialogues:
        if d.flow == FLOW:
            found = d.meta.get("mode")
            if found not in MODES:
                raise RecordError(f"dialogue {d.id}: meta field 'mode' must be one of {MODES}")
            groups.setdefault(_scoring_group(d, found), []).append(d)
    if not groups:
        return None
    by_id = {d.id: d for d in dilemmas}
    order = list(dict.fromkeys(m for m in (mode, *MODES, GREEDY) if m in groups))
    section = _mode_section(groups[order[0]], by_id, order[0])
    others = {m: _mode_section(groups[m], by_id, m) for m in order[1:]}
    if others:
        section["other_modes"] = others
    return section
