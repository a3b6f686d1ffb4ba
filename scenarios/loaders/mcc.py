"""MCC-style paraphrase files (the SaGE Moral Consistency Corpus layout, long form).

One row per paraphrase: `question_id, paraphrase`, optionally `answer` and `rot` (a model's
answer to that paraphrase and the RoT it gave) and `model`. Rows of one question id form one
paraphrase set, in file order; SaGE needs at least two members per set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenarios.loaders._common import Collector, LoadIssue, RecordInvalid, read_csv_rows, text_field

MCC_COLUMNS = ("question_id", "paraphrase")


@dataclass(frozen=True)
class ParaphraseSet:
    """Paraphrases of one question, with a model's answers and RoTs when the file has them."""

    question_id: str
    paraphrases: tuple[str, ...]
    answers: tuple[str, ...] | None
    rots: tuple[str, ...] | None
    model: str | None


def load_mcc(
    path: str | Path, *, min_paraphrases: int = 2, skip_invalid: bool = False
) -> tuple[list[ParaphraseSet], list[LoadIssue]]:
    collector = Collector(Path(path), skip_invalid)
    groups: dict[str, list[tuple[int, dict[str, str]]]] = {}
    has: dict[str, bool] = {}
    for number, row in read_csv_rows(collector, MCC_COLUMNS):
        has.setdefault("answer", "answer" in row)
        has.setdefault("rot", "rot" in row)
        try:
            qid = text_field(row, "question_id")
            text_field(row, "paraphrase")
            for optional in ("answer", "rot"):
                if optional in row and not row[optional].strip():
                    raise RecordInvalid(
                        optional, "is empty (the column exists, so every row needs it)"
                    )
        except RecordInvalid as exc:
            collector.problem(f"line {number}", exc.field, exc.reason)
            continue
        groups.setdefault(qid, []).append((number, row))
    out: list[ParaphraseSet] = []
    for qid, rows in groups.items():
        if len(rows) < min_paraphrases:
            collector.problem(
                f"line {rows[0][0]} (question_id {qid})",
                "paraphrase",
                f"question has {len(rows)} paraphrase(s), at least {min_paraphrases} required",
            )
            continue
        models = {r.get("model", "").strip() for _, r in rows} - {""}
        out.append(
            ParaphraseSet(
                question_id=qid,
                paraphrases=tuple(r["paraphrase"].strip() for _, r in rows),
                answers=tuple(r["answer"].strip() for _, r in rows) if has.get("answer") else None,
                rots=tuple(r["rot"].strip() for _, r in rows) if has.get("rot") else None,
                model=models.pop() if len(models) == 1 else None,
            )
        )
    return out, collector.issues
