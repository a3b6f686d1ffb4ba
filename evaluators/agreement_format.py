"""The input format of the answer-RoT agreement classifier, shared by training and scoring.

MoralDial's scorer reads the pair ("Q: {question} A: {answer}", RoT); training and inference
must build it identically, so it is defined once here.
"""

from __future__ import annotations

AGREEMENT_LABELS: tuple[str, str, str] = ("agree", "neutral", "disagree")


def format_qa(question: str, answer: str) -> str:
    """First segment of the pair; an empty answer stays empty (a real, neutral case)."""
    return f"Q: {question.strip()} A: {answer.strip()}".rstrip()
