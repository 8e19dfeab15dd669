"""``yahtzee-lightning fit`` and ``validate``: LightningCLI over the algorithms (a recipe under ``conf/``
holds every choice; any of them can be set on the command line), then the next commands to run."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ..loop.lightning_cli import run_cli


def next_steps(trainer: Any, model: Any) -> str:
    """Where the run's checkpoint is, and the commands that turn it into a shared agent."""
    from ..nn import PolicyValueNet

    ckpt = trainer.checkpoint_callback
    # A path the callback remembers but that is not there (a resumed run that wrote nothing, its
    # folder moved) is never printed: the newest checkpoint file there is, or nothing.
    found = [p for p in (ckpt.last_model_path, ckpt.best_model_path) if p and Path(p).is_file()] if ckpt else []
    path = found[0] if found else None
    if path is None and ckpt and ckpt.dirpath and (last := Path(ckpt.dirpath) / "last.ckpt").is_file():
        path = str(last)
    if not path:
        return ""
    with contextlib.suppress(ValueError):  # as typed from the run's folder, where possible
        path = str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    lines = [f"checkpoint: {path}"]
    if isinstance(getattr(model, "net", None), PolicyValueNet):
        member = " --member best" if getattr(model, "members", None) is not None else ""  # an ensemble: one member
        lines += [
            "next:",
            f"  yahtzee-lightning export {path} my-agent{member} --games 10000   # an agent folder, with its card",
            "  yahtzee-lightning evaluate --agent my-agent --games 10000 --report reports/my-agent",
            "  yahtzee-lightning push my-agent --repo-id USER/my-agent    # share it on the Hugging Face Hub",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = run_cli(argv)
    if cli.subcommand == "fit" and cli.trainer.is_global_zero:
        print(next_steps(cli.trainer, cli.model))
    return 0
