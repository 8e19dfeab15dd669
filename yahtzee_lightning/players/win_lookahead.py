"""Search for the match: the rest of each turn played exactly, against a learned chance of winning.

``WinLookaheadPlayer`` is ``.lookahead.LookaheadPlayer`` for a two-player match: at every
keep and box it takes the choice of highest exact expectation, over the rest of the turn's dice, of
``W`` at the turn's end (``..solver.win_value``): the agent's learned chance of winning from its
next turn-start state, the opponent's and the score difference, the agent's own turn-start value
of both among its inputs. Where the turn ends the match (both cards full) the leaf is the result
itself, so on its last turn against a finished opponent it plays the exact end game
(``..solver.endgame``). The exact table is never read.

``winlookahead:AGENT`` names it (``.make_player``); the agent must carry a turn-start value
(``yahtzee-lightning turn-value``) and a win value, learned from its own matches by
``learn_win_value`` (``yahtzee-lightning win-value``).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch

from ..env import keys as K
from ..env.games import Observation
from ..game import Rules
from ..game.rules import N_ROLLS
from ..solver import turn_state
from ..solver.oracle import TurnCache, position_values
from ..solver.value import StateValues, TurnValueNet, ValueFn
from ..solver.win_value import FEATURES, LeafFn, WinValueNet, result, win_features, win_leaf, win_turn_tables
from .base import Player
from .lookahead import self_play_turns

WIN_LOOKAHEAD_PREFIX = "winlookahead:"


def match_key(obs: Observation, rules: Rules) -> torch.Tensor:
    """``(N, 7)``: the mover's turn-start state, the opponent's, and the mover's lead."""
    if K.OPPONENT_CARDS not in obs.keys():
        raise ValueError("the win look-ahead needs a match observation (opponent_cards): use --players 2")
    cards = obs[K.OPPONENT_CARDS]
    if cards.shape[-2] != 1:
        raise ValueError(f"the win look-ahead plays two-player matches, not {cards.shape[-2] + 1} players")
    diff = obs[K.SCORE] - obs[K.OPPONENT_SCORES][..., 0]
    return torch.cat([turn_state(obs[K.CARD], rules), turn_state(cards[..., 0, :], rules), diff.unsqueeze(-1)], -1)


class WinLookaheadPlayer(Player):
    """Takes, at every keep and box, the choice of highest exact expectation of ``leaf`` at the
    turn's end (``..solver.win_value.win_turn_tables``; ties: the lowest index). ``leaf``: the
    learned chance of winning (``..solver.win_value.win_leaf``) or any such function."""

    matches_only = True

    def __init__(self, leaf: LeafFn, rules: Rules, name: str = "winlookahead") -> None:
        super().__init__(rules)
        self.leaf, self.name = leaf, name
        self._turns = TurnCache(self._compute)

    def _compute(self, key: torch.Tensor) -> list[torch.Tensor]:
        unique, inverse = torch.unique(key, dim=0, return_inverse=True)  # all games share the first turn
        tabs = win_turn_tables(unique[:, :3], unique[:, 3:6], unique[:, 6], self.leaf, self.rules)
        return [t[..., inverse] for t in tabs]

    def action_values(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        """``(keep_values (N, 32), box_values (N, 13))``: the expected leaf after each choice."""
        return position_values(*self._turns(match_key(obs, self.rules)), obs[K.DICE], obs[K.ROLL])

    @torch.no_grad()
    def act(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        keep_values, box_values = self.action_values(obs)
        return keep_values.argmax(-1), box_values.argmax(-1)


def checked_values(base: Player, name: str, prefix: str = WIN_LOOKAHEAD_PREFIX) -> tuple[TurnValueNet, WinValueNet]:
    """The agent's turn-start value and win value, or one line naming what it lacks."""
    value: TurnValueNet | None = getattr(base, "turn_value", None)
    win: WinValueNet | None = getattr(base, "win_value", None)
    if value is None:
        raise ValueError(
            f"{prefix}{name}: {name!r} carries no turn-start value (learn one from its own games: "
            f"yahtzee-lightning turn-value --agent {name}, then yahtzee-lightning win-value --agent {name})"
        )
    if win is None:
        raise ValueError(
            f"{prefix}{name}: {name!r} carries no win value to search against "
            f"(learn one from its own matches: yahtzee-lightning win-value --agent {name})"
        )
    for what, v in (("turn-start value", value), ("win value", win)):
        if v.rules != base.rules:
            raise ValueError(
                f"{prefix}{name}: the {what} of {name!r} was learned under rules {v.rules.tag()}, "
                f"but the agent plays {base.rules.tag()}"
            )
    return value, win


def win_lookahead_player(base: Player, name: str, device: torch.device | str = "cpu") -> WinLookaheadPlayer:
    """``winlookahead:NAME``: the agent ``base`` searching each turn against its win value."""
    value, win = checked_values(base, name)
    values = StateValues(value.to(device).eval(), base.rules, device)
    leaf = win_leaf(win.to(device).eval(), values, base.rules)
    return WinLookaheadPlayer(leaf, base.rules, name=f"{WIN_LOOKAHEAD_PREFIX}{getattr(base, 'name', name)}")


# ---------------------------------------------------------------------------- learning the value

#: One example a row: the mover's next turn-start state (3), the opponent's (3), the lead, the result.
Examples = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def paired_examples(states: torch.Tensor, returns: torch.Tensor, pairings: int, seed: int, rules: Rules) -> Examples:
    """Matches of a player that ignores its opponent, from its solitaire games (``self_play_turns``):
    any two of its games are a match it could have played (game ``i`` first, game ``P[i]`` second,
    for ``pairings`` random permutations ``P``). Every turn's end but the match's last gives an
    example: the mover's next state, the opponent's state then, the mover's lead, its result."""
    T = rules.n_turns
    start = states.view(-1, T, 3)
    G = len(start)
    final = returns.view(G, T)[:, 0]
    after = final.unsqueeze(1) - torch.cat([returns.view(G, T)[:, 1:], torch.zeros(G, 1, dtype=returns.dtype)], 1)
    full = torch.tensor([sum(1 << b for b in rules.boxes), 0, 0]).expand(G, 1, 3)
    post = torch.cat([start[:, 1:], full], 1)  # (G, T, 3): the state after each turn
    g = torch.Generator().manual_seed(seed)
    own, opp, lead, res = [], [], [], []
    for _ in range(pairings):
        a, b = torch.arange(G), torch.randperm(G, generator=g)
        r = result(final[a] - final[b])
        b_before = torch.cat([torch.zeros(G, 1, dtype=after.dtype), after[b, :-1]], 1)
        own += [post[a], post[b, :-1]]
        opp += [start[b], post[a, :-1]]  # b has played t turns when a ends turn t
        lead += [after[a] - b_before, after[b, :-1] - after[a, :-1]]
        res += [r.unsqueeze(1).expand(G, T), 1 - r.unsqueeze(1).expand(G, T - 1)]
    return tuple(torch.cat([x.reshape(-1, *x.shape[2:]) for x in xs]) for xs in (own, opp, lead, res))


@torch.no_grad()
def match_examples(
    player: Player, opponent: Player, games: int, seed: int, rules: Rules, batch_size: int = 2048
) -> Examples:
    """``player``'s own matches against ``opponent`` (seats alternated) in the two-player env: an
    example at each end of its turns (as ``paired_examples``; the match's last included)."""
    from ..env.multiplayer import MultiPlayerYahtzeeEnv  # matches only: TorchRL loads here

    own, opp, lead, res = [], [], [], []
    for chunk, start in enumerate(range(0, games, batch_size)):
        n = min(batch_size, games - start)
        env = MultiPlayerYahtzeeEnv(n, opponents=opponent, rules=rules, learner_seat="alternate", seed=seed + chunk)
        torch.manual_seed(seed + chunk)
        td = env.reset()
        rows = []
        for step in range(N_ROLLS * rules.n_turns):
            keep, box = player.act(td)
            before = (turn_state(td[K.OPPONENT_CARDS][:, 0], rules), td[K.OPPONENT_SCORES][:, 0])
            td.set(K.KEEP, keep)
            td.set(K.BOX, box)
            td = env.step(td)["next"]
            if step % N_ROLLS == N_ROLLS - 1:
                rows.append((turn_state(td[K.CARD], rules), before[0], td[K.SCORE] - before[1]))
        r = result(td[K.SCORE_DIFF])
        for o, p, d in rows:
            own.append(o), opp.append(p), lead.append(d), res.append(r)
    return tuple(torch.cat(xs) for xs in (own, opp, lead, res))


@dataclass(frozen=True)
class WinSettings:
    """How a win value is learned (``conf/win_value/*.yaml``; docs/lookahead.md).

    ``games`` solitaire games of the agent's look-ahead (it ignores the opponent, so any two are a
    match: ``pairings`` random pairings of them); then, with ``own_matches``, that many matches of
    the new win look-ahead against itself in the two-player env, added to the data for a second fit.
    ``features``: the value's inputs (``..solver.win_value.win_features``: ``compact``, a few
    numbers a side, or ``full``, the whole card too). ``holdout``: the share of examples held out of
    the fit, where its log loss is measured.
    """

    games: int = 20_000
    pairings: int = 2
    seed: int = 0
    hidden: int = 64
    layers: int = 2
    features: str = "compact"
    epochs: int = 4
    lr: float = 2e-3
    batch_size: int = 4096
    holdout: float = 0.05
    own_matches: int = 0

    def __post_init__(self) -> None:
        for name in ("games", "pairings", "hidden", "layers", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"win-value setting {name} must be >= 1, got {getattr(self, name)}")
        if self.own_matches < 0:
            raise ValueError(f"win-value setting own_matches must be >= 0, got {self.own_matches}")
        if not self.lr > 0:
            raise ValueError(f"win-value setting lr must be > 0, got {self.lr}")
        if self.features not in FEATURES:
            raise ValueError(f"win-value setting features must be one of {FEATURES}, got {self.features!r}")
        if not 0 <= self.holdout < 1:
            raise ValueError(f"win-value setting holdout must be in [0, 1), got {self.holdout}")


def fit_win(
    net: WinValueNet, data: Examples, value: ValueFn, rules: Rules, settings: WinSettings, seed: int
) -> tuple[float, float]:
    """Cross-entropy of ``net`` on the results (Adam, cosine decay); returns the last epoch's mean log
    loss and the held-out one (nan with no holdout)."""
    own, opp, lead, res = data
    v_own, v_opp = value(*own.unbind(-1)), value(*opp.unbind(-1))
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(res), generator=g)
    held = order[: int(len(res) * settings.holdout)]
    train = order[len(held) :]

    def batch(i: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = win_features(own[i], opp[i], lead[i].double(), v_own[i], v_opp[i], rules, net.features)
        return x, res[i].float()

    opt = torch.optim.Adam(net.parameters(), lr=settings.lr)
    steps = settings.epochs * -(-len(train) // settings.batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    net.train()
    for _ in range(settings.epochs):
        perm = train[torch.randperm(len(train), generator=g)]
        total = 0.0
        for s in range(0, len(perm), settings.batch_size):
            x, y = batch(perm[s : s + settings.batch_size])
            loss = bce(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(y)
    net.eval()
    with torch.no_grad():
        held_loss = float(bce(net(batch(held)[0]), batch(held)[1])) if len(held) else float("nan")
    return total / max(len(train), 1), held_loss


def learn_win_value(
    base: Player, lookahead: Player, settings: WinSettings, name: str = "agent", log=print
) -> tuple[WinValueNet, dict]:
    """A win value for the agent ``base`` (it must carry a turn-start value), from its own play only:
    ``lookahead`` (its solitaire look-ahead) plays ``settings.games`` games, paired into matches; with
    ``own_matches``, the new win look-ahead then plays itself and the value is fitted again on all."""
    started = time.perf_counter()
    rules = base.rules
    turn_value: TurnValueNet | None = getattr(base, "turn_value", None)
    if turn_value is None:
        raise ValueError(f"{name!r} carries no turn-start value (yahtzee-lightning turn-value --agent {name})")
    values = StateValues(turn_value.eval(), rules)
    states, returns = self_play_turns(lookahead, settings.games, settings.seed, rules)
    data = paired_examples(states, returns, settings.pairings, settings.seed, rules)
    mean = float(returns.view(-1, rules.n_turns)[:, 0].mean())
    log(f"self-play: {settings.games:,} games (mean {mean:.2f}), {len(data[3]):,} turn ends of paired matches")
    torch.manual_seed(settings.seed)
    net = WinValueNet(rules.to_dict(), settings.hidden, settings.layers, settings.features)
    losses = [fit_win(net, data, values, rules, settings, settings.seed)]
    log(f"fit: log loss {losses[-1][0]:.4f}, held out {losses[-1][1]:.4f}")
    if settings.own_matches:
        leaf = win_leaf(net, values, rules)
        me, other = WinLookaheadPlayer(leaf, rules), WinLookaheadPlayer(leaf, rules)
        more = match_examples(me, other, settings.own_matches, settings.seed + 1, rules)
        data = tuple(torch.cat([a, b.to(a.dtype)]) for a, b in zip(data, more, strict=True))
        log(f"own matches: {settings.own_matches:,} ({len(more[3]):,} turn ends); refit on all")
        torch.manual_seed(settings.seed + 1)
        net = WinValueNet(rules.to_dict(), settings.hidden, settings.layers, settings.features)
        losses.append(fit_win(net, data, values, rules, settings, settings.seed + 1))
        log(f"fit: log loss {losses[-1][0]:.4f}, held out {losses[-1][1]:.4f}")
    method = f"cross-entropy on the results of {settings.pairings} pairings of the look-ahead's own games"
    if settings.own_matches:
        method += ", then refitted with the win look-ahead's own matches against itself"
    record = {
        "method": method,
        "settings": asdict(settings),
        "examples": len(data[3]),
        "self_play_mean_score": round(mean, 3),
        "log_loss": [round(a, 5) for a, _ in losses],
        "held_out_log_loss": [round(b, 5) for _, b in losses],
        "seconds": round(time.perf_counter() - started, 1),
    }
    return net.eval(), record
