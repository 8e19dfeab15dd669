"""Two-player (N-player) matches: each side's mean score and the win/draw/loss rates."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

from ..env import keys as K
from ..env.multiplayer import MultiPlayerYahtzeeEnv
from ..game import Rules
from ..game.rules import N_ROLLS
from ..players import make_player
from ..players.base import Player
from ..progress import advance_turn, progress_bar


def _proportion(hits: int, n: int) -> dict[str, float]:
    p = hits / n if n else 0.0
    return {"rate": p, "se": math.sqrt(max(p * (1 - p), 0.0) / max(n, 1))}


def _rate(x: torch.Tensor) -> dict[str, float]:
    return _proportion(int(x.sum()), len(x))


def _mean(x: torch.Tensor) -> dict[str, float]:
    x = x.float()
    sd = float(x.std()) if len(x) > 1 else 0.0
    return {"mean": float(x.mean()), "sd": sd, "se": sd / math.sqrt(max(len(x), 1))}


def opponent_name(opponent: Player | str) -> str:
    return opponent if isinstance(opponent, str) else getattr(opponent, "name", type(opponent).__name__)


def _outcomes(diff: torch.Tensor) -> dict[str, dict[str, float]]:
    return {"games": len(diff), "win": _rate(diff > 0), "draw": _rate(diff == 0), "loss": _rate(diff < 0)}


SEAT_NAMES = ("first", "second", "third", "fourth", "fifth", "sixth")


class EndgameCheck:
    """Counts how often a player's keeps agree with the exact win-maximising keep of its last turn
    (``..solver.endgame``), in the positions where that applies: its last turn, every opponent
    finished. The box of a last turn is forced (one box is open), so only keeps are counted."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.decisions = self.agree = self.matter = self.agree_matter = 0
        self.lost = 0.0

    def add(self, obs, keep: torch.Tensor) -> None:
        from ..players.endgame import endgame_positions
        from ..solver.endgame import win_values

        applies, need = endgame_positions(obs)
        applies &= obs[K.ROLL] < N_ROLLS - 1
        if not bool(applies.any()):
            return
        i = applies.nonzero().squeeze(-1)
        values, _ = win_values(obs[K.DICE][i], obs[K.ROLL][i], obs[K.CARD][i], need[i], self.rules)
        best = values.amax(-1)
        lost = best - values.gather(-1, keep[i].long().unsqueeze(-1)).squeeze(-1)
        agree = lost <= 1e-9
        matter = best - values.amin(-1) > 1e-9  # some keep is worse than another
        self.decisions += len(i)
        self.agree += int(agree.sum())
        self.matter += int(matter.sum())
        self.agree_matter += int((agree & matter).sum())
        self.lost += float(lost.sum())

    def result(self, games: int) -> dict:
        """Agreement over all such keeps and over those where the keep matters (not every keep is
        equally good), and the win probability lost per match (against exact play from there)."""
        return {
            "decisions": self.decisions,
            "agree": _proportion(self.agree, self.decisions),
            "matter": self.matter,
            "agree_where_it_matters": _proportion(self.agree_matter, self.matter),
            "win_lost_per_match": self.lost / games,
        }


@torch.no_grad()
def play_matches(
    player: Player,
    opponent: Player | str,
    games: int = 10_000,
    seed: int = 0,
    rules: Rules | None = None,
    n_players: int = 2,
    learner_seat: str = "alternate",
    device: torch.device | str = "cpu",
    batch_size: int = 4096,
    progress: bool = False,
    endgame_check: bool = False,
    load: Callable[[str, torch.device | str], Player] | None = None,
) -> dict:
    """``player`` against ``n_players - 1`` copies of ``opponent``; the same seed repeats exactly.

    Win, draw and loss rates (with standard errors) overall and by the player's seat: the first
    player has a small edge, so ``learner_seat="alternate"`` (the default) seats the player
    first and second equally often. ``progress``: a bar counting finished games, advanced a turn
    at a time (a batch takes seconds). ``endgame_check``: also count how often the player's keeps
    on its last turn agree with the exact win-maximising ones (``EndgameCheck``).
    An ``opponent`` given by name is made afresh for every seat of every batch, by
    ``make_player`` with ``load`` (``resolve.load_agent`` for agent
    folders and hub ids).
    """
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    rules = rules or Rules()
    seats_opponent = (
        partial(make_player, opponent, rules, torch.device(device), load) if isinstance(opponent, str) else opponent
    )
    own, best_other, diff, seats = [], [], [], []
    check = EndgameCheck(rules) if endgame_check else None
    done_games, chunk, points, wins = 0, 0, 0, 0
    bar = progress_bar(games, f"{getattr(player, 'name', 'player')} vs {opponent_name(opponent)}", progress, "game")
    while done_games < games:
        n = min(batch_size, games - done_games)
        env = MultiPlayerYahtzeeEnv(
            n,
            opponents=seats_opponent,
            n_players=n_players,
            rules=rules,
            learner_seat=learner_seat,
            validate_actions=True,  # an illegal box from either side raises
            device=device,
            seed=seed * 1_000_003 + chunk,
        )
        torch.manual_seed(seed * 1_000_003 + chunk)  # players that sample use the global generator
        td = env.reset()
        for step in range(N_ROLLS * rules.n_turns):
            keep, box = player.act(td)
            if check is not None:
                check.add(td, keep)
            td.set(K.KEEP, keep)
            td.set(K.BOX, box)
            td = env.step(td)["next"]
            if step % N_ROLLS == N_ROLLS - 1:
                advance_turn(bar, n, step // N_ROLLS + 1, rules.n_turns)
        own.append(td[K.SCORE].cpu())
        best_other.append(td[K.OPPONENT_SCORES].amax(-1).cpu())
        diff.append(td[K.SCORE_DIFF].cpu())
        seats.append(td[K.SEAT].cpu())
        done_games += n
        points, wins = points + int(own[-1].sum()), wins + int((diff[-1] > 0).sum())
        bar.set_postfix_str(f"mean score {points / done_games:.1f}, win rate {wins / done_games:.3f}")
        chunk += 1
    bar.close()
    own_t, other_t, diff_t, seat_t = torch.cat(own), torch.cat(best_other), torch.cat(diff), torch.cat(seats)
    result = {
        "games": games,
        "seed": seed,
        "n_players": n_players,
        "learner_seat": learner_seat,
        "player": getattr(player, "name", type(player).__name__),
        "opponent": opponent_name(opponent),
        "player_score": _mean(own_t),
        "best_opponent_score": _mean(other_t),
        **_outcomes(diff_t),
        "by_seat": {SEAT_NAMES[s]: _outcomes(diff_t[seat_t == s]) for s in seat_t.unique().tolist()},
    }
    if check is not None:
        result["endgame"] = check.result(games)
    return result


def format_match(result: dict) -> str:
    """A small table for the terminal: scores, then win / draw / loss overall and by seat."""
    ps, os_ = result["player_score"], result["best_opponent_score"]
    lines = [
        f"{result['player']} vs {result['opponent']} ({result['n_players']} players, {result['games']} games, "
        f"seed {result['seed']}, seats {result.get('learner_seat', 'random')})",
        f"  {'player mean score':<24}{ps['mean']:8.2f} ± {ps['se']:.2f}",
        f"  {'best opponent mean':<24}{os_['mean']:8.2f} ± {os_['se']:.2f}",
    ]
    for k in ("win", "draw", "loss"):
        lines.append(f"  {k + ' rate':<24}{100 * result[k]['rate']:7.2f}% ± {100 * result[k]['se']:.2f}")
    for seat, r in result.get("by_seat", {}).items():
        rates = ", ".join(f"{k} {100 * r[k]['rate']:.2f}% ± {100 * r[k]['se']:.2f}" for k in ("win", "draw", "loss"))
        lines.append(f"  {'seated ' + seat:<24}{rates} ({r['games']} games)")
    if "endgame" in result:
        e = result["endgame"]
        lines.append(
            f"  {'last-turn keeps':<24}{e['decisions']} where the exact end game applies: "
            f"{100 * e['agree']['rate']:.2f}% ± {100 * e['agree']['se']:.2f} agree with it; "
            f"{e['matter']} where the keep matters: {100 * e['agree_where_it_matters']['rate']:.2f}% "
            f"± {100 * e['agree_where_it_matters']['se']:.2f} agree; "
            f"win probability lost {e['win_lost_per_match']:.5f} per match"
        )
    return "\n".join(lines)
