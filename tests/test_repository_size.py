"""Weights out of the repository: a clone is kilobytes of code and the records of its studies, and a
machine that takes at most 64 MiB of the tree (the GPU machine) can be sent it. A tracked file over
5 MB, or tracked files over 25 MB in all (the shipped agents in checkpoints/ included), fail here,
save one: the resume checkpoint of a study run still in flight (``last.ckpt`` with no ``final.json``
beside its run), which a study commits at most once a session and which goes when the run ends
(its weights to the Hub: ``study push``). CONTRIBUTING, "Weights live on the Hub, not in git"."""

import subprocess
from pathlib import Path, PurePosixPath

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]  # the checkout under test (CI: a fresh clone)

MB = 1_000_000
MAX_FILE, MAX_TREE = 5 * MB, 25 * MB
WHAT_TO_DO = (
    "weights go to the Hub, not git: `yahtzee-lightning study push DIR --repo-id ID` for a study's, then "
    "`git rm --cached` them (CONTRIBUTING.md, 'Weights live on the Hub, not in git')"
)


def tracked_sizes() -> dict[str, int]:
    """Every tracked file's size as the index holds it (what a commit, and so a clone, carries)."""
    git = ["git", "-C", str(CHECKOUT)]
    listing = subprocess.run([*git, "ls-files", "-s", "-z"], capture_output=True, check=True).stdout.decode()
    blobs = {}
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, blob, _ = meta.split()
        if mode != "160000":  # a submodule is a commit, not a file
            blobs[path] = blob
    sizes = subprocess.run(
        [*git, "cat-file", "--batch-check=%(objectname) %(objectsize)"],
        input="\n".join(blobs.values()).encode(),
        capture_output=True,
        check=True,
    ).stdout.decode()
    by_blob = dict(line.split() for line in sizes.splitlines())
    return {path: int(by_blob[blob]) for path, blob in blobs.items()}


def in_flight(path: str, tracked: set[str]) -> bool:
    """A study run's resume checkpoint while the run is unfinished: ``docs/study/S/runs/.../checkpoints/
    last.ckpt`` in a run folder that tracks no ``final.json``."""
    p = PurePosixPath(path)
    if p.parts[:2] != ("docs", "study") or "runs" not in p.parts or p.parts[-2:] != ("checkpoints", "last.ckpt"):
        return False
    return str(p.parent.parent / "final.json") not in tracked


def too_large(sizes: dict[str, int]) -> list[str]:
    """What breaks the rule, one line each (empty: none)."""
    counted = {p: s for p, s in sizes.items() if not in_flight(p, set(sizes))}
    big = sorted(p for p, s in counted.items() if s > MAX_FILE)
    lines = [f"{p}: {counted[p] / MB:.1f} MB (at most {MAX_FILE // MB} MB a file)" for p in big]
    total = sum(counted.values())
    if total > MAX_TREE:
        largest = sorted(counted, key=counted.get, reverse=True)[:5]
        limit = f"at most {MAX_TREE // MB} MB"
        lines.append(f"tracked files: {total / MB:.1f} MB ({limit}); the largest: {', '.join(largest)}")
    return lines


def test_no_tracked_file_over_5_mb_nor_tree_over_25_mb_save_a_study_run_in_flight():
    sizes = tracked_sizes()
    assert "pyproject.toml" in sizes  # the checkout's own listing, not an empty one
    lines = too_large(sizes)
    assert not lines, "\n".join([*lines, WHAT_TO_DO])


@pytest.mark.parametrize(
    ("sizes", "breaks"),
    [
        ({"a.py": 10}, []),
        ({"checkpoints/agent/model.safetensors": 6 * MB}, ["checkpoints/agent/model.safetensors: 6.0 MB"]),
        ({f"x{i}.bin": 4 * MB for i in range(7)}, ["tracked files: 28.0 MB"]),
        # a run in flight: its resume checkpoint is the exception, in size and in the total
        ({"docs/study/s/runs/c1/seed0/checkpoints/last.ckpt": 40 * MB, "docs/study/s/runs/c1/seed0/fit.log": 9}, []),
        # finished (final.json beside it): the weights go to the Hub
        (
            {"docs/study/s/runs/c1/seed0/checkpoints/last.ckpt": 6 * MB, "docs/study/s/runs/c1/seed0/final.json": 9},
            ["docs/study/s/runs/c1/seed0/checkpoints/last.ckpt: 6.0 MB"],
        ),
        ({"docs/study/s/runs/c1/seed0/checkpoints/epoch=3.ckpt": 6 * MB}, ["epoch=3.ckpt: 6.0 MB"]),
        ({"docs/other/checkpoints/last.ckpt": 6 * MB}, ["docs/other/checkpoints/last.ckpt: 6.0 MB"]),
    ],
    ids=["small", "big-file", "big-tree", "in-flight", "finished", "not-resume", "not-a-study"],
)
def test_the_rule_names_what_breaks_it_and_spares_only_a_run_in_flight(sizes, breaks):
    lines = too_large(sizes)
    assert len(lines) == len(breaks) and all(b in line for b, line in zip(breaks, lines, strict=True)), lines
