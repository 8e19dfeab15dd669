"""What ``yahtzee-lightning expert-iteration`` keeps in its output folder between runs: the state
(each stage's finished steps, the config's digest), the history (a line a stage) and its figure,
so that a killed loop goes on where it stopped and a loop of other settings is refused."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..atomic import write_text_whole
from ..png import save_png

STATE, HISTORY, FIGURE = "loop_state.json", "history.jsonl", "stages.png"
#: How often a step that runs writes its seconds so far into the state: a kill the process cannot see
#: (SIGKILL, a machine going away) loses at most this much of the loop's wall clock.
HEARTBEAT_S = 60.0


class LoopState:
    """The state file: ``{"config_sha256", "config", "stages": {"K": {step: record}}, "agent": record}``,
    written whole to a temporary name and renamed over the last (a kill leaves the last whole state)."""

    def __init__(self, out: Path, digest: str, config: dict[str, Any]) -> None:
        self.path = out / STATE
        self.data: dict[str, Any] = {"config_sha256": digest, "config": config, "stages": {}}
        if self.path.is_file():
            try:
                saved = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise ValueError(f"{self.path}: not a loop state ({e}); move the folder away to start over") from None
            if not isinstance(saved, dict) or saved.get("config_sha256") != digest:
                raise ValueError(
                    f"{out} holds a loop of other settings (its {STATE} has another config digest): "
                    "resume it with its own config, or give this config another out:"
                )
            self.data = {**saved, "config": config}  # the stages as now asked: the only setting that may change

        self._lock = threading.Lock()  # the step's heartbeat writes from its own thread

    def interrupted(self, stage: int, step: str) -> float:
        """Seconds ``step`` of ``stage`` ran in earlier runs that ended before it finished (a kill): they
        count in its wall clock, with the time its resume takes."""
        running = self.data.get("running")
        if isinstance(running, dict) and (running.get("stage"), running.get("step")) == (stage, step):
            return float(running.get("seconds", 0.0))
        return 0.0

    def running(self, stage: int, step: str, seconds: float) -> None:
        """The step in progress and its seconds so far (across runs)."""
        self.data["running"] = {"stage": stage, "step": step, "seconds": round(seconds, 1)}
        self.write()

    def done(self, stage: int, step: str) -> dict[str, Any] | None:
        """The record of ``step`` of ``stage`` where it finished, else None."""
        return self.data["stages"].get(str(stage), {}).get(step)

    def record(self, stage: int, step: str, record: dict[str, Any]) -> None:
        self.data["stages"].setdefault(str(stage), {})[step] = record
        self.data.pop("running", None)
        self.write()

    def write(self) -> None:
        with self._lock:
            write_text_whole(self.path, json.dumps(self.data, indent=1))

    def agent(self, stages: int) -> dict[str, Any] | None:
        """The record of the agent written after stage ``stages``, else None (not yet, or after another)."""
        agent = self.data.get("agent")
        return agent if isinstance(agent, dict) and agent.get("after_stage") == stages else None

    def record_agent(self, stages: int, record: dict[str, Any]) -> None:
        self.data["agent"] = {**record, "after_stage": stages}
        self.data.pop("running", None)
        self.write()

    def seconds(self) -> float:
        """Seconds of every finished stage's steps: the loop's wall clock so far, across its runs."""
        return sum(r.get("seconds", 0.0) for steps in self.data["stages"].values() for r in steps.values())

    def history(self) -> list[dict[str, Any]]:
        """A row per finished stage: its scores, the value's held-out error, its seconds."""
        rows = []
        for key in sorted(self.data["stages"], key=int):
            steps = self.data["stages"][key]
            if "evaluate" in steps:
                seconds = sum(r.get("seconds", 0.0) for r in steps.values())
                rows.append({"stage": int(key), **steps["evaluate"], "stage_seconds": round(seconds, 1)})
        return rows


@contextlib.contextmanager
def timed_step(state: LoopState, stage: int, step: str) -> Iterator[Callable[[], float]]:
    """Time a step across the runs it takes: yields its seconds so far (the earlier runs' included).
    While it runs its seconds go into the state every ``HEARTBEAT_S``, and once more when the process
    sees it end early (Ctrl-C, an error), so a resumed step's record counts the time a kill cost."""
    earlier = state.interrupted(stage, step)
    started = time.perf_counter()

    def elapsed() -> float:
        return earlier + time.perf_counter() - started

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            state.running(stage, step, elapsed())

    heartbeat = threading.Thread(target=beat, name="loop-heartbeat", daemon=True)
    heartbeat.start()
    finished = False
    try:
        yield elapsed
        finished = True
    finally:
        stop.set()
        heartbeat.join()
        if not finished:
            state.running(stage, step, elapsed())


def write_history(out: Path, rows: list[dict[str, Any]]) -> None:
    """``history.jsonl`` (a line a finished stage) and ``stages.png``, rewritten whole from the state."""
    write_text_whole(out / HISTORY, "".join(json.dumps(row) + "\n" for row in rows))
    draw_stages(rows, out / FIGURE)


def draw_stages(rows: list[dict[str, Any]], path: Path) -> None:
    """The stages' scores (network alone, with its search) on the held-back games, and the value's
    held-out error below them; matplotlib only here (imported lazily: the loop itself needs none)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 6.0), sharex=True, height_ratios=(2, 1))
    stages = [r["stage"] for r in rows]
    for key, label in (("network", "network alone"), ("search", "with its search (lookahead)")):
        means = [r[key]["mean"] for r in rows]
        errors = [1.96 * r[key]["se"] for r in rows]
        top.errorbar(stages, means, yerr=errors, marker="o", capsize=3, label=label)
    games = rows[0]["eval_games"] if rows else 0
    top.set_ylabel(f"mean score ({games:,} held-back games)\nbars: 95 % interval (1.96 SE)")
    top.legend(loc="best")
    top.grid(alpha=0.3)
    errors = [(r["stage"], r["value_error"]) for r in rows if r.get("value_error") is not None]
    if errors:
        bottom.semilogy(*zip(*errors, strict=True), marker="s", color="tab:green")
    bottom.set_ylabel("value's held-out error\n(points², own backups)")
    bottom.set_xlabel("stage (0: self-play; then taught by the search)")
    bottom.set_xticks(stages)
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    plt.close(fig)


def stage_line(row: dict[str, Any], stages: int, total_seconds: float) -> str:
    """The progress line of a finished stage."""
    net, search = row["network"], row["search"]
    error = row.get("value_error")
    value = f"value's held-out error {error:.3f} points^2" if error is not None else "value: no held-out error"
    kind = "self-play" if row["stage"] == 0 else "taught by the search"
    return (
        f"stage {row['stage']}/{stages} ({kind}): network {net['mean']:.2f} +- {net['se']:.2f}, "
        f"search {search['mean']:.2f} +- {search['se']:.2f} on {row['eval_games']:,} held-back games "
        f"(seed {row['eval_seed']}); {value}; {row['stage_seconds'] / 60:.1f} min (loop {total_seconds / 60:.1f} min)"
    )
