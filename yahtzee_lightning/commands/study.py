"""``yahtzee-lightning study run|check|status|report|compare|prose|push|pull``: run a study file's cells
on Ray Tune, say where they stand, draw its report, set it beside a paper's numbers, and keep its
weights on the Hub.

``study run FILE --profile P --out DIR`` checks the file, then runs (or resumes) every cell on a
local Ray instance sized to the cores, or on the Ray cluster at ``--address``; ``study report DIR``
writes ``DIR/report/`` (a file per exhibit, named by its id, and ``index.md``); ``study check FILE``
only checks the file and lists its cells; ``study status DIR`` says run by run what is done, under
way (how far, how fresh its checkpoint, its pace) and not started. ``study compare DIR --published FILE`` writes
``DIR/table.csv`` and ``DIR/published/`` (ours beside a paper's published rows); ``study prose``
fills the numbers a README marks from the report's tables. ``study push DIR --repo-id ID`` uploads
the study's run folders (weights, histories, configs) as a Hub dataset repo; ``study pull ID
--revision REV DIR`` puts them back into a study folder (``study/weights.py``): weights stay out of git.

Needs the study extra (Ray, pandas, matplotlib, SciPy): pip install 'yahtzee-lightning[study]'.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..extras import require
from .args import VerbParser, check_count, plain


def _parser() -> argparse.ArgumentParser:
    parser = VerbParser(prog="yahtzee-lightning study", description=plain(__doc__))
    verbs = parser.add_subparsers(dest="verb", required=True)
    run = verbs.add_parser("run", help="run (or resume) a study's cells")
    run.add_argument("file", help="a study file, e.g. conf/study/smoke.yaml")
    run.add_argument("--profile", help="the budget to run at (smoke, cpu, full; default: the file's first)")
    run.add_argument("--out", required=True, help="the study folder: results, run folders, report")
    run.add_argument("--address", help="a Ray cluster to run on (ray://HOST:10001 or HOST:6379); default: local")
    run.add_argument("--cpus", type=int, help="CPUs of the local Ray instance (default: all cores)")
    run.add_argument(
        "--gpus-per-trial",
        type=float,
        metavar="SHARE",
        help="the share of one GPU each trial asks for, e.g. 0.25: four trials a GPU (default: the file's, else 0)",
    )
    run.add_argument(
        "--retries",
        type=int,
        help="times a trial whose process died runs again, from its newest checkpoint (default: 3 on a cluster)",
    )
    run.add_argument(
        "--force",
        action="store_true",
        help="first delete the files earlier sessions wrote in --out (only those: any others stay)",
    )
    run.set_defaults(verb_parser=run)
    run.add_argument("--report", action="store_true", help="write the report when the cells are done")
    run.add_argument(
        "--no-pack",
        action="store_true",
        help="one trial per cell (default: cells that can share an ensemble run as one)",
    )
    check = verbs.add_parser("check", help="check a study file and list its cells, running nothing")
    check.add_argument("file")
    check.add_argument("--profile")
    check.add_argument("--out", help="its study folder, if it has run: the hypotheses must be those it pre-registered")
    status = verbs.add_parser("status", help="say run by run what is done, under way and not started in a study folder")
    status.add_argument("dir", help="a study folder written by `study run` (read only)")
    report = verbs.add_parser("report", help="write DIR/report/ from a study folder")
    report.add_argument("dir", help="a study folder written by `study run`")
    report.add_argument(
        "--force", action="store_true", help="replace an existing report's files (only those: any others stay)"
    )
    compare = verbs.add_parser(
        "compare", help="write DIR/table.csv and DIR/published/ from a study folder beside a paper's published rows"
    )
    compare.add_argument("dir", help="a study folder written by `study run`, its cells labelled on a 'row' axis")
    compare.add_argument(
        "--published", required=True, help="the published rows, e.g. conf/paper/published.json (see docs/study.md)"
    )
    push = verbs.add_parser("push", help="upload a study's run folders (weights included) as a Hub dataset repo")
    push.add_argument("dir", help="a study folder written by `study run`")
    push.add_argument("--repo-id", required=True, help="user/name of the dataset repo on the Hub; created if missing")
    push.add_argument("--private", action="store_true", help="create the repo private")
    pull = verbs.add_parser("pull", help="put a study's run folders from the Hub back into its study folder")
    pull.add_argument("repo_id", help="user/name of the dataset repo `study push` wrote")
    pull.add_argument("dir", help="the study folder: new, or the study's own (its files are kept)")
    pull.add_argument("--revision", help="the repo's commit (or branch, tag) the study's README names (default: main)")
    prose = verbs.add_parser(
        "prose", help='fill the numbers a README marks (<!--n TABLE "ROW" "COLUMN"-->) from the report\'s tables'
    )
    prose.add_argument("files", nargs="+", help="Markdown files whose marked numbers to fill (or check)")
    prose.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if any number differs from its table"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    require("study")  # after parsing: --help says which extra without it
    from ..study.spec import StudyError, load_study

    if args.verb == "run":
        run = args.verb_parser  # its own prog in the line
        if args.cpus is not None:  # trial slots of one local Ray instance (more than the cores share them)
            check_count(run, "--cpus", args.cpus, 1, 1024, "trial slots of one machine's Ray instance")
        if args.retries is not None:
            check_count(run, "--retries", args.retries, 0, 100, "a trial that died 100 times will not finish")
    try:
        if args.verb == "prose":
            return _prose(args.files, args.check)
        if args.verb in ("push", "pull"):
            return _hub(args)
        if args.verb == "status":
            from ..study.status import status_lines

            print("\n".join(status_lines(Path(args.dir))))
            return 0
        if args.verb == "report":
            from ..study.drawing.report import write_report

            index = write_report(Path(args.dir), force=args.force)
            print(f"report: {index}")
            return 0
        if args.verb == "compare":
            from ..study.drawing.published import compare_published

            print(f"compared: {compare_published(Path(args.dir), args.published)}")
            return 0
        if getattr(args, "address", None):
            from ..study.running.cluster import check_address

            check_address(args.address)  # at once, before the study file's cells are parsed
        study = load_study(args.file, args.profile, getattr(args, "gpus_per_trial", None))
        if getattr(args, "no_pack", False):
            study.pack = False
        from ..study.running.validate import check_settings

        check_settings(study)  # before check passes or run starts anything
        if args.verb == "check":
            from ..study.running.packing import check_required

            check_required(study)
            if args.out:
                from ..study.running.preregistration import check_preregistered

                check_preregistered(study, Path(args.out))
            print(describe(study))
            return 0
        from ..study.running.runner import run_study

        command = shlex.join(["yahtzee-lightning", "study", *argv])
        code = run_study(study, args.out, args.address, args.cpus, args.force, command=command, retries=args.retries)
        if args.report:
            from ..study.drawing.report import write_report

            print(f"report: {write_report(Path(args.out), force=True)}")
        return code
    except StudyError as e:
        print(f"yahtzee-lightning study: error: {e}", file=sys.stderr)
        return 2


def _prose(files: list[str], check: bool) -> int:
    """Fill (or check) the marked numbers of each file; a number that differs is named with its line."""
    from ..study.drawing.prose import fill, stale

    code = 0
    for name in files:
        path = Path(name)
        if not path.is_file():
            print(f"yahtzee-lightning study prose: error: {name}: no such file", file=sys.stderr)
            return 2
        if check:
            for mark in stale(path):
                print(f"{path}:{mark.line}: written {mark.written!r}, the table says {mark.table!r} ({mark.spec})")
                code = 1
        else:
            print(f"{path}: {fill(path)} number(s) changed")
    return code


#: A hypothesis's direction in words ("C1: a2c greater than reinforce").
RELATION = {"greater": "greater than", "less": "less than", "either": "different from", "equal": "equal to"}


def _hub(args: argparse.Namespace) -> int:
    """``study push`` or ``study pull``; a hub that cannot be reached or refuses is one line."""
    from ..hub.download import hub_errors, hub_failure
    from ..study.weights import pull_study, push_study

    try:
        if args.verb == "push":
            info = push_study(Path(args.dir), args.repo_id, private=args.private)
            print(f"pushed {args.dir} to {args.repo_id} at revision {info.oid}: {info.commit_url}")
            print(f"back with: yahtzee-lightning study pull {args.repo_id} --revision {info.oid} {args.dir}")
            return 0
        written, where = pull_study(args.repo_id, args.revision, Path(args.dir))
    except hub_errors() as e:
        print(f"yahtzee-lightning study: error: {hub_failure(args.repo_id, e)}", file=sys.stderr)
        return 2
    print(f"pulled {where} into {args.dir}: {len(written)} files written, the others there already")
    return 0


def describe(study) -> str:
    """The study's ablations, their cells (labels, algorithm, budget) and seeds, as text."""
    from ..game.rules import episodes_text

    lines = [f"study {study.name} (profile {study.profile}): {len(study.cells)} cells"]
    for ab in study.ablations.values():
        sched = f", scheduler {ab.scheduler['name']}" if ab.scheduler else ""
        sched += f", each seed starting from its agent of cell {ab.start_from}" if ab.start_from else ""
        lines.append(f"  {ab.name}: {len(ab.cells)} cells x seeds {ab.seeds}{sched}")
        for cell_id, labels in ab.cells:
            c = study.cells[cell_id]
            text = ", ".join(f"{k}={v}" for k, v in labels.items())
            lines.append(f"    {cell_id} {text}  [{c.algorithm}, {c.task}, {episodes_text(c.total_games, c.task)}]")
    lines.append("exhibits: " + ", ".join(study.exhibits))
    for h in study.hypotheses.values():  # the confirmatory tests, as the study file writes them down
        relation = {"greater": "greater than", "less": "less than", "either": "different from", "equal": "equal to"}
        lines.append(
            f"hypothesis {h.id}: {h.compare[0]} {relation[h.direction]} {h.second()} ({h.statistic} {h.metric})"
        )
    return "\n".join(lines)
