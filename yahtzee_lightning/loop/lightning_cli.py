"""The LightningCLI that ``yahtzee-lightning fit|validate`` (``commands/fit.py``) and every trial of a
study run: over any LightningModule, configured in YAML.

``--model`` takes a class path (``yahtzee_lightning.algorithms.PPO`` or a user's own module) and
every constructor argument is a YAML key or a dotted override (``--model.init_args.lr 3e-4``);
``--model.help CLASS`` lists a class's keys. Unknown or ill-typed keys fail with the key's name
(jsonargparse).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import lightning as L
from jsonargparse import ArgumentError
from lightning.pytorch.callbacks.progress import ProgressBar
from lightning.pytorch.cli import LightningCLI

from ..manifest import FolderBusy, folder_lock
from ..shipped import expanded_config_path
from ..untrusted import UntrustedError, check_count, check_yaml
from . import resume
from .checkpoint import is_run_checkpoint
from .config_errors import _options, parse_error
from .launch import LaunchError, SameRunOnEveryRank, check_budget_early, check_nodes, check_resumed_ranks
from .notices import RANK_ZERO, quiet, quiet_library_notices
from .progress_lines import FitProgressLines, ProgressBarOnStderr
from .training_config import TrainingConfig

# Loggers (CSV + TensorBoard) and checkpointing (every epoch = every evaluation interval, plus
# ``last.ckpt`` every few minutes for ``--ckpt_path last``: ``RunCheckpoint``) are set in each YAML under conf/.
# Resuming follows the rule in ``resume.py`` (docs/guide.md, "Resuming a run").
# Launches on many ranks are checked as the ranks meet (launch.py): a callback every fit has.
TRAINER_DEFAULTS = {"num_sanity_val_steps": 0, "callbacks": [SameRunOnEveryRank()]}


def trainer_overrides(model: Any, trainer_config: dict[str, Any]) -> dict[str, Any]:
    """Trainer arguments the project sets so that Lightning has nothing to warn about.

    * ``max_epochs``: an algorithm of ours derives it from its budget (``total_games``,
      ``evaluations``) in ``setup``; Lightning would otherwise announce a default of 1000.
    * the progress bar: on stderr with a total, an ETA and the epoch count, on a terminal;
      elsewhere (logs, CI, nohup, SLURM) a progress line every interval (``FitProgressLines``).
    """
    from .settings import Settings

    out: dict[str, Any] = {}
    if trainer_config.get("max_epochs") is None and isinstance(model, Settings):  # an OnPolicyAlgorithm
        out["max_epochs"] = -1  # "not asked": setup() sets the budget's epoch count
    callbacks = trainer_config.get("callbacks") or []
    callbacks = callbacks if isinstance(callbacks, list) else [callbacks]
    if trainer_config.get("enable_progress_bar", True) is False:
        return out
    if not sys.stderr.isatty():  # a log file or a pipe: a progress line every interval, not a bar
        out["enable_progress_bar"] = False
        if not any(isinstance(c, FitProgressLines) for c in callbacks):
            out["callbacks"] = [*callbacks, FitProgressLines()]
    elif not any(isinstance(c, ProgressBar) for c in callbacks):
        out["callbacks"] = [*callbacks, ProgressBarOnStderr()]
    return out


def share_run_version(trainer_config: Any, checkpoint_folders: list[Path]) -> int:
    """The run's version K: the next free one among the loggers' ``version_N`` folders and the
    checkpoint folders' (one folder per run for both), given to every logger that versions itself.

    CSVLogger and TensorBoardLogger under the same ``save_dir``/``name`` would each pick the next
    free ``version_N``, the second one after the first had taken it (CSV in version_0,
    TensorBoard in version_1, and the bar showing ``v_num=0_1``).
    """
    loggers = trainer_config.get("logger")
    loggers = loggers if isinstance(loggers, list) else [loggers]
    open_ = [lg.init_args for lg in loggers if hasattr(lg, "init_args") and _versions_itself(lg.init_args)]
    roots = [Path(args.save_dir) / (args.get("name") or "") for args in open_] + checkpoint_folders
    version = max([-1, *(k for root in roots for k in resume.run_versions(root))]) + 1
    # Taken by creating its folder: two runs started at once would both count the same free K. Only by
    # the first process of a run: DDP's other ranks run this too, and take the run's folders from it.
    if roots and not any(int(os.environ.get(k, "0")) for k in ("LOCAL_RANK", "NODE_RANK", "RANK", "SLURM_PROCID")):
        while True:
            try:
                (roots[0] / f"version_{version}").mkdir(parents=True)
                break
            except FileExistsError:
                version += 1
    for args in open_:
        args.version = version
    return version


def place_run(config: Any) -> dict[str, Any] | None:
    """Resolve ``--ckpt_path`` and give the run its folders; the checkpoint resumed, or None.

    A ``RunCheckpoint`` with ``runs_apart`` writes into ``DIRPATH/version_K``: K the run's log
    version for a new run; a resumed run keeps the folder of the checkpoint it resumes (also one in
    the flat layout of older runs). Its logs take the next free version (Lightning's CSV logger
    would overwrite an existing version's metrics).
    """
    callbacks = config.trainer.get("callbacks") or []
    callbacks = [cb for cb in (callbacks if isinstance(callbacks, list) else [callbacks]) if hasattr(cb, "init_args")]
    saving = [cb for cb in callbacks if cb.init_args.get("dirpath")]
    apart = [cb.init_args for cb in saving if cb.init_args.get("runs_apart") and is_run_checkpoint(cb.class_path)]
    bases = [Path(args.dirpath) for args in apart]
    flat = [Path(cb.init_args.dirpath) for cb in saving if all(cb.init_args is not args for args in apart)]
    path, ckpt = resume.resolve_ckpt_path(config.get("ckpt_path"), bases, flat)
    config.ckpt_path = path
    version = share_run_version(config.trainer, bases)
    resumed = Path(path).resolve().parent if path and path != "last" else None
    if resumed is not None and resumed in [base.resolve() for base in bases]:
        return ckpt  # a run of the flat layout goes on there
    run = f"version_{version}"
    if resumed is not None and resumed.parent in [base.resolve() for base in bases]:
        run = resumed.name if resume.RUN_FOLDER.fullmatch(resumed.name) else run
    for args, base in zip(apart, bases, strict=True):
        args.dirpath = str(base / run)
    return ckpt


def _versions_itself(init_args: Any) -> bool:
    return "save_dir" in init_args and "version" in init_args and init_args.get("version") is None


def expect_checkpoints_when_resuming(subcommand_config: Any) -> None:
    """A resumed run (``--ckpt_path``) writes into its own non-empty checkpoint folder: by design."""
    if subcommand_config.get("ckpt_path"):
        warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")


#: The parsers this process has built, by everything that shapes one (``_CLI.setup_parser``).
_PARSERS: dict[tuple[Any, ...], tuple[Any, dict[str, Any], dict[str, Any]]] = {}


class _CLI(LightningCLI):
    """LightningCLI that enforces the resume rule (``resume.py``), ends bad settings in one line
    and gives Lightning nothing to warn about (see the functions above)."""

    _resumed: dict[str, Any] | None = None  # the checkpoint ``--ckpt_path`` resumes (``place_run``)

    @staticmethod
    def subcommands() -> dict[str, set[str]]:
        """The two verbs that run through LightningCLI (``test`` and ``predict`` are not verbs here)."""
        every = LightningCLI.subcommands()
        return {verb: every[verb] for verb in ("fit", "validate")}

    def setup_parser(
        self, add_subcommands: bool, main_kwargs: dict[str, Any], subparser_kwargs: dict[str, Any]
    ) -> None:
        """Built once a process and reused: jsonargparse walks every class signature to build it, a
        fifth of a small fit's CPU (and of a study's check of each cell), and it comes out the same
        for every run built the same way. Parsing leaves a parser as it was."""
        key = (
            type(self),
            add_subcommands,
            repr(main_kwargs),
            repr(subparser_kwargs),
            repr(self.seed_everything_default),
            self.trainer_class,
            repr(self.trainer_defaults),
            self._model_class,
            self.subclass_mode_model,
            self._datamodule_class,
            self.subclass_mode_data,
            self.auto_configure_optimizers,
            self.parser_class,
        )
        if key not in _PARSERS:
            super().setup_parser(add_subcommands, main_kwargs, subparser_kwargs)
            _PARSERS[key] = (
                self.parser,
                getattr(self, "_subcommand_parsers", {}),
                getattr(self, "_subcommand_method_arguments", {}),
            )
        self.parser, self._subcommand_parsers, self._subcommand_method_arguments = _PARSERS[key]

    def _parse_ckpt_path(self) -> None:
        """Off: LightningCLI would overwrite the config's model settings with a named checkpoint's,
        silently dropping overrides (and not for ``last``). The rule instead: the config as given,
        the settings a checkpoint fixes checked against it in ``before_fit``."""

    def instantiate_classes(self) -> None:
        try:
            super().instantiate_classes()
        except ValueError as e:  # a setting the module refused (validate_settings): its message, no traceback
            while (e.__cause__ or e.__context__) is not None:  # jsonargparse wraps it: the module's own error
                e = e.__cause__ or e.__context__
            usage_error(self.subcommand, str(e))

    def before_fit(self) -> None:
        if self._resumed is not None:  # resolved with the run's folders (place_run)
            try:
                resume.check_overrides(self.model, self._resumed, self.config_init[self.subcommand]["ckpt_path"])
                check_resumed_ranks(self._resumed, self.trainer.num_nodes * self.trainer.num_devices)
            except (resume.ResumeError, LaunchError) as e:
                usage_error(self.subcommand, str(e))
        hold_run_folders(self.trainer, self.subcommand)

    def after_fit(self) -> None:
        with quiet(RANK_ZERO):  # the check reads ``fit_loop.done``, which would announce the stop a second time
            resume.ensure_final_evaluation(self.trainer, self.model)

    def parse_arguments(self, parser: Any, args: Any) -> None:
        # The arguments are always given explicitly (the console script passes its own): hide
        # sys.argv while parsing so that LightningCLI does not warn about receiving both.
        subparsers = getattr(parser._subcommands_action, "_name_parser_map", {})
        for p in (parser, *subparsers.values()):
            p.exit_on_error = False  # a bad argument raises here and ends in one line (parse_error), not a usage dump
            p.allow_abbrev = False  # ``--trainer.max_epoch`` is a typo to name, not ``max_epochs`` abbreviated
            p._allow_abbrev_given = True  # (jsonargparse's notice that abbreviations are deprecated: moot)
        with mock.patch.object(sys, "argv", sys.argv[:1]):
            try:
                super().parse_arguments(parser, args)
            except ArgumentError as e:  # the command line's or a config dict's (a study's check): one line
                given = subparsers.get(args[0], parser) if isinstance(args, (list, tuple)) and args else parser
                raise ConfigError(parse_error(str(e), _options(given))) from None
        try:  # before LightningCLI seeds anything with it
            check_trainer_counts(self.config.get(str(self.config.get("subcommand")), self.config))
        except UntrustedError as e:
            raise ConfigError(str(e)) from None

    def before_instantiate_classes(self) -> None:
        config = self.config.get(str(self.subcommand), self.config)
        try:
            check_nodes(config.trainer.get("num_nodes"))  # before Lightning waits for nodes nobody starts
            check_budget_early(config)  # before any process starts or connects
            self._resumed = place_run(config)
        except (resume.ResumeError, LaunchError) as e:
            usage_error(self.subcommand, str(e))
        expect_checkpoints_when_resuming(config)

    def instantiate_trainer(self, **kwargs: Any) -> L.Trainer:
        trainer_config = self._get(self.config_init, "trainer", default={})
        return super().instantiate_trainer(**{**trainer_overrides(self.model, trainer_config), **kwargs})


class ConfigError(ValueError):
    """A ``fit`` argument or config that does not parse, worded in one line (``parse_error``)."""


def check_trainer_counts(config: Any) -> None:
    """The seed and the epoch count bounded before anything is built (``untrusted.COUNT_BOUNDS``):
    numpy and Lightning fail on a seed past 2**32 - 1 with a traceback, deep inside the run."""
    seed = config.get("seed_everything")
    if seed is not None and not isinstance(seed, bool):
        check_count("seed", seed)
    if (epochs := config.trainer.get("max_epochs")) is not None:
        check_count("max_epochs", epochs)


def shipped_configs(argv: list[str] | None) -> list[str] | None:
    """``--config NAME`` for a recipe shipped with the package (``quickstart``) where no such file is
    (an installed package run from any folder), and a recipe's ``base:`` chain merged; an unknown
    name is one line listing the recipes."""
    if argv is None:
        return None
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--config" and i + 1 < len(out):
            out[i + 1] = expanded_config_path(out[i + 1])
        elif arg.startswith("--config="):
            out[i] = "--config=" + expanded_config_path(arg.removeprefix("--config="))
    return out


def usage_error(subcommand: str | None, message: str) -> None:
    verb = f"yahtzee-lightning {subcommand or 'fit'}"
    print(f"{verb}: error: {message} (usage: {verb} --help)", file=sys.stderr)  # as every verb words it
    raise SystemExit(2)


_HELD = contextlib.ExitStack()  # the run folders this process writes into, held until its fit ends
_HELD_FOLDERS: list[str] = []  # their names, for a line about a write that failed there
#: A write that failed for want of room: a full disk, a quota, a file-size limit (``ulimit -f``).
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def hold_run_folders(trainer: L.Trainer, subcommand: str | None) -> None:
    """One writer per run folder: hold every checkpoint folder this fit writes into (rank 0, whose
    checkpoints they are); one already held by another live process ends this one in a line that
    names it. The OS lets go of a killed process's hold."""
    if not trainer.is_global_zero:
        return
    command = f"yahtzee-lightning {subcommand or 'fit'}"
    for callback in trainer.checkpoint_callbacks:
        folder = getattr(callback, "dirpath", None)
        if folder:
            if not Path(folder).is_dir() or not any(Path(folder).iterdir()):  # only the lock will be there
                pattern = rf"Checkpoint directory {re.escape(str(folder))} exists and is not empty"
                warnings.filterwarnings("ignore", message=pattern)
            try:
                _HELD.enter_context(folder_lock(folder, command, tidy=True))
                _HELD_FOLDERS.append(str(folder))
            except FolderBusy as e:
                _HELD.close()
                usage_error(subcommand, f"run folder {e}")


#: A YAML value this short holds at most a few thousand nodes (``untrusted.MAX_YAML_NODES``: 100,000).
_PLAIN_YAML_BYTES = 4096


def bounded_yaml_values() -> None:
    """Every YAML jsonargparse reads (a ``--config`` file, a value on the command line) checked by
    ``..untrusted.check_yaml`` first: aliases, tags and size bounded, refused in one line."""
    import yaml
    from jsonargparse import set_loader
    from jsonargparse._loaders_dumpers import yaml_load

    def load(text: str) -> Any:
        # A short value with no anchor, alias or tag (``&``, ``*``, ``!``) cannot hold what the check
        # bounds, and jsonargparse loads hundreds of them a run (every default and setting): the
        # full check for the rest, and for a value that does not parse, whose error it words.
        if len(text) > _PLAIN_YAML_BYTES or any(c in text for c in "&*!"):
            check_yaml(text, "a fit setting or --config")
        try:
            return yaml_load(text)
        except yaml.YAMLError:
            check_yaml(text, "a fit setting or --config")
            raise

    set_loader("yaml", load)


def run_cli(argv: list[str] | None = None) -> LightningCLI:
    """Run ``fit``/``validate`` as the console script does; the CLI, its trainer and model, for a
    caller that reads the result (a study's trial reads the final evaluation)."""
    quiet_library_notices()
    bounded_yaml_values()
    try:
        argv = shipped_configs(argv)
        return _CLI(
            L.LightningModule,
            subclass_mode_model=True,
            trainer_defaults=TRAINER_DEFAULTS,
            save_config_callback=TrainingConfig,  # config.yaml in the logs, and the YAML in every checkpoint
            save_config_kwargs={"overwrite": True},
            args=argv,
        )
    except (ConfigError, LaunchError, ValueError) as e:  # LaunchError: the ranks of a launch, as they met
        usage_error(argv[0] if argv else None, str(e))
        raise  # unreachable: usage_error exits
    except OSError as e:
        if e.errno not in FULL:
            raise
        where = ", ".join(_HELD_FOLDERS) or "the run's folders"
        print(
            f"yahtzee-lightning {argv[0] if argv else 'fit'}: error: writing a checkpoint or log into {where}: "
            f"{e.strerror or errno.errorcode.get(e.errno or 0, e)}; the run stopped, and any checkpoint written before "
            "this one is whole: make room (or raise the file-size limit), then resume with --ckpt_path last",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    finally:
        _HELD.close()  # the run folders are free again, however the fit ended
        _HELD_FOLDERS.clear()
