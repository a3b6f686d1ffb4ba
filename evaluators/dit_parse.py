"""Reading a bot's three DIT answers (decision, ratings, ranking) without guessing.

A P-score built on guessed answers measures the parser, not the bot, so every reader here
either finds one unambiguous answer or returns the reason it could not. Values come back in
the dilemma's ORIGINAL numbering (0-based) when a presentation is given, so scoring never
sees display positions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from evaluators.dit_prompts import Presentation
from scenarios.types import Dilemma

T = TypeVar("T")


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """Either a value or the reason there is none; `raw` keeps the bot's text for review."""

    value: T | None = None
    invalid: str | None = None
    raw: str = ""

    def __post_init__(self) -> None:
        if (self.value is None) == (self.invalid is None):
            raise ValueError("Parsed holds exactly one of value and invalid")

    @property
    def is_valid(self) -> bool:
        return self.invalid is None

    @classmethod
    def valid(cls, value: T, raw: str = "") -> Parsed[T]:
        return cls(value=value, raw=raw)

    @classmethod
    def fail(cls, reason: str, raw: str = "") -> Parsed[T]:
        return cls(invalid=reason, raw=raw)


def _normalise(text: str) -> str:
    """Lower case, plain quotes and dashes, no markdown emphasis: what the patterns expect."""
    out = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    out = re.sub(r"[*_`]", "", out)
    out = re.sub(r"[\u2013\u2014\u2212]", "-", out)
    out = re.sub(r"[ \t\r\f\v]+", " ", out)
    return "\n".join(line.strip() for line in out.split("\n")).strip()


# ------------------------------------------------------------------ decision

_NUM = r"(\d+|one|two|three)\b"
_NUM_WORDS = {"one": 1, "two": 2, "three": 3}
_CHOICE_NUMBERS = (
    re.compile(r"(?:\boption|\bchoice|\bnumber|#)\s*[:#]?\s*(?:no\.\s*)?" + _NUM),
    re.compile(
        r"\b(?:choose|chose|choosing|pick|picked|select|selected|go with|going with|opt for|"
        r"vote for|answer(?: is| would be)?|choice (?:is|would be)|decision(?: is)?)"
        r"\s*[:-]?\s*(?:option\s*|number\s*|#)?" + _NUM
    ),
    re.compile(r"^[(\[]?(\d+)(?=\s*(?:$|\.(?!\d)|[):\],!;-])|\s+(?:because|as|since)\b)"),
)
_NUMBER_LIST = re.compile(  # "1 or 2", "2, or maybe 3": a hedge names two options
    r"\b(\d+)\s*(?:,|/|&|\bor\b|\band\b)\s*(?:(?:or|maybe|perhaps|possibly|even)\s+)*"
    r"(?:option\s*)?(\d+)\b"
)
_CANT_DECIDE = re.compile(
    r"\b(?:can'?t|cannot|can not|unable to|couldn'?t)\s+decide\b|\bundecided\b"
)
_SHOULD_NOT = re.compile(r"\bshould(?:\s+not|n'?t)\b")
_YES_NO = re.compile(r"^(yes|no)\b(?=\s*(?:[,.!;:]|$))")
_NEGATORS = {"not", "never", "over", "than", "instead", "against", "except", "between", "rather"}


def _negated(text: str, start: int) -> bool:
    """Whether one of the three words before `start` (same clause) rules the mention out."""
    before = text[:start]
    cut = max(before.rfind(c) for c in ".!?;,\n")
    words = re.findall(r"[a-z']+", before[cut + 1 :])[-3:]
    return any(w in _NEGATORS or w.endswith("n't") for w in words)


def _sentence_starts(text: str) -> list[int]:
    """Start offsets of sentences; a '1.' that labels a line does not end a sentence."""
    starts = [0]
    for m in re.finditer(r"[.!?](?=\s|$)|\n", text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if m.group() == "." and re.fullmatch(r"\s*\(?\d+", text[line_start : m.start()]):
            continue
        starts.append(m.end())
    return starts


def _sentence_of(starts: list[int], pos: int) -> int:
    return sum(1 for s in starts if s <= pos)


def parse_decision(text: str, dilemma: Dilemma, presentation: Presentation) -> Parsed[int]:
    """The chosen option as its original index (0 should, 1 can't decide, 2 should not).

    Explicit mentions (an option number in a choosing context, or an option's full text)
    count anywhere and must agree. Loose phrases ("can't decide", "should not", a leading
    yes/no) decide only when nothing explicit is there; otherwise one in the same sentence as
    the explicit choice that points elsewhere makes the answer ambiguous, while those in later
    sentences are explanation. The can't-decide option's text counts as a phrase because
    explanations use it ("some people can't decide").
    """
    norm = _normalise(text)
    if not norm:
        return Parsed.fail("empty answer", text)
    order = presentation.option_order
    explicit: list[tuple[int, int]] = []  # (position, original option)
    phrases: list[tuple[int, int]] = []
    for pattern in _CHOICE_NUMBERS:
        for m in pattern.finditer(norm):
            if _negated(norm, m.start()):
                continue
            token = m.group(1)
            number = _NUM_WORDS.get(token) or int(token)
            if not 1 <= number <= 3:
                return Parsed.fail(f"option {number} does not exist (options are 1-3)", text)
            explicit.append((m.start(), order[number - 1]))
    for m in _NUMBER_LIST.finditer(norm):
        numbers = (int(m.group(1)), int(m.group(2)))
        if all(1 <= x <= 3 for x in numbers) and not _negated(norm, m.start()):
            explicit += [(m.start(), order[x - 1]) for x in numbers]
    for original, option in enumerate(dilemma.options):
        pattern = r"(?<!\w)" + re.escape(_normalise(option).rstrip(".!")) + r"(?!\w)"
        for m in re.finditer(pattern, norm):
            if not _negated(norm, m.start()):
                (phrases if original == 1 else explicit).append((m.start(), original))
    phrases += [(m.start(), 1) for m in _CANT_DECIDE.finditer(norm)]
    phrases += [(m.start(), 2) for m in _SHOULD_NOT.finditer(norm)]
    if m := _YES_NO.match(norm):
        phrases.append((0, 0 if m.group(1) == "yes" else 2))

    def describe(options: set[int]) -> str:
        shown = sorted((order.index(o) + 1, dilemma.options[o]) for o in options)
        return ", ".join(f'{d} "{t}"' for d, t in shown)

    chosen = {o for _, o in explicit}
    if len(chosen) == 1:
        starts = _sentence_starts(norm)
        sentence = _sentence_of(starts, min(p for p, _ in explicit))
        chosen |= {o for p, o in phrases if _sentence_of(starts, p) == sentence}
    elif not chosen:
        chosen = {o for _, o in phrases}
    if len(chosen) > 1:
        return Parsed.fail(f"mentions more than one option as its choice: {describe(chosen)}", text)
    if not chosen:
        return Parsed.fail("no recognisable option (expected 1-3 or an option's text)", text)
    return Parsed.valid(chosen.pop(), text)


# ------------------------------------------------------------------ ratings

_RATING_LABEL = re.compile(
    r"(?:^|(?<=[\n,;]))[ \t]*(?:[-•>]\s*)?(?:(?:statement|item|issue)\s*)?#?\s*(\d{1,3})"
    r"\s*(?:[:=(-]|[.)](?=\s|$))"
    r"|(?<=\s)(?:(?:statement|item|issue)\s*)?#?(\d{1,3})\s*[:=]",
    re.M,
)
_RATING = r"(\d+(?:\.\d+)?(?:\s*(?:-|to|or)\s*\d+(?:\.\d+)?)?)"  # a range is caught, then refused
_RATING_LEADING = re.compile(r"^[\s(\[:=-]*" + _RATING + r"(?!\w)")
_RATING_MARKED = re.compile(
    _RATING + r"\s*(?:/\s*5\b|out of 5\b)"
    r"|\b(?:rating|rated|score|importance)\s*(?:of|is|=|:|-)?\s*" + _RATING
)
_RATING_TRAILING = re.compile(r"[:=(-]\s*" + _RATING + r"\s*\)?[\s.,;!]*$")
_BARE_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)")
_SCALE_TALK = re.compile(
    r"\b(?:scale|from|between)\s+(?:of\s+|from\s+)?1\s*(?:-|to|and)\s*5\b"
    r"|\b1\s*(?:-|to)\s*5\s+scale\b|\(1\s*(?:-|to)\s*5\)"
)
_LIST_NOISE = re.compile(r"/\s*5\b|\bout of 5\b|\b\d+\s+(?:statements|ratings|items|issues)\b")
_TABLE_ROW = re.compile(r"^\|?\s*(\d{1,3})\s*\|(.*?)\|?\s*$", re.M)


def _untable(text: str) -> str:
    """Markdown table rows "| 3 | text | 4 |" become "3: text - 4", which the labels read."""

    def row(m: re.Match[str]) -> str:
        cells = [c.strip() for c in m.group(2).split("|") if c.strip()]
        return f"{m.group(1)}: " + " - ".join(cells)

    return _TABLE_ROW.sub(row, text)


def _entry_rating(entry: str) -> str | None:
    """The rating in the text after one label; explanation numbers in the middle are ignored."""
    for pattern in (_RATING_LEADING, _RATING_MARKED, _RATING_TRAILING):
        if m := pattern.search(entry):
            return next(g for g in m.groups() if g is not None)
    return None


def _check_rating(label: int, raw: str) -> str | None:
    if not re.fullmatch(r"\d+", raw):
        return f"statement {label}: rating {raw} is not a single whole number"
    if not 1 <= int(raw) <= 5:
        return f"statement {label}: rating {raw} is outside 1-5"
    return None


def parse_ratings(
    text: str, n: int = 12, *, presentation: Presentation | None = None
) -> Parsed[tuple[int, ...]]:
    """Ratings 1-5, one per statement, indexed by original statement (display order if no
    presentation). Labelled answers ("3: 4", "Statement 3 - 4") are read by label; an
    unlabelled answer must be exactly `n` numbers in display order.
    """
    norm = _normalise(text)
    if not norm:
        return Parsed.fail("empty answer", text)
    norm = _SCALE_TALK.sub(" ", _untable(norm))
    labels = list(_RATING_LABEL.finditer(norm))
    found: dict[int, set[str]] = {}
    problems: list[str] = []
    if labels:
        ends = [m.start() for m in labels[1:]] + [len(norm)]
        for m, end in zip(labels, ends, strict=True):
            label = int(m.group(1) or m.group(2))
            rating = _entry_rating(norm[m.end() : end])
            found.setdefault(label, set())
            if rating is not None:
                found[label].add(rating)
        for label in sorted(found):
            if not 1 <= label <= n and found[label]:
                problems.append(f"rating given for statement {label}, which does not exist")
            elif len(found[label]) > 1:
                both = " and ".join(sorted(found[label]))
                problems.append(f"statement {label} rated twice ({both})")
        missing = [d for d in range(1, n + 1) if not found.get(d)]
        if missing:
            noun = "statement" if len(missing) == 1 else "statements"
            problems.append(f"no rating for {noun} {', '.join(map(str, missing))}")
        values = [
            next(iter(found[d])) if len(found.get(d, ())) == 1 else "" for d in range(1, n + 1)
        ]
    else:
        values = _BARE_NUMBER.findall(_LIST_NOISE.sub(" ", norm))
        if not values:
            return Parsed.fail("no ratings found", text)
        if len(values) != n:
            return Parsed.fail(f"expected {n} ratings, found {len(values)} numbers", text)
    problems += [p for d, v in enumerate(values, 1) if v and (p := _check_rating(d, v))]
    if problems:
        return Parsed.fail("; ".join(problems), text)
    ratings = [int(v) for v in values]
    if presentation is not None:
        ratings = _to_original(ratings, presentation)
    return Parsed.valid(tuple(ratings), text)


def _to_original(by_display: list[int], presentation: Presentation) -> list[int]:
    if len(by_display) != len(presentation.statement_order):
        raise ValueError("answer and presentation disagree on the number of statements")
    out = [0] * len(by_display)
    for display, original in enumerate(presentation.statement_order):
        out[original] = by_display[display]
    return out


# ------------------------------------------------------------------ ranking

_PLACES = {"1st": 1, "first": 1, "most important": 1, "2nd": 2, "second": 2, "3rd": 3}
_PLACES |= {"third": 3, "4th": 4, "fourth": 4}
_PLACE_NAMES = ("first", "second", "third", "fourth")
_ORDINAL = r"(1st|first|2nd|second|3rd|third|4th|fourth)"
_ORDINAL_BEFORE = re.compile(  # "2nd: 7", "the second most important is 7", "most important: 3"
    r"\b(1st|first|2nd|second|3rd|third|4th|fourth|(?<!four )(?<!top )(?<!4 )most important)\b"
    r"(?:\s+most\s+important)?(?:\s+(?:statement|issue|item|one))?"
    r"\s*(?:[:=)-]|\bis\b|\bwould be\b)?\s*(?:(?:statement|item|issue)\s*)?#?\s*(\d+)\b"
)
_ORDINAL_AFTER = re.compile(  # "7 second", "7 is the second"
    r"(?<![\w.])#?(\d+)[ \t]+(?:is[ \t]+)?(?:the[ \t]+)?" + _ORDINAL + r"\b(?!\s*[:=-])"
)
_RANK_LINE = re.compile(r"^(?:[-•]\s*)?(\d{1,2})\s*[.):]\s+(.*)$", re.M)
_STATEMENT_REF = re.compile(
    r"(?:\b(?:statement|item|issue)\s*#?|#)\s*(\d+)\b|^\(?(\d+)\b|\(\s*(\d+)\s*\)"
)
_RANK_TALK = re.compile(
    r"\btop\s*(?:4|four)\b|\b(?:4|four)\s+(?:most important|statements|issues|items)\b"
    r"|\b(?:out\s+)?of\s+(?:the\s+)?(?:12|twelve)\b|\b1\s*(?:-|to)\s*12\b"
    r"|\b(?:12|twelve)\s+(?:statements|issues|items)\b"
)
_WHOLE_NUMBER = re.compile(r"(?<![\w.])(\d+)(?!\w)")


def _by_ordinals(norm: str, k: int) -> list[int] | str | None:
    """Places named by ordinals, before or after the number; None if the answer has none."""
    before = [(_PLACES[w], int(n)) for w, n in _ORDINAL_BEFORE.findall(norm)]
    after = [(_PLACES[w], int(n)) for n, w in _ORDINAL_AFTER.findall(norm)]
    if len(before) >= 2 and len(after) >= 2:
        return "ordinals both before and after the numbers; cannot tell which they name"
    pairs = before if len(before) >= 2 else after if len(after) >= 2 else None
    if pairs is None:
        return None
    places: dict[int, set[int]] = {}
    for place, number in pairs:
        places.setdefault(place, set()).add(number)
    for place in range(1, k + 1):
        if len(places.get(place, ())) != 1:
            count = "no statement" if not places.get(place) else "two statements"
            name = _PLACE_NAMES[place - 1] if place <= len(_PLACE_NAMES) else str(place)
            return f"{count} given for the {name} place"
    return [next(iter(places[p])) for p in range(1, k + 1)]


def _by_rank_lines(norm: str, k: int) -> list[int] | str | None:
    """A list numbered 1..k whose lines name statements; None if the answer is not one."""
    lines = _RANK_LINE.findall(norm)
    if len(lines) < k or [int(d) for d, _ in lines[:k]] != list(range(1, k + 1)):
        return None
    if len(lines) > k and int(lines[k][0]) == k + 1:
        return f"ranks more than {k} statements"
    refs = [_STATEMENT_REF.search(rest) for _, rest in lines[:k]]
    if not all(refs):
        return "ranked lines give statements without statement numbers"
    return [int(next(g for g in m.groups() if g)) for m in refs if m]


def _by_plain_numbers(norm: str, k: int) -> list[int] | str:
    """Exactly k numbers in the whole answer, else in its first line, else its first sentence
    (the ranking usually comes first and an explanation after)."""
    cleaned = _RANK_TALK.sub(" ", norm)
    first_line = cleaned.split("\n")[0]
    first_sentence = re.split(r"[.!?](?=\s+[a-z])", first_line)[0]
    counts = []
    for segment in (cleaned, first_line, first_sentence):
        numbers = [int(x) for x in _WHOLE_NUMBER.findall(segment)]
        if len(numbers) == k:
            return numbers
        counts.append(len(numbers))
    if counts[0] == 0:
        return "no statement numbers found"
    if counts[0] < k:
        plural = "s" if counts[0] > 1 else ""
        return f"only {counts[0]} statement number{plural} found, expected {k}"
    return f"more than {k} statement numbers ({counts[0]}); cannot tell which are the ranking"


def parse_ranking(
    text: str, n: int = 12, k: int = 4, *, presentation: Presentation | None = None
) -> Parsed[tuple[int, ...]]:
    """The `k` most important statements, most important first, as 0-based original indices
    (display positions if no presentation). Repeats or fewer than `k` are invalid: topping
    up a short ranking would invent the bot's answer.
    """
    norm = _untable(_normalise(text))
    if not norm:
        return Parsed.fail("empty answer", text)
    numbers = _by_ordinals(norm, k)
    if numbers is None:
        numbers = _by_rank_lines(norm, k)
    if numbers is None:
        numbers = _by_plain_numbers(norm, k)
    if isinstance(numbers, str):
        return Parsed.fail(numbers, text)
    problems = [f"statement {x} does not exist (1-{n})" for x in numbers if not 1 <= x <= n]
    problems += [
        f"statement {x} is ranked twice" for x in sorted(set(numbers)) if numbers.count(x) > 1
    ]
    if problems:
        return Parsed.fail("; ".join(problems), text)
    ranking = [x - 1 for x in numbers]
    if presentation is not None:
        if len(presentation.statement_order) != n:
            raise ValueError("answer and presentation disagree on the number of statements")
        ranking = [presentation.statement_order[x] for x in ranking]
    return Parsed.valid(tuple(ranking), text)
