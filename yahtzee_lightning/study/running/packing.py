"""Packing: cells that differ only in what an ensemble member may carry run as one ensemble trial.

Two cells of the study's pool (the ablations without a scheduler) whose configs differ only in
settings a member of an ensemble may have of its own (its seed, ``lr``, the entropy coefficients
and schedules, ``gamma_*``, ``gae_lambda``, ``clip_eps``, ...: every setting of the model that is
not in its class's ``SHARED_SETTINGS`` or ``NETWORK_KEYS``) are trained as members of one
ensemble: one process and one shared collection for all their seeds. Cells of another algorithm,
network shape, task or budget stay trials of their own.

Since a member's result depends only on its own seed and settings (each member draws from
generators of its own), a packed cell's members learn what they would have learned in their own
trial: the results table keeps a row per cell and seed as before, read from the pack's run
folder by member index (``Trial``'s ``members``). ``pack: false`` in the study
file, or ``study run --no-pack``, keeps one trial per cell; ``pack: [ablation, ...]`` also
requires each named ablation's cells to share one ensemble, and names the cell that cannot.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

from ..fit_config import compose, model_class
from ..hypothesis_file import cell_label
from ..model import Cell, Study, StudyError
from ..results import Trial

#: Config keys that a study sets for every trial itself (the seeds): never a reason to keep cells apart.
SEED_KEYS = ("seed_everything", "model.init_args.seed")
INIT = "model.init_args."


def _flat(config: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as ``{dotted key: value}`` (lists and scalars are leaves)."""
    if not isinstance(config, dict):
        return {prefix.rstrip("."): config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out |= _flat(value, f"{prefix}{key}.") if isinstance(value, dict) and value else {f"{prefix}{key}": value}
    return out


def _default(cls: type, name: str) -> Any:
    """A setting's default in the model class (or in a class it extends)."""
    for c in cls.__mro__:
        param = inspect.signature(c.__init__).parameters.get(name) if "__init__" in vars(c) else None
        if param is not None and param.default is not inspect.Parameter.empty:
            return param.default
    raise KeyError(name)


class _Settings:
    """A cell's composed config, split into what its members must share and what each may carry."""

    def __init__(self, cell: Cell) -> None:
        self.cell = cell
        flat = {k: v for k, v in _flat(compose(Path(cell.base).read_text(), cell.overrides)).items()}
        self.class_path = str(flat.get("model.class_path", ""))
        self.cls = model_class(self.class_path) if cell.accepts_ensemble else None
        shared = set(getattr(self.cls, "SHARED_SETTINGS", ())) | set(getattr(self.cls, "NETWORK_KEYS", ()))
        self.own: dict[str, Any] = {}
        self.shared: dict[str, Any] = {}
        for key, value in flat.items():
            if key in SEED_KEYS:
                continue
            name = key.removeprefix(INIT)
            if self.cls is not None and key.startswith(INIT) and "." not in name and name not in shared:
                self.own[name] = value
            else:
                self.shared[key] = value

    def key(self) -> str:
        return json.dumps(self.shared, sort_keys=True, default=str)

    def value(self, name: str) -> Any:
        return self.own[name] if name in self.own else _default(self.cls, name)


def _why_apart(a: _Settings, b: _Settings) -> str:
    """The first setting the two cells' members cannot differ in."""
    if a.cls is None or b.cls is None:
        return f"its algorithm ({b.cell.algorithm}) does not train ensembles"
    for key in sorted(set(a.shared) | set(b.shared)):
        if a.shared.get(key, "<unset>") != b.shared.get(key, "<unset>"):
            return f"{key} is {b.shared.get(key, '<unset>')!r} there, {a.shared.get(key, '<unset>')!r} in the others"
    return "its settings differ"


def check_required(study: Study) -> None:
    """``pack: [ablation, ...]``: each named ablation's cells must share one ensemble; else a one-line
    error naming the first cell that cannot (and the setting it differs in)."""
    pack = study.pack
    if not isinstance(pack, bool) and not (isinstance(pack, list) and all(isinstance(a, str) for a in pack)):
        raise StudyError(f"{study.path}: pack: must be true, false or a list of ablations, got {pack!r}")
    required = pack if isinstance(pack, list) else []
    for name in required:
        if name not in study.ablations:
            raise StudyError(f"{study.path}: pack: no ablation {name!r}; this study has {', '.join(study.ablations)}")
        ab = study.ablations[name]
        if ab.scheduler:
            raise StudyError(f"{study.path}: pack: ablation {name!r} has a scheduler (its trials are compared apart)")
        cells = [_Settings(study.cells[c]) for c, _ in ab.cells]
        for s, (_, labels) in zip(cells, ab.cells, strict=True):
            if s.cls is None or s.key() != cells[0].key():
                label = cell_label(labels)
                raise StudyError(
                    f"{study.path}: pack: ablation {name!r}: cell {s.cell.id} ({label}) cannot share an ensemble "
                    f"with the others: {_why_apart(cells[0], s)}"
                )


def pack_trials(study: Study, trials: list[Trial], pool: str) -> list[Trial]:
    """The ``pool`` experiment's trials of cells that can share an ensemble, given one run folder (the
    pack's) and their members' indices in it; every other trial as it was. ``members`` of a pack's
    run: each member's seed and the settings it carries that differ within the pack."""
    check_required(study)
    if study.pack is False or study.seeds_as == "runs":
        return trials
    groups: dict[str, list[tuple[Trial, _Settings]]] = {}
    for t in trials:
        if t.experiment == pool:
            s = _Settings(study.cells[t.cell])
            if s.cls is not None:
                groups.setdefault(s.key(), []).append((t, s))
    for group in (part for g in groups.values() for part in _split(g, study.members_per_trial)):
        if len(group) < 2:
            continue
        varying = sorted({k for _, s in group for k in s.own if len({repr(g.value(k)) for _, g in group}) > 1})
        pack = "pack-" + hashlib.sha1(" ".join(t.name for t, _ in group).encode()).hexdigest()[:10]
        n = 0
        for t, s in group:
            t.run_dir, t.pack = f"runs/{pack}/members", pack
            t.members = list(range(n, n + len(t.seeds)))
            t.carries = [{"seed": seed, **{k: s.value(k) for k in varying}} for seed in t.seeds]
            n += len(t.seeds)
    return trials


def _split(group: list[tuple[Trial, _Settings]], most: int) -> list[list[tuple[Trial, _Settings]]]:
    """A group of trials that may share an ensemble, as packs of at most ``most`` members (0: one pack),
    in order: a study with fewer, larger packs than cores leaves cores idle."""
    if not most:
        return [group]
    packs: list[list[tuple[Trial, _Settings]]] = [[]]
    for t, s in group:
        if packs[-1] and sum(len(u.seeds) for u, _ in packs[-1]) + len(t.seeds) > most:
            packs.append([])
        packs[-1].append((t, s))
    return packs


def ensemble_of(pack: list[Trial]) -> list[dict[str, Any]]:
    """A pack's ``ensemble`` setting: every member's seed and carried settings, by member index."""
    members = {i: carry for t in pack for i, carry in zip(t.members or [], t.carries or [], strict=True)}
    return [members[i] for i in range(len(members))]
