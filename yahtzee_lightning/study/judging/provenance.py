"""What a report says first about how its runs were made: the networks and budget against the paper's,
and the code each session trained with (its commit, whether the tree was clean), naming the sessions
trained before a change that alters results."""

from __future__ import annotations

import calendar
import time

from ..records import git
from .context import Context
from .scale import PAPER_GAMES, PAPER_NETWORK, PAPER_TEXT, network_of, smaller_network

#: Commits that changed what a run learns: runs trained before one of them are named in the report.
RESULT_CHANGES = {
    "e80db154166ef680cf9f2273500667acf2242a36": "a member's numbers no longer depend on the pack it trains in",
}


def provenance_lines(runs: list[dict]) -> list[str]:
    """The commits a study's sessions trained with (and whether their trees were clean), and which
    sessions trained before a change that alters results (by ancestry where the session recorded its
    commit, else by its start against the change's commit time)."""
    commits: dict[str, list[str]] = {}
    for r in runs:
        key = r.get("commit") or "not recorded (a session before sessions recorded their commit)"
        clean = {True: "clean tree", False: "uncommitted changes", None: "tree state unknown"}[r.get("clean")]
        commits.setdefault(key, []).append(clean)

    def states(v: list[str]) -> str:
        counts = {x: v.count(x) for x in sorted(set(v))}
        if len(counts) == 1:
            return f"{len(v)} session{'s' if len(v) > 1 else ''}, {v[0]}"
        return f"{len(v)} sessions: " + ", ".join(f"{n} {x}" for x, n in counts.items())

    lines = [
        "Code: the sessions trained with "
        + "; ".join(f"`{c[:10]}` ({states(v)})" if len(c) == 40 else c for c, v in commits.items())
        + "."
    ]
    moved = [r for r in runs if isinstance(r.get("source_at_end"), dict)]
    if moved:
        lines.append(
            "The checkout changed while a session ran (trials that started later imported the new code): "
            + "; ".join(f"{r['started']}, to `{str(r['source_at_end'].get('commit'))[:10]}`" for r in moved)
            + "."
        )
    for change, what in RESULT_CHANGES.items():
        when = git("show", "-s", "--format=%ct", change)
        before = []
        for r in runs:
            if r.get("commit"):
                older = git("merge-base", "--is-ancestor", change, r["commit"]) is None
            elif when is not None:
                older = calendar.timegm(time.strptime(r["started"], "%Y-%m-%d %H:%M:%S UTC")) < int(when)
            else:
                continue
            if older:
                before.append(r["started"])
        if before:
            lines.append(
                f"Trained before `{change[:7]}` ({what}): {len(before)} of {len(runs)} sessions "
                f"({before[0]} to {before[-1]}); their numbers may differ from this code's."
            )
    return [*lines, ""]


def setting_lines(ctx: Context) -> list[str]:
    """The report's first lines: the networks and budgets the full-game cells trained with, so that a
    reader sees at once where they differ from the paper's agent (scale.py: its 600 x 3, 1,000,000 games)."""
    nets, budgets = set(), set()
    for cell in ctx.study.cells.values():
        net = network_of(cell) if cell.task == "full_game" else None
        if net is not None:
            nets.add(net)
            budgets.add(cell.total_games)
    if not nets:
        return []
    smaller = [smaller_network(n) for n in nets]
    if all(n == PAPER_NETWORK for n in nets):
        size = ""
    elif all(smaller):
        size = f": smaller than the paper's ({PAPER_TEXT})"
    elif any(smaller):
        size = f": smaller than the paper's ({PAPER_TEXT}) in some cells"
    else:
        size = f": as large as the paper's ({PAPER_TEXT}) or larger"
    same = "the same for every cell" if len(nets) == 1 else "varied only where an ablation varies them"
    shapes = " / ".join(n.text() for n in sorted(nets))
    games = " / ".join(f"{b:,}" for b in sorted(budgets))
    fewer = "" if min(budgets) >= PAPER_GAMES else ": fewer" if max(budgets) < PAPER_GAMES else ": fewer in some cells"
    return [
        f"**Networks of the full-game cells: {shapes}{size}, {same}. "
        f"Budget: {games} games a run (the paper's best agent: {PAPER_GAMES:,}){fewer}.**",
        "",
    ]
