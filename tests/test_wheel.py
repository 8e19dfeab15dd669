"""A wheel built from the repo is a package a user installs: installed into a fresh virtual
environment outside the checkout, it runs the main job from an empty folder, the recipes and the
small shipped agents reachable by name (from the verbs and from ``YahtzeeAgent.from_pretrained``)."""

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


FROM_PRETRAINED = """
import sys, yahtzee_lightning
from yahtzee_lightning import YahtzeeAgent
agent = YahtzeeAgent.from_pretrained("distilled-128x2")
print(yahtzee_lightning.__file__)
print(agent.training["name"], sum(p.numel() for p in agent.net.parameters()))
"""


def fresh_venv(where: Path) -> Path:
    """A new virtual environment's python, with this environment's packages reachable as a plain path
    (a ``.pth`` line: the ``.pth`` files there, such as this checkout's editable install, do not run),
    so that only the wheel installed into it brings yahtzee_lightning."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "_test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


@pytest.mark.slow("builds the wheel, installs it into a fresh venv and trains from an empty folder: about 60 s")
def test_the_wheel_runs_a_short_fit_and_an_evaluation_from_an_empty_folder(tmp_path):
    wheels, empty = tmp_path / "wheels", tmp_path / "empty"
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
    python = fresh_venv(tmp_path / "venv")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(YAHTZEE_LIGHTNING_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")  # a name asks no hub

    def verb(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [python, "-m", "yahtzee_lightning.cli", *args],
            cwd=empty,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    loaded = subprocess.run(
        [python, "-c", FROM_PRETRAINED], cwd=empty, env=env, capture_output=True, text=True, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    where, named = loaded.stdout.strip().splitlines()[-2:]
    assert where.startswith(str(tmp_path / "venv")) and not where.startswith(str(ROOT))  # the wheel's copy
    assert named == "distilled-128x2 81198"
    listed = verb("agents")
    assert listed.returncode == 0 and "distilled-256x3" in listed.stdout, listed.stderr[-3000:]
    bench = verb("bench", "solver")
    assert bench.returncode == 2 and "come with a source checkout" in bench.stderr, bench.stderr
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
