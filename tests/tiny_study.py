"""A finished study of one tiny cell (two seeds, 32 games each), trained in this process: the trials run
as Ray would run them (``run_trial``) without starting Ray, so a test of what a finished study
folder holds (its report, its weights on the hub) gets a real one in seconds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY = {
    "model.init_args.d_h": 8,
    "model.init_args.head_hidden": 8,
    "model.init_args.n_layers": 1,
    "model.init_args.total_games": 32,
    "model.init_args.games_per_batch": 16,
    "model.init_args.evaluations": 1,
    "model.init_args.eval_games": 8,
    "model.init_args.final_eval_games": 16,
    "model.init_args.diagnose_games": 0,
}


def build_study(folder: Path, ablations: dict | None = None, report: bool = True) -> Path:
    """``folder/study``: the study's plan, its run folders (a checkpoint each), its table and report;
    ``folder/tiny.yaml`` its study file. ``ablations``: other cells than the one REINFORCE cell (each
    at the tiny budget); ``report``: off, no report is written."""
    from ray import tune

    from yahtzee_lightning.study.drawing.report import write_report
    from yahtzee_lightning.study.running import runner
    from yahtzee_lightning.study.running.trial import run_trial
    from yahtzee_lightning.study.spec import load_study

    spec = {
        "name": "tiny",
        "seeds": [0, 1],
        "profiles": {"smoke": {"set": TINY}},
        "ablations": ablations or {"reinforce": {"base": str(ROOT / "conf" / "reinforce_cpu.yaml")}},
        "exhibits": {"T1": "all", "F2": "all"},
    }
    (folder / "tiny.yaml").write_text(yaml.safe_dump(spec))
    study, out = load_study(folder / "tiny.yaml"), folder / "study"
    runner.prepare_folder(study, out, force=False)
    for name, payload in runner._payloads(runner.plan_trials(study), study, out).items():
        context = SimpleNamespace(get_trial_name=lambda name=name: name)
        with (
            mock.patch.object(tune, "get_context", lambda context=context: context),
            mock.patch.object(tune, "get_checkpoint", lambda: None),
            mock.patch.object(tune, "report", lambda metrics: None),
        ):
            run_trial({}, {name: payload})
    runner._summarize(out)
    if report:
        write_report(out)
    return out
