"""Every verb ends bad input or a bad environment in one line, by what went wrong: a full disk (a
file-size limit), a damaged or hostile file, a missing permission, a remote that misbehaves."""

import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from yahtzee_lightning.cli import failure_line, main

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "distilled-128x2"


def _limited(kib: int):
    def limit() -> None:  # as `ulimit -f`: a write past it fails (EFBIG) instead of killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))

    return limit


def test_a_file_size_limit_while_a_folder_is_written_anew_leaves_it_as_it_was(tmp_path):
    """What export, pull and study report --force write through: under a 64 kB file-size limit the
    weights (330 kB) cannot be written; the agent folder already there is left whole, no litter."""
    target = tmp_path / "copy"
    shutil.copytree(SHIPPED, target)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    script = (
        "import shutil, sys\nfrom pathlib import Path\nfrom yahtzee_lightning.replace import replacing\n"
        "with replacing(Path(sys.argv[1]), 'test') as tmp:\n"
        "    for p in Path(sys.argv[2]).iterdir(): shutil.copyfile(p, tmp / p.name)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(target), str(SHIPPED)],
        capture_output=True,
        text=True,
        preexec_fn=_limited(64),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode != 0 and "File too large" in run.stderr
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before  # the old folder, whole
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".copy.yl-new-")]


def test_an_agent_folder_with_a_hostile_config_is_one_line_in_every_verb_that_loads_it(tmp_path, monkeypatch, capsys):
    """In this process (a process a verb cost 10-15 s here): the console script's ``main``, as run."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "agent"
    shutil.copytree(SHIPPED, folder)
    (folder / "config.json").write_text('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}")
    for args in (
        ["evaluate", "--agent", str(folder), "--games", "10"],
        ["play", "--opponent", str(folder), "--seed", "1"],
        ["advise", "--agent", str(folder), "--dice", "6", "6", "4", "2", "1", "--roll", "1"],
        ["export", str(tmp_path / "missing.ckpt"), str(tmp_path / "out")],
    ):
        try:
            code = main(args)
        except SystemExit as e:  # a verb's parser ends a usage error so
            code = e.code
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (args, err[-2000:])


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "report/claims.md"), "no space left"),
        (OSError(errno.EFBIG, "File too large", "agent/model.safetensors"), "no space left (or a file-size limit)"),
        (PermissionError(errno.EACCES, "Permission denied", "/root/x"), "no permission for /root/x"),
        (OSError(errno.ENOENT, "No such file or directory", "a\x1b[31mb"), "a\\x1b[31mb: No such file"),
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "a remote or a connection failed"),
        (ValueError("config.json: training must be a JSON object, got list"), "training must be a JSON object"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "not UTF-8"),
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
        (MemoryError(), "out of memory"),
    ],
)
def test_each_kind_of_failure_is_worded_by_what_went_wrong(error, words):
    line = failure_line(error)
    assert line is not None and words in line and "\n" not in line and "\x1b" not in line


def test_a_fault_of_ours_keeps_its_traceback():
    assert failure_line(KeyError("x")) is None and failure_line(AttributeError("y")) is None


def test_output_into_a_pipe_whose_reader_has_gone_stops_quietly_but_a_remotes_broken_pipe_is_worded(
    monkeypatch, capsys
):
    """``| head`` that has read its lines is no failure: no "a remote or a connection failed", the shell's
    status for it (128 + SIGPIPE). A broken pipe with our stdout still open is a remote's, and worded so."""
    read, write = os.pipe()
    os.close(read)  # no reader at all: the verb's first write to stdout fails
    verb = [sys.executable, "-m", "yahtzee_lightning.cli", "evaluate", "--agent", "random", "--games", "4"]
    done = subprocess.run([*verb, "--no-optimal"], stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    os.close(write)
    assert (done.returncode, done.stderr) == (141, "")

    def remote(_argv):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr("yahtzee_lightning.commands.evaluate.main", remote)
    assert main(["evaluate"]) == 1
    assert "a remote or a connection failed (BrokenPipeError" in capsys.readouterr().err
