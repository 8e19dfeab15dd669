"""The policy/value network and its TorchRL actor."""

from .network import DICE_ENCODERS, LAYOUTS, ROLL_HEADS, WHOLE_TURNS, PolicyValueNet, ReplayDropout
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
from .transfer import transfer_weights

__all__ = [
    "DICE_ENCODERS",
    "DROPOUT_MASK",
    "FEATURES",
    "LAYOUTS",
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
