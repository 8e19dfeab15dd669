"""Ablations whose axes are factors: width x depth analysed as a factorial (main effects averaged over
the other axis, their interaction) and an ordered axis by its linear trend, as contrasts of cell means
over seeds (``stats.contrast``), for ``claims.md`` (F7, the interaction plot, is drawn by
``drawing/factorial_figure.py``)."""

from __future__ import annotations

from .context import Context
from .stats import Comparison, contrast

EXPLORATORY = "exploratory: "
RESOLVED_NOT = "not resolved at this n"
#: A comparison one of whose cells has no finished seed yet (a study still running).
PENDING = "pending: not judged"
#: Axis values read as ordered where they are not numbers (the entropy regimes).
ORDERED_LABELS = ("low", "baseline", "high")
FACTORIAL_METRICS = (("mean_score", "final mean score"), ("upper_bonus_rate", "upper-bonus rate, points of %"))


def verdict(c: Comparison, text: str) -> str:
    """An exploratory comparison's verdict: never more than exploratory."""
    return f"{EXPLORATORY}**{text}**" if c.resolved else f"{EXPLORATORY}{RESOLVED_NOT}"


def _ordered(labels: list[str]) -> bool:
    """Whether an axis's values are ordered as listed (numbers, or low / baseline / high)."""
    try:
        [float(v) for v in labels]
        return True
    except ValueError:
        return set(labels) <= set(ORDERED_LABELS)


def factorial_claims(ctx: Context, ablation: str) -> list[list[str]]:
    """An ablation's axes as a factorial: with two axes, each axis's main effect (each value against
    the first, averaged over the other axis's values) and their interaction (how much the second
    axis's effect, last value against first, changes between the first axis's values); with one
    ordered axis of three values or more, its linear trend (the change per step of the axis as listed); with one
    axis of two values, their difference in the upper-bonus rate (the score's is a ranked pair). Contrasts
    of cell means over seeds, for the final mean score and the upper-bonus rate."""
    ab = ctx.study.ablations[ablation]
    axes = [a for a in ab.axes if len({labels[a] for _, labels in ab.cells}) > 1]
    values = {a: list(dict.fromkeys(labels[a] for _, labels in ab.cells)) for a in axes}
    cells = {tuple(labels[a] for a in axes): cid for cid, labels in ab.cells}
    contrasts: list[tuple[str, dict[tuple, float]]] = []
    if len(axes) == 2:
        for i, axis in enumerate(axes):
            first, other = values[axis][0], values[axes[1 - i]]
            for v in values[axis][1:]:
                coefs: dict[tuple, float] = {}
                for o in other:
                    coefs[(v, o) if i == 0 else (o, v)] = 1 / len(other)
                    coefs[(first, o) if i == 0 else (o, first)] = -1 / len(other)
                contrasts.append((f"main effect of {_short(axis)} {v} vs {first}", coefs))
        a, b = values[axes[0]], values[axes[1]]
        for v in a[1:]:
            coefs = {(v, b[-1]): 1.0, (v, b[0]): -1.0, (a[0], b[-1]): -1.0, (a[0], b[0]): 1.0}
            name = (
                f"interaction: effect of {_short(axes[1])} {b[-1]} vs {b[0]} at {_short(axes[0])} {v} minus at {a[0]}"
            )
            contrasts.append((name, coefs))
    elif len(axes) == 1 and len(values[axes[0]]) >= 3 and _ordered(values[axes[0]]):
        # The least-squares slope on the values' places in the list: the change per step of the axis.
        k = len(values[axes[0]])
        ss = sum((i - (k - 1) / 2) ** 2 for i in range(k))
        coefs = {(label,): (i - (k - 1) / 2) / ss for i, label in enumerate(values[axes[0]])}
        contrasts.append((f"linear trend over {_short(axes[0])} {', '.join(values[axes[0]])} (per step)", coefs))
    elif len(axes) == 1 and len(values[axes[0]]) == 2:
        first, second = values[axes[0]]
        contrasts.append((f"{_short(axes[0])} {second} vs {first}", {(second,): 1.0, (first,): -1.0}))
    t = ctx.table
    done = t[(t["stage"] == "final") & (t["status"] == "done") & t["seed"].isin(ab.seeds)]
    rows = []
    for metric, unit in FACTORIAL_METRICS:
        if metric not in done:
            continue
        scale = 100.0 if metric.endswith("_rate") else 1.0
        data = {k: scale * done.loc[done["cell"] == cid, metric].to_numpy() for k, cid in cells.items()}
        for name, coefs in contrasts:
            if metric == "mean_score" and len(coefs) == 2:
                continue  # two cells' scores: a ranked pair of ordering_claims already
            what = f"{unit}: {name} (factorial)"
            if any(not len(data.get(k, ())) for k, w in coefs.items() if w):  # a cell it needs has no finished seed
                rows.append([ablation, what, "a cell without a finished seed yet", PENDING])
                continue
            c = contrast(list(data.values()), [coefs.get(k, 0.0) for k in data])
            rows.append([ablation, what, c.text(), verdict(c, "an effect")])
    return rows


def _short(axis: str) -> str:
    return axis.rsplit(".", 1)[-1]
