"""One game at a time: our Gymnasium env against pyhtzee (the engine under gym-yahtzee), side by side.

Both play the same number of whole games with a uniformly random legal action at every step,
drawn by the same ``random.Random``, in this process, in alternating rounds (so that the load of
the machine falls on both alike). Ours: ``YahtzeeGymEnv.step`` returning the numpy observation
and mask (the legal actions read from the mask), directly and through ``gymnasium.make`` (its
default wrappers). pyhtzee: ``get_possible_actions`` and ``take_action``, the engine itself (it
builds no observation). Reported: steps per second and the ratio to pyhtzee's (PyPI,
``pip install -e ".[bench]"``).

    python benchmarks/bench_gym.py [--games 2000] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium
import numpy as np

import yahtzee_lightning  # noqa: F401  (registers the ids)
from yahtzee_lightning.gym.single import YahtzeeGymEnv

sys.path.insert(0, str(Path(__file__).parent))
from _common import write_json  # noqa: E402


def play_ours(env: gymnasium.Env, games: int, seed: int) -> tuple[int, float]:
    """Steps and total score of ``games`` random legal games."""
    rng, steps, total = random.Random(seed), 0, 0.0
    for g in range(games):
        obs, _ = env.reset(seed=seed + g)
        done = False
        while not done:
            legal = np.flatnonzero(obs["action_mask"]).tolist()
            obs, reward, done, _, _ = env.step(rng.choice(legal))
            steps += 1
            total += reward
    return steps, total


def play_pyhtzee(games: int, seed: int) -> tuple[int, float]:
    from pyhtzee import Pyhtzee

    rng, steps, total = random.Random(seed), 0, 0.0
    for g in range(games):
        game = Pyhtzee(seed=seed + g + 1)
        while not game.is_finished():
            total += game.take_action(rng.choice(game.get_possible_actions()))
            steps += 1
    return steps, total


def timed(play: Callable[[], tuple[int, float]]) -> tuple[int, float, float]:
    start = time.perf_counter()
    steps, total = play()
    return steps, total, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000, help="games per system and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (the table sums them)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    direct = YahtzeeGymEnv()
    made = gymnasium.make("yahtzee_lightning/Yahtzee-v0")
    systems = {
        "pyhtzee (take_action)": lambda s: play_pyhtzee(args.games, s),
        "ours: YahtzeeGymEnv.step": lambda s: play_ours(direct, args.games, s),
        'ours: gymnasium.make("yahtzee_lightning/Yahtzee-v0")': lambda s: play_ours(made, args.games, s),
    }
    for play in systems.values():
        play(10_000)  # warm-up: tables, imports
    sums = {name: [0, 0.0, 0.0] for name in systems}
    for r in range(args.rounds):
        for name, play in systems.items():
            steps, total, seconds = timed(lambda play=play, r=r: play(r * args.games))
            for i, v in enumerate((steps, total, seconds)):
                sums[name][i] += v
    base = sums["pyhtzee (take_action)"][0] / sums["pyhtzee (take_action)"][2]
    rows = []
    print(f"{args.games} games x {args.rounds} rounds each, uniformly random legal actions\n")
    print("| system | steps/s | vs pyhtzee | mean score |\n|---|---:|---:|---:|")
    for name, (steps, total, seconds) in sums.items():
        rate = steps / seconds
        games = args.games * args.rounds
        rows.append({"system": name, "steps_per_s": rate, "ratio": rate / base, "mean_score": total / games})
        print(f"| {name} | {rate:,.0f} | {rate / base:.2f}x | {total / games:.1f} |")
    write_json(args.json, "gym", rows, games=args.games, rounds=args.rounds)


if __name__ == "__main__":
    main()
