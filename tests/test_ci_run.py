""".ci/run runs exactly README.md's test command, in an environment of its own (``.ci-venv``): a
developer's ``.venv`` survives it. Checked on a copy of the script beside a README whose test
command only records what it was asked to do (no install, no suite)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What the fake environment's ``python`` does: write down its arguments, in the folder it ran in.
ACTIVATE = 'python() { echo "python $*" >> "$PWD/calls"; }\n'
COMMAND = "mkdir -p .venv/bin && cp activate .venv/bin/activate && . .venv/bin/activate && python -m pytest -q"


def test_ci_run_builds_its_own_environment_and_leaves_the_developers_venv(tmp_path: Path):
    shutil.copytree(ROOT / ".ci", tmp_path / ".ci")
    (tmp_path / "README.md").write_text(f"# x\n\n<!-- test-command -->\n```bash\n{COMMAND}\n```\n")
    (tmp_path / "activate").write_text(ACTIVATE)
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "mine").write_text("a developer's environment")
    stubs = tmp_path / "stubs"  # a chromedriver on the PATH: no browser is installed for the test
    stubs.mkdir()
    (stubs / "chromedriver").write_text("#!/bin/sh\n")
    (stubs / "chromedriver").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".venv" / "mine").read_text() == "a developer's environment"
    assert (tmp_path / ".ci-venv" / "bin" / "activate").is_file()
    assert done.stdout.splitlines()[0] == "+ " + COMMAND.replace(".venv", ".ci-venv")
    assert (tmp_path / "calls").read_text().splitlines() == ["python -m pytest -q", "python -m pytest -q -m slow"]


def test_the_readmes_test_command_is_one_ci_run_can_run_apart():
    """The README's command builds and activates ``.venv``: the name .ci/run renames."""
    text = (ROOT / "README.md").read_text()
    command = text.split("<!-- test-command -->", 1)[1].split("```bash\n", 1)[1].split("\n```", 1)[0]
    assert "python3 -m venv .venv" in command and ". .venv/bin/activate" in command
