"""A blind reading sheet from answer files: items shuffled (seed 7), no bot, no score.

blind.jsonl holds item, question, answer and RoT; key.json maps each item to its bot,
question id, RoT direction and the judge's reading.

    python sheet.py OUT_FOLDER answers_a.jsonl [answers_b.jsonl ...]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

KEY_FIELDS = ("bot", "qid", "direction", "as", "cls")


def main(out: Path, files: list[str]) -> None:
    rows = [json.loads(line) for f in files for line in Path(f).read_text().splitlines()]
    random.Random(7).shuffle(rows)
    out.mkdir(parents=True, exist_ok=True)
    key, blind = {}, []
    for i, row in enumerate(rows, 1):
        item = f"v{i:03d}"
        blind.append({"item": item} | {k: row[k] for k in ("question", "answer", "rot")})
        key[item] = {k: row[k] for k in KEY_FIELDS if k in row}
    (out / "blind.jsonl").write_text("".join(json.dumps(b) + "\n" for b in blind))
    (out / "key.json").write_text(json.dumps(key, indent=1))
    print(len(blind), "items")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
