"""The model card: Hub metadata (``model-index``) and our evaluation table against the optimum.

The metadata follows what RL models on the Hub use (task ``reinforcement-learning``, metric
``mean_reward`` with value ``"mean +/- sd"``), so the Hub shows the mean score on the model page;
the median, bonus and Yahtzee rates and the regret come next as numeric metrics of the same
result, and the full table (side by side with the optimal player) goes in the body.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Protocol

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..digest import VALUE_DIGEST, WEIGHTS_DIGEST
from ..game import Rules
from .files import with_section

if TYPE_CHECKING:
    from ..nn import PolicyValueNet


class Described(Protocol):
    """What the card reads of an agent (a ``YahtzeeAgent``, which imports this module to write its card)."""

    net: PolicyValueNet
    training: dict | None
    evaluation: dict | None


def eval_results(rules_tag: str, summary: dict) -> list[EvalResult]:
    """One model-index result per rule variant: mean score +/- SD first, then the headline statistics."""
    metrics = [
        ("mean_reward", "mean score", f"{summary['score']['mean']:.2f} +/- {summary['score']['sd']:.2f}"),
        ("median_score", "median score", summary["median"]),
        ("upper_bonus_rate", "upper bonus rate", round(summary["upper_bonus_rate"], 4)),
        ("yahtzee_rate", "Yahtzee rate (box = 50)", round(summary["yahtzee_rate"], 4)),
    ]
    if "regret" in summary:
        metrics.append(
            ("regret_per_game", "regret per game against the optimum", round(summary["regret"]["per_game_mean"], 2))
        )
    return [
        EvalResult(
            task_type="reinforcement-learning",
            task_name="reinforcement-learning",
            dataset_type="yahtzee",
            dataset_name=f"Yahtzee solitaire ({rules_tag})",
            dataset_config=rules_tag,
            metric_type=metric_type,
            metric_name=metric_name,
            metric_value=value,
        )
        for metric_type, metric_name, value in metrics
    ]


def _training_lines(training: dict) -> list[str]:
    """How the agent was trained, in words, before the raw JSON."""
    facts = [
        ("algorithm", "Algorithm"),
        ("member", "Ensemble member"),
        ("command", "Training command"),
        ("games", "Training games"),
        ("wall_clock", "Wall clock"),
        ("hardware", "Hardware"),
        ("devices", "Devices"),
        ("config_file", "Training config (next to the weights)"),
    ]
    lines = []
    for key, label in facts:
        value = training.get(key)
        if value is not None:
            lines.append(f"* {label}: {value:,}" if type(value) is int else f"* {label}: {value}")
    if stages := training.get("stages"):
        lines += ["", *stage_table(stages)]
    return [*lines, ""] if lines else []


def stage_table(stages: list[dict]) -> list[str]:
    """The expert-iteration loop's stages (``yahtzee-lightning expert-iteration``): the network alone
    and its search on the held-back games after each, the value's held-out error, the minutes."""
    first = stages[0]
    lines = [
        f"The loop's stages (stage 0: self-play; then taught by the search), on {first['eval_games']:,} held-back "
        f"games (seed {first['eval_seed']}), scores only (no table read):",
        "",
        "| stage | network alone | with its search | value's held-out error (points^2) | minutes |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in stages:
        error = "-" if row.get("value_error") is None else f"{row['value_error']:.3f}"
        net, search = row["network"], row["search"]
        lines.append(
            f"| {row['stage']} | {net['mean']:.2f} +- {net['se']:.2f} | {search['mean']:.2f} +- {search['se']:.2f} "
            f"| {error} | {row['stage_seconds'] / 60:.1f} |"
        )
    return lines


TURN_VALUE_HEADING = "## Turn-start value (for `lookahead:`)"


def turn_value_lines(entry: dict) -> list[str]:
    """The card's section on an agent's turn-start value: what it is, how it was learned, its
    digest, and, as a diagnostic only, how far it is from the exact values."""
    info = {k: v for k, v in entry.items() if k not in ("file", "network", VALUE_DIGEST)}
    # An agent taught by a search (expert iteration) carries its teacher's value, learned from the teacher's games.
    games = "the games of the agent whose search taught this one" if "taught_by" in info else "this agent's own games"
    if "games_from" in info:
        games += f" (`{info['games_from']}`)" if "taught_by" in info else f": those of `{info['games_from']}`"
    lines = [
        TURN_VALUE_HEADING,
        "",
        f"`{entry['file']}` holds the expected points still to come from a card at the start of a turn, learned "
        f"from {games} (no solver table and no oracle label in any loss). "
        "`lookahead:<this folder>` plays every keep and box by the exact expectation over the rest of the "
        "turn with this value at the turn's end.",
        "",
    ]
    for key, label in (
        ("method", "Learned by"),
        ("command", "Command"),
        ("seconds", "Seconds"),
        ("machine", "Machine"),
    ):
        if key in info:
            lines.append(f"* {label}: {info[key]}")
    if before := info.get("warm_start_from"):  # the value the rounds went on from, and how it was learned
        lines.append(
            f"* Its rounds went on from the value learned by: {before.get('method')} "
            f"(`{before.get('command')}`, {before.get('seconds')} s)"
        )
    if d := info.get("diagnostic"):
        lines.append(
            f"* Against {d['against']}: bias {d['bias']:+.2f}, RMSE {d['rmse']:.2f} points over the {d['states']}; "
            f"the empty card {d['empty_card']:.2f} (exact {d['optimum']:.2f})"
        )
    if e := info.get("evaluation"):
        lines += ["", *lookahead_table(e)]
    digest = f"{VALUE_DIGEST}: `{entry[VALUE_DIGEST]}` (checked on load)"
    rest = {k: v for k, v in info.items() if k not in ("evaluation", "diagnostic", "machine")}
    lines += ["", "```json", json.dumps(rest, indent=2), "```", "", digest]
    return lines


def lookahead_table(e: dict) -> list[str]:
    """The look-ahead player beside the network alone on the same games: score, regret per
    decision, by turn and by the box each turn was scored in (``turn-value --evaluate``)."""
    la, net = e["lookahead"], e["network"]
    rows = [
        ("mean score", f"{la['mean']:.2f} +- {la['se']:.2f}", f"{net['mean']:.2f} +- {net['se']:.2f}"),
        ("regret per game", f"{la['regret_per_game']:.2f}", f"{net['regret_per_game']:.2f}"),
        ("regret per keep", f"{la['regret_per_keep']:.4f}", f"{net['regret_per_keep']:.4f}"),
        ("regret per box", f"{la['regret_per_box']:.4f}", f"{net['regret_per_box']:.4f}"),
        *(
            (f"regret in turn {t + 1}", f"{a:.3f}", f"{b:.3f}")
            for t, (a, b) in enumerate(zip(la["by_turn"], net["by_turn"], strict=True))
        ),
        *((f"regret scoring {box}", f"{la['by_box'][box]:.3f}", f"{net['by_box'][box]:.3f}") for box in la["by_box"]),
    ]
    return [
        f"{e['games']:,} games, seed {e['seed']} (the look-ahead: "
        f"{e['lookahead_seconds_per_game'] * 1000:.1f} ms a game on this machine, building its table included):",
        "",
        "| statistic | lookahead | network alone |",
        "|---|---:|---:|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
    ]


def with_turn_value_section(card: str, entry: dict) -> str:
    """``card`` with its turn-start value section replaced (or added at the end), the rest kept."""
    return with_section(card, TURN_VALUE_HEADING, "\n".join(turn_value_lines(entry)))


def model_card(agent: Described) -> ModelCard:
    """The card for ``agent``: metadata from its evaluation, body from its training info and config."""
    from ..evaluation.report import format_markdown

    training = agent.training or {}
    name = training.get("name", "yahtzee-agent")
    evaluation = agent.evaluation
    rules = Rules.from_dict(agent.net.config["rules"])
    results = eval_results(rules.tag(), evaluation["summary"]) if evaluation and "summary" in evaluation else None
    data = ModelCardData(
        library_name="yahtzee_lightning",
        tags=[
            "reinforcement-learning",
            "deep-reinforcement-learning",
            "yahtzee",
            "torchrl",
            "lightning",
            str(training.get("algorithm", "rl")).lower(),
        ],
        model_name=name,
        eval_results=results,
    )
    where = training.get("repo_id", "<repo id or folder>")
    lines = [
        f"# {name}",
        "",
        f"A Yahtzee agent trained with yahtzee_lightning ({training.get('algorithm', 'unknown algorithm')}).",
        "",
        "```python",
        "from yahtzee_lightning.hub import YahtzeeAgent",
        "",
        f'agent = YahtzeeAgent.from_pretrained("{where}")',
        "player = agent.player()  # a yahtzee_lightning Player",
        "```",
        "",
        f"or `yahtzee-lightning evaluate --agent {where} --games 10000`.",
        "",
        "## Training",
        "",
        *_training_lines(training),
        "```json",
        json.dumps(training, indent=2),
        "```",
        "",
        "## Network",
        "",
        "```json",
        json.dumps(agent.net.config, indent=2),
        "```",
        "",
        f"{WEIGHTS_DIGEST}: `{agent.config[WEIGHTS_DIGEST]}` (checked on load)",
    ]
    if "turn_value" in agent.config:
        lines += ["", *turn_value_lines(agent.config["turn_value"])]
    if evaluation is not None and "matches" in evaluation:  # a two-player agent
        from ..evaluation.match import format_match

        table = format_match(evaluation["matches"])
        lines += ["", "## Matches against the optimal solitaire player", "", "```", table, "```"]
    elif evaluation is not None:
        table = format_markdown(evaluation).split("\n", 2)[2]  # drop the report's own title
        lines += ["", "## Evaluation against the exact optimum", "", table]
    return ModelCard.from_template(data, template_str="---\n{{ card_data }}\n---\n\n" + "\n".join(lines) + "\n")
