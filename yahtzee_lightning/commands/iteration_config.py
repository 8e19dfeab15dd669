"""The settings of ``yahtzee-lightning expert-iteration``: one YAML holds every choice of the loop,
checked whole before anything trains, so that a zero budget, a misspelt key or a setting that would
read the exact table ends the command in one line instead of hours later."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The ``turn-value`` settings a loop's ``value:`` may hold (``ValueSettings``' fields but those the
#: loop sets itself: ``warm_start``, and where the games come from).
VALUE_KEYS = ("games", "seed", "hidden", "layers", "epochs", "lr", "batch_size", "td_rounds", "td_epochs")
VALUE_KEYS += ("td_holdout", "td_keep", "play")
#: Whose games a value update's TD rounds go on over: stage 0's (the measured recipe), or the stage's own.
GAMES_FROM = ("self_play", "stage")
#: Fit settings the loop sets itself, never a config: where a stage starts from and whose search teaches it.
LOOP_SET = ("init_from", "value_from", "total_games")
#: Algorithms whose teacher is the exact table (or an oracle's labels): never the loop's self-play stage.
TAUGHT = ("Distill", "ExpertIteration")


class LoopConfigError(ValueError):
    """A loop config that cannot run as given; the message names the file and the setting."""


@dataclass(frozen=True)
class LoopConfig:
    """Every choice of the loop (``conf/expert_iteration_loop.yaml`` explains each)."""

    path: str
    out: str
    self_play: dict[str, Any]
    value: dict[str, Any]
    student: dict[str, Any]
    stages: int
    games_per_stage: int
    value_updates: dict[str, Any]
    eval_games: int
    eval_seed: int = 7
    judge_games: int = 100_000
    seed: int = 0
    device: str = "cpu"
    raw: dict[str, Any] = field(default_factory=dict)

    def digest(self) -> str:
        """The sha256 of the settings but the output folder and the number of stages: a resume under
        other settings is refused; one with more stages (or fewer) extends the loop (or ends it sooner)."""
        settings = {k: v for k, v in self.raw.items() if k not in ("out", "stages")}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()

    def updates_after(self, stage: int) -> bool:
        """Whether the value's TD rounds go on after search-taught stage ``stage``."""
        return stage in self.value_updates["after"]


TOP = {
    "out": "the output folder: each stage's files, the state, the history, the figure and the agent",
    "seed": "seed of the fits (a stage's is seed + stage)",
    "device": "torch device of every stage: cpu (default) or cuda where a GPU is lent",
    "self_play": "stage 0: recipe, games and settings of a network learning from its own games",
    "value": "its turn-start value, learned from stage 0's games (turn-value's settings)",
    "student": "recipe, settings and first_lr of the network the search teaches",
    "stages": "search-taught stages after stage 0",
    "games_per_stage": "games of each search-taught stage",
    "value_updates": "after: the stages after which the value's TD rounds go on; td_rounds: how many; "
    "games_from: self_play (stage 0's games, default) or stage (the stage's own)",
    "eval_games": "held-back games each stage's progress line plays (network alone and search)",
    "eval_seed": "their seed: none of the training's games",
    "judge_games": "the protocol's games (seed 0) the final agent is judged on against the optimum, for its card",
}
SECTIONS = {
    "self_play": ("recipe", "games", "settings"),
    "student": ("recipe", "settings", "first_lr"),
    "value_updates": ("after", "td_rounds", "games_from"),
    "value": VALUE_KEYS,
}


def read_loop_config(path: str) -> LoopConfig:
    """The loop config at ``path``, checked: unknown keys, zero budgets and exact-table readers refused."""
    from ..shipped import config_path
    from ..untrusted import read_yaml

    where = f"--config {path}"
    try:
        path = config_path(path)  # a file, else the shipped config of that name
        data = read_yaml(path, where) or {}
    except (OSError, ValueError) as e:
        raise LoopConfigError(f"{where}: cannot read it ({e})") from None
    if not isinstance(data, dict):
        raise LoopConfigError(f"{where}: a mapping of settings is expected")
    if unknown := sorted(set(data) - set(TOP)):
        raise LoopConfigError(f"{where}: unknown settings {unknown}; known: {sorted(TOP)}")
    for section, keys in SECTIONS.items():
        value = data.get(section)
        if not isinstance(value, dict):
            raise LoopConfigError(f"{where}: {section} must be a mapping of {list(keys)}")
        if unknown := sorted(set(value) - set(keys)):
            hint = " (the exact table is never read during the loop)" if section == "value" else ""
            raise LoopConfigError(f"{where}: unknown settings {unknown} in {section}{hint}; known: {list(keys)}")
    missing = [k for k in ("out", "stages", "games_per_stage", "eval_games") if k not in data]
    if missing:
        raise LoopConfigError(f"{where}: missing settings {missing}")
    config = LoopConfig(path=path, raw=data, **{k: v for k, v in data.items()})
    check_budgets(config, where)
    check_no_table(config, where)
    return config


def _count(where: str, name: str, value: Any, least: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise LoopConfigError(f"{where}: {name} must be a whole number >= {least}, got {value!r}")


def check_budgets(config: LoopConfig, where: str) -> None:
    """Every budget a whole number above zero (a stage of no games teaches nothing and would pass unseen)."""
    _count(where, "stages", config.stages)
    _count(where, "games_per_stage", config.games_per_stage)
    _count(where, "eval_games", config.eval_games)
    _count(where, "eval_seed", config.eval_seed, 0)
    _count(where, "judge_games", config.judge_games, 0)
    _count(where, "seed", config.seed, 0)
    _count(where, "self_play.games", config.self_play.get("games"))
    if "games" in config.value:  # else turn-value's default
        _count(where, "value.games", config.value["games"])
    _count(where, "value_updates.td_rounds", config.value_updates.get("td_rounds"))
    after = config.value_updates.get("after", [])
    if not isinstance(after, list) or any(isinstance(k, bool) or not isinstance(k, int) for k in after):
        raise LoopConfigError(f"{where}: value_updates.after must be a list of stage numbers, got {after!r}")
    if bad := [k for k in after if not 1 <= k < config.stages]:
        raise LoopConfigError(
            f"{where}: value_updates.after {bad}: the value goes on between stages 1..{config.stages - 1} "
            "(the last stage's export carries the value that taught it)"
        )
    if config.eval_seed == 0 or config.eval_seed == config.value.get("seed", 0):
        raise LoopConfigError(f"{where}: eval_seed {config.eval_seed} is a seed of other games: choose another")
    if config.value_updates.get("games_from", "self_play") not in GAMES_FROM:
        raise LoopConfigError(
            f"{where}: value_updates.games_from must be one of {list(GAMES_FROM)}, "
            f"got {config.value_updates['games_from']!r}"
        )
    first_lr = config.student.get("first_lr")
    if first_lr is not None and not (isinstance(first_lr, (int, float)) and first_lr > 0):
        raise LoopConfigError(f"{where}: student.first_lr must be > 0, got {first_lr!r}")


def recipe_model(recipe: Any, where: str, section: str) -> dict[str, Any]:
    """A recipe's settings with its ``base:`` chain merged (a fit YAML)."""
    from ..shipped import config_path, expand_base
    from ..untrusted import read_yaml

    if not isinstance(recipe, str) or not recipe:
        raise LoopConfigError(f"{where}: {section}.recipe must name a fit recipe, got {recipe!r}")
    try:
        path = Path(config_path(recipe))
        merged = expand_base(read_yaml(path, str(path)) or {}, path.resolve())
    except (OSError, ValueError) as e:
        raise LoopConfigError(f"{where}: {section}.recipe: {e}") from None
    if not isinstance(merged, dict) or not isinstance(merged.get("model"), dict):
        raise LoopConfigError(f"{where}: {section}.recipe {recipe}: not a fit recipe (no model:)")
    return merged


def check_no_table(config: LoopConfig, where: str) -> None:
    """Refuse, in one line, a setting by which the loop would learn from the exact table or an oracle
    label: a teacher that is the table, a fit's diagnostics or final evaluation against it, a start
    from an agent made elsewhere (the loop starts from nothing)."""
    for section, want in (("self_play", False), ("student", True)):
        spec = getattr(config, section)
        model = recipe_model(spec.get("recipe"), where, section)["model"]
        cls = str(model.get("class_path", "")).rsplit(".", 1)[-1]
        if want and cls != "ExpertIteration":
            raise LoopConfigError(f"{where}: student.recipe must train ExpertIteration (the search teaches), not {cls}")
        if not want and cls in TAUGHT:
            raise LoopConfigError(
                f"{where}: self_play.recipe trains {cls}, whose teacher is the exact table or a search: "
                "stage 0 learns from its own games only"
            )
        settings = spec.get("settings") or {}
        if not isinstance(settings, dict):
            raise LoopConfigError(f"{where}: {section}.settings must be a mapping of fit settings")
        if given := [k for k in LOOP_SET if k in settings]:
            raise LoopConfigError(
                f"{where}: {section}.settings {given}: the loop sets these itself (it starts from nothing)"
            )
        readers = {
            "diagnose_games": "its regret is the exact table's",
            "final_eval_games": "it is judged against the exact optimum",
        }
        for key, why in readers.items():
            if settings.get(key):
                raise LoopConfigError(
                    f"{where}: {section}.settings {key} {settings[key]}: would read the exact table ({why})"
                )
        if settings.get("teacher", "auto") != "auto":
            raise LoopConfigError(
                f"{where}: {section}.settings teacher {settings['teacher']!r}: the teacher is the search"
            )
        if settings.get("n_players", 1) != 1:
            raise LoopConfigError(f"{where}: {section}.settings n_players: the loop trains solitaire agents")
