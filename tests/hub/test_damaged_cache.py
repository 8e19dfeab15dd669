"""The Hugging Face cache is checked before an agent is loaded from it: a damaged blob, or a plain file
where the cache keeps a link, is refused offline and downloaded again online, never played."""

from __future__ import annotations

import selectors
import subprocess
import sys
from pathlib import Path

from safetensors.torch import load_file
from test_hub import _agent, _assert_same_weights

# One client process, driven a line at a time (a fresh process per step cost a torch import each):
# ``push ARGS`` pushes; ``online PATH`` / ``offline PATH`` loads alice/tiny through the HF cache, offline
# as HF_HUB_OFFLINE=1 makes it (the library reads that constant on every request), and answers why it
# was refused, or saves the weights it loaded to PATH. Before each answer, a line on stderr ends the step's log.
_CLIENT = """
import contextlib
import sys
from huggingface_hub import constants
from safetensors.torch import save_file
from yahtzee_lightning.cli import main
from yahtzee_lightning.hub import AgentFormatError, YahtzeeAgent

for line in sys.stdin:
    verb, *args = line.split()
    if verb == "push":
        with contextlib.redirect_stdout(sys.stderr):  # its own lines go to the log: stdout holds the answers
            answer = f"pushed {main(['push', *args])}"
    else:
        constants.HF_HUB_OFFLINE = verb == "offline"
        try:
            agent = YahtzeeAgent.from_pretrained("alice/tiny")
        except AgentFormatError as e:
            answer = f"refused: {e}"
        else:
            save_file(agent.net.state_dict(), args[0])
            answer = "loaded"
    print("-- end of step", file=sys.stderr, flush=True)
    print(answer, flush=True)
"""


class _Client:
    """The client process of ``_CLIENT``: ``step(line)`` is its answer and what it logged meanwhile."""

    def __init__(self, env: dict, cwd: Path) -> None:
        self.log = cwd / "client.log"
        self.stderr = self.log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CLIENT],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        self.seen = 0

    def step(self, line: str) -> tuple[str, str]:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        with selectors.DefaultSelector() as ready:
            ready.register(self.process.stdout, selectors.EVENT_READ)
            assert ready.select(timeout=120), f"no answer to {line!r} within 120 s: {self.log.read_text()[-3000:]}"
        answer = self.process.stdout.readline().strip()
        assert answer, self.log.read_text()[-3000:]  # the process died: its traceback
        logged = self.log.read_text()[self.seen :]
        self.seen += len(logged)
        return answer, logged

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *failed: object) -> None:
        """The process ends with its input (killed if a step failed, or it does not)."""
        self.process.stdin.close()
        try:
            code = self.process.wait(timeout=5 if failed[0] else 60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise
        finally:
            self.stderr.close()
        assert failed[0] or code == 0, self.log.read_text()[-3000:]


def test_a_damaged_blob_in_the_hub_cache_is_downloaded_again_never_loaded(tmp_path, hub, hub_env):
    folder = _agent(tmp_path / "tiny", games=0)
    with _Client(hub_env, tmp_path) as client:
        _damage_and_repair(client, folder, tmp_path, hub_env)


def _damage_and_repair(client: _Client, folder: Path, tmp_path: Path, hub_env: dict) -> None:
    import hashlib

    assert client.step(f"push {folder} --repo-id alice/tiny")[0] == "pushed 0"
    weights = (folder / "model.safetensors").read_bytes()
    sha = hashlib.sha256(weights).hexdigest()
    loaded = tmp_path / "loaded.safetensors"
    assert client.step(f"online {loaded}")[0] == "loaded"  # into the cache
    blob = Path(hub_env["HF_HOME"]) / "hub" / "models--alice--tiny" / "blobs" / sha
    damaged = bytearray(blob.read_bytes())
    damaged[-200:-136] = bytes(range(1, 65))  # weights overwritten, the header intact: still a loadable file
    blob.write_bytes(bytes(damaged))
    loaded.unlink()

    out, _ = client.step(f"offline {loaded}")
    assert "refused: alice/tiny: the cached model.safetensors do not match their hub checksum" in out
    assert not loaded.exists()
    out, log = client.step(f"online {loaded}")
    assert out == "loaded" and "downloading again" in log
    _assert_same_weights(load_file(loaded), load_file(folder / "model.safetensors"))
    assert blob.read_bytes() == weights  # the cache is repaired
    # A plain file in the snapshot where the cache keeps a link: nothing vouches for it.
    link = next((Path(hub_env["HF_HOME"]) / "hub" / "models--alice--tiny" / "snapshots").glob("*/config.json"))
    text = link.read_text()
    link.unlink()
    link.write_text(text)
    loaded.unlink()
    out, _ = client.step(f"offline {loaded}")
    assert "config.json do not match their hub checksum (damaged, or not a link" in out and not loaded.exists()
    out, log = client.step(f"online {loaded}")
    assert out == "loaded" and "downloading again" in log and link.is_symlink()


def test_damaged_files_checks_sha256_and_git_blob_names(tmp_path):
    import hashlib

    from yahtzee_lightning.hub.download import damaged_files

    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshot"
    blobs.mkdir(), snapshot.mkdir()
    data = b'{"format_version": 1}'
    names = {
        "a.json": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
        "b.bin": hashlib.sha256(data).hexdigest(),
    }
    for name, blob in names.items():
        (blobs / blob).write_bytes(data)
        (snapshot / name).symlink_to(blobs / blob)
    assert damaged_files(snapshot) == []
    for blob in names.values():
        (blobs / blob).write_bytes(data.replace(b"1", b"2"))
    assert damaged_files(snapshot) == ["a.json", "b.bin"]
    (snapshot / "c.json").write_bytes(data)  # a plain file: nothing vouches for it, unless just downloaded
    assert damaged_files(snapshot) == ["a.json", "b.bin", "c.json"]
    assert damaged_files(snapshot, plain_ok=True) == ["a.json", "b.bin"]
