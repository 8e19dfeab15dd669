"""The evaluation protocol (docs/metrics.md): play N seeded games and summarise them.

Games are played in batches of the environment's own games (``Games``,
the same dice as ``YahtzeeEnv`` for a seed, without loading TorchRL); every decision is also scored against
the exact optimum (regret: expected points lost against the best choice), split into keep and
box decisions. The same seed gives the same numbers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from ..env import keys as K
from ..env.games import Games
from ..game import BOX_NAMES, N_BOXES, OPEN, Rules, card_total, upper_sum
from ..game.rules import N_ROLLS, UPPER_BONUS_THRESHOLD
from ..players.base import Player
from ..progress import advance_turn, progress_bar
from ..solver import TurnOracle, load_or_solve

THRESHOLDS = (50, 100, 150, 200, 250, 300, 400, 500, 750, 1000, 1250, 1500)


@torch.no_grad()
def play_games(
    player: Player,
    games: int,
    seed: int,
    rules: Rules,
    device: torch.device | str = "cpu",
    batch_size: int = 2500,
    regret_oracle: TurnOracle | None = None,
    progress: bool = False,
) -> dict[str, torch.Tensor]:
    """Raw results of ``games`` games: final cards, bonuses, fill turns, first boxes, regrets."""
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    out: dict[str, list[torch.Tensor]] = {k: [] for k in ("card", "bonuses", "fill_turn", "regret_keep", "regret_box")}
    bar = progress_bar(games, f"evaluating {getattr(player, 'name', 'player')}", progress, unit="game")
    points = 0
    for chunk, start in enumerate(range(0, games, batch_size)):
        n = min(batch_size, games - start)
        batch = Games(n, rules=rules, validate_actions=True, device=device, seed=seed * 1_000_003 + chunk)
        torch.manual_seed(seed * 1_000_003 + chunk)  # for players that sample from the global generator
        td = batch.reset()
        fill_turn = torch.full((n, N_BOXES), -1, dtype=torch.int64, device=device)
        regret_keep, regret_box = [], []
        for step in range(N_ROLLS * rules.n_turns):
            keep, box = player.act(td)
            if regret_oracle is not None:
                r = regret_oracle.regret(td[K.DICE], td[K.ROLL], td[K.CARD], keep, box)
                (regret_box if int(td[K.ROLL][0]) == N_ROLLS - 1 else regret_keep).append(r)
            before = td[K.CARD]
            turn = td[K.TURN]
            td, _, _ = batch.step(keep, box)
            newly = (before == OPEN) & (td[K.CARD] != OPEN)
            fill_turn = torch.where(newly, turn.unsqueeze(-1), fill_turn)
            if step % N_ROLLS == N_ROLLS - 1:
                advance_turn(bar, n, step // N_ROLLS + 1, rules.n_turns)
        out["card"].append(td[K.CARD].cpu())
        out["bonuses"].append(td[K.YAHTZEE_BONUSES].cpu())
        points += int(card_total(out["card"][-1], out["bonuses"][-1]).sum())
        bar.set_postfix_str(f"mean score {points / (start + n):.1f}")  # of the games played so far
        out["fill_turn"].append(fill_turn.cpu())
        if regret_oracle is not None:
            out["regret_keep"].append(torch.stack(regret_keep, 1).cpu())
            out["regret_box"].append(torch.stack(regret_box, 1).cpu())
    bar.close()
    return {k: torch.cat(v) for k, v in out.items() if v}


@torch.no_grad()
def play_single_turns(
    player: Player, episodes: int, seed: int, rules: Rules, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Points scored in single turns (three decisions) from random partly filled cards."""
    games = Games(episodes, task="single_turn", start_card="random", rules=rules, device=device, seed=seed)
    torch.manual_seed(seed)
    td = games.reset()
    total = torch.zeros(episodes, device=device)
    for _ in range(N_ROLLS):
        keep, box = player.act(td)
        td, reward, _ = games.step(keep, box)
        total += reward
    return total.cpu()


def _mean_sd_se(x: torch.Tensor) -> dict[str, float]:
    x = x.double()
    sd = float(x.std()) if len(x) > 1 else 0.0
    return {"mean": float(x.mean()), "sd": sd, "se": sd / math.sqrt(len(x))}


def summarize(raw: dict[str, torch.Tensor], rules: Rules) -> dict:
    """Every statistic of the protocol from ``play_games`` output."""
    card, bonuses = raw["card"], raw["bonuses"]
    score = card_total(card, bonuses).double()
    n = len(score)
    upper_bonus = upper_sum(card) >= UPPER_BONUS_THRESHOLD
    in_play = list(rules.boxes)
    first_box = raw["fill_turn"].masked_fill(raw["fill_turn"] < 0, 1 << 30).argmin(-1)  # out-of-play: never
    fill = raw["fill_turn"]
    summary = {
        "games": n,
        "score": _mean_sd_se(score),
        "median": float(score.median()),
        "upper_bonus_rate": float(upper_bonus.double().mean()),
        "yahtzee_rate": float((card[:, 11] == 50).double().mean()),
        "yahtzee_bonus_rate": float((bonuses > 0).double().mean()),
        "yahtzee_bonus_mean": float(bonuses.double().mean()),
        "share_at_least_250": float((score >= 250).double().mean()),
        "p_score_at_least": {str(t): float((score >= t).double().mean()) for t in THRESHOLDS},
        "boxes": {
            BOX_NAMES[b]: {
                "mean": float(card[:, b].double().mean()),
                "var": float(card[:, b].double().var()) if n > 1 else 0.0,
                "median_fill_turn": float(fill[:, b].double().median()),
                "first_box_share": float((first_box == b).double().mean()),
                # the share of games that fill the box at each turn (index 0: the first), to set beside
                # logs that list the boxes used most at each turn
                "fill_turn_share": [float((fill[:, b] == t).double().mean()) for t in range(rules.n_turns)],
                # how often the box takes a zero: a box used as a dump (over-used, as the paper says of
                # four of a kind) is zeroed more often than the optimal player zeroes it
                "zero_share": float((card[:, b] == 0).double().mean()),
            }
            for b in in_play
        },
        "upper_bonus_mean": float(upper_bonus.double().mean() * 35),
        "yahtzee_bonus_points_mean": float(bonuses.double().mean() * 100),
    }
    if "regret_keep" in raw:
        rk, rb = raw["regret_keep"].double(), raw["regret_box"].double()
        summary["regret"] = {
            "keep_mean": float(rk.mean()),
            "box_mean": float(rb.mean()),
            "per_decision_mean": float(torch.cat([rk.flatten(), rb.flatten()]).mean()),
            "per_game_mean": float(rk.sum(1).mean() + rb.sum(1).mean()),
            **regret_breakdown(rk, rb, raw["fill_turn"], rules),
        }
    return summary


def regret_breakdown(
    regret_keep: torch.Tensor, regret_box: torch.Tensor, fill_turn: torch.Tensor, rules: Rules
) -> dict[str, object]:
    """Where the points are lost, per game: by turn, and by the box each turn was scored in.

    Both break the same total down (each sums to the regret per game), so a run can see whether
    it loses its points early or late, and in the turns that chase Yahtzees or the upper bonus.
    """
    games, turns = regret_box.shape
    per_turn = regret_keep.view(games, turns, N_ROLLS - 1).sum(-1) + regret_box  # (games, turns)
    by_box = {}
    for b in rules.boxes:
        filled = fill_turn[:, b]
        lost = per_turn.gather(1, filled.clamp(min=0).unsqueeze(1)).squeeze(1) * (filled >= 0)
        by_box[BOX_NAMES[b]] = float(lost.sum() / games)
    return {"by_turn": [float(x) for x in per_turn.mean(0)], "by_box": by_box}


def evaluate(
    player: Player,
    games: int = 10_000,
    seed: int = 0,
    rules: Rules | None = None,
    device: torch.device | str = "cpu",
    with_optimal: bool = True,
    regret: bool = True,
    progress: bool = False,
    optimal_factory: Callable[[], Player] | None = None,
) -> dict:
    """Summary of ``player`` over ``games`` seeded games, with the optimal player's alongside."""
    rules = rules or Rules()
    oracle = TurnOracle(rules, load_or_solve(rules, device, progress=progress)) if (regret or with_optimal) else None
    name = getattr(player, "name", type(player).__name__)
    raw = play_games(player, games, seed, rules, device, regret_oracle=oracle if regret else None, progress=progress)
    result = {"rules": rules.to_dict(), "seed": seed, "agent": name, "summary": summarize(raw, rules)}
    result["scores"] = {name: card_total(raw["card"], raw["bonuses"])}  # tensors: for plots, not for JSON
    if with_optimal:
        from ..players import OptimalPlayer

        same = optimal_factory is None and isinstance(player, OptimalPlayer) and player.oracle.table is oracle.table
        if not same:  # the optimal player on the same seed would replay exactly the games above
            optimal = optimal_factory() if optimal_factory else OptimalPlayer(rules, table=oracle.table, device=device)
            raw = play_games(optimal, games, seed, rules, device, progress=progress)
        result["optimal"] = summarize(raw, rules)
        result["optimal"].pop("regret", None)
        result["optimal"]["exact_expected_score"] = oracle.table.optimum
        result["scores"]["optimal"] = card_total(raw["card"], raw["bonuses"])
    return result


def lookahead_comparison(
    player: Player, make_lookahead: Callable[[], Player], games: int, seed: int = 0, network: dict | None = None
) -> dict:
    """The look-ahead beside the network alone over the same ``games`` games: mean, regret per game,
    keep and box, by turn and by box, and the look-ahead's seconds per game on this machine (its
    table built). What an agent's card shows of its ``lookahead:``. ``network``: the network's
    ``evaluate`` summary on these games when the caller has it (not played again)."""
    start = time.perf_counter()
    lookahead = make_lookahead()
    play_games(lookahead, games, seed, player.rules)  # the same games, timed without the regret's oracle
    out = {"games": games, "seed": seed, "lookahead_seconds_per_game": round((time.perf_counter() - start) / games, 5)}
    for key, who, known in (("lookahead", lookahead, None), ("network", player, network)):
        start = time.perf_counter()
        s = known if known is not None else evaluate(who, games, seed, player.rules, with_optimal=False)["summary"]
        r = s["regret"]
        out[key] = {
            "mean": round(s["score"]["mean"], 2),
            "se": round(s["score"]["se"], 2),
            "regret_per_game": round(r["per_game_mean"], 3),
            "regret_per_keep": round(r["keep_mean"], 4),
            "regret_per_box": round(r["box_mean"], 4),
            "by_turn": [round(x, 3) for x in r["by_turn"]],
            "by_box": {k: round(v, 3) for k, v in r["by_box"].items()},
        }
        if known is None:
            out[key]["seconds_with_regret"] = round(time.perf_counter() - start, 1)
    return out


def to_json(result: dict) -> dict:
    """The result without its raw score tensors."""
    return {k: v for k, v in result.items() if k != "scores"}
