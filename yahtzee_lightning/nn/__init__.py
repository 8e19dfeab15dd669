"""The policy/value network and its TorchRL actor."""

from .network import DICE_ENCODERS, ROLL_HEADS, WHOLE_TURNS, PolicyValueNet, ReplayDropout, transfer_weights
from .policy import (
    DROPOUT_MASK,
    FEATURES,
    LOG_PROB,
    VALUE,
    NetworkHeads,
    PolicyModule,
    TurnDistribution,
    as_played,
    carried,
    distribution,
    eval_mode,
    make_actor,
    make_critic,
)

__all__ = [
    "DICE_ENCODERS",
    "DROPOUT_MASK",
    "FEATURES",
    "LOG_PROB",
    "ROLL_HEADS",
    "VALUE",
    "WHOLE_TURNS",
    "NetworkHeads",
    "PolicyModule",
    "PolicyValueNet",
    "ReplayDropout",
    "TurnDistribution",
    "as_played",
    "carried",
    "distribution",
    "eval_mode",
    "make_actor",
    "make_critic",
    "transfer_weights",
]
