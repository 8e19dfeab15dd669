""".ci/run runs exactly README.md's test command; outside CI it does so in a fresh clone of HEAD, so a
developer's ``.venv`` survives it. Checked on a throwaway repository holding a copy of the script and a
README whose test command only records what it was asked to do (no install, no suite)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What the fake environment's ``python`` does: write down its arguments and the folder it ran in.
ACTIVATE = 'python() { echo "python $* in $(basename "$(dirname "$PWD")")/$(basename "$PWD")" >> "$CALLS"; }\n'
COMMAND = "mkdir -p .venv/bin && cp activate .venv/bin/activate && . .venv/bin/activate && python -m pytest -q"


def _repository(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / ".ci", repo / ".ci")
    (repo / "README.md").write_text(f"# x\n\n<!-- test-command -->\n```bash\n{COMMAND}\n```\n")
    (repo / "activate").write_text(ACTIVATE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "x"], check=True)
    (repo / ".venv").mkdir()
    (repo / ".venv" / "mine").write_text("a developer's environment")
    stubs = tmp_path / "stubs"  # a chromedriver on the PATH: no browser is installed for the test
    stubs.mkdir()
    (stubs / "chromedriver").write_text("#!/bin/sh\n")
    (stubs / "chromedriver").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "CI_RUN_HERE")}
    env |= {"PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "CALLS": str(tmp_path / "calls")}
    return repo, env


def _run(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(repo / ".ci" / "run")], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )


def test_outside_ci_it_runs_the_exact_command_in_a_fresh_clone_and_leaves_the_checkout_alone(tmp_path: Path):
    repo, env = _repository(tmp_path)
    done = _run(repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "+ " + COMMAND  # exactly the README's command
    assert (repo / ".venv" / "mine").read_text() == "a developer's environment"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert [c.split(" in ")[0] for c in calls] == ["python -m pytest -q", "python -m pytest -q -m slow"]
    assert all(c.split(" in ")[1].startswith("ci-run.") and c.endswith("/checkout") for c in calls)  # in the clone
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("ci-run.*/checkout/.venv/mine"))


def test_in_ci_it_runs_in_place(tmp_path: Path):
    repo, env = _repository(tmp_path)
    done = _run(repo, {**env, "CI": "true"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "+ " + COMMAND
    assert not (repo / ".venv" / "mine").exists()  # CI's clone: its .venv made anew
    assert all(line.endswith("/repo") for line in (tmp_path / "calls").read_text().splitlines())


def test_a_failing_command_fails_the_run_from_the_clone_too(tmp_path: Path):
    repo, env = _repository(tmp_path)
    (repo / "README.md").write_text("# x\n\n<!-- test-command -->\n```bash\nfalse\n```\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), "commit", "-qam", "y"])
    assert _run(repo, env).returncode != 0
