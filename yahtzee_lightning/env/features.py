"""Fixed observation features, each selectable by name.

A feature maps the raw state TensorDict to a float tensor ``(..., size)``. Learned dice
encoders (``emb``, ``pos_emb``) hold parameters and live with the network in ``nn/``; they read
the raw ``dice`` key. ``FeatureTransform`` writes the concatenation to ``observation`` for
code that wants a flat vector from the env itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from tensordict import TensorDictBase
from torchrl.data import Composite, Unbounded
from torchrl.envs import Transform

from ..game import N_BOXES, N_DICE, N_FACES, OPEN, Rules, box_options, dice_index, upper_sum
from ..game.rules import N_ROLLS, UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from ..game.tables import tables, take
from . import keys as K

FeatureFn = Callable[[TensorDictBase, Rules], torch.Tensor]


@dataclass(frozen=True)
class Feature:
    size: int
    fn: FeatureFn
    doc: str


FEATURES: dict[str, Feature] = {}


def register_feature(name: str, size: int, doc: str) -> Callable[[FeatureFn], FeatureFn]:
    """Add a feature to the registry: ``@register_feature("my_feature", 4, "why it helps")``."""

    def wrap(fn: FeatureFn) -> FeatureFn:
        if name in FEATURES:
            raise ValueError(f"feature {name!r} is already registered")
        FEATURES[name] = Feature(size, fn, doc)
        return fn

    return wrap


#: Within one ``encode`` call, what several features read of the same state (the dice's index
#: among the 252 multisets, their face counts), computed once: features are computed once per
#: collection step, on the training's hot path.
_SHARED: ContextVar[dict[str, torch.Tensor] | None] = ContextVar("yahtzee_feature_shared", default=None)


def _shared(name: str, compute: Callable[[], torch.Tensor]) -> torch.Tensor:
    if torch.compiler.is_compiling():  # a compiled step (``capture``): the compiler shares them itself
        return compute()
    shared = _SHARED.get()
    if shared is None:
        return compute()
    if name not in shared:
        shared[name] = compute()
    return shared[name]


def _dice_index(td: TensorDictBase) -> torch.Tensor:
    return _shared("dice_index", lambda: dice_index(td[K.DICE]))


def _counts(td: TensorDictBase) -> torch.Tensor:
    return _shared("counts", lambda: tables(td[K.DICE].device).counts[_dice_index(td)])


#: Per device: the dice features of each of the 252 multisets, one row each (the one-hot of its
#: sorted dice, then its face counts / 5): a state's dice features are one row lookup.
_DICE_ROWS: dict[torch.device, torch.Tensor] = {}
_ROLL_ROWS: dict[torch.device, torch.Tensor] = {}  # per device: the one-hot rows of the three rolls
_PROGRESS_ROWS: dict[tuple[int, int, torch.device], torch.Tensor] = {}
UPPER_SUM_MAX = N_DICE * N_FACES * (N_FACES + 1) // 2  # 105: five of each face, each in its upper box


def _dice_rows(td: TensorDictBase) -> torch.Tensor:
    """``(..., 36)``: the one-hot of the sorted dice (30) and the face counts / 5 (6) of ``td``'s dice."""
    device = td[K.DICE].device
    if device not in _DICE_ROWS:
        t = tables(device)
        onehot = torch.nn.functional.one_hot(t.dice.long() - 1, N_FACES).flatten(-2).float()
        _DICE_ROWS[device] = torch.cat([onehot, t.counts.float() / N_DICE], -1)
    return _shared("dice_rows", lambda: _DICE_ROWS[device][_dice_index(td)])


@register_feature("dice_onehot", N_DICE * N_FACES, "5x6 one-hot of the sorted dice")
def dice_onehot(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return _dice_rows(td)[..., : N_DICE * N_FACES]


@register_feature("dice_bin", N_FACES, "face counts n(d) / 5")
def dice_bin(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return _dice_rows(td)[..., N_DICE * N_FACES :]


@register_feature("dice_combined", N_DICE * N_FACES + N_FACES, "one-hot and face counts")
def dice_combined(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return _dice_rows(td)


def _upper_sum(td: TensorDictBase) -> torch.Tensor:
    return _shared("upper_sum", lambda: upper_sum(td[K.CARD]))


@register_feature("card_mask", N_BOXES, "1 where a box is open")
def card_mask(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return (td[K.CARD] == OPEN).float()


def _progress_rows(top: int, scale: int, device: torch.device) -> torch.Tensor:
    """``(top + 1, 1)``: ``min(i / scale, 1)`` for i = 0..top, computed once per device and read
    with one lookup a step (the same floats as computing them: the same operators on the same values)."""
    key = (top, scale, device)
    if key not in _PROGRESS_ROWS:
        i = torch.arange(top + 1, device=device)
        _PROGRESS_ROWS[key] = (i.float() / scale).clamp(max=1).unsqueeze(-1)
    return _PROGRESS_ROWS[key]


@register_feature("bonus_progress", 1, "min(upper sum / 63, 1)")
def bonus_progress(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    up = _upper_sum(td)
    return take(_progress_rows(UPPER_SUM_MAX, UPPER_BONUS_THRESHOLD, up.device), up)


@register_feature("turn_progress", 1, "turn / (turns - 1)")
def turn_progress(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    turn = td[K.TURN]
    return take(_progress_rows(N_BOXES, max(rules.n_turns - 1, 1), turn.device), turn)


@register_feature("roll_onehot", N_ROLLS, "which decision of the turn")
def roll_onehot(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    # A row of the identity: one lookup, where ``one_hot`` checks the values' range on the host
    # (two reads back from the device a step).
    roll = td[K.ROLL]
    if roll.device not in _ROLL_ROWS:
        _ROLL_ROWS[roll.device] = torch.eye(N_ROLLS, device=roll.device)
    return take(_ROLL_ROWS[roll.device], roll.long())


@register_feature("joker_active", 1, "the dice are a Yahtzee and the Yahtzee box is filled")
def joker_active(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    if not rules.joker_active:
        return torch.zeros(*td[K.ROLL].shape, 1, device=td[K.ROLL].device)
    yahtzee = _counts(td).amax(-1) == N_DICE
    return (yahtzee & (td[K.CARD][..., YAHTZEE_BOX] != OPEN)).float().unsqueeze(-1)


@register_feature("upper_lockin", 6, "scoring this upper box now would reach 63")
def upper_lockin(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    card = td[K.CARD]
    up = _upper_sum(td).unsqueeze(-1)
    gain = _counts(td) * torch.arange(1, 7, device=card.device)
    return ((card[..., :6] == OPEN) & (up < UPPER_BONUS_THRESHOLD) & (up + gain >= UPPER_BONUS_THRESHOLD)).float()


@register_feature("potentials", N_BOXES, "score each legal box would give now / 50")
def potentials(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    scores, _, _ = box_options(_dice_index(td), td[K.CARD], rules)
    return scores.float() / 50.0


@register_feature("score_diff", 1, "own score minus the best opponent's / 100 (N-player env only)")
def score_diff(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return td[K.SCORE_DIFF].float().unsqueeze(-1) / 100.0


@register_feature("opponent_progress", 3, "best opponent: share of boxes filled, bonus progress, score / 300")
def opponent_progress(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    cards = td[K.OPPONENT_CARDS]
    filled = (cards != OPEN).float().mean(-1).amax(-1)
    bonus = (upper_sum(cards).float() / UPPER_BONUS_THRESHOLD).clamp(max=1).amax(-1)
    score = td[K.OPPONENT_SCORES].float().amax(-1) / 300.0
    return torch.stack([filled, bonus, score], -1)


# The published code's own features (Pape 2025's repository, ``features.py``), by its names, so that
# its recipes run here as they were written. Where our engine and its differ (its joker needs a
# scored Yahtzee of 50), ours decides: a feature describes the game being played.

#: Each box's largest ordinary score (its ``NORMAL_SCORE_MAX``): the published potentials' scale.
_BOX_SCALE = (5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 30.0, 30.0, 25.0, 30.0, 40.0, 50.0, 30.0)
_BOX_SCALES: dict[torch.device, torch.Tensor] = {}


@register_feature("dice_counts", N_FACES, "face counts n(d), not scaled (the published code's)")
def dice_counts(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return _counts(td).float()


@register_feature("rolls_used", N_ROLLS, "which decision of the turn (the published name of roll_onehot)")
def rolls_used(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return roll_onehot(td, rules)


@register_feature("phase", 1, "1 at the turn's scoring decision, 0 before it")
def phase(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return (td[K.ROLL] == N_ROLLS - 1).float().unsqueeze(-1)


@register_feature("has_earned_yahtzee", 1, "the Yahtzee box holds 50")
def has_earned_yahtzee(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return (td[K.CARD][..., YAHTZEE_BOX] == 50).float().unsqueeze(-1)


@register_feature("available_categories", N_BOXES, "1 where a box is open (the published name of card_mask)")
def available_categories(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return card_mask(td, rules)


@register_feature("percent_progress_towards_bonus", 1, "upper sum / 63, not capped")
def percent_progress_towards_bonus(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return _upper_sum(td).float().unsqueeze(-1) / UPPER_BONUS_THRESHOLD


@register_feature(
    "potential_scoring_opportunities", N_BOXES + 1, "open boxes: score now / largest ordinary score; the joker"
)
def potential_scoring_opportunities(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    scores, _, _ = box_options(_dice_index(td), td[K.CARD], rules)
    device = scores.device
    if device not in _BOX_SCALES:
        _BOX_SCALES[device] = torch.tensor(_BOX_SCALE, device=device)
    return torch.cat([scores.float() / _BOX_SCALES[device], joker_active(td, rules)], -1)


@register_feature("game_progress", 1, "share of the boxes filled")
def game_progress(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    return (td[K.CARD] != OPEN).float().mean(-1, keepdim=True)


@register_feature("will_receive_bonus_if_chosen", 6, "scoring this open upper box now reaches 63 (or it is reached)")
def will_receive_bonus_if_chosen(td: TensorDictBase, rules: Rules) -> torch.Tensor:
    card = td[K.CARD]
    gain = _counts(td) * torch.arange(1, 7, device=card.device)
    return ((card[..., :6] == OPEN) & (_upper_sum(td).unsqueeze(-1) + gain >= UPPER_BONUS_THRESHOLD)).float()


#: Features read from the N-player env's opponent keys: a network with one of them plays matches only.
OPPONENT_FEATURES = frozenset({"score_diff", "opponent_progress"})


def sees_opponents(names: str | Sequence[str]) -> bool:
    """Whether these features need an opponent (the N-player env's observation)."""
    return bool(OPPONENT_FEATURES & set(resolve_features(names)))


#: The published code's single-turn features, in its order: the first seven of its full-game ten.
PAPER_SINGLE_TURN = (
    "dice_onehot",
    "dice_counts",
    "rolls_used",
    "phase",
    "has_earned_yahtzee",
    "available_categories",
    "percent_progress_towards_bonus",
)

PRESETS: dict[str, tuple[str, ...]] = {
    "single_turn": ("dice_combined", "card_mask", "bonus_progress", "roll_onehot"),
    "full_game": ("dice_combined", "card_mask", "bonus_progress", "roll_onehot", "turn_progress", "potentials"),
    "two_player": (
        "dice_combined",
        "card_mask",
        "bonus_progress",
        "roll_onehot",
        "turn_progress",
        "potentials",
        "score_diff",
        "opponent_progress",
    ),
    # The published code's ten features, in its order (its full-game recipes).
    "paper": (*PAPER_SINGLE_TURN, "potential_scoring_opportunities", "game_progress", "will_receive_bonus_if_chosen"),
    # Its single-turn recipe's seven.
    "paper_single_turn": PAPER_SINGLE_TURN,
    "all": (
        "dice_combined",
        "card_mask",
        "bonus_progress",
        "roll_onehot",
        "turn_progress",
        "joker_active",
        "upper_lockin",
        "potentials",
    ),
}


def resolve_features(names: str | Sequence[str]) -> tuple[str, ...]:
    """A preset name or a list of feature names, checked against the registry."""
    if isinstance(names, str):
        if names not in PRESETS:
            raise ValueError(f"unknown feature preset {names!r}; presets: {sorted(PRESETS)}")
        names = PRESETS[names]
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ValueError(f"unknown features {unknown}; known: {sorted(FEATURES)}")
    return tuple(names)


def feature_size(names: str | Sequence[str]) -> int:
    return sum(FEATURES[n].size for n in resolve_features(names))


def encode(td: TensorDictBase, names: str | Sequence[str], rules: Rules) -> torch.Tensor:
    """The named features of the raw state, concatenated ``(..., feature_size(names))``."""
    if torch.compiler.is_compiling():  # traced: no context variable (its common parts are computed once anyway)
        return torch.cat([FEATURES[n].fn(td, rules) for n in resolve_features(names)], -1)
    token = _SHARED.set({})  # what the features share of this state, for this call only
    try:
        return torch.cat([FEATURES[n].fn(td, rules) for n in resolve_features(names)], -1)
    finally:
        _SHARED.reset(token)


class FeatureTransform(Transform):
    """Writes ``observation`` (flat float features) from the raw state keys."""

    def __init__(self, names: str | Sequence[str] = "full_game", rules: Rules | None = None) -> None:
        super().__init__(in_keys=[K.DICE, K.CARD, K.ROLL, K.TURN], out_keys=[K.OBSERVATION])
        self.names = resolve_features(names)
        self.rules = rules or Rules()

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        next_tensordict.set(K.OBSERVATION, encode(next_tensordict, self.names, self.rules))
        return next_tensordict

    def _reset(self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[K.OBSERVATION] = Unbounded(
            shape=(*observation_spec.shape, feature_size(self.names)),
            dtype=torch.float32,
            device=observation_spec.device,
        )
        return observation_spec
