"""Corpus loaders. Each returns (records, skipped issues); strict by default."""

from scenarios.loaders._common import LoadIssue, ScenarioLoadError
from scenarios.loaders.agreement import load_agreement_examples
from scenarios.loaders.dilemmas import load_dilemmas
from scenarios.loaders.direction_pairs import load_direction_pairs
from scenarios.loaders.directions import load_rot_directions
from scenarios.loaders.mcc import ParaphraseSet, load_mcc
from scenarios.loaders.mic import MicRow, load_mic
from scenarios.loaders.moral_stories import NormPair, load_moral_stories
from scenarios.loaders.questions import load_questions, question_to_dict
from scenarios.loaders.safety import load_safety_rots
from scenarios.loaders.social_chem import SocialChemRow, load_social_chem

__all__ = [
    "LoadIssue",
    "MicRow",
    "NormPair",
    "ParaphraseSet",
    "ScenarioLoadError",
    "SocialChemRow",
    "load_agreement_examples",
    "load_dilemmas",
    "load_direction_pairs",
    "load_mcc",
    "load_mic",
    "load_moral_stories",
    "load_questions",
    "load_rot_directions",
    "load_safety_rots",
    "load_social_chem",
    "question_to_dict",
]
