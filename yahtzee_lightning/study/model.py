"""What a study is, once its file is read: its cells (a config each), its ablations (cells varied
along axes) and the study for one profile, as the runner, the records and the report share them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .hypothesis_file import Hypothesis

POOL = "cells"  # the experiment of the ablations that are neither scheduled nor chained


class StudyError(ValueError):
    """A study file or results folder that cannot be used; the message is one line naming the file and key."""


@dataclass
class Cell:
    """One configuration: a base config file and the dotted keys set on it (seeds apart)."""

    id: str
    base: str
    overrides: dict[str, Any]
    algorithm: str = ""
    task: str = "full_game"
    total_games: int = 0
    evaluations: int = 0
    eval_games: int = 0
    final_eval_games: int = 0
    accepts_ensemble: bool = False
    gae_lambda: float | None = None  # the advantage's lambda (None: the algorithm has none), for legends
    start_from: str | None = None  # the cell whose agents this one's start from (chain.py), seed by seed


@dataclass
class Ablation:
    """Cells varied along some axes, each cell with its label per axis."""

    name: str
    axes: list[str]
    cells: list[tuple[str, dict[str, str]]]
    seeds: list[int]
    scheduler: dict[str, Any] | None = None
    start_from: str | None = None  # the cell its agents start from (chain.py)

    @property
    def experiment(self) -> str:
        """The Ray experiment its trials run in: the shared pool, or its own (scheduled or chained)."""
        return self.name if self.scheduler or self.start_from else POOL


@dataclass
class Study:
    """A study file expanded for one profile: its cells, ablations and exhibits."""

    name: str
    path: str
    profile: str
    description: str
    seeds_as: str
    pack: bool | list[str] = True  # packing.py: cells that can share an ensemble run as one trial
    cells: dict[str, Cell] = field(default_factory=dict)
    ablations: dict[str, Ablation] = field(default_factory=dict)
    exhibits: dict[str, list[str]] = field(default_factory=dict)
    gpus_per_trial: float = 0.0  # the share of one GPU each trial asks Ray for (0: CPU only)
    members_per_trial: int = 0  # the most members one trial trains (0: a cell's seeds, or a pack, whole)
    hypotheses: dict[str, Hypothesis] = field(default_factory=dict)  # the confirmatory tests, as written down

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Study:
        study = cls(**{k: v for k, v in data.items() if k not in ("cells", "ablations", "hypotheses")})
        study.hypotheses = {k: Hypothesis(**v) for k, v in data.get("hypotheses", {}).items()}
        study.cells = {k: Cell(**v) for k, v in data["cells"].items()}
        study.ablations = {
            k: Ablation(**{**v, "cells": [tuple(c) for c in v["cells"]]}) for k, v in data["ablations"].items()
        }
        return study

    def members(self) -> list[tuple[str, int]]:
        """Every (cell, seed) the study trains, each once."""
        seen: dict[tuple[str, int], None] = {}
        for ab in self.ablations.values():
            for cid, _ in ab.cells:
                seen.update(dict.fromkeys((cid, s) for s in ab.seeds))
        return list(seen)
