"""The input format of the answer-RoT agreement classifier, shared by training and scoring.

MoralDial's scorer reads the pair ("Q: {question} A: {answer}", RoT); training and inference
must build it identically, so it is defined once here.
"""

from __future__ import annotations

AGREEMENT_LABELS: tuple[str, str, str] = ("agree", "neutral", "disagree")


def format_qa(question: str, answer: str) -> str:
    """First segment of the pair; an empty answer stays empty (a real, neutral case).

    A narrated action judged against a norm has no question: the segment is then the answer
    alone ("A: She kept the change."), not an empty "Q:".
    """
    if not question.strip():
        return f"A: {answer.strip()}".rstrip()
    return f"Q: {question.strip()} A: {answer.strip()}".rstrip()
