"""``yahtzee-lightning agents``: the agents shipped with the package, found by name from any folder
(``evaluate --agent NAME``, ``play --agent NAME``, ``YahtzeeAgent.from_pretrained("NAME")``), with
their size and their score against the optimum on the same games, as their cards record them."""

from __future__ import annotations

from typing import Any

from .args import VerbParser, plain


def _number(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_agents(summaries: list[dict[str, Any]]) -> str:
    """The table ``agents`` prints: one row an agent, best mean score first."""
    head = f"{'agent':<28}{'parameters':>11}{'size':>9}{'mean':>9}{'optimum':>9}{'regret/game':>13}{'games':>9}  how"
    rows = [head]
    for s in sorted(summaries, key=lambda s: (-(s["score"] or 0), s["name"])):
        how = (s["algorithm"] or "-") + (" (+ turn-start value: lookahead:NAME)" if s["turn_value"] else "")
        rows.append(
            f"{s['name']:<28}{s['parameters']:>11,}{s['bytes'] / 1024:>6.0f} KB"
            f"{_number(s['score'], '.2f'):>9}{_number(s['optimal'], '.2f'):>9}"
            f"{_number(s['regret'], '.2f'):>13}{_number(s['games'], ','):>9}  {how}"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(prog="yahtzee-lightning agents", description=plain(__doc__))
    parser.parse_args(argv)
    from ..shipped import agent_names, agent_summary

    names = agent_names()
    if not names:
        print("no shipped agents found (neither a checkout's checkpoints/ nor the installed package's copy)")
        return 1
    print(format_agents([agent_summary(name) for name in names]))
    print(
        "mean and optimum: the agent and the exact optimum on the same games, from each agent's card.\n"
        'use one by name: yahtzee-lightning evaluate --agent NAME, or YahtzeeAgent.from_pretrained("NAME")'
    )
    return 0
