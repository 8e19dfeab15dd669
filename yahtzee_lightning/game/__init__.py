"""The rules engine: boxes, scoring, bonuses, joker, variants and precomputed tables.

Imports torch and nothing else of the package; no learning code lives here.
"""

from .engine import (
    GameState,
    StepResult,
    dice_index,
    keep_bits_to_pattern,
    legal_boxes,
    new_games,
    random_partial_cards,
    reroll,
    roll_dice,
    step,
)
from .rules import BOX_NAMES, N_BOXES, N_DICE, N_FACES, N_KEEPS, N_ROLLS, Rules
from .scoring import OPEN, box_options, card_total, empty_card, legal_mask, score_box, upper_sum
from .tables import Tables, tables

__all__ = [
    "BOX_NAMES",
    "GameState",
    "N_BOXES",
    "N_DICE",
    "N_FACES",
    "N_KEEPS",
    "N_ROLLS",
    "OPEN",
    "Rules",
    "StepResult",
    "Tables",
    "box_options",
    "dice_index",
    "card_total",
    "empty_card",
    "keep_bits_to_pattern",
    "legal_boxes",
    "legal_mask",
    "new_games",
    "random_partial_cards",
    "reroll",
    "roll_dice",
    "score_box",
    "step",
    "tables",
    "upper_sum",
]
