"""Search at play time: the rest of each turn played exactly, against a learned turn-start value.

Within a turn the chance nodes are the 252 dice multisets and the choices 32 keeps and 13 boxes,
so the rest of a turn can be searched exactly: the optimal player does it with the exact table at
the turn's end (``.reference.OptimalPlayer``). ``LookaheadPlayer`` runs the same search
(``..solver.TurnOracle``, batched over games, on any device) with a learned value there
instead (``..solver.value.TurnValueNet``), so a self-taught agent plays every keep and box as
well as its own estimate of the future allows. The exact table is never read.

``lookahead:AGENT`` names it (``.make_player``); the agent must carry a turn-start value,
learned from its own games by ``learn_turn_value`` (``yahtzee-lightning turn-value``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ..atomic import written_whole
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

    ``value``: a ``TurnValueNet`` or any ``(masks, uppers, flags) -> points`` function. It is
    read where the search needs it, once per state: at the turn-start states one box after the
    positions played (``prepare``), into a table of the exact table's layout that the search
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
    (``..solver.turn_state``) and the points the game went on to score from it."""
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
    to its own one-turn backups (``td_targets``) at the same states.

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

    ``warm_start``: begin the TD rounds from the value the agent already carries (its ``hidden`` and
    ``layers`` must be these) instead of a regression on the returns: more rounds for a value whose
    held-out error was still falling when its rounds ran out, on fresh games where ``seed`` differs.
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
    warm_start: bool = False

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
        if not isinstance(self.warm_start, bool):
            raise ValueError(f"turn-value setting warm_start must be true or false, got {self.warm_start!r}")
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
    one-turn backups there (``td_targets``): 0 for the exact table; how far a value is from
    being consistent with itself."""
    if len(states) == 0:
        return float("nan")
    m, u, f = states.unbind(-1)
    return float((table[m, u, f] - td_targets(table, states, rules)).square().mean())


def learn_turn_value(
    player: Player,
    settings: ValueSettings,
    device: torch.device | str = "cpu",
    log=print,
    init: TurnValueNet | None = None,
    rounds_file: str | Path | None = None,
    games_of: str = "",
) -> tuple[TurnValueNet, dict]:
    """A turn-start value for ``player``, from its own games only (no table, no oracle label).

    ``init``: the value the rounds start from where ``settings.warm_start`` (required then).
    ``rounds_file``: where the value is saved after every TD round (atomically), and read back by a
    later call with the same settings, which goes on from that round: a kill loses one round, not
    the hour. The self-play games are drawn again from their seed (the same games); ``games_of``
    names whose games they are (a rounds file of another's is refused, as one of other settings).

    Returns the value and a JSON record of how it was learned (the settings, games, losses, the
    held-out error to its own backups after each round and the round kept, seconds).
    """
    start = time.perf_counter()
    rules = player.rules
    if settings.warm_start and init is None:
        raise ValueError("turn-value setting warm_start: the agent carries no turn-start value to start from")
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
    saved = RoundsFile(rounds_file, settings, games_of) if rounds_file is not None else None
    progress = saved.read(net) if saved is not None else None
    if progress is not None:
        log(f"resuming after TD round {progress['round']} from {rounds_file}")
        losses = progress["returns_mse"]
    elif settings.warm_start:
        if (init.hidden, init.layers) != (settings.hidden, settings.layers) or init.rules != rules:
            raise ValueError(
                f"turn-value setting warm_start: the agent's value is {init.hidden} x {init.layers} under rules "
                f"{init.rules.tag()}; these settings learn {settings.hidden} x {settings.layers} under {rules.tag()}"
            )
        net.load_state_dict(init.state_dict())
        losses = []
        log("warm start: the TD rounds begin from the agent's own value (no returns regression)")
    else:
        losses = fit_value(net, states, returns, settings.epochs, **fit)
        log(f"returns regression: mse {losses[-1]:.1f} points^2 after {settings.epochs} epochs")
    td_losses: list[float] = progress["td_mse"] if progress else []
    residuals: list[float] = progress["td_residual"] if progress else []
    # The search reads the value one box ahead of where the agent went: those states too, each once,
    # beside the agent's own states as often as it met them (each of its turns weighs the same; with
    # every state once, the few early ones drown among the many late ones and the value drifts).
    td_states = with_successors(states, rules)
    held_states = with_successors(held, rules) if len(held) else held
    kept = progress["kept_round"] if progress else settings.td_rounds
    best = progress["best"] if progress else None
    for r in range(progress["round"] if progress else 0, settings.td_rounds + 1):
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
        if saved is not None:
            saved.write(
                net, best, round=r + 1, returns_mse=losses, td_mse=td_losses, td_residual=residuals, kept_round=kept
            )
        log(f"TD round {r + 1}: mse to its own backups {td_losses[-1]:.3f} points^2")
    if best is not None:
        net.load_state_dict(best)
        log(f"kept the value after {kept} TD rounds (lowest held-out error to its own backups)")
    method = "the agent's own value (warm start)" if settings.warm_start else "regression on self-play returns"
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
        **({"returns_mse": losses[-1]} if losses else {}),
        "td_mse": td_losses,
        **(
            {"held_out_turn_starts": len(held), "held_out_states": len(held_states), "td_residual": residuals}
            if residuals
            else {}
        ),
        **({"kept_round": kept} if settings.td_keep == "best" else {}),
        "seconds": round(time.perf_counter() - start, 1),
        **({"seconds_before_resuming": progress["seconds"]} if progress else {}),
    }
    if saved is not None:
        saved.done()
    return net.cpu().eval(), record


class RoundsFile:
    """The value after each TD round, in one safetensors file (the best round's value beside it
    where kept), with the round and the record so far in its metadata: written to a temporary name
    and renamed over the last, so a kill leaves the last whole round. Read back only under the
    same settings (another run's rounds are refused in one line)."""

    def __init__(self, path: str | Path, settings: ValueSettings, games_of: str = "") -> None:
        self.path, self.settings = Path(path), {**asdict(settings), "games_of": games_of}
        self.start = time.perf_counter()

    def read(self, net: TurnValueNet) -> dict | None:
        if not self.path.is_file():
            return None
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(self.path), framework="pt") as f:
                meta = json.loads((f.metadata() or {}).get("rounds", "null"))
                tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iterator)
        except (SafetensorError, OSError, ValueError) as e:
            raise ValueError(f"{self.path}: not a turn-value rounds file ({e}); delete it to start over") from None
        if not isinstance(meta, dict) or meta.get("settings") != self.settings:
            raise ValueError(
                f"{self.path}: the rounds of other settings ({(meta or {}).get('settings')}); delete it to start over"
            )
        net.load_state_dict({k[4:]: v for k, v in tensors.items() if k.startswith("net.")})
        best = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")} or None
        self.start -= meta["seconds"]
        return {**meta, "best": best}

    def write(self, net: TurnValueNet, best: dict | None, **record) -> None:
        from safetensors.torch import save_file

        tensors = {f"net.{k}": v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
        tensors |= {f"best.{k}": v.detach().cpu().contiguous() for k, v in (best or {}).items()}
        meta = {"settings": self.settings, "seconds": round(time.perf_counter() - self.start, 1), **record}
        with written_whole(self.path) as partial:
            save_file(tensors, str(partial), metadata={"rounds": json.dumps(meta)})

    def done(self) -> None:
        """The value is learned: its rounds are not needed any more."""
        self.path.unlink(missing_ok=True)
