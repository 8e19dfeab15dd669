"""A study file (``conf/study/*.yaml``): read, expanded into cells, and checked before anything runs.

The file names a ``base`` config (any ``fit`` YAML), the ``seeds``, settings for every cell
(``set``), budgets by ``profiles``, the ``ablations`` and the ``exhibits`` to draw. An ablation
varies its ``axes`` (the product of their values) around the base. An axis is any config key
(``model.init_args.d_h: [64, 128]``; ``config``: whole config files), or a name whose values are
labelled sets of keys set together (``entropy: {low: {model.init_args.beta_roll_max: 0.005, ...}}``).
The layers apply in this order: base, ``set``, the ablation's ``set``, the profile's ``set``, the
axis values; a profile's ``base`` replaces the study's (not an ablation's own), and its ``axes``
replace those axes' values (a small budget, small networks). An ablation without axes is one cell;
one with ``start_from`` trains from another cell's agents, seed by seed (``.chain``).

Every axis value and every cell is parsed by the same parser as ``fit`` (LightningCLI), so an
unknown key or a value of the wrong type ends the command in one line naming the file and key.
Cells that come to the same config in several ablations are one cell (run once); a cell's id is
a hash of its composed config, so a resumed study finds the cells it ran.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from ..untrusted import UntrustedError, read_yaml
from .chain import ID_KEY, check_networks, resolve_start
from .fit_config import accepts_ensemble, cell_id, compose, parse_fit_config, value_label
from .hypothesis_file import parse_hypotheses
from .model import Ablation, Cell, Study, StudyError

#: Every exhibit a study can ask for (report.py draws each): the single-turn task (S), the full
#: game (F), the tables (T), per-agent profiles of play (P), population-based training (B), the
#: regret against the optimum by turn and by box (R), and aggregates over seeds beside the mean (A:
#: median and IQM, probability of improvement, performance profiles).
EXHIBIT_IDS = (
    *(f"S{i}" for i in range(1, 5)),
    *(f"F{i}" for i in range(1, 18)),
    "T1",
    "T2",
    *(f"P{i}" for i in range(1, 5)),
    *("B1", "B2", "R1", "A1", "A2", "A3"),
)
SCHEDULERS = ("asha", "pbt")
SEEDS_AS = ("auto", "runs", "members")
TOP_KEYS = {"name", "description", "base", "seeds", "set", "profiles", "ablations", "exhibits", "seeds_as"}
TOP_KEYS |= {"gpus_per_trial", "pack", "hypotheses", "members_per_trial"}
ABLATION_KEYS = {"base", "set", "seeds", "axes", "scheduler", "start_from"}
PROFILE_KEYS = {"base", "set", "seeds", "axes", "gpus_per_trial", "members_per_trial"}
SCHEDULER_KEYS = {"name", "metric", "mode", "grace_period", "reduction_factor", "perturbation_interval", "mutations"}


class _Reader:
    """Reads one study file, raising ``StudyError`` with its name and the key at fault."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> None:
        raise StudyError(f"{self.path}: {key}: {problem}" if key else f"{self.path}: {problem}")

    def mapping(self, value: Any, key: str, allowed: set[str] | None = None) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, f"must be a mapping, got {type(value).__name__}")
        if allowed is not None and (unknown := sorted(set(value) - allowed)):
            self.fail(f"{key}.{unknown[0]}" if key else unknown[0], f"unknown key; known: {', '.join(sorted(allowed))}")
        return value

    def seeds(self, value: Any, key: str) -> list[int]:
        ok = isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) for s in value)
        if not ok:
            self.fail(key, f"must be a non-empty list of integers, got {value!r}")
        if len(set(value)) != len(value):
            self.fail(key, f"repeats a seed: {value!r}")
        return list(value)

    def config_file(self, value: Any, key: str) -> Path:
        """A config path: as given, else beside the study file or in the folders above it."""
        if not isinstance(value, str) or not value:
            self.fail(key, f"must be a config file path, got {value!r}")
        given = Path(value)
        candidates = [given] if given.is_absolute() else [given, *(d / given for d in self.path.resolve().parents)]
        for c in candidates:
            if c.is_file():
                return c.resolve()
        self.fail(key, f"no such config file {value!r}")
        raise AssertionError  # unreachable: fail raises

    def check(self, base: Path, overrides: dict[str, Any], key: str) -> Any:
        """Parse the composed config as ``fit`` would; its parsed namespace, or a one-line error at ``key``."""
        text = base.read_text()
        try:
            config = compose(text, overrides)
        except UntrustedError as e:
            self.fail(key, f"{base} does not parse: {_first_line(str(e))}")
        try:
            return parse_fit_config(config)
        except Exception as e:  # ConfigError, worded as fit words it (and what a class path's import raises)
            from ..loop.config_errors import parse_error

            self.fail(key, parse_error(str(e)))

    def axes(self, raw: dict[str, Any], key: str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Each axis as its labelled values: (label, the dotted keys that value sets)."""
        axes = {}
        for name, values in self.mapping(raw, key).items():
            where = f"{key}.{name}"
            if isinstance(values, dict):
                if not values:
                    self.fail(where, "is empty; give it at least one value")
                axes[name] = []
                for label, sets in values.items():
                    sets = self.mapping(sets, f"{where}.{label}")
                    axes[name].append((str(label), sets))
                continue
            if not isinstance(values, list):
                self.fail(where, f"must be a list of values or a mapping of labelled settings, got {values!r}")
            if not values:
                self.fail(where, "is empty; give it at least one value")
            if name == "config":
                axes[name] = [(Path(str(v)).stem, {"config": v}) for v in values]
            else:
                axes[name] = [(value_label(v), {name: v}) for v in values]
        return axes


def _first_line(text: str) -> str:
    return " ".join(text.strip().splitlines()[:1])


def load_study(path: str | Path, profile: str | None = None, gpus_per_trial: float | None = None) -> Study:
    """Read, expand and check a study file for ``profile`` (default: its first profile);
    ``gpus_per_trial`` (the command line's) replaces the file's."""
    path = Path(path)
    reader = _Reader(path)
    try:
        raw = read_yaml(path)
    except OSError as e:
        raise StudyError(f"{path}: cannot read it ({e.strerror})") from e
    except UntrustedError as e:
        raise StudyError(str(e)) from None
    raw = reader.mapping(raw, "", TOP_KEYS)
    if not isinstance(raw.get("name"), str) or not raw["name"]:
        reader.fail("name", "the study needs a name (a string)")
    profiles = reader.mapping(raw.get("profiles"), "profiles")
    if not profiles:
        reader.fail("profiles", "name at least one profile (its budget), e.g. smoke, cpu, full")
    profile = profile or next(iter(profiles))
    if profile not in profiles:
        reader.fail("profiles", f"no profile {profile!r}; this study has {', '.join(profiles)}")
    prof = reader.mapping(profiles[profile], f"profiles.{profile}", PROFILE_KEYS)
    seeds = reader.seeds(
        prof.get("seeds", raw.get("seeds")), f"profiles.{profile}.seeds" if "seeds" in prof else "seeds"
    )
    seeds_as = raw.get("seeds_as", "auto")
    if seeds_as not in SEEDS_AS:
        reader.fail("seeds_as", f"must be one of {', '.join(SEEDS_AS)}, got {seeds_as!r}")
    study_set = reader.mapping(raw.get("set"), "set")
    profile_set = reader.mapping(prof.get("set"), f"profiles.{profile}.set")
    profile_axes = reader.axes(prof.get("axes"), f"profiles.{profile}.axes")
    ablations_raw = reader.mapping(raw.get("ablations"), "ablations")
    if not ablations_raw:
        reader.fail("ablations", "name at least one ablation")
    study = Study(raw["name"], str(path), profile, str(raw.get("description", "")), seeds_as, raw.get("pack", True))
    gpus_key = f"profiles.{profile}.gpus_per_trial" if "gpus_per_trial" in prof else "gpus_per_trial"
    gpus = prof.get("gpus_per_trial", raw.get("gpus_per_trial", 0)) if gpus_per_trial is None else gpus_per_trial
    if isinstance(gpus, bool) or not isinstance(gpus, (int, float)) or not 0 <= gpus <= 1:
        where = gpus_key if gpus_per_trial is None else "--gpus-per-trial"
        reader.fail(where, f"must be a number from 0 to 1 (the share of one GPU a trial asks for), got {gpus!r}")
    study.gpus_per_trial = float(gpus)
    mpt = prof.get("members_per_trial", raw.get("members_per_trial", 0))
    if isinstance(mpt, bool) or not isinstance(mpt, int) or mpt < 0:
        where = f"profiles.{profile}.members_per_trial" if "members_per_trial" in prof else "members_per_trial"
        reader.fail(where, f"must be an integer >= 1 (the most members a trial trains), or 0: no limit; got {mpt!r}")
    study.members_per_trial = mpt
    parsed: dict[str, Any] = {}
    for name, ab_raw in ablations_raw.items():
        key = f"ablations.{name}"
        ab_raw = reader.mapping(ab_raw, key, ABLATION_KEYS)
        base_key = f"{key}.base" if "base" in ab_raw else f"profiles.{profile}.base" if "base" in prof else "base"
        base_file = ab_raw.get("base", prof.get("base", raw.get("base")))
        if base_file is None:
            reader.fail("base", "name the base config (a fit YAML), for the study or for each ablation")
        base = reader.config_file(base_file, base_key)
        ab_seeds = reader.seeds(ab_raw["seeds"], f"{key}.seeds") if "seeds" in ab_raw else seeds
        fixed = {**study_set, **reader.mapping(ab_raw.get("set"), f"{key}.set"), **profile_set}
        reader.check(base, fixed, f"{key} (base {base.name} with set)")
        axes = reader.axes(ab_raw.get("axes"), f"{key}.axes")  # none: the base alone, one cell
        axes |= {k: v for k, v in profile_axes.items() if k in axes}
        for axis, values in axes.items():  # each value alone first: an error names its axis and value
            for label, sets in values:
                vbase, vsets = _split_config(reader, base, sets, f"{key}.axes.{axis}")
                reader.check(vbase, {**fixed, **vsets}, f"{key}.axes.{axis}.{label}" if axis != label else axis)
        scheduler = _scheduler(reader, ab_raw.get("scheduler"), f"{key}.scheduler", base, fixed)
        source = None
        if "start_from" in ab_raw:
            if scheduler:
                reader.fail(f"{key}.start_from", "a scheduled ablation cannot start from another's agents")
            source = resolve_start(ab_raw["start_from"], f"{key}.start_from", study.ablations, ab_seeds, reader.fail)
        cells = []
        for combo in itertools.product(*axes.values()):
            sets: dict[str, Any] = {}
            for _, value_sets in combo:
                sets |= value_sets
            cbase, overrides = _split_config(reader, base, sets, f"{key}.axes")
            overrides = {**fixed, **overrides}
            labels = dict(zip(axes, (label for label, _ in combo), strict=True))
            text = cbase.read_text()
            cid = cell_id(text, overrides | ({ID_KEY: source} if source else {}))
            if cid not in study.cells:
                where = f"{key}.axes (cell {', '.join(f'{a}={v}' for a, v in labels.items())})"
                parsed[cid] = reader.check(cbase, overrides, where)
                study.cells[cid] = _cell(cid, cbase, overrides, parsed[cid], source)
                if source:
                    check_networks(parsed[source], parsed[cid], f"{key}.start_from", reader.fail)
            cells.append((cid, labels))
        study.ablations[name] = Ablation(name, list(axes), cells, ab_seeds, scheduler, source)
    study.exhibits = _exhibits(reader, raw.get("exhibits"), study)
    study.hypotheses = parse_hypotheses(reader.mapping(raw.get("hypotheses"), "hypotheses"), study.ablations, reader)
    return study


def _split_config(reader: _Reader, base: Path, sets: dict[str, Any], key: str) -> tuple[Path, dict[str, Any]]:
    """A value's ``config`` (a whole base file) apart from its dotted keys."""
    sets = dict(sets)
    if "config" in sets:
        base = reader.config_file(sets.pop("config"), f"{key}.config")
    return base, sets


def _cell(cid: str, base: Path, overrides: dict[str, Any], config: Any, start_from: str | None = None) -> Cell:
    args = config.model.init_args
    class_path = config.model.class_path

    def get(name: str, default: Any = 0) -> Any:
        return args.get(name, default) if hasattr(args, "get") else getattr(args, name, default)

    return Cell(
        cid,
        str(base),
        overrides,
        algorithm=class_path.rpartition(".")[2],
        task=str(get("task", "full_game")),
        total_games=int(get("total_games")),
        evaluations=int(get("evaluations")),
        eval_games=int(get("eval_games")),
        final_eval_games=int(get("final_eval_games")),
        accepts_ensemble=accepts_ensemble(class_path),
        gae_lambda=None if get("gae_lambda", None) is None else float(get("gae_lambda")),
        start_from=start_from,
    )


def _scheduler(reader: _Reader, raw: Any, key: str, base: Path, fixed: dict[str, Any]) -> dict[str, Any] | None:
    if raw is None:
        return None
    raw = reader.mapping(raw, key, SCHEDULER_KEYS)
    if raw.get("name") not in SCHEDULERS:
        reader.fail(f"{key}.name", f"must be one of {', '.join(SCHEDULERS)}, got {raw.get('name')!r}")
    if raw.get("mode", "max") not in ("max", "min"):
        reader.fail(f"{key}.mode", f"must be max or min, got {raw.get('mode')!r}")
    for name in ("grace_period", "reduction_factor", "perturbation_interval"):
        if name in raw and not (isinstance(raw[name], int) and raw[name] >= 1):
            reader.fail(f"{key}.{name}", f"must be an integer >= 1, got {raw[name]!r}")
    mutations = reader.mapping(raw.get("mutations"), f"{key}.mutations")
    if raw["name"] == "pbt" and not mutations:
        reader.fail(f"{key}.mutations", "population-based training needs settings to evolve")
    for name, bounds in mutations.items():
        ok = isinstance(bounds, list) and len(bounds) == 2 and all(_number(b) is not None for b in bounds)
        if not ok or not 0 < _number(bounds[0]) < _number(bounds[1]):
            reader.fail(f"{key}.mutations.{name}", f"must be [low, high] with 0 < low < high, got {bounds!r}")
        reader.check(base, {**fixed, name: _number(bounds[0])}, f"{key}.mutations.{name}")
    return {
        "metric": "eval/mean_score",
        "mode": "max",
        **raw,
        "mutations": {k: [*map(_number, v)] for k, v in mutations.items()},
    }


def _number(value: Any) -> float | None:
    """A YAML number (PyYAML reads ``1e-3`` as a string)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _exhibits(reader: _Reader, raw: Any, study: Study) -> dict[str, list[str]]:
    raw = reader.mapping(raw, "exhibits")
    if not raw:
        reader.fail("exhibits", f"name the exhibits to draw, each with its ablations (ids: {', '.join(EXHIBIT_IDS)})")
    out = {}
    for eid, source in raw.items():
        if eid not in EXHIBIT_IDS:
            reader.fail(f"exhibits.{eid}", f"unknown exhibit; known: {', '.join(EXHIBIT_IDS)}")
        names = list(study.ablations) if source == "all" else [source] if isinstance(source, str) else source
        if not isinstance(names, list) or not names:
            reader.fail(f"exhibits.{eid}", f"must name an ablation, a list of them, or all; got {source!r}")
        for n in names:
            if n not in study.ablations:
                reader.fail(f"exhibits.{eid}", f"no ablation {n!r}; this study has {', '.join(study.ablations)}")
        out[eid] = names
    return out
