"""What ``fit --ckpt_path`` resumes, and the rule it enforces (docs/guide.md, "Resuming a run").

A checkpoint restores the network's weights, the optimiser (its learning rate included), the
learning-rate schedule and the progress (updates, epochs, games). Every other setting is read
from the config as given, so an override of it applies. The settings a checkpoint fixes (the
network's shape, ``lr``) must equal the checkpoint's: an override of one would be silently
dropped, so it is refused, naming it.
"""

from __future__ import annotations

import logging
import math
import re
import sys
from pathlib import Path
from typing import Any

import lightning as L
import torch

from ..digest import DIGEST_KEY, nonfinite, record_sha256, state_sha256, tensors_sha256

log = logging.getLogger(__name__)
_WARNED: set[tuple[str, str]] = set()  # (file, what): an old checkpoint read once per member warns once


def _warn_once(path: str | Path, what: str) -> None:
    if (key := (str(path), what)) not in _WARNED:
        _WARNED.add(key)
        log.warning("warning: %s carries no sha256 of its %s; loaded unchecked", path, what)


#: Settings fixed by a checkpoint besides the network's (``NETWORK_KEYS`` of the module's class):
#: the optimiser's ``lr``, ``ensemble`` (the members it holds) and ``ensemble_update`` (one Adam a
#: member, or one over the stacked members: the optimiser state it holds).
FIXED_ON_RESUME = ("lr", "ensemble", "ensemble_update")
#: What a checkpoint written before a fixed setting existed held: that setting's value then.
FIXED_BEFORE = {"ensemble_update": "loop"}


class ResumeError(ValueError):
    """A ``--ckpt_path`` that cannot be resumed as asked; the message says why."""


#: Where a checkpoint's record (``checkpoint["yahtzee_lightning"]``: algorithm, games, an ensemble's
#: members with their settings and last scores, which ``export --member best`` picks by) keeps its own
#: sha256, and an ensemble's checkpoint the sha256 of each member's weights (to name a damaged one).
RECORD_DIGEST, MEMBERS_DIGEST = "record_sha256", "members_sha256"
#: What a resume restores besides the weights, each with its sha256 under ``PARTS_DIGEST`` (by the
#: Lightning checkpoint's key), and how a refusal names it.
PARTS = {
    "optimizer_states": "optimizer state",
    "lr_schedulers": "learning-rate schedule state",
    "loops": "loop counters",
    "epoch": "epoch",
    "global_step": "global step",
    "callbacks": "callbacks' state",
    "hyper_parameters": "hyperparameters",
}
PARTS_DIGEST = "parts_sha256"


def _member_states(state: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """An ensemble's weights by member (``members.K.`` entries); empty for a single network."""
    members: dict[int, dict[str, Any]] = {}
    for key, value in state.items():
        head, _, rest = key.partition(".")
        index, _, name = rest.partition(".")
        if head == "members" and index.isdigit():
            members.setdefault(int(index), {})[name] = value
    return members


def checkpoint_digest(checkpoint: dict[str, Any]) -> None:
    """Record the sha256 of the checkpoint's weights (each member's too, in an ensemble), of every
    other part a resume restores (``PARTS``: optimiser, schedule, loops, callbacks, hyperparameters)
    and of its record in it (``on_save_checkpoint``), for ``checkpoint_problem`` to check when it
    is resumed, exported or started from."""
    info = checkpoint.setdefault("yahtzee_lightning", {})
    info[DIGEST_KEY] = tensors_sha256(checkpoint["state_dict"])
    # The module's hook runs last in Lightning's dump: every part below is already in the checkpoint.
    info[PARTS_DIGEST] = {part: state_sha256(checkpoint[part]) for part in PARTS if part in checkpoint}
    if members := _member_states(checkpoint["state_dict"]):
        info[MEMBERS_DIGEST] = {str(k): tensors_sha256(s) for k, s in sorted(members.items())}
    info[RECORD_DIGEST] = record_sha256({k: v for k, v in info.items() if k != RECORD_DIGEST})


def _by_member(names: list[str]) -> str:
    """Tensor names, grouped by the ensemble member that holds them (``members.K.``) where one does."""
    members = sorted({int(n.split(".")[1]) for n in names if n.startswith("members.") and n.split(".")[1].isdigit()})
    return f"member {', '.join(map(str, members))} ({names[:5]})" if members else str(names[:5])


def checkpoint_problem(ckpt: Any, path: str | Path) -> str | None:
    """Why a loaded checkpoint cannot be trusted (not ours, weights that do not match their sha256,
    or that are not finite), or None. One written before digests is trusted with a warning."""
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("state_dict"), dict):
        return "not a Lightning checkpoint"
    info = ckpt.get("yahtzee_lightning") or {}
    if not isinstance(info, dict):
        return "its training record is not a mapping (the file is damaged)"
    state, saved = ckpt["state_dict"], info.get(DIGEST_KEY)
    if saved is None:
        _warn_once(path, "weights (written before digests)")
    elif saved != tensors_sha256(state):
        saved_members = info.get(MEMBERS_DIGEST) or {}
        members = _member_states(state)
        bad = [k for k in sorted(members) if saved_members.get(str(k)) not in (None, tensors_sha256(members[k]))]
        which = f"member {', '.join(map(str, bad))}'s weights" if bad else "the weights"
        return f"{which} do not match their sha256 (the file is damaged)"
    if RECORD_DIGEST not in info:
        if saved is not None:
            _warn_once(path, "training record (written before it)")
    elif info[RECORD_DIGEST] != record_sha256({k: v for k, v in info.items() if k != RECORD_DIGEST}):
        what = "its training record (algorithm, games, members' settings and scores)"
        return f"{what} does not match its sha256 (damaged or edited)"
    if bad := nonfinite({k: v for k, v in state.items() if isinstance(v, torch.Tensor)}):
        return f"weights that are not finite (NaN or inf) in {_by_member(bad)}"
    return parts_problem(ckpt, info, path)


def parts_problem(ckpt: dict[str, Any], info: dict[str, Any], path: str | Path) -> str | None:
    """Why the parts of a checkpoint besides its weights cannot be trusted: one that does not match
    its sha256, or an optimiser state that is not finite; None if none."""
    saved = info.get(PARTS_DIGEST)
    if saved is None:
        if info.get(DIGEST_KEY) is not None and "optimizer_states" in ckpt:
            _warn_once(path, "optimizer state and loop counters (written before it)")
    elif not isinstance(saved, dict):
        return "its record of sha256s is not a mapping (the file is damaged)"
    else:
        for part, what in PARTS.items():
            if part in saved and (part not in ckpt or state_sha256(ckpt[part]) != saved[part]):
                return f"its {what} ({part}) does not match its sha256 (damaged or edited)"
    for i, opt in enumerate(ckpt.get("optimizer_states") or []):
        states = opt.get("state", {}) if isinstance(opt, dict) else {}
        for param, entries in sorted(states.items(), key=lambda kv: str(kv[0])):
            if isinstance(entries, dict) and (
                bad := nonfinite({k: v for k, v in entries.items() if isinstance(v, torch.Tensor)})
            ):
                return f"its optimizer state is not finite (NaN or inf): optimizer {i}, parameter {param}, {bad}"
        for group in opt.get("param_groups", []) if isinstance(opt, dict) else []:
            lr = group.get("lr") if isinstance(group, dict) else None
            if isinstance(lr, float) and not math.isfinite(lr):
                return f"its optimizer state is not finite: optimizer {i}'s learning rate is {lr}"
    return None


def load_checked(path: str | Path) -> tuple[dict[str, Any] | None, str | None]:
    """The checkpoint at ``path`` (tensors and plain data only, no unpickling) and None, or None and
    why it cannot be used."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated, garbage, not a checkpoint: all mean "not usable"
        return None, f"it does not load ({type(e).__name__})"
    problem = checkpoint_problem(ckpt, path)
    return (None, problem) if problem else (ckpt, None)


def read_checkpoint(path: Path) -> dict[str, Any] | None:
    """The checkpoint at ``path``, or None if it is damaged (``load_checked``)."""
    return load_checked(path)[0]


RUN_FOLDER = re.compile(r"version_(\d+)")


def run_versions(folder: Path) -> list[int]:
    """The K of every ``version_K`` folder in ``folder`` (a log root or a checkpoint folder)."""
    if not folder.is_dir():
        return []
    return [int(m[1]) for p in folder.iterdir() if p.is_dir() and (m := RUN_FOLDER.fullmatch(p.name))]


def run_folders(base: Path) -> list[Path]:
    """The runs a checkpoint folder keeps, newest first: its ``version_K`` folders (K down), then the
    folder itself, where runs wrote before each run had its own folder."""
    return [base / f"version_{k}" for k in sorted(run_versions(base), reverse=True)] + [base]


def last_checkpoint(base: Path) -> Path | None:
    """``last.ckpt`` of the newest run in a checkpoint folder, in either layout, or None."""
    return next((f for d in run_folders(base) if (f := d / "last.ckpt").is_file()), None)


def find_resumable(dirs: list[Path]) -> tuple[Path | None, dict[str, Any] | None]:
    """The newest intact checkpoint in ``dirs`` (``last.ckpt`` first on a tie); a damaged newer one is
    skipped with a warning."""
    files = [f for d in dirs if d.is_dir() for f in d.glob("*.ckpt")]
    files.sort(key=lambda f: (f.stat().st_mtime, f.name.startswith("last")), reverse=True)
    for f in files:
        ckpt, problem = load_checked(f)
        if ckpt is not None:
            return f, ckpt
        log.warning("warning: %s is damaged (%s); resuming from the newest intact checkpoint", f, problem)
    return None, None


def find_newest_run(apart: list[Path], flat: list[Path]) -> tuple[Path | None, dict[str, Any] | None]:
    """The newest intact checkpoint of the newest run that has one: ``apart`` folders keep each run
    in a ``version_K`` folder (the highest K is the newest run; files beside those folders, the
    older flat layout, count as older), ``flat`` folders hold one run."""
    versions = sorted({k for base in apart for k in run_versions(base)}, reverse=True)
    for dirs in [*([base / f"version_{k}" for base in apart] for k in versions), [*apart, *flat]]:
        path, ckpt = find_resumable(dirs)
        if path is not None:
            return path, ckpt
    return None, None


def resolve_ckpt_path(
    ckpt_path: str | None, apart: list[Path] | None = None, flat: list[Path] | None = None
) -> tuple[str | None, dict[str, Any] | None]:
    """``--ckpt_path`` as a file to resume from (None: start anew) and its content.

    ``last``: the newest run's newest intact checkpoint in the run's checkpoint folders (``apart``,
    ``flat``: ``find_newest_run``); none there means a new run, said plainly. A named file must
    exist and load.
    """
    if ckpt_path is None:
        return None, None
    if ckpt_path != "last":
        path = Path(ckpt_path)
        if not path.is_file():
            raise ResumeError(f"--ckpt_path {ckpt_path}: no such checkpoint file")
        ckpt, problem = load_checked(path)
        if ckpt is None:
            raise ResumeError(f"--ckpt_path {ckpt_path}: the checkpoint is damaged ({problem})")
        return str(path), ckpt
    apart, flat = apart or [], flat or []
    if not apart and not flat:
        return ckpt_path, None  # no checkpoint folder configured: Lightning's own search
    path, ckpt = find_newest_run(apart, flat)
    if path is None:
        where = ", ".join(str(d) for d in [*apart, *flat])
        log.warning("warning: --ckpt_path last: nothing to resume in %s; starting a new run", where)
        return None, None
    print(f"resuming from {path}", file=sys.stderr)
    return str(path), ckpt


def check_overrides(model: L.LightningModule, ckpt: dict[str, Any], path: str) -> None:
    """Refuse a setting that differs from the checkpoint's where the checkpoint would win silently."""
    saved = {**FIXED_BEFORE, **(ckpt.get("hyper_parameters") or {})}
    keys = (*getattr(type(model), "NETWORK_KEYS", ()), *FIXED_ON_RESUME)
    changed = [
        f"{k}={model.hparams[k]!r} (the checkpoint's: {saved[k]!r})"
        for k in keys
        if k in saved and k in model.hparams and saved[k] != model.hparams[k]
    ]
    if changed:
        raise ResumeError(
            f"resuming {path} would silently keep the checkpoint's network and optimiser, but the config asks for "
            f"{', '.join(changed)}; drop the override, or start a new run from these weights with "
            f"--model.init_args.init_from={path}"
        )


def ensure_final_evaluation(trainer: L.Trainer, model: L.LightningModule) -> None:
    """A completed run ends with its final evaluation, also when resumed after a kill during it
    (Lightning skips a finished fit, and its ``on_train_end``, entirely)."""
    if trainer.interrupted or not trainer.is_global_zero or not trainer.fit_loop.done:
        return
    if not hasattr(model, "final_evaluation") or model.final_evaluation is not None:
        return
    model.to(trainer.strategy.root_device)
    model.on_train_end()
