"""A wheel built from the repo is a package a user installs: outside a checkout it runs the main job
from an empty folder, the recipes and the small shipped agents reachable by name."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow("builds the wheel, installs it apart and trains from an empty folder: about 60 s")
def test_the_wheel_runs_a_short_fit_and_an_evaluation_from_an_empty_folder(tmp_path):
    wheels, site, empty = tmp_path / "wheels", tmp_path / "site", tmp_path / "empty"
    empty.mkdir()
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        str(ROOT),
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(wheels),
    ]
    subprocess.run(build, check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("yahtzee_lightning-*.whl")
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(site), "YAHTZEE_LIGHTNING_CACHE": str(tmp_path / "cache")}

    def verb(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "yahtzee_lightning.cli", *args],
            cwd=empty,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    where = subprocess.run(
        [sys.executable, "-c", "import yahtzee_lightning; print(yahtzee_lightning.__file__)"],
        cwd=empty, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.strip().startswith(str(site))  # the installed copy, not the checkout
    small = ["--model.init_args.d_h=16", "--model.init_args.n_layers=1", "--model.init_args.head_hidden=16"]
    budget = ["--model.init_args.total_games=256", "--model.init_args.evaluations=1", "--model.init_args.eval_games=20"]
    fit = verb("fit", "--config", "quickstart", *small, *budget, "--model.init_args.final_eval_games=50")
    assert fit.returncode == 0, fit.stderr[-3000:]
    assert "mean score" in fit.stdout and "optimal" in fit.stdout
    evaluate = verb("evaluate", "--agent", "distilled-128x2", "--games", "20")
    assert evaluate.returncode == 0 and "mean score" in evaluate.stdout, evaluate.stderr[-3000:]
    unknown = verb("fit", "--config", "nonesuch")
    assert unknown.returncode == 2 and "recipes: a2c," in unknown.stderr and "quickstart" in unknown.stderr
    assert not any(p.name == "conf" for p in empty.iterdir())  # nothing of the checkout needed
