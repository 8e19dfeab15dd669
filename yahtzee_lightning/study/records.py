"""The study's own records carry the sha256 of their content, so that one edited by hand, damaged or
cut short is named in one line and treated as absent, never used as a result: a trial's
``final.json`` (its cell runs again), each line of its ``history.jsonl`` (the line is left out of
the curves), the report's caches ``fresh.json`` and ``reference.json`` (computed again). Records
written before digests are used, with a warning."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from ..digest import DIGEST_KEY, record_sha256
from ..machine import describe_machine
from ..untrusted import parse_json, printable, read_json

PLAN = "study.json"  # a study folder's plan: the study as expanded, and its trials

LOG = logging.getLogger(__name__)
SESSIONS = "sessions.jsonl"  # one line per `study run`: its command, machine, CPUs and wall clock
FRESH = "fresh.json"  # T1's re-evaluations on fresh games, by member (cached in the study folder)
REFERENCE = "reference.json"  # the reference players on a final evaluation's games (cached in the study folder)


def digested_text(record: dict[str, Any]) -> str:
    """``record`` as a file (or a line) of ours holds it: with its sha256."""
    return json.dumps({**record, DIGEST_KEY: record_sha256(record)})


def final_text(record: dict[str, Any]) -> str:
    """``record`` as ``final.json`` holds it: with its sha256."""
    return digested_text(record)


def _checked(record: Any, where: str, then: str, old: bool = True) -> dict[str, Any] | None:
    """``record`` without its sha256 if it is a record that matches it, else None (warned, naming ``where``)."""
    if not isinstance(record, dict):
        LOG.warning("warning: %s: not a JSON object; %s", where, then)
        return None
    if DIGEST_KEY not in record:
        if old:
            LOG.warning("warning: %s: carries no sha256 (written before digests)", where)
        return record
    if record[DIGEST_KEY] != record_sha256(record):
        LOG.warning("warning: %s: does not match its sha256 (damaged or edited); %s", where, then)
        return None
    return {k: v for k, v in record.items() if k != DIGEST_KEY}


def read_record(path: Path, then: str) -> dict[str, Any] | None:
    """The record in ``path``, or None when there is none or it cannot be trusted (warned, naming it
    and ``then``, what happens instead). A record written before digests is used, with a warning."""
    if not path.exists():
        return None
    try:
        record = read_json(path)
    except (OSError, ValueError) as e:
        LOG.warning("warning: %s: unreadable (%s); %s", path, type(e).__name__, then)
        return None
    return _checked(record, str(path), then)


def read_final(path: Path) -> dict[str, Any] | None:
    """A trial's ``final.json`` (``read_record``): one that cannot be trusted runs its cell again."""
    return read_record(path, "its cell runs again")


#: Each signed line of a JSON-lines file of ours records its own line number: a line moved, or lines
#: removed or inserted before it, no longer sits where it was written.
LINE_KEY = "line"


def append_lines(path: Path, records: list[dict[str, Any]]) -> None:
    """Append ``records`` to the JSON-lines file ``path``, each signed with its line number (a line
    a kill cut short is ended first: the next one starts on a line of its own)."""
    text = path.read_bytes() if path.exists() else b""
    start = "\n" if text and not text.endswith(b"\n") else ""
    first = text.count(b"\n") + len(start) + 1
    body = "".join(digested_text({**r, LINE_KEY: first + i}) + "\n" for i, r in enumerate(records))
    with open(path, "a") as f:
        f.write(start + body)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file of ours (``history.jsonl``), in order. A line that is cut short
    (a kill while writing), damaged or edited, that sits elsewhere than it was written (reordered,
    lines removed or inserted), or that carries no sha256 after a line that does (appended by hand),
    is named (``FILE:LINE``) and left out, never merged with the signed ones. Lines written before
    digests are used, with one warning: a whole file of them, or the lines before a run resumed under
    digests (its first signed line records their count in its number, so none can be added or removed
    unseen)."""
    if not path.exists():
        return []
    try:
        lines = path.read_text().splitlines()
    except (OSError, ValueError) as e:
        LOG.warning("warning: %s: unreadable (%s); its evaluations are left out", path, type(e).__name__)
        return []
    parsed: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            parsed.append((number, parse_json(line, f"{path}:{number}")))
        except ValueError:
            LOG.warning("warning: %s:%d: cut short or damaged (not JSON); the line is left out", path, number)
    unsigned = {n for n, r in parsed if isinstance(r, dict) and DIGEST_KEY not in r}  # a set: looked up a line
    signed = sum(isinstance(r, dict) and DIGEST_KEY in r for _, r in parsed)
    # Unsigned lines before the first signed one were written before digests, if that line was written
    # where it sits (its number counts them; signed lines from before line numbers carry none): a run
    # that resumed under digests. Else they are refused.
    first = next(((n, r) for n, r in parsed if isinstance(r, dict) and DIGEST_KEY in r), None)
    resumed = first is not None and first[1].get(LINE_KEY, first[0]) == first[0]
    before = {n for n in unsigned if resumed and n < first[0]}
    rows = []
    for number, record in parsed:
        where = f"{path}:{number}"
        if signed and number in unsigned and number not in before:
            LOG.warning(
                "warning: %s: carries no sha256 while %d other lines of the file do (appended or edited by "
                "hand, not by the study); the line is left out",
                where,
                signed,
            )
            continue
        if (row := _checked(record, where, "the line is left out", old=False)) is None:
            continue
        written = row.pop(LINE_KEY, number) if number not in unsigned else number
        if written != number:
            LOG.warning(
                "warning: %s: was written as line %s (lines reordered, removed or inserted); the line is left out",
                where,
                printable(repr(written)),
            )
            continue
        rows.append(row)
    if unsigned and not signed:
        LOG.warning("warning: %s: %d lines carry no sha256 (written before digests)", path, len(unsigned))
    elif before:
        LOG.warning(
            "warning: %s: its first %d lines carry no sha256 (written before digests; the run resumed under them)",
            path,
            len(before),
        )
    return rows


#: The package's checkout, whose commit a session records (None where it is not a git checkout).
CHECKOUT = Path(__file__).resolve().parents[2]


def git(*args: str, checkout: Path = CHECKOUT) -> str | None:
    """A git command's output in the package's checkout, or None where git or the checkout is missing."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def source_state(out: Path | None = None, checkout: Path = CHECKOUT) -> dict[str, Any]:
    """The code a session trains with: the checkout's commit, and whether its tracked files were clean
    (``clean`` False: uncommitted changes, so the commit alone does not say what ran). The study's own
    folder ``out`` is left out where it lies in the checkout: its records change as it runs, the code
    does not."""
    commit = git("rev-parse", "HEAD", checkout=checkout)
    if commit is None:
        return {"commit": None, "clean": None}
    spec = ["--", "."]
    if out is not None:
        try:
            inside = Path(out).resolve().relative_to(checkout.resolve())
        except ValueError:  # the study writes outside the checkout: nothing of it to leave out
            inside = None
        if inside is not None and inside.parts:
            spec.append(f":(exclude,top){inside.as_posix()}")
    status = git("status", "--porcelain", "--untracked-files=no", *spec, checkout=checkout)
    return {"commit": commit, "clean": None if status is None else status == ""}


def log_session(out: Path, command: str | None, started: float, cpus: int, address: str | None, end: bool) -> None:
    """This session's line in ``OUT/sessions.jsonl``: written when it starts (a killed session keeps
    a line without a wall clock) and completed when it ends, also on an error.

    The line keeps the code the session started with (its commit, whether the tree was clean); a
    checkout whose state changed while the session ran (a commit, an edit: trials that start later
    import the new code) adds ``source_at_end``. A session that starts from a tree with uncommitted
    changes says so on stderr at once: no commit names what its trials train with."""
    record = {
        "command": command,
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)),
        "wall_clock_s": round(time.time() - started, 1) if end else None,
        "machine": describe_machine() if address is None else f"Ray cluster at {address}",
        "cpus": cpus,
    }
    state = source_state(out)
    path = out / SESSIONS
    lines = read_lines(path)  # a damaged or edited line is named and left out
    if end and lines and lines[-1].get("started") == record["started"]:
        opening = lines.pop()  # this session's opening line: the code it started with
        first = {"commit": opening.get("commit"), "clean": opening.get("clean")}
        record |= first | ({"source_at_end": state} if state != first else {})
    else:
        record |= state
        if not end and state["clean"] is False:
            print(
                f"warning: {CHECKOUT} has uncommitted changes: this session's trials train with them, and "
                f"its line in {SESSIONS} records commit {str(state['commit'])[:10]}, not clean (to train "
                "from a fixed commit: docs/study.md, 'Train from a fixed commit')",
                file=sys.stderr,
            )
    path.write_text("".join(digested_text({**line, LINE_KEY: n}) + "\n" for n, line in enumerate([*lines, record], 1)))
