"""Run a study's cells as trials on Ray Tune: a local Ray instance sized to the cores, or a cluster.

The plain ablations share one experiment (``OUT/ray/cells-HASH``); a scheduled or chained one is an
experiment of its own (chains last, and only once their sources have ended). A trial is
``.trial.run_trial``. A killed study resumes: finished trials stay finished, unfinished ones
restart from their last checkpoint, and a run folder holding its final evaluation never trains again.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ray import tune

from ...manifest import META, Manifest
from ..chain import chain_label, source_of
from ..model import POOL, Cell, Study, StudyError
from ..ownership import REPORT, beat, owned, study_session
from ..records import digested_text, log_session, read_final
from ..results import PLAN, Trial, read_plan, write_table
from .cluster import CLUSTER_RETRIES, check_address, check_nodes, trial_resources
from .packing import ensemble_of, pack_trials
from .preregistration import check_preregistered
from .progress_lines import Progress
from .schedulers import scheduler


def seeds_per_trial(study: Study, cell: Cell, seeds: list[int], scheduled: bool = False) -> list[list[int]]:
    """THE ENSEMBLE SEAM: how a cell's seeds are split into trials. Without the ensemble every seed is
    a trial; where the model class takes ``ensemble`` (``seeds_as: auto`` or ``members``), a cell's
    seeds are the members of one: ``.trial.trial_config`` sets ``ensemble`` to per-member overrides
    (``[{"seed": 0}, {"seed": 1}]``), ``.trial.final_record`` reads ``final_evaluation`` by member
    index, ``.results`` gives a history line to the member its ``member`` key names (0 without).
    ``seeds_as: runs``, a scheduler (it compares, stops and copies trials) and a chained cell (each seed
    from its own agent: ``.chain``) keep one trial per seed regardless."""
    alone = scheduled or cell.start_from or study.seeds_as == "runs"
    if alone or (study.seeds_as == "auto" and not cell.accepts_ensemble):
        return [[s] for s in seeds]
    n = study.members_per_trial or len(seeds)  # a study's limit: its packs spread over the cores
    return [list(seeds[i : i + n]) for i in range(0, len(seeds), n)]


def plan_trials(study: Study) -> list[Trial]:
    """Every trial of the study, each (experiment, cell, seeds) once; those of cells that can share an
    ensemble packed into one run (``.packing``)."""
    trials: dict[tuple[str, str, tuple[int, ...]], Trial] = {}
    for ab in study.ablations.values():
        experiment = ab.experiment
        for cell_id, _ in ab.cells:
            for seeds in seeds_per_trial(study, study.cells[cell_id], ab.seeds, scheduled=bool(ab.scheduler)):
                folder = "runs" if experiment == POOL else f"runs/{experiment}"
                run_dir = f"{folder}/{cell_id}/seed{'-'.join(map(str, seeds))}"
                trials.setdefault((experiment, cell_id, tuple(seeds)), Trial(experiment, cell_id, seeds, run_dir))
    return pack_trials(study, list(trials.values()), POOL)


def prepare_folder(study: Study, out: Path, force: bool) -> None:
    """Write the study's plan into ``out``, or check that ``out`` holds this study's results.

    Another study's results (or a folder that holds something else) are refused, naming them;
    ``force`` deletes what earlier sessions wrote there first: only the files the folder's manifests
    (the study's and its report's) prove they wrote, unchanged since; anything else stays, each named.
    A folder resumes packed or not as it was started (its run folders are those of that way),
    whatever ``study.pack`` says.
    """
    trials = plan_trials(study)  # a pack that cannot be refuses the study before anything is written
    plan = out / PLAN
    manifest = owned(out)
    if out.is_dir() and not plan.exists() and any(p.name not in META for p in out.iterdir()):
        raise StudyError(f"{out}: is not empty and holds no study; choose another --out (nothing deleted)")
    if force and plan.exists():  # checked before anything is deleted
        if not manifest.owns(PLAN):
            raise StudyError(
                f"{out}: its {PLAN} was written before manifests or edited since, so nothing there can be proven "
                "a study's own; delete what you no longer need yourself, or choose another --out (nothing deleted)"
            )
        Manifest.read(out / REPORT).remove_owned()
        manifest.remove_owned(under=[p.name for p in out.iterdir() if p.name not in (REPORT, *META)])
    if plan.exists():
        old = read_plan(plan)["study"]
        check_preregistered(study, out)
        if (old["name"], old["profile"]) != (study.name, study.profile):
            raise StudyError(
                f"{out}: holds the results of study {old['name']!r} (profile {old['profile']}), not {study.name!r} "
                f"(profile {study.profile}); choose another --out, or add --force to delete them"
            )
        packed = old.get("pack", False)  # a folder from before packing was run unpacked
        if bool(packed) != bool(study.pack):  # its run folders are those of the way it started: kept
            print(f"{out}: was started {'packed' if packed else 'unpacked'}, and resumes so", file=sys.stderr)
            study.pack = packed
            trials = plan_trials(study)
    out.mkdir(parents=True, exist_ok=True)
    plan.write_text(digested_text({"study": study.to_json(), "trials": [asdict(t) for t in trials]}))
    manifest.add([PLAN])


def init_ray(address: str | None, cpus: int | None) -> int:
    """Connect to the cluster at ``address``, or start a local Ray instance of ``cpus`` CPUs (all
    cores by default); workers import this checkout and use one thread each. Returns the CPUs."""
    import ray

    if address:
        check_address(address)  # a short wait, not Ray's long retries on an address that does not answer
    checkout = str(Path(__file__).resolve().parents[2])  # the folder holding yahtzee_lightning/
    path = os.pathsep.join(p for p in (checkout, os.environ.get("PYTHONPATH", "")) if p)
    env = {"PYTHONPATH": path, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if cache := os.environ.get("YAHTZEE_LIGHTNING_CACHE"):
        env["YAHTZEE_LIGHTNING_CACHE"] = cache
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # Keeping 2 checkpoints a trial forces an experiment snapshot per report: what a resume needs, not a fault.
    os.environ.setdefault("TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S", "0")
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"runtime_env": {"env_vars": env}, "log_to_driver": False, "configure_logging": False}
        if address:
            try:
                ray.init(address=address, **kwargs)
            except (ConnectionError, RuntimeError) as e:  # unreachable, or refused (Ray's token authentication)
                last = ([line for line in str(e).splitlines() if line.strip()] or [str(e)])[-1]
                raise StudyError(f"--address {address}: cannot join the Ray cluster: {last}") from e
        else:
            # "local": a new instance, also where `ray start` left a cluster running on this machine
            ray.init(address="local", num_cpus=cpus or os.cpu_count() or 1, include_dashboard=False, **kwargs)
    return int(ray.cluster_resources().get("CPU", 1))


_PROGRESS = Progress(0, {})  # the running study's: a restored experiment's callback (unpickled by name) finds it


class ProgressCallback(tune.Callback):
    """Tune's side of ``Progress``."""

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        beat()
        _PROGRESS.result(trial, result)

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        _PROGRESS.say(trial, "started")

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        result = trial.last_result or {}
        score, members = result.get("final/mean_score"), int(result.get("final/members") or 1)
        over = f" (mean of its {members} members)" if members > 1 else ""
        _PROGRESS.say(trial, f"done: final mean score {score:.1f}{over}" if score is not None else "stopped", True)

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        _PROGRESS.say(trial, "lost (its process or node died): retried from its newest checkpoint")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        _PROGRESS.say(trial, "FAILED (its run folder's error.txt says why; the other cells go on)", True)


def trainable(study: Study, payloads: dict[str, dict[str, Any]]) -> Any:
    """Ray Tune's trainable for these trials (by name), with the resources each asks for."""
    from .trial import run_trial

    return tune.with_resources(tune.with_parameters(run_trial, trials=payloads), trial_resources(study.gpus_per_trial))


def run_experiment(name: str, trials: list[Trial], study: Study, out: Path, cpus: int, retries: int = 0) -> None:
    """One Ray Tune experiment over ``trials`` (under a scheduler, restored if an earlier run of it was
    interrupted); a trial whose process dies runs again from its newest checkpoint ``retries`` times."""
    # Named for its trials too: a study file that gained cells starts a new experiment (its finished
    # trials report their final.json at once, its unfinished ones resume from their run folders)
    # rather than restoring one that lacks them.
    digest = hashlib.sha1(" ".join(sorted(t.name for t in trials)).encode()).hexdigest()[:8]
    experiment = f"{name}-{digest}"
    path = out / "ray" / experiment
    scheduler_spec = study.ablations[name].scheduler if name != POOL else None
    payloads = _payloads(trials, study, out)
    fn = trainable(study, payloads)
    callbacks = [ProgressCallback()]
    if scheduler_spec is None:
        # Without a scheduler Ray's state holds nothing the run folders do not (a finished trial reports
        # its final.json, an unfinished one resumes from its last.ckpt), and a restored experiment would
        # keep the concurrency it was started with: a fresh one takes this session's --cpus. Only the
        # files the manifest proves Ray wrote go; where others are left (written by a killed session
        # after its last heartbeat, or not Ray's), the fresh experiment goes beside them, never on them.
        for k in itertools.count(1):
            path = out / "ray" / (experiment if k == 1 else f"{experiment}-{k}")
            if path.exists():
                owned(out).remove_owned(under=[path.relative_to(out).as_posix()])
            if not path.exists():
                break
        experiment = path.name
    if tune.Tuner.can_restore(str(path)):
        print(f"resuming experiment {name} from {path}", file=sys.stderr)
        tuner = tune.Tuner.restore(str(path), fn, resume_unfinished=True, resume_errored=True)
    else:
        space: dict[str, Any] = {"trial": tune.grid_search(list(payloads.values()))}
        if scheduler_spec and scheduler_spec["name"] == "pbt":
            space |= {k: tune.loguniform(lo, hi) for k, (lo, hi) in scheduler_spec["mutations"].items()}
        max_t = max(study.cells[t.cell].evaluations for t in trials) + 1
        tuner = tune.Tuner(
            fn,
            param_space=space,
            tune_config=tune.TuneConfig(
                scheduler=scheduler(scheduler_spec, max_t, fits=len(payloads) <= cpus),
                max_concurrent_trials=cpus,
                # A worker imports torch and Lightning once, not once per trial; not under a scheduler,
                # which pauses trials (a paused trial's thread may outlive Ray's wait for it).
                reuse_actors=scheduler_spec is None,
                trial_name_creator=_trial_name,
                trial_dirname_creator=_trial_name,
            ),
            run_config=tune.RunConfig(
                name=experiment,
                storage_path=str((out / "ray").resolve()),
                verbose=0,
                callbacks=callbacks,
                failure_config=tune.FailureConfig(max_failures=retries),
                # PBT copies checkpoints between members: keep them all (they are small) rather than delete one in use.
                checkpoint_config=tune.CheckpointConfig(num_to_keep=None if scheduler_spec else 2),
            ),
        )
    tuner.fit()


def _payloads(trials: list[Trial], study: Study, out: Path) -> dict[str, dict[str, Any]]:
    """What each Ray trial trains, by its name: a cell's seeds, or a pack's members (its first cell's
    config, each member with its seed and the settings it carries). The trials with the most members
    come first: Tune starts them in this order, and the longest trial started last decides the wall
    clock (a pack of 32 members after three trials of 4 adds their time to its own)."""
    packs: dict[str, list[Trial]] = {}
    payloads, plan = {}, []
    for t in trials:
        if t.pack:
            packs.setdefault(t.pack, []).append(t)
            continue
        payloads[t.name] = {
            "cell": asdict(study.cells[t.cell]),
            "seeds": t.seeds,
            "run_dir": str(out / t.run_dir),
            "gpus": study.gpus_per_trial,
        }
        if source := study.cells[t.cell].start_from:  # a chained cell: the seed's agent it starts from
            plan = plan or plan_trials(study)  # the whole study's trials, where the sources are
            payloads[t.name]["start_from"] = source_of(plan, source, t.seeds[0], out)
    for name, pack in packs.items():
        members = ensemble_of(pack)
        first = next(t for t in pack if 0 in (t.members or []))
        cell = asdict(study.cells[first.cell])
        seeds = [m["seed"] for m in members]
        payloads[name] = {
            "name": name,
            "cell": cell,
            "seeds": seeds,
            "members": members,
            "run_dir": str(out / first.run_dir),
            "gpus": study.gpus_per_trial,
        }
    return dict(sorted(payloads.items(), key=lambda item: -len(item[1]["seeds"])))


def _trial_name(trial: Any) -> str:
    t = trial.config["trial"]
    return t.get("name") or f"{t['cell']['id']}-s{'-'.join(map(str, t['seeds']))}"


def run_study(
    study: Study,
    out: str | Path,
    address: str | None = None,
    cpus: int | None = None,
    force: bool = False,
    command: str | None = None,
    retries: int | None = None,
) -> int:
    """Run (or resume) every trial of ``study`` into ``out``, then write its results table.
    Returns 0, or 1 when a cell failed (the others ran; ``results.csv`` says which and why).
    ``command`` (the command line, for the report) is logged with the session's wall clock.
    On a cluster (``address``) every node is checked first (``.cluster``), and a trial whose
    process died (its node lost) is retried from its newest checkpoint ``retries`` times (default:
    3 on a cluster, none locally)."""
    out = Path(out).resolve()  # Ray storage paths must be absolute (a relative one is read as a URI)
    with study_session(out, command or "yahtzee-lightning study run"):
        return _run_study(study, out, address, cpus, force, command, retries)


def _run_study(
    study: Study,
    out: Path,
    address: str | None,
    cpus: int | None,
    force: bool,
    command: str | None,
    retries: int | None,
) -> int:
    prepare_folder(study, out, force)
    trials = plan_trials(study)
    # An experiment whose every trial has an intact final.json has nothing to train: no Ray for it
    # (a finished study run again, or one copied from another machine, only writes its table).
    todo = [e for e in dict.fromkeys(t.experiment for t in trials) if _unfinished(out, trials, e)]
    todo.sort(key=lambda e: e in {ab.name for ab in study.ablations.values() if ab.start_from})  # chains last
    if not todo:
        print(f"study {study.name}: every run is finished; nothing to train", file=sys.stderr)
        return _summarize(out)
    cpus = init_ray(address, cpus)
    if address:
        nodes = check_nodes(out, sorted({cell.base for cell in study.cells.values()}))
        print(f"cluster at {address}: {nodes} nodes checked", file=sys.stderr)
    retries = (CLUSTER_RETRIES if address else 0) if retries is None else retries
    global _PROGRESS
    runs = len({t.pack or t.name for t in trials})
    finished = {t.pack or t.name for t in trials if read_final(out / t.run_dir / "final.json") is not None}
    _PROGRESS = Progress(runs, _trial_labels(study), frozenset(finished))
    print(
        f"study {study.name} (profile {study.profile}): {len(trials)} trials as {runs} runs on {cpus} CPUs into {out}",
        file=sys.stderr,
    )
    started = time.time()
    log_session(out, command, started, cpus, address, end=False)
    try:
        for experiment in todo:
            chain = experiment != POOL and study.ablations[experiment].start_from
            if chain and _unfinished(out, trials, POOL, stopped=True):  # its sources stopped, not failed
                print(f"study {study.name}: {experiment} waits for the cells it starts from", file=sys.stderr)
                continue
            run_experiment(experiment, [t for t in trials if t.experiment == experiment], study, out, cpus, retries)
    finally:
        log_session(out, command, started, cpus, address, end=True)
    return _summarize(out)


def _unfinished(out: Path, trials: list[Trial], experiment: str, stopped: bool = False) -> bool:
    """A trial of ``experiment`` without a final.json (``stopped``: nor an error.txt, so interrupted)."""
    ended = [read_final(out / t.run_dir / "final.json") is not None for t in trials if t.experiment == experiment]
    errors = [stopped and (out / t.run_dir / "error.txt").exists() for t in trials if t.experiment == experiment]
    return not all(a or b for a, b in zip(ended, errors, strict=True))


def _summarize(out: Path) -> int:
    """Write the results table and say what it holds; 1 where a member failed."""
    table = write_table(out)
    members = table[table["stage"] == "final"]
    failed = sorted(set(members.loc[members["status"] == "failed", "run_dir"]))
    counts = ", ".join(f"{n} {status}" for status, n in members["status"].value_counts().items())
    print(f"members: {counts}; results: {out / 'results.csv'}", file=sys.stderr)
    for run_dir in failed:
        print(f"failed: {run_dir}: {(out / run_dir / 'error.txt').read_text().strip()}", file=sys.stderr)
    return 1 if failed else 0


def _trial_labels(study: Study) -> dict[str, str]:
    """Each trial name's labels in the first ablation that has its cell, for progress lines."""
    labels: dict[str, str] = {}
    trials = plan_trials(study)
    for trial in trials:
        if trial.pack:
            cells = sum(t.pack == trial.pack for t in trials)
            labels[trial.pack] = f"(packed: {cells} cells as one ensemble)"
            continue
        for ab in study.ablations.values():
            if ab.experiment != trial.experiment:
                continue
            for cell_id, cell_labels in ab.cells:
                if cell_id == trial.cell:
                    labels.setdefault(trial.name, f"({ab.name}: {chain_label(study, cell_id, cell_labels)})")
    return labels
