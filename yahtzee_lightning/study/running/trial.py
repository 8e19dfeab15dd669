"""One trial of a study: an ordinary ``fit`` of this project in its own run folder, reporting to Ray Tune.

The run folder (``OUT/runs/...``) holds what a single run holds (``config.yaml``, Lightning's
logs, ``checkpoints/``), plus what the study reads back: ``history.jsonl`` (one line per
evaluation), ``final.json`` (the final evaluation) or ``error.txt`` (why it failed), and
``fit.log`` (the run's printed output). Rerunning ``fit --config RUN/config.yaml`` repeats a
trial by hand, and its checkpoints export like any run's.

A trial resumes by the project's own rule (``--ckpt_path last``: the newest intact checkpoint of
its folder). A checkpoint handed over by Ray from another trial (population-based training: a
weak member copies a strong one's) is resumed instead, with the evolved learning rate written
into it (a checkpoint fixes ``lr`` otherwise).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
import yaml
from lightning.pytorch.loggers import Logger

from ...atomic import write_text_whole
from ...loop.checkpoint import is_run_checkpoint
from ...loop.resume import checkpoint_digest, load_checked
from ...manifest import Manifest
from ..chain import start_weights
from ..fit_config import compose
from ..model import Cell
from ..records import append_lines, final_text, read_final
from .cluster import on_gpu, where

HISTORY, FINAL, ERROR, LOG = "history.jsonl", "final.json", "error.txt", "fit.log"
#: Training metrics kept with each evaluation (the latest logged update's value), without their
#: ``train/``: the heads' entropies, the value head's fit, the return, the learning rate, and the
#: diagnostics of a collapsing or drifting policy (the KL between the collecting and the updated
#: policy, the share of the three most used keeps and boxes, the policy and value losses, and the
#: saturation signs: each head's largest absolute logit and the taken actions' mean log-probability).
TRAIN_METRICS = (
    "explained_variance",
    "loss_entropy_roll",
    "loss_entropy_score",
    "episode_return",
    "lr",
    "kl",
    "top3_keep_share",
    "top3_box_share",
    "loss_policy",
    "loss_value",
    "max_logit_keep",
    "max_logit_box",
    "log_prob_taken",
)


def in_tune_session() -> bool:
    """Whether this process runs a Ray Tune trial (the callback also works in a plain ``fit``)."""
    try:
        from ray.tune import get_context

        return get_context().get_trial_id() is not None
    except Exception:  # no Ray, or no session: a plain run
        return False


class StudyRecorder(L.Callback):
    """Writes each evaluation to ``history.jsonl`` and reports it, with a checkpoint, to Ray Tune.

    Adds what the study's exhibits need beyond the logged metrics: the single-turn score (points in
    one turn from a random partly filled card, the same ``eval_games`` episodes every time).
    ``settings``: the trial's evolved settings (population-based training), kept with each line.
    """

    def __init__(self, run_dir: str, settings: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.settings = settings or {}
        self.fit = ""  # set at each fit's start

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.fit = uuid.uuid4().hex[:12]  # which fit wrote a line: a resume's clock starts again at 0

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        settings = {f"setting/{k}": v for k, v in self.settings.items()}
        rows = [row | settings | {"fit": self.fit} | where() for row in evaluation_rows(trainer, pl_module)]
        append_lines(self.run_dir / HISTORY, rows)
        Manifest.read(self.run_dir).add([HISTORY])  # its records are the trial's own: --force deletes them
        if in_tune_session():
            from ray import tune

            report = dict(rows[0])  # a scheduler's metric: the members' mean in an ensemble
            report["eval/mean_score"] = sum(r.get("eval/mean_score", 0.0) for r in rows) / len(rows)
            with tempfile.TemporaryDirectory() as d:
                trainer.save_checkpoint(Path(d) / "last.ckpt")
                (Path(d) / "origin.json").write_text(json.dumps({"run_dir": str(self.run_dir)}))
                tune.report(report, checkpoint=tune.Checkpoint.from_directory(d))


class LatestMetrics(Logger):
    """A logger that keeps the latest value of every metric logged: the training metrics an
    ensemble writes to the loggers directly (per member), which Lightning's ``callback_metrics``
    does not hold."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict[str, float] = {}

    @property
    def name(self) -> str:
        return "latest"

    @property
    def version(self) -> int:
        return 0

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        self.latest.update({k: float(v) for k, v in metrics.items() if isinstance(v, (int, float, torch.Tensor))})

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass


def single_turn_score(module: L.LightningModule, episodes: int, seed: int) -> float:
    """Mean points of the module's greedy policy in single turns (NaN for a module without one)."""
    from ...evaluation import play_single_turns

    if not hasattr(module, "player") or module.hparams.get("n_players", 1) > 1:
        return float("nan")
    return float(play_single_turns(module.player(), episodes, seed, module.rules, module.device).double().mean())


def members(module: L.LightningModule) -> list[tuple[int | None, contextlib.AbstractContextManager]]:
    """(index, context) per member: each member of an ensemble as the module, or the run itself (None)."""
    if getattr(module, "members", None) is None:
        return [(None, contextlib.nullcontext())]
    return [(k, module.as_member(k)) for k in range(module.ensemble_size)]


def evaluation_rows(trainer: L.Trainer, module: L.LightningModule) -> list[dict[str, Any]]:
    """The evaluation just logged, as plain numbers (``eval/*`` and the training metrics above), a
    row per member: an ensemble logs each member's under ``member_K/``."""
    logged = {k: float(v) for k, v in trainer.callback_metrics.items()}
    for lg in trainer.loggers:
        if isinstance(lg, LatestMetrics):
            logged |= lg.latest
    rows = []
    for k, as_member in members(module):
        prefix = "" if k is None else f"member_{k}/"
        row: dict[str, Any] = {"epoch": trainer.current_epoch} | ({} if k is None else {"member": k})
        row |= {key.removeprefix(prefix): v for key, v in logged.items() if key.startswith(f"{prefix}eval/")}
        row |= {f"train/{n}": logged[f"{prefix}train/{n}"] for n in TRAIN_METRICS if f"{prefix}train/{n}" in logged}
        with as_member:
            row["eval/single_turn_score"] = single_turn_score(module, module.hparams.eval_games, module.hparams.seed)
        rows.append(row)
    return rows


def trial_config(
    cell: Cell,
    seeds: list[int],
    run_dir: Path,
    settings: dict[str, Any],
    members: list[dict[str, Any]] | None = None,
    gpus: float = 0,
) -> dict[str, Any]:
    """The cell's fit config for its seed (several: ensemble members), logging and checkpointing into
    ``run_dir``; ``members``: a pack's ensemble (each member's seed and the settings it carries); on
    the GPU Ray gave the trial where it asked for a share of one (``gpus`` > 0)."""
    config = compose(Path(cell.base).read_text(), {**cell.overrides, **settings})
    config["seed_everything"] = seeds[0]
    init_args = config.setdefault("model", {}).setdefault("init_args", {})
    init_args["seed"] = seeds[0]
    if members:  # a pack (packing.py): its cells' members
        init_args["ensemble"] = members
    elif len(seeds) > 1:  # the ensemble seam (runner.seeds_per_trial): one member per seed
        init_args["ensemble"] = [{"seed": s} for s in seeds]
    trainer = config.setdefault("trainer", {})
    trainer["default_root_dir"] = str(run_dir)
    trainer["enable_progress_bar"] = False
    loggers = trainer.get("logger")
    for lg in loggers if isinstance(loggers, list) else [loggers]:
        if isinstance(lg, dict) and "save_dir" in (lg.get("init_args") or {}):
            lg["init_args"]["save_dir"] = str(run_dir)
    callbacks = trainer.get("callbacks") or []
    callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
    saving = [cb for cb in callbacks if isinstance(cb, dict) and "dirpath" in (cb.get("init_args") or {})]
    for cb in saving:  # one run per trial folder: its checkpoints as given, not a folder per run
        cb["init_args"]["dirpath"] = str(run_dir / "checkpoints")
        if is_run_checkpoint(str(cb.get("class_path", ""))):
            cb["init_args"]["runs_apart"] = False
    if not saving:  # a trial must leave checkpoints to resume from
        callbacks.append(
            {
                "class_path": "yahtzee_lightning.loop.checkpoint.RunCheckpoint",
                "init_args": {
                    "dirpath": str(run_dir / "checkpoints"),
                    "save_last": True,
                    "every_n_epochs": 1,
                    "runs_apart": False,
                },
            }
        )
    recorder = {"run_dir": str(run_dir), "settings": settings}
    callbacks.append({"class_path": f"{__name__}.StudyRecorder", "init_args": recorder})
    trainer["callbacks"] = callbacks
    loggers = trainer.get("logger")
    loggers = [] if loggers in (None, False, True) else loggers if isinstance(loggers, list) else [loggers]
    trainer["logger"] = [*loggers, {"class_path": f"{__name__}.LatestMetrics"}]
    return on_gpu(config) if gpus > 0 else config


def retune(src: Path, dst: Path, settings: dict[str, Any]) -> None:
    """Copy a checkpoint with an evolved learning rate: its hyperparameter, optimiser and schedule.
    The source is checked first (a damaged one is never passed on), and the copy sealed anew with the
    sha256s of what it now holds."""
    ckpt, problem = load_checked(src)
    if ckpt is None:
        raise ValueError(f"{src}: the checkpoint handed over cannot be trusted ({problem})")
    new = settings.get("model.init_args.lr")
    hp = ckpt.get("hyper_parameters") or {}
    if new is not None and "lr" in hp and float(hp["lr"]) != float(new):
        ratio = float(new) / float(hp["lr"])
        hp["lr"] = float(new)
        for state in ckpt.get("optimizer_states", []):
            for group in state["param_groups"]:
                for key in ("lr", "initial_lr"):
                    if key in group:
                        group[key] *= ratio
        for sched in ckpt.get("lr_schedulers", []):
            for key in ("base_lrs", "_last_lr"):
                if key in sched:
                    sched[key] = [x * ratio for x in sched[key]]
    checkpoint_digest(ckpt)
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save(ckpt, dst)


def resume_point(run_dir: Path, handed: Any, settings: dict[str, Any]) -> str | None:
    """What ``--ckpt_path`` to give: another trial's checkpoint handed over by Ray, else ``last``
    when the run folder holds a checkpoint, else None (a new run)."""
    folder = run_dir / "checkpoints"
    own = folder.is_dir() and any(folder.rglob("*.ckpt"))  # either layout (a folder per run, or none)
    if handed is not None:
        with handed.as_directory() as d:
            origin = json.loads((Path(d) / "origin.json").read_text())["run_dir"]
            if origin != str(run_dir) or not own:
                target = folder / "inherited.ckpt"
                retune(Path(d) / "last.ckpt", target, settings)
                return str(target)
    return "last" if own else None


def final_record(module: L.LightningModule, cell_id: str, seed: int, settings: dict[str, Any]) -> dict[str, Any]:
    """What ``final.json`` keeps: the final evaluation (the agent's and the optimum's on the same
    games), the single-turn score on as many episodes, the games trained; an ensemble's per member
    (``members``, by index: the ensemble seam)."""
    h = module.hparams
    finals = module.final_evaluation if isinstance(module.final_evaluation, list) else [module.final_evaluation]
    records = []
    for (_, as_member), final in zip(members(module), finals, strict=True):
        final = final or {}
        record = {"summary": final.get("summary"), "optimal": final.get("optimal"), "final_seed": final.get("seed")}
        with as_member:
            episodes = max(module.hparams.final_eval_games, 1)
            record["single_turn_score"] = single_turn_score(module, episodes, final.get("seed", module.hparams.seed))
        records.append(record)
    out: dict[str, Any] = {"cell": cell_id, "seed": seed, "settings": settings, **records[0]}
    out["games"] = int(module.updates_done) * h.games_per_batch
    if len(records) > 1 or getattr(module, "members", None) is not None:
        out["members"] = records
    return out


def final_metrics(record: dict[str, Any]) -> dict[str, float]:
    """The final evaluation as the trial's last result to Ray (its scheduler's metric included): a
    packed trial's is the mean over its members (``record["members"]``), not its first member's."""
    out = {"done": 1.0, "final/games": float(record.get("games", 0))}
    summaries = [m.get("summary") for m in record.get("members") or [record]]
    summaries = [s for s in summaries if s]
    if summaries:

        def mean(pick: Callable[[dict[str, Any]], float]) -> float:
            return sum(pick(s) for s in summaries) / len(summaries)

        score = mean(lambda s: s["score"]["mean"])
        out |= {"eval/mean_score": score, "final/mean_score": score, "final/members": float(len(summaries))}
        out |= {
            "final/upper_bonus_rate": mean(lambda s: s["upper_bonus_rate"]),
            "final/yahtzee_rate": mean(lambda s: s["yahtzee_rate"]),
        }
    return out


def last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()] if path.exists() else []
    return lines[-1] if lines else "no output"


def _failed(run_dir: Path, message: str) -> None:
    """Write why the trial failed (its first line) to ``error.txt``, the study's record of it."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    write_text_whole(run_dir / ERROR, first + "\n")
    Manifest.read(run_dir).add([ERROR])


def run_trial(config: dict[str, Any], trials: dict[str, dict[str, Any]] | None = None) -> None:
    """Ray Tune's trainable: one (cell, seed) of a study, as an ordinary ``fit`` in its run folder.

    ``trials`` (by trial name) or ``config["trial"]`` name the cell, the seeds and the run folder;
    any other key is a setting the scheduler evolves (``model.init_args.lr``). The name wins: a
    population-based scheduler copies a strong member's whole config, its ``trial`` entry included,
    into a weak one. A trial whose ``final.json`` exists reports it and stops: a finished trial is
    never trained again, whatever state Ray restored.
    """
    from ray import tune

    from ...loop.lightning_cli import run_cli

    torch.set_num_threads(1)
    name = tune.get_context().get_trial_name()
    trial = trials[name] if trials and name in trials else config["trial"]
    cell, seeds, run_dir = Cell(**trial["cell"]), [int(s) for s in trial["seeds"]], Path(trial["run_dir"])
    settings = {k: v for k, v in config.items() if k != "trial"}
    if (done := read_final(run_dir / FINAL)) is not None:
        tune.report(final_metrics(done))
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / ERROR).unlink(missing_ok=True)
    config_path = run_dir / "config.yaml"
    config = trial_config(cell, seeds, run_dir, settings, trial.get("members"), gpus=trial.get("gpus", 0))
    if trial.get("start_from"):  # a chained cell (chain.py): from its source's agent of this seed
        try:
            config["model"]["init_args"]["init_from"] = str(start_weights(run_dir, trial["start_from"]))
        except Exception as e:
            _failed(run_dir, f"{type(e).__name__}: {e}")
            raise
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    Manifest.read(run_dir).add([config_path.name])
    ckpt = resume_point(run_dir, tune.get_checkpoint(), settings)
    args = ["fit", "--config", str(config_path), *(["--ckpt_path", ckpt] if ckpt else [])]
    with open(run_dir / LOG, "a") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            cli = run_cli(args)
        except SystemExit as e:
            if not e.code:  # Ray stopping the trial (a scheduler's pause or stop): not a failure
                raise
            log.flush()
            message = last_line(run_dir / LOG)  # the CLI's one-line usage error (a setting the module refused)
            _failed(run_dir, message)
            raise RuntimeError(message) from None
        except Exception as e:
            _failed(run_dir, f"{type(e).__name__}: {e}")
            raise
    record = final_record(cli.model, cell.id, seeds[0], settings) | where()  # the node it finished on
    write_text_whole(run_dir / FINAL, final_text(record))
    Manifest.read(run_dir).add([FINAL, LOG])
    tune.report(final_metrics(record))
