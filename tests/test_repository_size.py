"""Weights out of the repository: a clone is kilobytes of code and the records of its studies, and a
machine that takes at most 64 MiB of the tree (the GPU machine) can be sent it. A tracked file over
5 MB, or tracked files over 25 MB in all (the shipped agents in checkpoints/ included), fail here,
save the resume state of a run still in flight, committed at most once a session and gone when the
run ends: a study run's ``last.ckpt`` with no ``final.json`` beside its run (its weights then go to
the Hub: ``study push``), and the weights of an expert-iteration loop whose ``loop_state.json`` is
tracked with no ``agent/`` beside it yet (the finished agent ships in ``checkpoints/``).
CONTRIBUTING, "Weights live on the Hub, not in git"."""

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


WEIGHTS = (".ckpt", ".safetensors")


def in_flight(path: str, tracked: set[str]) -> bool:
    """The resume state of a run still in flight: a study run's ``docs/study/S/runs/.../checkpoints/
    last.ckpt`` in a run folder that tracks no ``final.json``; or weights under a folder that tracks an
    expert-iteration loop's ``loop_state.json`` and no ``agent/config.json`` (the loop's own agent,
    written as it ends)."""
    p = PurePosixPath(path)
    if p.parts[:2] == ("docs", "study") and "runs" in p.parts and p.parts[-2:] == ("checkpoints", "last.ckpt"):
        return str(p.parent.parent / "final.json") not in tracked
    if not p.name.endswith(WEIGHTS):
        return False
    for loop in p.parents:
        if str(loop / "loop_state.json") in tracked:
            return str(loop / "agent" / "config.json") not in tracked
    return False


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


def test_no_tracked_file_over_5_mb_nor_tree_over_25_mb_save_a_run_in_flight():
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
        # an expert-iteration loop in flight: its stages' weights, in size and in the total
        (
            {"docs/loop/run/loop_state.json": 9, "docs/loop/run/stage_2/checkpoints/last.ckpt": 6 * MB}
            | {f"docs/loop/run/stage_{i}/agent/model.safetensors": 4 * MB for i in range(6)},
            [],
        ),
        # finished (its agent written): the weights go
        (
            {"docs/loop/run/loop_state.json": 9, "docs/loop/run/agent/config.json": 9}
            | {"docs/loop/run/stage_2/checkpoints/last.ckpt": 6 * MB},
            ["docs/loop/run/stage_2/checkpoints/last.ckpt: 6.0 MB"],
        ),
        # no loop state: not a loop
        ({"docs/loop/run/stage_2/checkpoints/last.ckpt": 6 * MB}, ["docs/loop/run/stage_2/checkpoints/last.ckpt"]),
        # in a loop in flight, a file that is not weights counts
        ({"docs/loop/run/loop_state.json": 9, "docs/loop/run/events.log": 6 * MB}, ["docs/loop/run/events.log"]),
    ],
    ids=[
        "small",
        "big-file",
        "big-tree",
        "in-flight",
        "finished",
        "not-resume",
        "not-a-study",
        "loop-in-flight",
        "loop-finished",
        "not-a-loop",
        "loop-not-weights",
    ],
)
def test_the_rule_names_what_breaks_it_and_spares_only_runs_in_flight(sizes, breaks):
    lines = too_large(sizes)
    assert len(lines) == len(breaks) and all(b in line for b, line in zip(breaks, lines, strict=True)), lines
