"""``yahtzee-lightning expert-iteration``: expert iteration from nothing, as one resumable command.

Stage 0: a network learns from its own games (a self-play ``fit``), is exported, and its turn-start
value is learned from its games (``turn-value``). Then each stage: a student learns from the search
of the last stage's value (an ``ExpertIteration`` fit: the first from a random network, the next
from the last), is exported, and, on the config's schedule, the value's TD rounds go on (a warm
``turn-value`` on stage 0's games, or the stage's own). After every stage a progress line (the
network alone and its search on held-back games, the value's held-out error), the history and its
figure. No exact table and no oracle label: the table is read only at the end, to judge the agent
for its card.

Every step's files are its verb's (a stage's ``last.ckpt``, the value's rounds file), and
``loop_state.json`` records each finished step: the same command resumes a killed loop where it
stopped; a loop of other settings is refused.
"""

from __future__ import annotations

import copy
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .args import VerbParser, plain

if TYPE_CHECKING:
    from .iteration_config import LoopConfig
    from .iteration_record import LoopState

STAGE_FOLDER = "stage_{}"


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(
        prog="yahtzee-lightning expert-iteration",
        description=plain(__doc__),
        epilog="example: yahtzee-lightning expert-iteration --config conf/expert_iteration_loop.yaml",
    )
    parser.add_argument(
        "--config", required=True, help="the loop's YAML (every choice: see conf/expert_iteration_loop.yaml)"
    )
    parser.add_argument(
        "--stop-after", type=int, default=None, help="stop once this stage is finished (the same command goes on)"
    )
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    from ..manifest import FolderBusy, folder_lock
    from .args import device_from_args
    from .iteration_config import LoopConfigError, read_loop_config
    from .iteration_record import LoopState

    try:
        config = read_loop_config(args.config)
    except LoopConfigError as e:
        parser.error(str(e))
    device_from_args(config.device, parser)  # a GPU asked for where there is none: now, not after stage 0
    if args.stop_after is not None and not 0 <= args.stop_after <= config.stages:
        parser.error(f"--stop-after {args.stop_after}: the stages are 0..{config.stages}")
    check_stages(config)  # a misspelt stage setting: now, not hours later when its stage starts
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        parser.error(f"out: {out} exists and is not a folder")
    try:
        state = LoopState(out, config.digest(), config.raw)  # another config's loop there: refused here
    except ValueError as e:
        parser.error(str(e))
    command = shlex.join(["yahtzee-lightning", "expert-iteration", *argv])
    try:
        with folder_lock(out, "yahtzee-lightning expert-iteration"):
            return run_loop(config, state, out, args.stop_after, command)
    except FolderBusy as e:
        parser.error(f"out: {e}")
    return 0  # unreachable: parser.error exits


def run_loop(config: LoopConfig, state: LoopState, out: Path, stop_after: int | None, command: str) -> int:
    """Every stage not finished yet, then the agent; the progress line of each stage as it ends."""
    from .iteration_record import stage_line, write_history

    print(plan_line(config), file=sys.stderr)
    finished = [row["stage"] for row in state.history()]
    if finished:
        print(f"resuming {out}: stages {finished[0]}..{finished[-1]} finished", file=sys.stderr)
        write_history(out, state.history())  # a kill may have come between a stage's record and its history
    for stage in range(config.stages + 1):
        if state.done(stage, "evaluate") is None:
            run_stage(config, state, out, stage)
            rows = state.history()
            write_history(out, rows)
            print(stage_line(rows[-1], config.stages, state.seconds()), flush=True)
        if stop_after == stage and stage < config.stages:
            print(f"stopped after stage {stage} (--stop-after): the same command without it goes on", file=sys.stderr)
            return 0
    if state.agent(config.stages) is None:
        state.record_agent(
            config.stages, run_timed(state, config.stages, "agent", lambda: write_agent(config, state, out, command))
        )
    print(f"agent: {out / 'agent'} (history {out / 'history.jsonl'}, figure {out / 'stages.png'})")
    return 0


def check_stages(config: LoopConfig) -> None:
    """Parse the fit recipe of stage 0 and of a search-taught stage as fit would (``--print_config``:
    nothing is built or written), and the value's settings: a bad key or value ends here in one line."""
    import contextlib
    import io
    import tempfile

    import yaml

    from ..loop.lightning_cli import run_cli
    from ..players.lookahead import ValueSettings

    try:
        ValueSettings(**config.value)
    except (TypeError, ValueError) as e:
        print(f"yahtzee-lightning expert-iteration: error: --config {config.path}: value: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    with tempfile.TemporaryDirectory(prefix="yahtzee-lightning-loop-") as folder:
        for stage in (0, 1):
            recipe = Path(folder) / f"stage_{stage}.yaml"
            recipe.write_text(yaml.safe_dump(stage_recipe(config, Path(folder), stage), sort_keys=False))
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    run_cli(["fit", "--config", str(recipe), "--print_config"])
            except SystemExit as e:  # fit has said why, in one line, where it was a bad setting
                if e.code:
                    raise


def plan_line(config: LoopConfig) -> str:
    """What the loop will run, in one line, before it runs it."""
    from ..players.lookahead import ValueSettings

    value = ValueSettings(**{k: v for k, v in config.value.items() if k in ("games", "td_rounds")})
    updates = config.value_updates
    after = ", ".join(map(str, updates["after"])) or "none"
    return (
        f"plan: stage 0 self-play {config.self_play['games']:,} games, its value "
        f"{value.td_rounds} TD rounds on {value.games:,} games; "
        f"{config.stages} stages of {config.games_per_stage:,} games taught by the search; "
        f"{updates['td_rounds']} more TD rounds after stages {after}; {config.eval_games:,} held-back games a stage"
    )


def run_stage(config: LoopConfig, state: LoopState, out: Path, stage: int) -> None:
    """One stage's steps (fit, export, value, evaluate), each skipped where the state says it finished."""
    folder = out / STAGE_FOLDER.format(stage)
    agent = folder / "agent"
    for step, run in (
        ("fit", lambda: fit_stage(config, out, stage)),
        ("export", lambda: export_stage(folder, agent, stage)),
        ("value", lambda: learn_value(config, out, stage, state)),
        ("evaluate", lambda: evaluate_stage(config, agent, stage)),
    ):
        if state.done(stage, step) is None:
            state.record(stage, step, run_timed(state, stage, step, run))


def run_timed(state: LoopState, stage: int, step: str, run: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """Run a step, timed across the runs it takes (``timed_step``): its record, seconds included."""
    from .iteration_record import timed_step

    before = state.interrupted(stage, step)
    with timed_step(state, stage, step) as elapsed:
        record = run() or {}
    return step_record(record, elapsed(), before)


def step_record(record: dict[str, Any], seconds: float, before_a_kill: float) -> dict[str, Any]:
    """A finished step's record: its seconds across runs, and how many of them came before a kill."""
    kept = {"seconds_before_a_kill": round(before_a_kill, 1)} if before_a_kill else {}
    return {**record, "seconds": round(seconds, 1), **kept}


def stage_recipe(config: LoopConfig, out: Path, stage: int) -> dict[str, Any]:
    """The fit recipe of ``stage``: the config's recipe with its settings, the stage's budget, its start
    and teacher, its own checkpoint and log folders, and nothing that reads the exact table."""
    from .iteration_config import recipe_model

    spec = config.self_play if stage == 0 else config.student
    recipe = copy.deepcopy(recipe_model(spec["recipe"], config.path, "self_play" if stage == 0 else "student"))
    folder = (out / STAGE_FOLDER.format(stage)).resolve()
    trainer = recipe.setdefault("trainer", {})
    kind = str(config.device).split(":")[0]
    trainer["accelerator"] = {"cuda": "gpu", "mps": "mps"}.get(kind, "cpu")
    trainer["devices"] = 1
    loggers = trainer.get("logger")
    for logger in loggers if isinstance(loggers, list) else [loggers]:
        if isinstance(logger, dict) and isinstance(logger.get("init_args"), dict):
            logger["init_args"]["save_dir"] = str(folder / "logs")
    callbacks = [c for c in trainer.get("callbacks") or [] if "Checkpoint" not in str(c.get("class_path", ""))]
    callbacks.append(
        {
            "class_path": "yahtzee_lightning.algorithms.checkpoint.RunCheckpoint",
            "init_args": {"dirpath": str(folder / "checkpoints"), "save_last": True, "every_n_epochs": 1}
            | {"save_every_minutes": 5, "runs_apart": False},
        }
    )
    trainer["callbacks"] = callbacks
    recipe["seed_everything"] = config.seed + stage
    model = recipe["model"].setdefault("init_args", {})
    model.update(spec.get("settings") or {})
    previous = str((out / STAGE_FOLDER.format(stage - 1) / "agent").resolve())
    model.update(
        seed=config.seed + stage,
        total_games=config.self_play["games"] if stage == 0 else config.games_per_stage,
        init_from=previous if stage > 1 else None,
        final_eval_games=0,
        diagnose_games=0,
    )
    if stage >= 1:
        model["value_from"] = previous  # the value the last stage carries: its own, or the one that taught it
        if stage == 1 and spec.get("first_lr") is not None:
            model["lr"] = spec["first_lr"]  # from a random network: a distillation's rate, not a trained one's
    return recipe


def fit_stage(config: LoopConfig, out: Path, stage: int) -> dict[str, Any]:
    """The stage's fit, through fit's own LightningCLI; its ``last.ckpt`` resumed where a kill left one."""
    import yaml

    from ..loop.lightning_cli import run_cli

    folder = out / STAGE_FOLDER.format(stage)
    folder.mkdir(parents=True, exist_ok=True)
    recipe = folder / "fit.yaml"
    recipe.write_text(yaml.safe_dump(stage_recipe(config, out, stage), sort_keys=False), encoding="utf-8")
    argv = ["fit", "--config", str(recipe)]
    if (folder / "checkpoints" / "last.ckpt").is_file():
        argv += ["--ckpt_path", "last"]  # the newest intact checkpoint of this stage
    run_cli(argv)
    return {"recipe": str(recipe), "games": config.self_play["games"] if stage == 0 else config.games_per_stage}


def export_stage(folder: Path, agent: Path, stage: int) -> dict[str, Any]:
    """The stage's network as an agent folder (export's own function), the value it carries named."""
    from .hub import export_main

    code = export_main([str(folder / "checkpoints" / "last.ckpt"), str(agent), "--games", "0", "--force"])
    if code:
        raise SystemExit(code)
    return {}


def value_entry(agent: Path) -> dict[str, Any]:
    """The ``turn_value`` entry of an agent folder's config.json (empty: it carries none)."""
    entry = json.loads((agent / "config.json").read_text(encoding="utf-8")).get("turn_value")
    return entry if isinstance(entry, dict) else {}


def learn_value(config: LoopConfig, out: Path, stage: int, state: LoopState) -> dict[str, Any]:
    """Stage 0: the value learned from its games; a stage on the schedule: its TD rounds go on from the
    value the stage carries, on stage 0's games or the stage's own (turn-value's own function, never
    its diagnostic: the exact table is not read)."""
    import yaml

    from ..digest import VALUE_DIGEST
    from . import turn_value

    folder = out / STAGE_FOLDER.format(stage)
    agent = folder / "agent"
    if stage > 0 and not config.updates_after(stage):
        return {"updated": False}
    recipe = folder / "value.yaml"
    if str(recipe) in str(value_entry(agent).get("command", "")):  # killed after turn-value wrote it
        return {"updated": True, "resumed": "the value was written before the loop recorded it"}
    if stage > 0 and (earlier := repeated_update(config, state, stage, value_entry(agent).get(VALUE_DIGEST))):
        return {
            "updated": False,
            "skipped": f"the same TD rounds as stage {earlier}'s (the same value, games and seed), "
            "which kept the value they started from: they would keep it again",
        }
    settings: dict[str, Any] = {**config.value, "agent": str(agent)}
    if stage > 0:
        settings |= {"warm_start": True, "td_rounds": config.value_updates["td_rounds"]}
        if config.value_updates.get("games_from", "self_play") == "self_play":  # else the stage's own games
            settings["games_from"] = str(out / STAGE_FOLDER.format(0) / "agent")
    recipe.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    code = turn_value.main(["--config", str(recipe), "--no-diagnostic", "--device", config.device])
    if code:
        raise SystemExit(code)
    return {"updated": True}


def repeated_update(config: LoopConfig, state: LoopState, stage: int, start: str | None) -> int | None:
    """The earlier stage whose value update started from the value ``stage`` would start from and
    ended with it unchanged (its best round the warm start's), else None. On stage 0's games, with the
    value's own seed, the TD rounds are a function of the value they start from: the same rounds again
    would take the stage's minutes to keep it again (a run measured it: 8 rounds, 21 minutes)."""
    if start is None or config.value_updates.get("games_from", "self_play") != "self_play":
        return None  # on the stage's own games every update's games differ
    for earlier in range(1, stage):
        if not (state.done(earlier, "value") or {}).get("updated"):
            continue
        before = (state.done(earlier - 1, "evaluate") or {}).get("value_sha256")
        after = (state.done(earlier, "evaluate") or {}).get("value_sha256")
        if before == after == start:
            return earlier
    return None


def evaluate_stage(config: LoopConfig, agent: Path, stage: int) -> dict[str, Any]:
    """The network alone and its search on the held-back games (scores only: no table), and the
    value's held-out error to its own backups (the round kept)."""
    from ..digest import VALUE_DIGEST
    from ..evaluation import play_games, summarize
    from ..hub import YahtzeeAgent
    from ..players.lookahead import lookahead_player

    loaded = YahtzeeAgent.from_pretrained(agent)
    player = loaded.player(device=config.device)
    search = lookahead_player(player, f"stage {stage}", config.device)
    row: dict[str, Any] = {"eval_games": config.eval_games, "eval_seed": config.eval_seed}
    for key, who in (("network", player), ("search", search)):
        score = summarize(
            play_games(who, config.eval_games, config.eval_seed, player.rules, config.device), player.rules
        )
        row[key] = {"mean": round(score["score"]["mean"], 3), "se": round(score["score"]["se"], 3)}
    info = loaded.turn_value_info or {}
    residuals = info.get("td_residual") or []
    kept = info.get("kept_round", len(residuals) - 1)
    row["value_error"] = round(residuals[kept], 4) if residuals else None
    row["value_sha256"] = value_entry(agent).get(VALUE_DIGEST)
    return row


def write_agent(config: LoopConfig, state: LoopState, out: Path, command: str) -> None:
    """The last stage exported as the loop's agent (export's own function): judged on the protocol's
    games for its card (network alone and look-ahead), the loop's config beside it, its stages on it."""
    from ..machine import describe_machine
    from .hub import export_main

    rows = state.history()
    games = config.self_play["games"] + config.stages * config.games_per_stage  # the networks' games, all stages
    last = out / STAGE_FOLDER.format(config.stages) / "checkpoints" / "last.ckpt"
    code = export_main(
        [str(last), str(out / "agent"), "--games", str(config.judge_games), "--seed", "0", "--force"]
        + ["--name", Path(config.out).name, "--config", config.path, "--command", command]
        + ["--algorithm", "ExpertIteration (the one-command loop, from nothing)"]
        + ["--wall-clock", budget(state), "--hardware", describe_machine()],
        training={"stages": rows, "loop_config_sha256": config.digest(), "games": games},
    )
    if code:
        raise SystemExit(code)


def budget(state: LoopState) -> str:
    """The loop's wall clock from nothing, by kind of step."""
    parts: dict[str, float] = {}
    for key, steps in state.data["stages"].items():
        for step, record in steps.items():
            kind = {"fit": "self-play" if key == "0" else "search-taught stages", "value": "value"}.get(step)
            kind = kind or "exports and evaluations"
            parts[kind] = parts.get(kind, 0.0) + record.get("seconds", 0.0)
    order = ("self-play", "value", "search-taught stages", "exports and evaluations")
    detail = ", ".join(f"{kind} {parts[kind] / 60:.1f}" for kind in order if kind in parts)
    return f"{state.seconds() / 60:.1f} min from nothing ({detail} min)"
