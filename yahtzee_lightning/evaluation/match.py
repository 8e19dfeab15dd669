"""Two-player (N-player) matches: each side's mean score and the win/draw/loss rates."""

from __future__ import annotations

import math

import torch

from ..env import keys as K
from ..env.multiplayer import MultiPlayerYahtzeeEnv
from ..game import Rules
from ..players.base import Player
from ..progress import advance_turn, progress_bar


def _rate(x: torch.Tensor) -> dict[str, float]:
    p = float(x.float().mean())
    return {"rate": p, "se": math.sqrt(max(p * (1 - p), 0.0) / max(len(x), 1))}


def _mean(x: torch.Tensor) -> dict[str, float]:
    x = x.float()
    sd = float(x.std()) if len(x) > 1 else 0.0
    return {"mean": float(x.mean()), "sd": sd, "se": sd / math.sqrt(max(len(x), 1))}


def opponent_name(opponent: Player | str) -> str:
    return opponent if isinstance(opponent, str) else getattr(opponent, "name", type(opponent).__name__)


@torch.no_grad()
def play_matches(
    player: Player,
    opponent: Player | str,
    games: int = 10_000,
    seed: int = 0,
    rules: Rules | None = None,
    n_players: int = 2,
    learner_seat: str = "random",
    device: torch.device | str = "cpu",
    batch_size: int = 4096,
    progress: bool = False,
) -> dict:
    """``player`` against ``n_players - 1`` copies of ``opponent``; the same seed repeats exactly.

    ``progress``: a bar counting finished games, advanced a turn at a time (a batch takes seconds).
    """
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    rules = rules or Rules()
    own, best_other, diff = [], [], []
    done_games, chunk = 0, 0
    bar = progress_bar(games, f"{getattr(player, 'name', 'player')} vs {opponent_name(opponent)}", progress, "game")
    while done_games < games:
        n = min(batch_size, games - done_games)
        env = MultiPlayerYahtzeeEnv(
            n,
            opponents=opponent,
            n_players=n_players,
            rules=rules,
            learner_seat=learner_seat,
            validate_actions=True,  # an illegal box from either side raises
            device=device,
            seed=seed * 1_000_003 + chunk,
        )
        torch.manual_seed(seed * 1_000_003 + chunk)  # players that sample use the global generator
        td = env.reset()
        for step in range(3 * rules.n_turns):
            keep, box = player.act(td)
            td.set(K.KEEP, keep)
            td.set(K.BOX, box)
            td = env.step(td)["next"]
            if step % 3 == 2:
                advance_turn(bar, n, step // 3 + 1, rules.n_turns)
        own.append(td[K.SCORE].cpu())
        best_other.append(td[K.OPPONENT_SCORES].amax(-1).cpu())
        diff.append(td[K.SCORE_DIFF].cpu())
        done_games += n
        chunk += 1
    bar.close()
    own_t, other_t, diff_t = torch.cat(own), torch.cat(best_other), torch.cat(diff)
    return {
        "games": games,
        "seed": seed,
        "n_players": n_players,
        "player": getattr(player, "name", type(player).__name__),
        "opponent": opponent_name(opponent),
        "player_score": _mean(own_t),
        "best_opponent_score": _mean(other_t),
        "win": _rate(diff_t > 0),
        "draw": _rate(diff_t == 0),
        "loss": _rate(diff_t < 0),
    }


def format_match(result: dict) -> str:
    """A small table for the terminal."""
    ps, os_ = result["player_score"], result["best_opponent_score"]
    lines = [
        f"{result['player']} vs {result['opponent']} ({result['n_players']} players, {result['games']} games, "
        f"seed {result['seed']})",
        f"  {'player mean score':<24}{ps['mean']:8.2f} ± {ps['se']:.2f}",
        f"  {'best opponent mean':<24}{os_['mean']:8.2f} ± {os_['se']:.2f}",
    ]
    for k in ("win", "draw", "loss"):
        lines.append(f"  {k + ' rate':<24}{100 * result[k]['rate']:7.2f}% ± {100 * result[k]['se']:.2f}")
    return "\n".join(lines)
