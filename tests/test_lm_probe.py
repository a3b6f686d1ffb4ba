"""The frozen-LM direction probe: its head by hand, its folder, fitting it on a tiny pack, and
the probe scorer's rule (the mean of the whole classifier's reading and stance x the probe's
direction, for every pair the pack does not state)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from evaluators.agreement import AgreementItem
from evaluators.lm_probe import (
    HEAD_FILE,
    PROBE_MARKER,
    PROMPT_VERSION,
    LinearHead,
    ProbeDirection,
    probe_prompt,
    read_probe_info,
)
from scenarios.types import AgreementExample, RotDirection, ScenarioPack


def test_the_head_standardises_then_takes_a_softmax_by_hand() -> None:
    head = LinearHead(
        mean=np.array([1.0, 0.0, 0.0]),
        scale=np.array([0.5, 1.0, 1.0]),
        coef=np.eye(3),
        intercept=np.zeros(3),
    )
    # z = ((2 - 1) / .5, 0, 0) = (2, 0, 0): softmax = (e^2, 1, 1) / (e^2 + 2)
    got = head.probabilities(np.array([[2.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    e2 = math.exp(2)
    assert got[0] == pytest.approx([e2 / (e2 + 2), 1 / (e2 + 2), 1 / (e2 + 2)])
    assert got[1] == pytest.approx([1 / 3, 1 / 3, 1 / 3])  # at the mean: all logits 0


def test_the_fitted_head_matches_sklearn_in_the_agreement_label_order() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from training.lm_probe import fit_head

    rng = np.random.default_rng(0)
    labels = ["neutral", "disagree", "agree"] * 30  # sklearn sorts them: agree, disagree, ...
    centre = {"agree": [2.0, 0.0], "neutral": [0.0, 2.0], "disagree": [-2.0, -2.0]}
    x = np.array([centre[label] for label in labels]) * [3.0, 1.0] + rng.normal(size=(90, 2))
    head = fit_head(x, labels, c=0.5)
    reference = LogisticRegression(C=0.5, max_iter=3000).fit(
        StandardScaler().fit_transform(x), labels
    )
    expected = reference.predict_proba(StandardScaler().fit(x).transform(x))
    order = [list(reference.classes_).index(k) for k in ("agree", "neutral", "disagree")]
    assert head.probabilities(x) == pytest.approx(expected[:, order], abs=1e-6)
    with pytest.raises(ValueError, match="no 'neutral' direction"):
        fit_head(x[:2], ["agree", "disagree"], c=1.0)


def write_probe(folder: Path, lm: Path, layers: list[int], width: int, seed: int = 0) -> Path:
    """A probe folder with a random head over `lm`'s states."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    info = {"model": str(lm), "layers": layers, "prompt_version": PROMPT_VERSION}
    (folder / PROBE_MARKER).write_text(json.dumps(info))
    d = width * len(layers)
    LinearHead(np.zeros(d), np.ones(d), rng.normal(size=(3, d)), rng.normal(size=3)).save(
        folder / HEAD_FILE
    )
    return folder


def test_a_probe_folder_reads_acts_and_refuses_a_mismatched_folder(
    tmp_path: Path, tiny_causal_lm: Path
) -> None:
    probe = ProbeDirection(write_probe(tmp_path / "probe", tiny_causal_lm, [1, 2], 32))
    items = [AgreementItem("", "you should not lie .", "it is wrong to lie ."),
             AgreementItem("", "yes", "lie")]  # fmt: skip
    got = probe.probabilities(items)
    assert got.shape == (2, 3) and np.allclose(got.sum(axis=1), 1.0)
    # one text's reading does not depend on the batch it is read in (left padding)
    assert probe.probabilities(items[1:])[0] == pytest.approx(got[1], abs=1e-2)
    assert "Act: yes" in probe_prompt("lie", "yes")

    info = json.loads((tmp_path / "probe" / PROBE_MARKER).read_text())
    (tmp_path / "probe" / PROBE_MARKER).write_text(json.dumps(info | {"layers": [1]}))
    with pytest.raises(ValueError, match=r"head of shape \(3, 64\) does not fit"):
        ProbeDirection(tmp_path / "probe")
    (tmp_path / "probe" / PROBE_MARKER).write_text(json.dumps(info | {"prompt_version": 99}))
    with pytest.raises(ValueError, match="field 'prompt_version' is 99"):
        read_probe_info(tmp_path / "probe")
    (tmp_path / "probe" / PROBE_MARKER).write_text(json.dumps({"layers": [1]}))
    with pytest.raises(ValueError, match=r"probe\.json: field 'model' missing"):
        read_probe_info(tmp_path / "probe")


def test_last_plus_mean_pooling_adds_the_mean_of_each_texts_own_tokens(
    tmp_path: Path, tiny_causal_lm: Path
) -> None:
    """Each text read alone (no padding): its last token's state and the plain mean of its
    tokens' states at each layer; read in a padded batch, the same within bfloat16 rounding."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from evaluators.lm_probe import PromptStates

    texts = ["you should not lie to your friends .", "yes"]
    both = PromptStates(str(tiny_causal_lm), [1, 2], pooling="last+mean")
    last = PromptStates(str(tiny_causal_lm), [1, 2])
    assert (both.width, last.width) == (128, 64)
    got, got_last = both(texts), last(texts)
    assert np.array_equal(got[:, :64], got_last)  # the last token's part is the `last` reading
    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    lm = AutoModelForCausalLM.from_pretrained(tiny_causal_lm).base_model.eval()
    for row, text in zip(got, texts, strict=True):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            states = lm(**tok([text], return_tensors="pt"), output_hidden_states=True)
        hidden = [states.hidden_states[k][0].float().numpy() for k in (1, 2)]
        alone = np.concatenate([h[-1] for h in hidden] + [h.mean(axis=0) for h in hidden])
        assert row == pytest.approx(alone, abs=3e-2)
    with pytest.raises(ValueError, match="pooling 'max' is not one of last, last\\+mean"):
        PromptStates(str(tiny_causal_lm), [1], pooling="max")


def test_a_probe_folder_names_its_pooling(tmp_path: Path, tiny_causal_lm: Path) -> None:
    """A folder that names none reads the last token (every folder before pooling existed);
    `last+mean` needs a head twice as wide; an unknown pooling is refused by field."""
    folder = write_probe(tmp_path / "probe", tiny_causal_lm, [1, 2], 64)
    info = json.loads((folder / PROBE_MARKER).read_text())
    with pytest.raises(ValueError, match="with last pooling"):
        ProbeDirection(folder)  # a 128-wide head, read as the last token's 64 features
    (folder / PROBE_MARKER).write_text(json.dumps(info | {"pooling": "last+mean"}))
    probe = ProbeDirection(folder)
    assert probe.probabilities([AgreementItem("", "you lie .", "lie")]).shape == (1, 3)
    (folder / PROBE_MARKER).write_text(json.dumps(info | {"pooling": "max"}))
    with pytest.raises(ValueError, match=r"probe\.json: field 'pooling' is not one of"):
        read_probe_info(folder)


def _narrated(i: int, act: str, label: str, split: str = "train") -> AgreementExample:
    return AgreementExample(f"n{i}", "", act, "it is wrong to lie .", label, split, "hard:x")  # type: ignore[arg-type]


def _tiny_probe_pack() -> ScenarioPack:
    rows = [
        _narrated(1, "you lie .", "disagree"),
        _narrated(2, "you should not lie .", "agree"),
        _narrated(3, "the bot", "neutral"),
        _narrated(4, "it is okay to lie .", "disagree"),
        _narrated(5, "no", "agree", split="dev"),
        _narrated(6, "she lied .", "disagree", split="dev"),
    ]
    return ScenarioPack(
        "tiny", None, agreement_examples=rows,
        rot_directions=[RotDirection("can i lie ?", "it is wrong to lie .", "against")],
    )  # fmt: skip


def test_fitting_a_probe_on_a_tiny_pack(
    tmp_path: Path, tiny_causal_lm: Path, tiny_classifier: Path
) -> None:
    """Narrated actions keep their label as the RoT's direction on them: the three labels
    are all there, so the head fits, and a stated folder given the probe loads as a probe
    scorer."""
    from evaluators.factored import FactoredScorer
    from training.lm_probe import ProbeRecipe, add_probe, probe_examples, train_probe

    pack = _tiny_probe_pack()
    recipe = ProbeRecipe(model=str(tiny_causal_lm), layers=(1, 2), examples=3, c=1.0)
    assert len(probe_examples(pack, recipe)) == 3  # a seeded sample of the 4 train examples
    info = train_probe(pack, tmp_path / "probe", ProbeRecipe(str(tiny_causal_lm), (1, 2)))
    assert info["examples"] == {"agree": 1, "neutral": 1, "disagree": 2}
    assert info["pooling"] == "last+mean"  # the default: both readouts, 2 x 2 x 32 features
    assert ProbeDirection(tmp_path / "probe").head.coef.shape == (3, 128)
    last = ProbeRecipe(str(tiny_causal_lm), (1, 2), pooling="last")
    assert train_probe(pack, tmp_path / "last", last)["pooling"] == "last"
    assert ProbeDirection(tmp_path / "last").head.coef.shape == (3, 64)
    with pytest.raises(ValueError, match="states no RoT directions"):
        probe_examples(
            ScenarioPack("bare", None, agreement_examples=pack.agreement_examples), recipe
        )

    stated = tmp_path / "stated"
    for part in ("stance", "agreement"):
        shutil.copytree(tiny_classifier, stated / part)
    (stated / "factored.json").write_text(json.dumps({"unstated": "agreement", "seed": 0}))
    add_probe(pack, stated, ProbeRecipe(str(tiny_causal_lm), (2,), 10))
    info = json.loads((stated / "factored.json").read_text())
    assert info["unstated"] == "agreement+probe" and info["seed"] == 0
    assert info["probe"]["layers"] == [2]
    assert FactoredScorer(str(stated)).probe is not None
    from evaluators.factored import PROBE_READING_VERSION
    from training.scorer import write_pack_card

    card = write_pack_card(stated, pack, "tiny-probe", directions=pack.direction_map())
    assert card["probe_reading"] == PROBE_READING_VERSION  # a build's card says how it read
    with pytest.raises(ValueError, match="not a stated scorer folder"):
        add_probe(pack, stated, recipe)  # it has a probe already


class FixedRows:
    """A stand-in reader: fixed probability rows keyed by (question, answer, rot)."""

    def __init__(self, rows: dict[tuple[str, str, str], list[float]]) -> None:
        self.rows = rows

    def probabilities(self, items: list[AgreementItem]) -> np.ndarray:
        return np.array([self.rows[(i.question, i.answer, i.rot)] for i in items])


def test_the_probe_scorer_averages_its_two_readings_of_unstated_pairs(
    tmp_path: Path, tiny_classifier: Path, tiny_causal_lm: Path
) -> None:
    """By hand, for the unstated ("Q", "A", "R2"): whole (.5, .3, .2); stance (.7, .2, .1) x
    probe direction (.1, .1, .8) = agree .7*.1 + .1*.8 = .15, disagree .7*.8 + .1*.1 = .57;
    neutral .28; the mean: (.325, .29, .385). A narrated action: the mean of the whole row
    and the probe's direction row. A stated pair is read as before: stance x the stated
    direction. A bot's own reason (S_ME's input) is the whole reading alone: (.5, .3, .2)."""
    from evaluators.factored import FactoredScorer
    from evaluators.scorer_eval import scorer_kind
    from evaluators.scorers import open_agreement_scorer
    from training.factored_scorer import copied_classifier_figures

    folder = tmp_path / "probed"
    shutil.copytree(tiny_classifier, folder / "stance")
    shutil.copytree(tiny_classifier, folder / "agreement")
    write_probe(folder / "probe", tiny_causal_lm, [2], 32)
    (folder / "factored.json").write_text(json.dumps({"unstated": "agreement+probe"}))
    (folder / "agreement" / "scorer_card.json").write_text(
        json.dumps({"figures": {"moral-stories": {"pairwise_accuracy": 0.6}}})
    )
    scorer = open_agreement_scorer(str(folder))
    assert isinstance(scorer, FactoredScorer) and scorer.probe is not None
    assert scorer.describe()["unstated"] == "agreement+probe"
    assert scorer_kind(str(folder)).startswith("stated with a probe (")
    real = scorer.probabilities([AgreementItem("is it okay ?", "yes", "lie")])
    assert real.shape == (1, 3) and np.allclose(real.sum(), 1.0)

    scorer.stance = FixedRows({("Q", "A", ""): [0.7, 0.2, 0.1]})  # type: ignore[assignment]
    scorer.agreement = FixedRows(  # type: ignore[assignment]
        {("Q", "A", "R2"): [0.5, 0.3, 0.2], ("", "He lied.", "R"): [0.2, 0.2, 0.6]}
    )
    scorer.probe = FixedRows(  # type: ignore[assignment]
        {("", "Q", "R2"): [0.1, 0.1, 0.8], ("", "He lied.", "R"): [0.0, 0.2, 0.8]}
    )
    scorer.use_directions({("Q", "R"): "against"})
    items = [AgreementItem("Q", "A", "R2"), AgreementItem("", "He lied.", "R"),
             AgreementItem("Q", "A", "R")]  # fmt: skip
    assert scorer.probabilities(items) == pytest.approx(
        np.array([[0.325, 0.29, 0.385], [0.1, 0.2, 0.7], [0.1, 0.2, 0.7]])
    )
    reason = AgreementItem("Q", "A", "R2", reason=True)
    assert scorer.probabilities([reason, items[0]]) == pytest.approx(
        np.array([[0.5, 0.3, 0.2], [0.325, 0.29, 0.385]])
    )
    scorer.probe = FixedRows({})  # type: ignore[assignment]  # a reason never reaches it
    assert scorer.probabilities([reason]) == pytest.approx(np.array([[0.5, 0.3, 0.2]]))
    # its agreement/ classifier's Moral Stories figure is not the probe scorer's
    assert copied_classifier_figures(folder) == {}


def test_the_embedded_probe_scorer_is_the_default_and_fingerprints_the_probe_recipe() -> None:
    from dataclasses import replace

    from agents.models import embedded_models
    from evaluators import factored
    from evaluators.scorers import DEFAULT_SCORER
    from training import lm_probe

    model = embedded_models()["agreement-probe"]
    assert DEFAULT_SCORER == "agreement-probe"
    assert not model.optional and model.kind == "factored-scorer"
    source = model.locate()
    before = model.fingerprint(source)
    assert before["recipe"]["probe"] == {"model": "smollm2-135m-instruct",
        "layers": [15, 20, 25, 30], "examples": None, "c": 0.003, "seed": 0,
        "pooling": "last+mean"}  # fmt: skip
    assert before["recipe"]["stated"] == embedded_models()["agreement-stated"].fingerprint(source)
    changed = replace(lm_probe.DEFAULT_PROBE_RECIPE, c=1.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lm_probe, "DEFAULT_PROBE_RECIPE", changed)
        assert model.fingerprint(source) != before
    with pytest.MonkeyPatch.context() as patch:  # it reads differently: its card is stale
        patch.setattr(factored, "PROBE_READING_VERSION", factored.PROBE_READING_VERSION + 1)
        assert model.fingerprint(source) != before
    with pytest.MonkeyPatch.context() as patch:  # a card of another format: rebuilt, re-measured
        from evaluators import scorer_eval

        patch.setattr(scorer_eval, "CARD_FORMAT", scorer_eval.CARD_FORMAT + 1)
        assert model.fingerprint(source) != before


def test_a_new_shipped_head_is_a_new_embedded_model(tmp_path: Path) -> None:
    """The fingerprint hashes the shipped head's files, so a cached build made with the old
    head is rebuilt; a stray file in the folder does not count."""
    from agents.models import embedded_models
    from training import lm_probe

    model = embedded_models()["agreement-probe"]
    source = model.locate()
    shipped = tmp_path / "probe_head"
    shutil.copytree(lm_probe.SHIPPED_PROBE, shipped)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lm_probe, "SHIPPED_PROBE", shipped)
        before = model.fingerprint(source)
        (shipped / "notes.txt").write_text("a maintainer's scratch file")
        assert model.fingerprint(source) == before
        (shipped / lm_probe.CHECK_FILE).write_text("[]")
        assert model.fingerprint(source) != before


def _stated_folder(folder: Path, classifier: Path) -> Path:
    for part in ("stance", "agreement"):
        shutil.copytree(classifier, folder / part)
    (folder / "factored.json").write_text(json.dumps({"unstated": "agreement"}))
    return folder


def test_a_shipped_head_is_installed_only_for_its_pack_and_recipe_and_when_it_reproduces(
    tmp_path: Path, tiny_causal_lm: Path, tiny_classifier: Path
) -> None:
    """The head a maintainer fitted is copied when it was fitted on exactly this pack's
    examples with this recipe and gives its check pairs the probabilities it carries; a
    head whose carried probabilities are off by more than the tolerance, another recipe or
    a changed pack gets a probe fitted here instead, and factored.json says which."""
    from dataclasses import replace

    from training import lm_probe

    pack = _tiny_probe_pack()
    recipe = lm_probe.ProbeRecipe(model=str(tiny_causal_lm), layers=(1, 2), c=1.0)
    shipped = tmp_path / "shipped"
    lm_probe.train_probe(pack, shipped, recipe)
    good = (shipped / lm_probe.CHECK_FILE).read_text()
    check = json.loads(good)
    assert [(r["act"], r["rot"]) for r in check] == [
        (a, r) for a, r, _ in lm_probe.check_items(pack)
    ]
    assert len(check) == 2  # the pack's dev direction examples, fewer than CHECK_PAIRS

    def source(case: str, patch: pytest.MonkeyPatch, recipe: lm_probe.ProbeRecipe) -> dict:
        patch.setattr(lm_probe, "SHIPPED_PROBE", shipped)
        folder = _stated_folder(tmp_path / case, tiny_classifier)
        said: list[str] = []
        lm_probe.add_probe(pack, folder, recipe, progress=said.append)
        head = json.loads((folder / "factored.json").read_text())["probe"]["head"]
        return head | {"said": said[0]}

    with pytest.MonkeyPatch.context() as patch:
        got = source("same", patch, recipe)
        assert got["source"] == "shipped" and got["max_difference"] < 1e-5
        assert "reproduced" in got["said"]

        other = source("recipe", patch, replace(recipe, c=0.5))
        assert other["source"] == "fitted here" and "another recipe" in other["said"]

        check[0]["p"] = [p + 0.3 for p in check[0]["p"]]  # a machine whose LM reads otherwise
        (shipped / lm_probe.CHECK_FILE).write_text(json.dumps(check))
        off = source("off", patch, recipe)
        assert off["source"] == "fitted here" and "does not reproduce" in off["said"]

        check[0]["p"] = [None, 0.5, 0.5]  # read as NaN, which no tolerance may pass
        (shipped / lm_probe.CHECK_FILE).write_text(json.dumps(check))
        assert "three finite probabilities" in source("null", patch, recipe)["said"]
        (shipped / lm_probe.CHECK_FILE).write_text(good)
        (shipped / HEAD_FILE).unlink()  # probe.json shipped without its head
        headless = source("headless", patch, recipe)
        assert headless["source"] == "fitted here" and "not a probe head" in headless["said"]
        assert ProbeDirection(tmp_path / "headless" / "probe").head.coef.shape == (3, 128)

        pack.agreement_examples[0] = _narrated(1, "you lied twice .", "disagree")
        changed = source("pack", patch, recipe)
        assert changed["source"] == "fitted here" and "not fitted on pack 'tiny'" in changed["said"]


def test_the_shipped_head_was_fitted_on_the_core_pack_as_it_is_now() -> None:
    """A change to the core pack's examples or to the default recipe without a new head fails
    here, not silently at a user's first use (which would then fit the probe, ~35 min)."""
    from dataclasses import asdict

    from scenarios.pack import load_pack
    from training import lm_probe

    info = read_probe_info(lm_probe.SHIPPED_PROBE)
    recipe = lm_probe.DEFAULT_PROBE_RECIPE
    assert info["recipe"] == json.loads(json.dumps(asdict(recipe)))
    core = load_pack(Path(__file__).resolve().parents[1] / "scenarios" / "packs" / "core").pack
    assert info["examples_sha256"] == lm_probe.examples_digest(
        lm_probe.probe_examples(core, recipe)
    )
    rows = json.loads((lm_probe.SHIPPED_PROBE / lm_probe.CHECK_FILE).read_text())
    assert [(r["act"], r["rot"]) for r in rows] == [
        (a, r) for a, r, _ in lm_probe.check_items(core)
    ]
    head = LinearHead.load(lm_probe.SHIPPED_PROBE / HEAD_FILE)
    per_layer = 2 if recipe.pooling == "last+mean" else 1
    assert head.coef.shape == (3, 576 * len(recipe.layers) * per_layer)
    assert info.get("pooling", "last") == recipe.pooling


@pytest.mark.slow
def test_the_shipped_head_reproduces_on_this_machines_smollm2() -> None:
    from training import lm_probe

    states = lm_probe.recipe_states(lm_probe.DEFAULT_PROBE_RECIPE)
    diff, pairs = lm_probe.check_difference(lm_probe.SHIPPED_PROBE, states)
    assert pairs == lm_probe.CHECK_PAIRS and diff <= lm_probe.CHECK_TOLERANCE
