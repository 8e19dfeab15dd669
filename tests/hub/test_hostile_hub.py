"""A hub that lies cannot choose where we write: commit ids, file names and sizes from the server are
checked before they are used as a path or a size, and every refusal is one line (a loopback server)."""

import subprocess
import sys
from pathlib import Path

import pytest
from test_hub import _agent

PULL = "from yahtzee_lightning.cli import main; import sys; sys.exit(main(sys.argv[1:]))"


def _served(tmp_path: Path, hub, hub_env: dict) -> None:
    folder = _agent(tmp_path / "tiny", games=0)
    hub.state.serve("alice/tiny", {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()})


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "hf_home" not in p.parts}


LIES = {
    # used by the library as hub/models--alice--tiny/trees/{sha}.json: six levels up is the user's folder
    "sha-up": {"sha": "../../../../../../x/config"},
    "sha-far": {"sha": "../../../../../../victim/config"},
    "name-up": {"listed": {"../../evil.yaml": 10}},
    "name-abs": {"listed": {"/abs.yaml": 10}},
    "name-dots": {"listed": {"sub/../x.yaml": 10}},
    "name-escape": {"listed": {"a\x1b]0;pwned\x07.yaml": 10}},
    "size": {"size": 1 << 40},  # a terabyte of "weights"
    # a 500 first: the library, asked with no revision, would ask again itself and use this id unchecked
    "500-then-sha": {"fail_first": 1, "sha": "../../../../../../victim/config"},
    "500s-then-sha": {"fail_first": 2, "sha": "../../../../../../x/config"},
}
# One lie of each kind (a commit id, a file name, a size) in the README's tests; the others, each a pull
# in a fresh process, after it with the slow ones.
QUICK_LIES = {"sha-up", "name-escape", "size"}


@pytest.mark.parametrize(
    "lie",
    [
        lie
        if name in QUICK_LIES
        else pytest.param(lie, marks=pytest.mark.slow("one more lie, a pull in a fresh process: about 6 s each"))
        for name, lie in LIES.items()
    ],
    ids=list(LIES),
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
    run = _pull(tmp_path, dict(hub_env, HF_HOME=str(home)))
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


def _pull(tmp_path: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PULL, "pull", "alice/tiny", str(tmp_path / "pulled")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _cache(home: Path) -> tuple[int, list[Path]]:
    """The bytes of the blobs a pull left in its cache, and the partial ones."""
    blobs = [p for p in home.rglob("*") if p.is_file() and not p.is_symlink() and "blobs" in p.parts]
    return sum(p.stat().st_size for p in blobs), [p for p in blobs if p.name.endswith(".incomplete")]


def test_a_body_beyond_the_listed_size_is_stopped_and_its_partial_file_removed(tmp_path, hub, hub_env):
    _served(tmp_path, hub, hub_env)
    listed = sum(len(d) for p, d in hub.state.files("alice/tiny").items() if not p.endswith(".gitattributes"))
    hub.state.hostile = {"endless": 64 << 20}  # "Content-Length: 10 GiB", zeros (64 MiB at most here)
    home = tmp_path / "hf_fresh"
    run = _pull(tmp_path, dict(hub_env, HF_HOME=str(home)))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "more than the" in lines[0] and "bytes its listing names" in lines[0], run.stderr[-2000:]
    written, partial = _cache(home)
    assert partial == [] and written <= listed  # never more than the listing: the 10 GiB header is not believed
    assert hub.state.sent > listed  # the server did send more
    assert not (tmp_path / "pulled").exists()


def test_a_dripped_download_ends_at_its_deadline_saying_how_far_it_got(tmp_path, hub, hub_env):
    _served(tmp_path, hub, hub_env)
    hub.state.hostile = {"drip": 0.05}  # a byte every 50 ms: the library's 10 s read timeout never fires
    home = tmp_path / "hf_fresh"
    run = _pull(tmp_path, dict(hub_env, HF_HOME=str(home), YAHTZEE_LIGHTNING_HUB_DEADLINE="2"))
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr[-2000:]
    assert "alice/tiny: the download did not finish within 2 s (" in lines[0] and "bytes received of the" in lines[0]
    assert _cache(home)[1] == []  # the partial file removed
    assert hub.state.sent < 600  # stopped: the drip was not waited out


def test_a_deadline_that_is_not_seconds_is_refused_in_one_line(tmp_path, hub, hub_env):
    run = _pull(tmp_path, dict(hub_env, YAHTZEE_LIGHTNING_HUB_DEADLINE="soon"))
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [
        "yahtzee-lightning pull: error: YAHTZEE_LIGHTNING_HUB_DEADLINE='soon': a number of seconds in (0, 86400] "
        "is expected"
    ]
