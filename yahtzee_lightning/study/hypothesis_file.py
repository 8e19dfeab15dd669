"""The ``hypotheses`` of a study file: the claims a study tests, written down before its runs.

Each names a cell of an ablation (by its label, as ``study check`` prints it), what it is compared
with (another cell, the greedy or optimal player on each seed's own final games, or a number), a
member's final metric, the direction the claim predicts, and the statistic (the mean over seeds, or
their spread). A hypothesis naming a cell, an ablation or a metric the study lacks is refused in one
line before anything runs. ``.hypotheses`` tests them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import PLAN, read_record

HYPOTHESIS_KEYS = {"claim", "ablation", "metric", "compare", "direction", "statistic", "scale"}
#: ``scale: paper``: a claim about the paper's own agent (600 x 3, 1,000,000 games). A smaller cell
#: cannot contradict it: there a result against it reads "not testable at this scale".
SCALES = ("any", "paper")
DIRECTIONS = ("greater", "less", "either", "equal")
STATISTICS = ("mean", "spread")
#: What a hypothesis may compare a cell with besides another cell: a reference player, played on each
#: seed's own final-evaluation games (the difference is paired per seed).
REFERENCE_PLAYERS = ("greedy", "optimal")
#: A member's final quantities (the ``final`` rows of ``results.csv``) a hypothesis may name; per-box
#: columns add ``/BOX``, ``p_ge_N`` a score threshold, ``regret_by_turn/T`` a turn.
FINAL_METRICS = (
    "mean_score",
    "median",
    "sd",
    "upper_bonus_rate",
    "yahtzee_rate",
    "yahtzee_bonus_rate",
    "share_at_least_250",
    "upper_bonus_mean",
    "regret_per_game",
    "regret_keep",
    "regret_box",
    "single_turn_score",
    "explained_variance",
    "entropy_roll",
    "entropy_score",
)
BOX_METRICS = ("box_mean", "box_zero", "first_box", "fill_turn", "regret_by_box")
#: Those the reference players have on each seed's games (``reference.json``, ``optimal/...`` columns).
REFERENCE_METRICS = (
    "mean_score",
    "median",
    "upper_bonus_rate",
    "yahtzee_rate",
    "share_at_least_250",
    "box_mean",
    "box_zero",
    "first_box",
    "fill_share",
)


@dataclass
class Hypothesis:
    """A claim written down before the runs, with its direction: ``compare[0]`` (a cell of
    ``ablation``, by its label) against ``compare[1]`` (another cell, a reference player on each
    seed's own games, or a number), on a member's final ``metric``. ``direction``: the sign the claim
    predicts for the first minus the second (``either``: the sources disagree; ``equal``: the claim
    is a value, which a difference either way contradicts); ``statistic``:
    ``mean`` over seeds, or ``spread`` (their SD: which of two cells varies more from seed to seed)."""

    id: str
    claim: str
    ablation: str
    metric: str
    compare: list[Any]
    direction: str = "greater"
    statistic: str = "mean"
    scale: str = "any"

    def against(self) -> str:
        """What the second term is: ``cell``, ``player`` (greedy or optimal), ``value``, or ``earlier``
        (a cell of an earlier study folder: ``{study: FOLDER, cell: LABEL}``)."""
        other = self.compare[1]
        if isinstance(other, dict):
            return "earlier"
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return "value"
        return "player" if other in REFERENCE_PLAYERS else "cell"

    def second(self) -> str:
        """The second term as text (``cell`` of an earlier study: ``FOLDER: cell``)."""
        other = self.compare[1]
        return f"{other['study']}: {other['cell']}" if isinstance(other, dict) else str(other)


EARLIER_KEYS = {"study", "cell", "ablation"}


def earlier_folder(folder: str, anchor: Path) -> Path:
    """An earlier study folder named in a hypothesis: as given, else under one of ``anchor``'s
    parents (a study file's or a study folder's: the repository the folders are committed in)."""
    for base in (Path.cwd(), *Path(anchor).resolve().parents):
        if (base / folder / PLAN).is_file():
            return base / folder
    raise FileNotFoundError(folder)


def cell_label(labels: dict[str, str]) -> str:
    """A cell's name in its ablation: ``d_h=64, n_layers=2`` for config keys, the value alone for a
    config file or a named axis (``low``); ``base`` without axes. Hypotheses name cells by it."""
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" if "." in k else v for k, v in labels.items()) or "base"


def metric_known(metric: str) -> bool:
    """Whether ``metric`` is a column of a member's final row in ``results.csv``."""
    base, _, rest = metric.partition("/")
    if not rest:
        return base in FINAL_METRICS or re.fullmatch(r"p_ge_\d+", base) is not None
    if base == "regret_by_turn":
        return rest.isdigit() and 1 <= int(rest) <= 13
    from ..game import BOX_NAMES

    return base in BOX_METRICS and rest in BOX_NAMES


def parse_hypotheses(raw: dict[str, Any], ablations: dict[str, Any], reader: Any) -> dict[str, Hypothesis]:
    """The study file's ``hypotheses``, each naming cells and a metric the study has, else one line
    naming the key (``reader``: the study file's reader, its ``mapping`` and ``fail``)."""
    out = {}
    for hid, h in raw.items():
        key = f"hypotheses.{hid}"
        h = reader.mapping(h, key, HYPOTHESIS_KEYS)
        for need in ("claim", "ablation", "metric", "compare"):
            if need not in h:
                reader.fail(f"{key}.{need}", "missing; a hypothesis needs claim, ablation, metric and compare")
        name = h["ablation"]
        if name not in ablations:
            reader.fail(f"{key}.ablation", f"no ablation {name!r}; this study has {', '.join(ablations)}")
        ab = ablations[name]
        if ab.scheduler:
            reader.fail(
                f"{key}.ablation", f"ablation {name!r} has a scheduler: its cells are not compared as fixed settings"
            )
        metric = h["metric"]
        if not isinstance(metric, str) or not metric_known(metric):
            reader.fail(
                f"{key}.metric",
                f"no metric {metric!r} in a member's final results (e.g. {', '.join(FINAL_METRICS[:4])})",
            )
        compare = h["compare"]
        if not isinstance(compare, list) or len(compare) != 2:
            reader.fail(f"{key}.compare", f"must be [cell, cell | greedy | optimal | number], got {compare!r}")
        labels = [cell_label(lab) for _, lab in ab.cells]
        if compare[0] not in labels:
            reader.fail(
                f"{key}.compare", f"no cell {compare[0]!r} in ablation {name!r}; its cells: {', '.join(labels)}"
            )
        hyp = Hypothesis(hid, str(h["claim"]), name, metric, list(compare), h.get("direction", "greater"))
        hyp.statistic = h.get("statistic", "mean")
        hyp.scale = h.get("scale", "any")
        if hyp.scale not in SCALES:
            reader.fail(f"{key}.scale", f"must be one of {', '.join(SCALES)}, got {hyp.scale!r}")
        if hyp.against() == "earlier":
            check_earlier(hyp, key, reader)
        if hyp.against() == "cell" and compare[1] not in labels:
            reader.fail(
                f"{key}.compare",
                f"no cell {compare[1]!r} in ablation {name!r} (nor a player: greedy, optimal; nor a number); "
                f"its cells: {', '.join(labels)}",
            )
        if hyp.against() == "player" and metric.partition("/")[0] not in REFERENCE_METRICS:
            reader.fail(
                f"{key}.metric", f"the {compare[1]} player has no {metric!r}; it has {', '.join(REFERENCE_METRICS)}"
            )
        if hyp.direction not in DIRECTIONS:
            reader.fail(f"{key}.direction", f"must be one of {', '.join(DIRECTIONS)}, got {hyp.direction!r}")
        if hyp.statistic not in STATISTICS:
            reader.fail(f"{key}.statistic", f"must be one of {', '.join(STATISTICS)}, got {hyp.statistic!r}")
        if hyp.statistic == "spread" and hyp.against() not in ("cell", "earlier"):
            reader.fail(f"{key}.statistic", "a spread over seeds is compared between two cells only")
        out[str(hid)] = hyp
    return out


def check_earlier(hyp: Hypothesis, key: str, reader: Any) -> None:
    """A comparison with a cell of an earlier study folder (``{study: FOLDER, cell: LABEL, ablation:
    NAME}``, the ablation by default the hypothesis's own): the folder must hold a study with that
    cell. Its members are compared as they were trained (an earlier implementation, say)."""
    other = reader.mapping(hyp.compare[1], f"{key}.compare[1]", EARLIER_KEYS)
    if not isinstance(other.get("study"), str) or not isinstance(other.get("cell"), str):
        reader.fail(f"{key}.compare[1]", f"an earlier study's cell is {{study: FOLDER, cell: LABEL}}, got {other!r}")
    try:
        folder = earlier_folder(other["study"], Path(reader.path))
    except FileNotFoundError:
        reader.fail(f"{key}.compare[1]", f"no study folder {other['study']!r} (it holds no {PLAN})")
    plan = read_record(folder / PLAN, "it is not read")
    ablations = ((plan or {}).get("study") or {}).get("ablations") or {}
    ablation = other.get("ablation", hyp.ablation)
    if ablation not in ablations:
        reader.fail(f"{key}.compare[1]", f"{other['study']} has no ablation {ablation!r} (or its {PLAN} is damaged)")
    labels = [cell_label(lab) for _, lab in ablations[ablation]["cells"]]
    if other["cell"] not in labels:
        reader.fail(
            f"{key}.compare[1]", f"no cell {other['cell']!r} in {other['study']}; its cells: {', '.join(labels)}"
        )
