"""Search at play time: the rest of each turn played exactly, against a learned turn-start value.

Within a turn the chance nodes are the 252 dice multisets and the choices 32 keeps and 13 boxes,
so the rest of a turn can be searched exactly: the optimal player does it with the exact table at
the turn's end (:class:`.reference.OptimalPlayer`). :class:`LookaheadPlayer` runs the same search
(:class:`..solver.TurnOracle`, batched over games, on any device) with a learned value there
instead (:class:`..solver.value.TurnValueNet`), so a self-taught agent plays every keep and box as
well as its own estimate of the future allows. The exact table is never read.

``lookahead:AGENT`` names it (:func:`.make_player`); the agent must carry a turn-start value,
learned from its own games by :func:`learn_turn_value` (``yahtzee-lightning turn-value``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
from tensordict import TensorDictBase

from ..env import YahtzeeEnv
from ..env import keys as K
from ..game import Rules, card_total
from ..game.rules import N_ROLLS, UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from ..solver import OptimalTable, TurnOracle, turn_state
from ..solver.turn import N_MASKS, N_UPPER
from ..solver.value import TurnValueNet, ValueFn, fit_value, td_targets, value_table
from .base import Player
from .reference import OraclePlayer

LOOKAHEAD_PREFIX = "lookahead:"


class LookaheadPlayer(OraclePlayer):
    """Takes, at every keep and box, the choice of highest expected ``points this turn + value``
    of the next turn-start state, the expectation over the turn's dice exact.

    ``value``: a :class:`TurnValueNet` or any ``(masks, uppers, flags) -> points`` function. It is
    read where the search needs it, once per state: at the turn-start states one box after the
    positions played (:meth:`prepare`), into a table of the exact table's layout that the search
    reads (finished cards 0). A single game reads a few hundred states, not the million of them.
    """

    def __init__(
        self, value: ValueFn, rules: Rules, device: torch.device | str = "cpu", name: str = "lookahead"
    ) -> None:
        self.value = value
        self.values = torch.zeros(N_MASKS, N_UPPER, 2, dtype=torch.float64, device=device)
        self.known = torch.zeros(N_MASKS, N_UPPER, 2, dtype=torch.bool, device=device)
        super().__init__(TurnOracle(rules, OptimalTable(self.values, rules)))
        self.name = name

    @torch.no_grad()
    def prepare(self, cards: torch.Tensor) -> None:
        """Read the value at the turn-start states one box after ``cards (N, 13)`` not read yet:
        all that the search of these cards' turns reads."""
        m, u, f = successor_states(turn_state(cards, self.rules), self.rules).unbind(-1)
        new = ~self.known[m, u, f]
        if bool(new.any()):
            m, u, f = m[new], u[new], f[new]
            self.values[m, u, f] = self.value(m, u, f).to(torch.float64)
            self.known[m, u, f] = True

    def act(self, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        self.prepare(obs[K.CARD])
        return super().act(obs)


def lookahead_player(base: Player, name: str, device: torch.device | str = "cpu") -> LookaheadPlayer:
    """``lookahead:NAME``: the player of ``base`` (an agent) with its turn-start value searched
    against. An agent without one, or with one for other rules, is refused in one line."""
    value: TurnValueNet | None = getattr(base, "turn_value", None)
    if value is None:
        raise ValueError(
            f"{LOOKAHEAD_PREFIX}{name}: {name!r} carries no turn-start value to search against "
            f"(learn one from its own games: yahtzee-lightning turn-value --agent {name})"
        )
    if value.rules != base.rules:
        raise ValueError(
            f"{LOOKAHEAD_PREFIX}{name}: the turn-start value of {name!r} was learned under rules "
            f"{value.rules.tag()}, but the agent plays {base.rules.tag()}"
        )
    value = value.to(device).eval()
    return LookaheadPlayer(value, base.rules, device, name=f"{LOOKAHEAD_PREFIX}{getattr(base, 'name', name)}")


# ---------------------------------------------------------------------------- learning the value


@torch.no_grad()
def self_play_turns(
    player: Player, games: int, seed: int, rules: Rules, device: torch.device | str = "cpu", batch_size: int = 4096
) -> tuple[torch.Tensor, torch.Tensor]:
    """``player``'s own games: ``(states (G * T, 3), returns (G * T,))``, each turn-start state
    (:func:`..solver.turn_state`) and the points the game went on to score from it."""
    states, returns = [], []
    for chunk, start in enumerate(range(0, games, batch_size)):
        n = min(batch_size, games - start)
        env = YahtzeeEnv(n, rules=rules, validate_actions=True, device=device, seed=seed * 1_000_003 + chunk)
        torch.manual_seed(seed * 1_000_003 + chunk)
        td = env.reset()
        at_start, so_far = [], []
        for step in range(N_ROLLS * rules.n_turns):
            if step % N_ROLLS == 0:
                at_start.append(turn_state(td[K.CARD], rules))
                so_far.append(card_total(td[K.CARD], td[K.YAHTZEE_BONUSES]))
            keep, box = player.act(td)
            td.set(K.KEEP, keep)
            td.set(K.BOX, box)
            td = env.step(td)["next"]
        final = card_total(td[K.CARD], td[K.YAHTZEE_BONUSES])
        states.append(torch.stack(at_start, 1).reshape(-1, 3))
        returns.append((final.unsqueeze(1) - torch.stack(so_far, 1)).reshape(-1))
    return torch.cat(states), torch.cat(returns).double()


def successor_states(states: torch.Tensor, rules: Rules) -> torch.Tensor:
    """The distinct turn-start states one box after ``states (N, 3)``: every open box in play
    scored with every count of its face (upper boxes) or with 0 or 50 (the Yahtzee box, which
    sets the bonus flag); finished cards left out. These are the states the search reads."""
    states = torch.unique(states, dim=0)
    m, u, f = states.unbind(-1)
    out = []
    for b in rules.boxes:
        open_ = (m >> b & 1) == 0
        nm, nu, nf = m[open_] | (1 << b), u[open_], f[open_]
        if b < 6:
            out += [torch.stack([nm, (nu + k * (b + 1)).clamp(max=UPPER_BONUS_THRESHOLD), nf], -1) for k in range(6)]
        else:
            out.append(torch.stack([nm, nu, nf], -1))
            if b == YAHTZEE_BOX and rules.yahtzee_bonus:
                out.append(torch.stack([nm, nu, torch.ones_like(nf)], -1))
    nxt = torch.unique(torch.cat(out), dim=0)
    in_play = sum(1 << b for b in rules.boxes)
    return nxt[(nxt[:, 0] & in_play) != in_play]


@dataclass(frozen=True)
class ValueSettings:
    """How a turn-start value is learned (``conf/turn_value/*.yaml``; docs/lookahead.md); the
    defaults are the shipped agent's recipe.

    ``games`` self-play games of the agent; a regression of the points that followed each
    turn-start state (``epochs``); then ``td_rounds`` rounds of ``td_epochs``, each fitting the value
    to its own one-turn backups (:func:`td_targets`) at the same states.
    """

    games: int = 50_000
    seed: int = 0
    hidden: int = 256
    layers: int = 2
    epochs: int = 10
    lr: float = 1e-3
    batch_size: int = 2048
    td_rounds: int = 16
    td_epochs: int = 6

    def __post_init__(self) -> None:
        for name in ("games", "hidden", "layers", "epochs", "batch_size", "td_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"turn-value setting {name} must be >= 1, got {getattr(self, name)}")
        if self.td_rounds < 0:
            raise ValueError(f"turn-value setting td_rounds must be >= 0, got {self.td_rounds}")
        if not self.lr > 0:
            raise ValueError(f"turn-value setting lr must be > 0, got {self.lr}")


def learn_turn_value(
    player: Player, settings: ValueSettings, device: torch.device | str = "cpu", log=print
) -> tuple[TurnValueNet, dict]:
    """A turn-start value for ``player``, from its own games only (no table, no oracle label).

    Returns the value and a JSON record of how it was learned (the settings, games, losses, seconds).
    """
    start = time.perf_counter()
    rules = player.rules
    states, returns = self_play_turns(player, settings.games, settings.seed, rules, device)
    mean = float(returns[:: rules.n_turns].mean())
    log(f"self-play: {settings.games:,} games, {len(states):,} turn starts, mean score {mean:.2f}")
    torch.manual_seed(settings.seed)
    net = TurnValueNet(rules.to_dict(), settings.hidden, settings.layers).to(device)
    fit = dict(lr=settings.lr, batch_size=settings.batch_size, seed=settings.seed)
    losses = fit_value(net, states, returns, settings.epochs, **fit)
    log(f"returns regression: mse {losses[-1]:.1f} points^2 after {settings.epochs} epochs")
    td_losses = []
    # The search reads the value one box ahead of where the agent went: those states too, each once,
    # beside the agent's own states as often as it met them (each of its turns weighs the same; with
    # every state once, the few early ones drown among the many late ones and the value drifts).
    td_states = torch.cat([states, successor_states(states, rules)])
    for r in range(settings.td_rounds):
        targets = td_targets(value_table(net, rules, device), td_states, rules)
        td_losses.append(
            fit_value(net, td_states, targets, settings.td_epochs, **{**fit, "seed": settings.seed + r + 1})[-1]
        )
        log(f"TD round {r + 1}: mse to its own backups {td_losses[-1]:.3f} points^2")
    record = {
        "method": "regression on self-play returns"
        + (f", then {settings.td_rounds} rounds of one-turn TD" if settings.td_rounds else ""),
        "settings": asdict(settings),
        "turn_starts": len(states),
        "td_states": len(td_states),
        "self_play_mean_score": mean,
        "returns_mse": losses[-1],
        "td_mse": td_losses,
        "seconds": round(time.perf_counter() - start, 1),
    }
    return net.cpu().eval(), record
