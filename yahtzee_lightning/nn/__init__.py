"""The policy/value network and its TorchRL actor."""

from .network import DICE_ENCODERS, ROLL_HEADS, PolicyValueNet
from .policy import LOG_PROB, VALUE, PolicyModule, TurnDistribution, distribution

__all__ = [
    "DICE_ENCODERS",
    "LOG_PROB",
    "ROLL_HEADS",
    "VALUE",
    "PolicyModule",
    "PolicyValueNet",
    "TurnDistribution",
    "distribution",
]
