"""Chained cells: an ablation whose agents start from another cell's trained agents (transfer, fine-tuning).

An ablation with ``start_from`` trains each seed of its cells from the final weights of the same
seed in one cell of an ablation above it in the study file::

    transfer:
      base: conf/reinforce_cpu.yaml
      start_from: {ablation: single_turn, cell: {lr: 0.001}}   # that ablation's cell, by its labels

A cell is picked by its label on each of the source ablation's axes (an axis named by its full key or
its last part; an ablation of one cell needs no ``cell``). What it learned transfers as ``init_from``
does: the network's weights, features the source lacks starting at zero weight.

Chained trials are an experiment of their own, run after every other (their sources must be done),
one seed a trial (each seed starts from its own source, which an ensemble's one ``init_from`` could
not give). Before training, a trial exports its source's member as an agent folder in its run folder
(``start/``), and starts from that: what a run started from stays beside what it learned.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .fit_config import model_class, value_label

START = "start"  # a chained run folder's copy of the agent it started from
#: The key that makes a chained cell's id differ from the same settings trained from scratch.
ID_KEY = "(start_from)"


def resolve_start(
    raw: Any, key: str, ablations: dict[str, Any], seeds: list[int], fail: Callable[[str, str], None]
) -> str:
    """The id of the cell that ``start_from`` (as written at ``key``) names among ``ablations`` (the
    study's ``Ablation`` s read so far); ``fail(key, problem)`` otherwise."""
    if not isinstance(raw, dict) or not isinstance(raw.get("ablation"), str) or set(raw) - {"ablation", "cell"}:
        fail(key, f"must be a mapping {{ablation: NAME, cell: {{AXIS: VALUE}}}}, got {raw!r}")
    name, wanted = raw["ablation"], raw.get("cell") or {}
    source = ablations.get(name)
    if source is None:
        fail(f"{key}.ablation", f"no ablation {name!r} above this one (it must come earlier in the file)")
    if source.scheduler or source.start_from:
        fail(f"{key}.ablation", f"{name!r} is scheduled or chained itself; a chain starts from plain cells")
    if not isinstance(wanted, dict):
        fail(f"{key}.cell", f"must map the axes of {name!r} to a value each, got {wanted!r}")
    axes = {axis: axis for axis in source.axes} | {axis.rpartition(".")[2]: axis for axis in source.axes}
    if unknown := [a for a in wanted if a not in axes]:
        fail(f"{key}.cell.{unknown[0]}", f"{name!r} has no axis {unknown[0]!r}; its axes: {', '.join(source.axes)}")
    picked = [cid for cid, labels in source.cells if all(labels[axes[a]] == value_label(v) for a, v in wanted.items())]
    if len(picked) != 1:
        choices = "; ".join(", ".join(f"{a}={v}" for a, v in labels.items()) for _, labels in source.cells)
        fail(f"{key}.cell", f"names {len(picked)} of {name!r}'s cells, not one; its cells: {choices}")
    if missing := sorted(set(seeds) - set(source.seeds)):
        fail(key, f"seeds {missing} are not trained in {name!r} (its seeds: {source.seeds})")
    return picked[0]


def check_networks(source: Any, target: Any, key: str, fail: Callable[[str, str], None]) -> None:
    """``fail(key, ...)`` where a chained cell's network cannot take its source cell's weights
    (``source``, ``target``: the two cells' parsed fit configs): another width or roll head,
    features not appended after the source's. ``study check`` says so before the source trains."""
    from ..nn import PolicyValueNet, transfer_weights

    nets = []
    for config in (source, target):
        algorithm = model_class(config.model.class_path)
        args = config.model.init_args
        hparams = args.as_dict() if hasattr(args, "as_dict") else dict(args)
        if not hasattr(algorithm, "network_kwargs"):
            fail(key, f"{config.model.class_path} trains no policy/value network that a chain could start from")
        nets.append(PolicyValueNet(**algorithm.network_kwargs(hparams)))
    try:
        transfer_weights(*nets)
    except ValueError as e:
        fail(key, f"this ablation's network cannot start from the source cell's: {e}")


def chain_label(study: Any, cell_id: str, labels: dict[str, str]) -> str:
    """A cell's label (``hypothesis_file.cell_label``), and a chained cell without axes named by where
    it starts (``fine-tuned from single-turn agents``), not ``base``: for legends and progress lines."""
    from .hypothesis_file import cell_label

    source = study.cells.get(study.cells[cell_id].start_from or "")
    if labels or source is None:
        return cell_label(labels)
    return f"fine-tuned from {source.task.replace('_', '-')} agents"


def scratch_twin(study: Any, cell_id: str) -> tuple[str, str] | None:
    """``(ablation, cell)``: the study's cell with a chained cell's very settings trained from a random
    start (its base file and keys, no ``start_from``), the comparison a transfer is made for; None
    where the study has none."""
    cell = study.cells[cell_id]
    for name, ab in study.ablations.items():
        for cid, _ in ab.cells:
            other = study.cells[cid]
            if not other.start_from and (other.base, other.overrides) == (cell.base, cell.overrides):
                return name, cid
    return None


#: The keys that make a cell another size of the same recipe: its network and the budget that goes with it.
SIZE_KEYS = frozenset(f"model.init_args.{k}" for k in ("d_h", "n_layers", "head_hidden", "total_games", "evaluations"))
NETWORK_KEYS = ("model.init_args.d_h", "model.init_args.n_layers", "model.init_args.head_hidden")


def size_twins(study: Any, cell_id: str) -> list[tuple[str, str]]:
    """``(ablation, cell)`` s: the study's cells that train a cell's recipe (its base file and keys)
    with another network, for at least as many games, so that the cell's final agents can be set
    against the twin's at the evaluation nearest the cell's budget (the same games trained): how
    width alone changes the result. Chained cells have none; a cell shared by ablations is listed once."""
    cell = study.cells[cell_id]
    if cell.start_from:
        return []

    def recipe(c: Any) -> tuple[str, dict[str, Any]]:
        return c.base, {k: v for k, v in c.overrides.items() if k not in SIZE_KEYS}

    def network(c: Any) -> tuple[Any, ...]:
        return tuple(c.overrides.get(k) for k in NETWORK_KEYS)

    out, seen = [], set()
    for name, ab in study.ablations.items():
        for cid, _ in ab.cells:
            other = study.cells[cid]
            if cid in seen or other.start_from or recipe(other) != recipe(cell) or network(other) == network(cell):
                continue
            if other.total_games >= cell.total_games:
                seen.add(cid)
                out.append((name, cid))
    return out


def source_of(trials: list[Any], cell: str, seed: int, out: Path) -> dict[str, Any]:
    """Where the seed's agent of ``cell`` is among the study's trials (``Trial``): its
    run folder and its member index there (None: a single run)."""
    for t in trials:
        if t.cell == cell and seed in t.seeds:
            i = t.seeds.index(seed)
            member = t.members[i] if t.members else (i if len(t.seeds) > 1 else None)
            return {"run_dir": str(out / t.run_dir), "member": member}
    raise KeyError(f"no trial trains cell {cell} with seed {seed}")


def start_weights(run_dir: Path, source: dict[str, Any]) -> Path:
    """The agent a chained run starts from, exported once from its finished source into ``run_dir/start``."""
    from ..algorithms import ALGORITHMS
    from ..loop.export import agent_from_checkpoint
    from ..manifest import Manifest
    from .records import read_final

    target = run_dir / START
    if (target / "config.json").is_file():
        return target
    src = Path(source["run_dir"])
    if read_final(src / "final.json") is None:
        raise RuntimeError(f"start_from: {src} has not finished (no intact final.json); it must train first")
    member = source["member"]
    agent = agent_from_checkpoint(
        src / "checkpoints" / "last.ckpt", None if member is None else str(member), algorithms=ALGORITHMS
    )
    agent.save_pretrained(target)
    Manifest.read(run_dir).add(p.relative_to(run_dir).as_posix() for p in sorted(target.rglob("*")) if p.is_file())
    return target
