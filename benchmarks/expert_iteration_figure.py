"""Expert iteration's regret per stage: the network alone and with its search, beside the
exact-teacher distilled agents (the ceiling at their widths), from a JSON of measured evaluations.

    python benchmarks/expert_iteration_figure.py benchmarks/results/2026-11-27-expert-iteration.json \
        docs/figures/expert_iteration_regret.png

The JSON: ``{"stages": [{"stage": 0, "network": R, "search": R or null}, ...], "relearned":
[{"stage": k, "search": R, "label": ...}], "ceilings": [{"name": ..., "regret": R, "games": N}],
"games": N, "seed": S}`` (regret per game against the optimum, from ``yahtzee-lightning evaluate
--json``'s ``summary.regret.per_game_mean``; ``relearned``: the search with a value learned again
from that stage's own games; ``further``: ``[{"search": R, "label": ...}]``, the search with a
value whose TD rounds went on, the same at every stage since the search reads only the value).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from yahtzee_lightning.study.drawing.canvas import new_figure, save_figure


def draw(data: dict, out: Path) -> None:
    fig, ax = new_figure(7, 4.2)
    stages = data["stages"]
    x = [s["stage"] for s in stages]
    ax.plot(x, [s["network"] for s in stages], "o-", color="tab:blue", label="network alone")
    searched = [(s["stage"], s["search"]) for s in stages if s.get("search") is not None]
    if searched:
        label = data.get("search_label", "with its search (lookahead:, the value it carries)")
        ax.plot(*zip(*searched, strict=True), "s--", color="tab:orange", label=label)
    # The search reads the value, not the network: a value learned further searches alike at every stage.
    for value in data.get("further", []):
        ax.plot(x, [value["search"]] * len(x), "*-", color="tab:green", label=value["label"])
    for point, marker in zip(data.get("relearned", []), "^vD", strict=False):
        ax.plot([point["stage"]], [point["search"]], marker, color="tab:red", linestyle="", label=point["label"])
    for ceiling, style in zip(data.get("ceilings", []), (":", "-."), strict=False):
        label = f"{ceiling['name']} (exact teacher, {ceiling['games']:,} games)"
        ax.axhline(ceiling["regret"], color="gray", linestyle=style, label=label)
    ax.set_xticks(x, [str(v) for v in x])
    ax.set_xlabel("expert-iteration stage (0: the self-play agent it starts from)")
    ax.set_ylabel("regret per game (expected points lost)")
    ax.set_ylim(0, 1.8 * max(s["network"] for s in stages))  # room above the curves for the legend
    ax.set_title(f"Protocol games: {data['games']:,}, seed {data['seed']}")
    ax.legend(fontsize=8, loc="upper right")
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    draw(json.loads(args.data.read_text()), args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
