"""Numbers in prose drawn from the report's own tables, so that a sentence cannot drift from them.

A number written by hand in a README is marked with the table cell it comes from, and this module
fills it in (``study prose FILE``) or checks it (``--check``, in the test suite):

    PPO <!--n faithful/report/T1.md "PPO, GAE(0.95) (ppo)" "mean" estimate-->181.6 [176.0, 187.1]<!--/n-->

The marker names the Markdown file holding the table (relative to the prose file), the row (its
first cell, bold marks aside), the column (its header) and, optionally, which part of the cell:
``value`` (the first number), ``interval`` (the first ``[low, high]``), ``estimate`` (the two
together) or ``p`` (the number after ``p =``); without a part, the whole cell. The markers are HTML
comments: the Markdown reads as before wherever it is shown.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ..model import StudyError

MARKER = re.compile(r"<!--n (?P<spec>[^>]*?)-->(?P<text>.*?)<!--/n-->", re.S)
NUMBER = r"[-+]?(?:\d[\d,]*\.?\d*(?:e[-+]?\d+)?|\.\d+)"
PARTS = {
    "value": re.compile(rf"{NUMBER}"),
    "interval": re.compile(rf"\[{NUMBER}, {NUMBER}\]"),
    "estimate": re.compile(rf"{NUMBER} \[{NUMBER}, {NUMBER}\]"),
    "p": re.compile(rf"(?<=p = ){NUMBER}"),
}


@dataclass(frozen=True)
class Mark:
    """One marked number: where it is (line), what it names, what the prose says and the table says."""

    line: int
    spec: str
    written: str
    table: str


def table_cells(path: Path) -> dict[tuple[str, str], str]:
    """Every cell of every Markdown table in ``path``, keyed by (row's first cell, column header)."""
    cells: dict[tuple[str, str], str] = {}
    header: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None
            continue
        row = [_plain(c) for c in line.strip().strip("|").split("|")]
        if header is None:
            header = row
        elif not all(set(c) <= set(":- ") for c in row):  # not the separator line
            cells.update({(row[0], name): value for name, value in zip(header, row, strict=False)})
    return cells


def _plain(cell: str) -> str:
    return cell.strip().replace("**", "")


def lookup(spec: str, folder: Path, where: str) -> str:
    """The text a marker's ``spec`` names, read from its table; a bad marker is a one-line ``StudyError``."""
    try:
        words = shlex.split(spec)
    except ValueError as e:
        raise StudyError(f"{where}: marker <!--n {spec}-->: {e}") from None
    if len(words) not in (3, 4) or (len(words) == 4 and words[3] not in PARTS):
        raise StudyError(
            f'{where}: marker <!--n {spec}--> must name FILE "ROW" "COLUMN" and optionally one of {", ".join(PARTS)}'
        )
    file, row, column = words[:3]
    path = folder / file
    if not path.is_file():
        raise StudyError(f"{where}: marker names {file}, which is not there (from {folder})")
    cells = table_cells(path)
    if (row, column) not in cells:
        rows = sorted({r for r, _ in cells})
        columns = sorted({c for r, c in cells if r == row})
        what = (
            f"column {column!r} (it has: {', '.join(columns)})" if columns else f"row {row!r} (rows: {', '.join(rows)})"
        )
        raise StudyError(f"{where}: {file} has no {what}")
    text = cells[(row, column)]
    if len(words) == 4:
        found = PARTS[words[3]].search(text)
        if found is None:
            raise StudyError(f"{where}: {file}, {row} / {column}: no {words[3]} in {text!r}")
        text = found.group(0)
    return text


def marks(path: Path) -> list[Mark]:
    """Every marked number of a prose file, with what its table says now."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in MARKER.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append(Mark(line, m["spec"], m["text"], lookup(m["spec"], path.parent, f"{path}:{line}")))
    return out


def fill(path: Path) -> int:
    """Write each marked number as its table says; returns how many changed."""
    text = path.read_text(encoding="utf-8")
    changed = 0

    def replace(m: re.Match) -> str:
        nonlocal changed
        line = text.count("\n", 0, m.start()) + 1
        value = lookup(m["spec"], path.parent, f"{path}:{line}")
        changed += value != m["text"]
        return f"<!--n {m['spec']}-->{value}<!--/n-->"

    new = MARKER.sub(replace, text)
    if changed:
        path.write_text(new, encoding="utf-8")
    return changed


def stale(path: Path) -> list[Mark]:
    """The marked numbers whose prose differs from their table."""
    return [m for m in marks(path) if m.written != m.table]
