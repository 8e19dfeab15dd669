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


def result_lines(final: Any) -> str:
    """The final evaluation in the two numbers that matter, printed last so that they stay on screen
    (the full table scrolls away above them): the agent's mean score and the optimum's on the same
    games; in a match, the agent's win rate and both mean scores; in an ensemble, a line per member."""
    if isinstance(final, list):
        return "\n".join(
            f"member {k}: " + result_lines(result).replace("\n", "; ") for k, result in enumerate(final) if result
        )
    if not isinstance(final, dict):
        return ""
    if "win" in final:  # a match (evaluation/match.py)
        ps, os_ = final["player_score"], final["best_opponent_score"]
        return (
            f"win rate {100 * final['win']['rate']:.2f}% ± {100 * final['win']['se']:.2f} against {final['opponent']} "
            f"in {final['games']:,} matches\n"
            f"mean score {ps['mean']:.2f} (the agent), {os_['mean']:.2f} (its best opponent), the same matches"
        )
    score = final["summary"]["score"]
    lines = [f"agent:   mean score {score['mean']:.2f} ± {score['se']:.2f} over {final['summary']['games']:,} games"]
    if "optimal" in final:
        optimal = final["optimal"]["score"]
        lines.append(f"optimum: mean score {optimal['mean']:.2f} ± {optimal['se']:.2f} on the same games")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = run_cli(argv)
    if cli.subcommand == "fit" and cli.trainer.is_global_zero:
        print(next_steps(cli.trainer, cli.model))
        if result := result_lines(getattr(cli.model, "final_evaluation", None)):
            print(result)  # last: the table above has scrolled away
    return 0
