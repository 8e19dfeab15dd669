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

from ..env import keys as K
from ..env.games import Games, Observation
from ..game import Rules, card_total
from ..game.rules import N_ROLLS, UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from ..solver import OptimalTable, TurnOracle, turn_state
from ..solver.value import StateValues, TurnValueNet, ValueFn, finished, fit_value, td_targets, value_table
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
        self.value = StateValues(value, rules, device)
        super().__init__(TurnOracle(rules, OptimalTable(self.value.values, rules)))
        self.name = name

    def prepare(self, cards: torch.Tensor) -> None:
        """Read the value at the turn-start states one box after ``cards (N, 13)`` not read yet:
        all that the search of these cards' turns reads."""
        self.value(*successor_states(turn_state(cards, self.rules), self.rules).unbind(-1))

    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
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
        batch = Games(n, rules=rules, validate_actions=True, device=device, seed=seed * 1_000_003 + chunk)
        torch.manual_seed(seed * 1_000_003 + chunk)
        td = batch.reset()
        at_start, so_far = [], []
        for step in range(N_ROLLS * rules.n_turns):
            if step % N_ROLLS == 0:
                at_start.append(turn_state(td[K.CARD], rules))
                so_far.append(card_total(td[K.CARD], td[K.YAHTZEE_BONUSES]))
            td, _, _ = batch.step(*player.act(td))
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
    return nxt[~finished(nxt, rules)]


@dataclass(frozen=True)
class ValueSettings:
    """How a turn-start value is learned (``conf/turn_value/*.yaml``; docs/lookahead.md); the
    defaults are the shipped agent's recipe before the stopping rule.

    ``games`` self-play games of the agent; a regression of the points that followed each
    turn-start state (``epochs``); then ``td_rounds`` rounds of ``td_epochs``, each fitting the value
    to its own one-turn backups (:func:`td_targets`) at the same states.

    Fitted TD with a network is not a contraction: past some round the value can drift. The turn
    starts of the last ``td_holdout`` share of the games (and the states one box after them) are
    held out of every fit; after each round the value's error to its own one-turn backups there
    (mean squared, the fit's weighting) is recorded (``td_residual``: index 0 is the returns
    regression, r the value after r rounds). ``td_keep``: ``"last"`` returns the last round's
    value, ``"best"`` the one of lowest held-out error (a measure of the value against itself:
    no table, no label). ``td_holdout`` 0 holds nothing out and records nothing.

    ``play``: how the agent plays its self-play games, ``"mode"`` (its most likely action, as it
    plays when evaluated) or ``"sample"`` (actions drawn from its policy: more varied turn starts,
    which the backups, being exact over the turn, value as they would any other).
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
    td_holdout: float = 0.0
    td_keep: str = "last"
    play: str = "mode"

    def __post_init__(self) -> None:
        for name in ("games", "hidden", "layers", "epochs", "batch_size", "td_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"turn-value setting {name} must be >= 1, got {getattr(self, name)}")
        if self.td_rounds < 0:
            raise ValueError(f"turn-value setting td_rounds must be >= 0, got {self.td_rounds}")
        if not self.lr > 0:
            raise ValueError(f"turn-value setting lr must be > 0, got {self.lr}")
        if not 0 <= self.td_holdout < 1:
            raise ValueError(f"turn-value setting td_holdout must be in [0, 1), got {self.td_holdout}")
        if self.td_keep not in TD_KEEP:
            raise ValueError(f"turn-value setting td_keep must be one of {TD_KEEP}, got {self.td_keep!r}")
        if self.play not in PLAY:
            raise ValueError(f"turn-value setting play must be one of {PLAY}, got {self.play!r}")
        if self.td_keep == "best" and self.held_out_games == 0:
            raise ValueError(
                f"turn-value setting td_keep 'best' measures on held-out games: td_holdout {self.td_holdout} "
                f"of {self.games} games holds none out"
            )

    @property
    def held_out_games(self) -> int:
        """Games whose turn starts no fit sees (the last ones played); never all of them."""
        return min(round(self.games * self.td_holdout), self.games - 1)


#: ``td_keep``: the last round's value, or the one closest to its own backups on held-out games.
TD_KEEP = ("last", "best")
PLAY = ("mode", "sample")


def with_successors(states: torch.Tensor, rules: Rules) -> torch.Tensor:
    """``states (N, 3)`` as met, then each state one box after them once: the states a TD fit
    weighs (each of the agent's turns the same; the states the search reads, each once)."""
    return torch.cat([states, successor_states(states, rules)])


def backup_error(table: torch.Tensor, states: torch.Tensor, rules: Rules) -> float:
    """Mean squared difference, in points squared, between ``table`` at ``states (N, 3)`` and its own
    one-turn backups there (:func:`td_targets`): 0 for the exact table; how far a value is from
    being consistent with itself."""
    if len(states) == 0:
        return float("nan")
    m, u, f = states.unbind(-1)
    return float((table[m, u, f] - td_targets(table, states, rules)).square().mean())


def learn_turn_value(
    player: Player, settings: ValueSettings, device: torch.device | str = "cpu", log=print
) -> tuple[TurnValueNet, dict]:
    """A turn-start value for ``player``, from its own games only (no table, no oracle label).

    Returns the value and a JSON record of how it was learned (the settings, games, losses, the
    held-out error to its own backups after each round and the round kept, seconds).
    """
    start = time.perf_counter()
    rules = player.rules
    states, returns = self_play_turns(player, settings.games, settings.seed, rules, device)
    mean = float(returns[:: rules.n_turns].mean())
    log(f"self-play: {settings.games:,} games, {len(states):,} turn starts, mean score {mean:.2f}")
    # The games are independent and ordered game by game: the last ones are held out of every fit.
    split = (settings.games - settings.held_out_games) * rules.n_turns
    held = states[split:]
    states, returns = states[:split], returns[:split]
    torch.manual_seed(settings.seed)
    net = TurnValueNet(rules.to_dict(), settings.hidden, settings.layers).to(device)
    fit = dict(lr=settings.lr, batch_size=settings.batch_size, seed=settings.seed)
    losses = fit_value(net, states, returns, settings.epochs, **fit)
    log(f"returns regression: mse {losses[-1]:.1f} points^2 after {settings.epochs} epochs")
    td_losses: list[float] = []
    residuals: list[float] = []
    # The search reads the value one box ahead of where the agent went: those states too, each once,
    # beside the agent's own states as often as it met them (each of its turns weighs the same; with
    # every state once, the few early ones drown among the many late ones and the value drifts).
    td_states = with_successors(states, rules)
    held_states = with_successors(held, rules) if len(held) else held
    kept, best = settings.td_rounds, None
    for r in range(settings.td_rounds + 1):
        table = value_table(net, rules, device)
        if r == settings.td_rounds:  # the last value: only its held-out error is left to measure
            if len(held_states):
                residuals.append(backup_error(table, held_states, rules))
        else:
            targets = td_targets(table, torch.cat([td_states, held_states]), rules)
            if len(held_states):
                m, u, f = held_states.unbind(-1)
                residuals.append(float((table[m, u, f] - targets[len(td_states) :]).square().mean()))
        if residuals:
            log(f"after {r} TD rounds: mse to its own backups on held-out games {residuals[-1]:.3f} points^2")
            if settings.td_keep == "best" and (best is None or residuals[-1] < residuals[kept]):
                kept, best = r, {k: v.detach().clone() for k, v in net.state_dict().items()}
        if r == settings.td_rounds:
            break
        td_losses.append(
            fit_value(
                net, td_states, targets[: len(td_states)], settings.td_epochs, **{**fit, "seed": settings.seed + r + 1}
            )[-1]
        )
        log(f"TD round {r + 1}: mse to its own backups {td_losses[-1]:.3f} points^2")
    if best is not None:
        net.load_state_dict(best)
        log(f"kept the value after {kept} TD rounds (lowest held-out error to its own backups)")
    method = "regression on self-play returns"
    if settings.td_rounds:
        method += f", then {settings.td_rounds} rounds of one-turn TD"
        if settings.td_keep == "best":
            method += f", keeping the value after round {kept} (lowest error to its own backups on held-out games)"
    record = {
        "method": method,
        "settings": asdict(settings),
        "turn_starts": len(states),
        "td_states": len(td_states),
        "self_play_mean_score": mean,
        "returns_mse": losses[-1],
        "td_mse": td_losses,
        **(
            {"held_out_turn_starts": len(held), "held_out_states": len(held_states), "td_residual": residuals}
            if residuals
            else {}
        ),
        **({"kept_round": kept} if settings.td_keep == "best" else {}),
        "seconds": round(time.perf_counter() - start, 1),
    }
    return net.cpu().eval(), record
