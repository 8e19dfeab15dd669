"""A hub that lies cannot choose where we write: commit ids, file names and sizes from the server are
checked before they are used as a path or a size, and every refusal is one line (a loopback server)."""

import subprocess
import sys
from pathlib import Path

import pytest
from test_hub import _agent, _python

PUSH = "from yahtzee_lightning.cli import main; import sys; main(sys.argv[1:])"
PULL = "from yahtzee_lightning.cli import main; import sys; sys.exit(main(sys.argv[1:]))"


def _served(tmp_path: Path, hub, hub_env: dict) -> None:
    folder = _agent(tmp_path / "tiny", games=0)
    _python(["-c", PUSH, "push", str(folder), "--repo-id", "alice/tiny"], hub_env, tmp_path)


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "hf_home" not in p.parts}


@pytest.mark.parametrize(
    "lie",
    [
        # used by the library as hub/models--alice--tiny/trees/{sha}.json: six levels up is the user's folder
        {"sha": "../../../../../../x/config"},
        {"sha": "../../../../../../victim/config"},
        {"listed": {"../../evil.yaml": 10}},
        {"listed": {"/abs.yaml": 10}},
        {"listed": {"sub/../x.yaml": 10}},
        {"listed": {"a\x1b]0;pwned\x07.yaml": 10}},
        {"size": 1 << 40},  # a terabyte of "weights"
    ],
    ids=["sha-up", "sha-far", "name-up", "name-abs", "name-dots", "name-escape", "size"],
)
def test_a_hostile_hub_is_refused_in_one_line_and_nothing_is_written_outside(tmp_path, hub, hub_env, lie):
    _served(tmp_path, hub, hub_env)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.json").write_text('{"mine": true}')
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.json").write_text('{"mine": true}')
    before = _files(tmp_path)
    hub.state.hostile = lie
    home = tmp_path / "a" / "b" / "hf_home"  # a cache whose ../../x is the user's folder
    env = dict(hub_env, HF_HOME=str(home))
    run = subprocess.run(
        [sys.executable, "-c", PULL, "pull", "alice/tiny", str(tmp_path / "pulled")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr[-2000:]
    assert "alice/tiny" in lines[0] and "Traceback" not in run.stderr
    assert "\x1b" not in run.stderr  # the name is shown escaped
    after = _files(tmp_path)
    assert {p: b for p, b in after.items() if p in before} == before  # nothing of the user's changed
    outside = [p for p in set(after) - set(before) if home not in p.parents]
    assert outside == []  # nothing new outside the cache
    assert not (tmp_path / "pulled").exists() or not any((tmp_path / "pulled").iterdir())
