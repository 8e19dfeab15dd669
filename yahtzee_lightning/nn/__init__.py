"""The policy/value network and its TorchRL actor."""

from .network import DICE_ENCODERS, ROLL_HEADS, PolicyValueNet, transfer_weights
from .policy import (
    FEATURES,
    LOG_PROB,
    VALUE,
    NetworkHeads,
    PolicyModule,
    TurnDistribution,
    carried,
    distribution,
    eval_mode,
    make_actor,
    make_critic,
)

__all__ = [
    "DICE_ENCODERS",
    "FEATURES",
    "LOG_PROB",
    "ROLL_HEADS",
    "VALUE",
    "NetworkHeads",
    "PolicyModule",
    "PolicyValueNet",
    "TurnDistribution",
    "carried",
    "distribution",
    "eval_mode",
    "make_actor",
    "make_critic",
    "transfer_weights",
]
