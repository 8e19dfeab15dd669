"""The policy/value network shared by every algorithm: encoders -> trunk -> roll, score, value heads.

A plain ``nn.Module`` whose constructor takes JSON-able arguments only (kept in ``self.config``),
so ``PolicyValueNet(**net.config)`` rebuilds it anywhere: from a checkpoint, from a hub folder.
It reads the environment's raw observation keys; it knows nothing of Lightning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from torch import nn
from torch.nn import functional as F

from ..env import keys as K
from ..env.features import encode, feature_size, resolve_features
from ..game import N_BOXES, N_DICE, N_FACES, N_KEEPS, Rules
from ..game.engine import draw
from ..game.rules import N_ROLLS
from ..untrusted import check_size

DICE_ENCODERS = ("onehot", "bin", "combined", "emb", "pos_emb")
ROLL_HEADS = ("categorical", "bernoulli")
#: ``standard``: a trunk layer is Linear -> LayerNorm -> activation -> Dropout and a head Linear ->
#: activation -> Linear. ``published``: the paper's published code's blocks (its ``modules/``): a
#: trunk layer Linear -> activation -> LayerNorm -> Dropout; the keep and box heads the same block,
#: a second Dropout and the output Linear; the value and upper heads the block without dropout and
#: the output Linear.
LAYOUTS = ("standard", "published")
ACTIVATIONS = {"silu": nn.SiLU, "relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU}
_FIXED_DICE = {"onehot": "dice_onehot", "bin": "dice_bin", "combined": "dice_combined"}
_DICE_FEATURES = {"dice_onehot", "dice_bin", "dice_combined"}


def _check(name: str, value: str, options: Sequence[str]) -> str:
    if value not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}")
    return value


class DiceEmbedding(nn.Module):
    """A learned ``6 x d_emb`` embedding per die, optionally plus a sinusoidal position code."""

    def __init__(self, d_emb: int, positional: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(N_FACES, d_emb)
        pos = torch.zeros(N_DICE, d_emb)
        if positional:
            i = torch.arange(N_DICE).unsqueeze(1)
            freq = torch.exp(-math.log(10_000.0) * torch.arange(0, d_emb, 2) / d_emb)
            pos[:, 0::2] = torch.sin(i * freq)
            pos[:, 1::2] = torch.cos(i * freq[: d_emb // 2])
        self.register_buffer("position", pos, persistent=False)
        self.size = N_DICE * d_emb

    def forward(self, dice: torch.Tensor) -> torch.Tensor:
        return (self.embed(dice.long() - 1) + self.position).flatten(-2)


class ReplayDropout(nn.Module):
    """Dropout whose mask can be given: the same masks in acting and in learning.

    On-policy learning must differentiate the policy that chose the actions. With dropout, that
    policy is the network under the masks drawn when it acted, so the collection draws them
    (``PolicyValueNet.draw_dropout_mask``), keeps them with the rollout, and the update replays
    them: its log-probabilities at its first step are those the behaviour policy recorded (PPO's
    first ratio is exactly 1). Given a mask it applies it whatever the mode; without one it is
    ``nn.Dropout`` (fresh masks in train mode, none in eval mode: evaluation plays the mean network).
    """

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = float(p)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is None:
            return F.dropout(x, self.p, self.training)
        return x * mask * (1.0 / (1.0 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}"


class PolicyValueNet(nn.Module):
    """Roll head (32 keep patterns or 5 keep bits), masked 13-box score head, ELU value head.

    Args:
        dice_encoder: ``onehot``, ``bin``, ``combined``, ``emb`` or ``pos_emb``.
        features: other fixed features by name or preset (see ``env/features.py``); dice
            features in a preset are replaced by ``dice_encoder``.
        Sizes are checked against ``untrusted.SIZE_BOUNDS`` before anything is allocated.
        d_h, n_layers: trunk width and depth; each layer Linear -> LayerNorm -> activation ->
            Dropout, with ``layer_norm`` and ``dropout`` switchable for ablations.
        head_hidden: width of each head's hidden layer.
        roll_head: ``categorical`` or ``bernoulli``.
        d_emb: embedding width of the learned dice encoders.
        rules: the rule variant as ``Rules.to_dict()`` (some features depend on it).
        upper_head: a fourth head that predicts the game's final upper-section sum, as
            ``(sum - 63) / 63`` (the published code's auxiliary regression; its prediction is the
            potential of upper-score shaping). Read with ``forward(..., upper=True)``.
        layout: ``standard`` or ``published`` (``LAYOUTS``): where LayerNorm sits and whether the
            heads have LayerNorm and dropout. The heads' dropout masks are drawn, recorded and
            replayed with the trunk's (``draw_dropout_mask``).
    """

    #: Its forward takes ``rolls`` (``heads``); a network without it is given none.
    takes_rolls = True

    def __init__(
        self,
        dice_encoder: str = "combined",
        features: str | list[str] = "full_game",
        d_h: int = 600,
        n_layers: int = 3,
        dropout: float = 0.1,
        layer_norm: bool = True,
        activation: str = "silu",
        head_hidden: int = 256,
        roll_head: str = "categorical",
        d_emb: int = 8,
        rules: dict | None = None,
        upper_head: bool = False,
        layout: str = "standard",
    ) -> None:
        super().__init__()
        self.config = {
            "dice_encoder": _check("dice_encoder", dice_encoder, DICE_ENCODERS),
            "features": features if isinstance(features, str) else list(features),
            "d_h": check_size("d_h", d_h),
            "n_layers": check_size("n_layers", n_layers),
            "dropout": float(dropout),
            "layer_norm": bool(layer_norm),
            "activation": _check("activation", activation, tuple(ACTIVATIONS)),
            "head_hidden": check_size("head_hidden", head_hidden),
            "roll_head": _check("roll_head", roll_head, ROLL_HEADS),
            "d_emb": check_size("d_emb", d_emb),
            "rules": Rules.from_dict(rules).to_dict(),
        }
        if upper_head:  # only where there is one: older configs rebuild as they were
            self.config["upper_head"] = True
        if _check("layout", layout, LAYOUTS) != "standard":  # the same: only where it is not the default
            self.config["layout"] = layout
        if not 0.0 <= self.config["dropout"] < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.rules = Rules.from_dict(rules)
        self.feature_names = tuple(f for f in resolve_features(features) if f not in _DICE_FEATURES)
        if dice_encoder in _FIXED_DICE:
            self.feature_names = (_FIXED_DICE[dice_encoder], *self.feature_names)
            self.dice_embedding = None
            size = feature_size(self.feature_names)
        else:
            self.dice_embedding = DiceEmbedding(d_emb, positional=dice_encoder == "pos_emb")
            size = self.dice_embedding.size + (feature_size(self.feature_names) if self.feature_names else 0)
        self.fixed_size = feature_size(self.feature_names) if self.feature_names else 0
        act = ACTIVATIONS[activation]
        published = layout == "published"

        def norm(width: int) -> nn.Module:
            return nn.LayerNorm(width) if layer_norm else nn.Identity()

        layers: list[nn.Module] = []
        for _ in range(n_layers):
            layers += [nn.Linear(size, d_h), *((act(), norm(d_h)) if published else (norm(d_h), act()))]
            if dropout > 0:
                layers.append(ReplayDropout(dropout))
            size = d_h
        self.trunk = nn.Sequential(*layers)

        def head(n_out: int, drops: int = 0) -> nn.Sequential:
            if not published:
                return nn.Sequential(nn.Linear(size, head_hidden), act(), nn.Linear(head_hidden, n_out))
            dropping = [ReplayDropout(dropout) for _ in range(drops if dropout > 0 else 0)]
            return nn.Sequential(
                nn.Linear(size, head_hidden), act(), norm(head_hidden), *dropping, nn.Linear(head_hidden, n_out)
            )

        self.keep_width = N_KEEPS if roll_head == "categorical" else N_DICE  # the keep head's outputs
        self.roll_head = head(self.keep_width, drops=2)  # the code's block's Dropout, then its head's own
        self.score_head = head(N_BOXES, drops=2)
        self.value_head = head(1)
        self.value_activation = nn.ELU()  # a module, so that a stacked copy can apply it member by member
        self.upper_head = head(1) if upper_head else None
        #: Dropout layers in the trunk, the keep head and the box head, in the order their masks sit in
        #: a state's mask: fixed here, so a forward pass need not count them.
        self.dropout_layers = tuple(len(_drops(m)) for m in (self.trunk, self.roll_head, self.score_head))

    @property
    def dropout_shape(self) -> tuple[int, int] | None:
        """``(dropout layers, width)`` of one state's dropout mask (None: a network without dropout):
        the trunk's layers, then the keep head's and the box head's (the ``published`` layout), each
        layer using the first ``width`` of its row that it needs."""
        n, heads = self.dropout_layers[0], sum(self.dropout_layers[1:])
        width = self.config["d_h"] if not heads else max(self.config["d_h"], self.config["head_hidden"])
        return (n + heads, width) if n + heads else None

    def draw_dropout_mask(
        self, n: int, generator: torch.Generator | Sequence[torch.Generator] | None = None
    ) -> torch.Tensor | None:
        """``(n, layers, width)`` keep-masks (float, 0 or 1) for ``n`` states, as ``nn.Dropout`` would
        draw them (None without dropout). ``generator``: one, or one per equal block of the ``n``
        states (an ensemble's members)."""
        shape = self.dropout_shape
        if shape is None:
            return None
        device = next(self.parameters()).device
        return (draw(torch.rand, (n, *shape), device, generator) >= self.config["dropout"]).float()

    def fixed_features(self, obs: TensorDictBase) -> torch.Tensor | None:
        """The fixed (weight-free) features of ``obs`` (None for a network with none): what a
        rollout carries so that the update, the drift and the diagnosis need not compute them again."""
        return encode(obs, self.feature_names, self.rules) if self.feature_names else None

    def encode(self, obs: TensorDictBase, features: torch.Tensor | None = None) -> torch.Tensor:
        """The trunk's input; ``features``: the fixed features of ``obs`` when the caller has them."""
        parts = []
        if self.dice_embedding is not None:
            parts.append(self.dice_embedding(obs[K.DICE]))
        if self.feature_names:
            if features is None:
                features = encode(obs, self.feature_names, self.rules)
            elif features.shape[-1] != self.fixed_size:
                raise ValueError(
                    f"the carried features have width {features.shape[-1]}; this network's are {self.fixed_size} wide"
                )
            parts.append(features)
        return torch.cat(parts, -1) if len(parts) > 1 else parts[0]

    def layer_key(self, key: str) -> str:
        """A state-dict key numbered by hidden layer: ``trunk.4.weight`` is ``trunk.1.0.weight`` (layer 1,
        its linear map) with dropout or without, so that networks that differ in dropout alone (no
        weights of its own; a training choice) share their weights by these keys."""
        part, _, rest = key.partition(".")
        if part != "trunk":
            return key
        index, _, param = rest.partition(".")
        per_layer = len(self.trunk) // self.config["n_layers"]
        return f"trunk.{int(index) // per_layer}.{int(index) % per_layer}.{param}"

    def forward(
        self,
        obs: TensorDictBase,
        features: torch.Tensor | None = None,
        dropout_mask: torch.Tensor | None = None,
        rolls: int | str | torch.Tensor | None = None,
        upper: bool = False,
    ) -> tuple[torch.Tensor, ...]:
        """``(roll_logits (N, 32 or 5), box_logits (N, 13) with illegal boxes at -inf, value (N,))``.

        ``features``: ``obs``'s fixed features as ``fixed_features`` computed them (a rollout's,
        carried to the update); None computes them here. ``dropout_mask``: ``(N, layers, width)``
        masks from ``draw_dropout_mask`` (the ones the policy acted with), applied in any mode;
        None: the usual dropout of the mode. ``rolls``: which rows are at which roll, so that each
        row runs only the head that acts there (``heads``); None: every head on every row.
        ``upper``: a fourth output, the upper head's ``(N,)`` prediction (a network with one).
        """
        if upper and self.upper_head is None:
            raise ValueError("this network has no upper-score head (build it with upper_head=True)")
        h = self.encode(obs, features)
        trunk_masks = self.dropout_layers[0]
        h = _through(self.trunk, h, None if dropout_mask is None else dropout_mask[:, :trunk_masks])
        heads = dropout_mask is not None and dropout_mask.shape[1] > trunk_masks  # a published layout's
        head_masks = dropout_mask[:, trunk_masks:] if heads else None
        out = self.heads(h, obs[K.BOX_MASK], rolls, head_masks)
        return (*out, self.upper_head(h).squeeze(-1)) if upper else out

    def heads(
        self,
        h: torch.Tensor,
        box_mask: torch.Tensor,
        rolls: int | str | torch.Tensor | None = None,
        dropout_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The three heads on the trunk's output ``h`` (N, d_h); ``dropout_mask``: (N, layers, width)
        masks of the keep head's dropout layers, then the box head's (a ``published`` layout's).

        A step uses one policy head: the keep head before the last roll, the box head at it. The
        other head's logits never reach an action, a log-probability or a gradient, so where the
        caller knows the rows' rolls they are not computed (zeros in their place; a quarter of a
        128 x 2 network's arithmetic a row). ``rolls``: None (unknown: every head on every row),
        an int (every row at that roll: a collection step, whose games move in step),
        ``WHOLE_TURNS`` (rows in whole turns, rolls 0, 1, 2, 0, ...: a batch of whole games) or
        an integer tensor ``(N,)`` of each row's roll (rows in any order: PPO's minibatches of
        random steps), each head run on its own rows.
        """
        value = self.value_activation(self.value_head(h).squeeze(-1))
        k = self.dropout_layers[1]
        keep_masks = None if dropout_mask is None else dropout_mask[:, :k]
        box_masks = None if dropout_mask is None else dropout_mask[:, k:]

        def on_rows(head: nn.Sequential, masks: torch.Tensor | None, rows: torch.Tensor | None) -> torch.Tensor:
            """``head`` on the rows ``rows`` (None: all), each under its own masks."""
            if rows is None:
                return _through(head, h, masks)
            return _through(head, h[rows], None if masks is None else masks[rows])

        def keep_head(rows: torch.Tensor | None = None) -> torch.Tensor:
            return on_rows(self.roll_head, keep_masks, rows)

        def box_head(rows: torch.Tensor | None = None) -> torch.Tensor:
            return on_rows(self.score_head, box_masks, rows)

        if rolls is None:
            roll_logits, box_logits = keep_head(), box_head()
        elif isinstance(rolls, torch.Tensor):
            if rolls.shape != h.shape[:1]:
                raise ValueError(
                    f"rolls as a tensor gives one roll a row: shape ({h.shape[0]},), got {tuple(rolls.shape)}"
                )
            rolling = rolls < N_ROLLS - 1
            if h.device.type in SPLIT_ROWS_DEVICES:
                keeps, boxes = rolling.nonzero().squeeze(-1), (~rolling).nonzero().squeeze(-1)
                roll_logits = h.new_zeros(h.shape[0], self.keep_width).index_copy(0, keeps, keep_head(keeps))
                box_logits = h.new_zeros(h.shape[0], N_BOXES).index_copy(0, boxes, box_head(boxes))
            else:  # no split (its row counts would wait for the device): every head, the other zeroed
                roll_logits = torch.where(rolling.unsqueeze(-1), keep_head(), 0.0)
                box_logits = torch.where(rolling.unsqueeze(-1), 0.0, box_head())
        elif rolls == WHOLE_TURNS:
            if h.shape[0] % N_ROLLS:
                raise ValueError(f"rows in whole turns come in multiples of {N_ROLLS}; got {h.shape[0]} rows")
            turns = h.unflatten(0, (-1, N_ROLLS))  # (turns, rolls, d_h); the masks alike
            km, bm = (None if m is None else m.unflatten(0, (-1, N_ROLLS)) for m in (keep_masks, box_masks))
            rolled = turns[:, : N_ROLLS - 1].flatten(0, 1)
            keep = _through(self.roll_head, rolled, None if km is None else km[:, : N_ROLLS - 1].flatten(0, 1))
            keep = keep.unflatten(0, (-1, N_ROLLS - 1))
            box = _through(self.score_head, turns[:, N_ROLLS - 1], None if bm is None else bm[:, N_ROLLS - 1])
            box = box.unsqueeze(1)  # (turns, 1, 13)
            roll_logits = F.pad(keep, (0, 0, 0, 1)).flatten(0, 1)  # zeros at each turn's last roll
            box_logits = F.pad(box, (0, 0, N_ROLLS - 1, 0)).flatten(0, 1)  # and at its first two
        elif isinstance(rolls, int) and 0 <= rolls < N_ROLLS:
            if rolls < N_ROLLS - 1:
                roll_logits, box_logits = keep_head(), h.new_zeros(h.shape[0], N_BOXES)
            else:
                roll_logits, box_logits = h.new_zeros(h.shape[0], self.keep_width), box_head()
        else:
            raise ValueError(
                f"rolls must be None, a roll index 0..{N_ROLLS - 1}, {WHOLE_TURNS!r} or a tensor of the rows' rolls; "
                f"got {rolls!r}"
            )
        return roll_logits, box_logits.masked_fill(~box_mask, float("-inf")), value


def _drops(layers: nn.Sequential) -> list[ReplayDropout]:
    """The dropout layers of a trunk or a head, in order."""
    return [m for m in layers if isinstance(m, ReplayDropout)]


def _through(layers: nn.Sequential, x: torch.Tensor, masks: torch.Tensor | None) -> torch.Tensor:
    """``layers`` on ``x``, its dropout layers under ``masks`` (``(..., layers, width)``, each
    layer taking the first of ``width`` it needs); None: each as ``nn.Dropout`` in the mode."""
    if masks is None:
        return layers(x)
    j = 0
    for module in layers:
        if isinstance(module, ReplayDropout):
            x = module(x, masks[..., j, : x.shape[-1]])
            j += 1
        else:
            x = module(x)
    return x


#: ``rolls`` of ``PolicyValueNet.heads`` for rows in whole turns (rolls 0, 1, 2, 0, 1, 2, ...).
WHOLE_TURNS = "whole_turns"
#: Devices on which rows given their rolls as a tensor are split by head, each head run on its own
#: rows (arithmetic saved where it is the cost); elsewhere every head runs on every row and the other
#: head's logits are zeroed, with no host sync for the split's sizes (a GPU is bound by its host).
SPLIT_ROWS_DEVICES = frozenset({"cpu"})
