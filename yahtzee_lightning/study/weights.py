"""A study's run folders (weights, histories, configs) on the Hub: ``study push`` and ``study pull``.

Weights stay out of git (CONTRIBUTING, "Weights live on the Hub, not in git"): a finished study
keeps its records in the repository and sends its run folders to a Hub dataset repo, pinned by the
revision its README names. The repo holds the run folders, the records that say what they are
(``study.json``, the tables, the report's caches), a card, and ``study-files.json``: every file's
sha256 and size. A pull downloads the way an agent's pull does (``hub/download.py``: the commit
pinned, the hub's names and sizes checked before use, one deadline), checks every file against
``study-files.json``, and writes nothing until all is checked; then it adds the files that are
missing and leaves every other file where it is. A file there that differs from the study's, a
folder that holds runs the study lacks, a repo that is not a study: each refused in one line.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..digest import DIGEST_KEY, record_sha256
from ..manifest import LOCK, MANIFEST, OWNER, _files, file_sha256
from ..untrusted import UntrustedError, check_relative_path, printable, read_json
from .model import StudyError
from .ownership import locked
from .records import FRESH, PLAN, REFERENCE, SESSIONS, digested_text, git
from .results import TABLE, TABLE_DIGEST, read_plan

#: The repo's list of the study's files: each one's sha256 and size (what a pull checks).
FILES = "study-files.json"
CARD = "README.md"
FORMAT = 1
RUNS = "runs"
#: The study folder's records that travel with its run folders: with them a pulled folder is a study
#: that ``study report``, ``study check --out`` and ``study run`` (resuming) read as it was pushed.
RECORDS = (PLAN, TABLE, TABLE_DIGEST, FRESH, REFERENCE, SESSIONS)
#: What a pull downloads: the run folders, the records, the list.
PATTERNS = [f"{RUNS}/*", FILES, *RECORDS]
#: A folder holding one of these is a run folder (what a trial writes into its own, and Lightning's logs do not).
RUN_MARKERS = ("fit.log", "final.json", "history.jsonl")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def study_files(out: Path) -> list[str]:
    """The files a push sends: every file of the run folders (weights included) and the records;
    a writer's lock and owner files, links and the study's own manifest left out."""
    if not (out / PLAN).is_file():
        raise StudyError(f"{out}: holds no {PLAN}, so no study; push a folder written by `study run`")
    names = [r for r in RECORDS if (out / r).is_file() and not (out / r).is_symlink()]
    temporary = f".{MANIFEST}."
    runs = sorted(n for n in _files(out, under=[RUNS]) if not n.rpartition("/")[2].startswith((LOCK, OWNER, temporary)))
    if not runs:
        raise StudyError(f"{out}: has no run folders ({RUNS}/ is empty or missing); nothing to push")
    return names + runs


def run_folders(names: list[str]) -> list[str]:
    """The run folders among ``names`` (posix paths in a study folder): those holding a run's files."""
    return sorted(
        {n.rpartition("/")[0] for n in names if n.startswith(f"{RUNS}/") and n.rpartition("/")[2] in RUN_MARKERS}
    )


def study_record(out: Path) -> tuple[list[str], dict[str, Any]]:
    """The files a push sends, and ``study-files.json``'s record of them: each one's sha256 and size,
    the study's name, profile and file, and the code's commit (``unknown`` outside a git checkout)."""
    names = study_files(out)
    plan = read_plan(out / PLAN)["study"]
    files = {n: {"sha256": file_sha256(out / n), "size": (out / n).stat().st_size} for n in names}
    record = {
        "format": FORMAT,
        "study": plan.get("name"),
        "profile": plan.get("profile"),
        "study_file": plan.get("path"),
        "commit": git("rev-parse", "HEAD") or "unknown",
        "files": files,
    }
    return names, record


def push_study(out: Path, repo_id: str, private: bool = False, token: str | None = None) -> Any:
    """Upload the study folder ``out``'s run folders and records to the dataset repo ``repo_id`` (made
    if missing) in one commit, with its card and ``study-files.json``; the repo's files of an
    earlier push that this one lacks go. Returns ``huggingface_hub``'s ``CommitInfo``."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    with locked(out, "yahtzee-lightning study push"):  # no study run writes while the files are hashed and sent
        names, record = study_record(out)
        api = HfApi(token=token)
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        old = set(api.list_repo_files(repo_id, repo_type="dataset"))
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / FILES).write_text(digested_text(record))
            (Path(tmp) / CARD).write_text(card(record, repo_id))
            ops: list[Any] = [CommitOperationAdd(path_in_repo=n, path_or_fileobj=str(out / n)) for n in names]
            ops += [CommitOperationAdd(path_in_repo=n, path_or_fileobj=str(Path(tmp) / n)) for n in (FILES, CARD)]
            ops += [
                CommitOperationDelete(path_in_repo=n)
                for n in sorted(old - set(names))
                if n.startswith(f"{RUNS}/") or n in RECORDS
            ]
            return api.create_commit(
                repo_id, ops, repo_type="dataset", commit_message=f"study {record['study']}: {len(names)} files"
            )


def card(record: dict[str, Any], repo_id: str) -> str:
    """The dataset card: what the study is (its file, profile, the code's commit), how to pull it back,
    and its run folders with their sizes."""
    files = record["files"]
    total = sum(f["size"] for f in files.values())
    rows = []
    for run in run_folders(list(files)):
        inside = [f for n, f in files.items() if n.startswith(f"{run}/")]
        rows.append(f"| `{run}` | {len(inside)} | {sum(f['size'] for f in inside) / 1e6:.1f} MB |")
    name = record["study"]
    return "\n".join(
        [
            "---",
            "license: mit",
            "tags: [yahtzee, reinforcement-learning, yahtzee-lightning]",
            "---",
            f"# yahtzee-lightning study `{name}`: its run folders and weights",
            "",
            f"The run folders of the study `{name}` as `yahtzee-lightning study run` wrote them: each run's",
            "weights (`checkpoints/last.ckpt`), history, config and final record, beside the study's plan",
            "and tables. Its report and records live in the code's repository; its weights live here.",
            "",
            f"* Study file: `{record['study_file']}` (profile {record['profile']})",
            f"* Code: commit `{record['commit']}` of yahtzee-lightning",
            f"* {len(files)} files, {total / 1e6:.1f} MB; each one's sha256 in `{FILES}`",
            "",
            "Back into a study folder (missing files added, the folder's own files left as they are; the",
            "revision is a commit of this repo, as the study's README names it):",
            "",
            f"    yahtzee-lightning study pull {repo_id} --revision REVISION docs/study/{name}",
            "",
            "| run folder | files | size |",
            "|---|---|---|",
            *rows,
            "",
        ]
    )


def pull_study(repo_id: str, revision: str | None, out: Path, token: str | None = None) -> tuple[list[str], str]:
    """Download the study of ``repo_id`` at ``revision`` and put its files into the study folder ``out``:
    those missing are written, those there already with the same content left. Returns the names
    written and where they came from (``repo@commit``). Refused in one line, nothing written: a repo
    that is not a study, a file whose content is not the one listed, a folder holding runs the study
    lacks or a file that differs from the study's."""
    from ..hub.download import resolve_folder
    from ..hub.layout import AgentError

    check_target(out)
    if Path(repo_id).exists():  # the agents' resolver would take a local folder as it is: a pull is from the hub
        raise StudyError(f"{repo_id}: a local path; `study pull` takes a hub dataset repo id (user/name)")
    try:
        source = resolve_folder(repo_id, revision, hub_only=True, repo_type="dataset", patterns=PATTERNS, token=token)
    except (AgentError, UntrustedError) as e:
        raise StudyError(f"{e} (nothing written)") from None
    where = f"{repo_id}@{source.name if len(source.name) == 40 else revision or 'main'}"
    files = checked_files(source, where)
    check_runs(out, list(files), where)
    check_clashes(out, files, where)  # before the lock: a refused pull leaves no lock file in the user's folder
    with locked(out, "yahtzee-lightning study pull"):
        todo = check_clashes(out, files, where)  # under the lock: another writer may have written since
        for n in todo:
            dst = out / n
            part = dst.parent / f".{dst.name}.pulling"
            try:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / n, part)  # the cache holds links: the content is copied
                os.replace(part, dst)
            except OSError as e:  # a full disk: one line; what was written is the study's, each file whole
                part.unlink(missing_ok=True)
                raise StudyError(f"{out}: {n} could not be written ({e.strerror or type(e).__name__})") from None
    return todo, where


def checked_files(source: Path, where: str) -> dict[str, str]:
    """The study's files in a downloaded snapshot by name, with their sha256, each checked against the
    repo's ``study-files.json`` (itself checked against its sha256); a repo without one is not a study."""
    if not (source / FILES).is_file():
        raise StudyError(f"{where}: holds no {FILES}, so it is not a study's run folders (nothing written)")
    try:
        record = read_json(source / FILES)
    except (OSError, ValueError) as e:
        raise StudyError(f"{where}: {FILES} is unreadable ({printable(e)}) (nothing written)") from None
    if not isinstance(record, dict) or record.get(DIGEST_KEY) != record_sha256(record):
        raise StudyError(f"{where}: {FILES} does not match its sha256 (damaged or edited) (nothing written)")
    listed = record.get("files")
    if record.get("format") != FORMAT or not isinstance(listed, dict) or not listed:
        raise StudyError(f"{where}: {FILES} is not a list of a study's files of format {FORMAT} (nothing written)")
    files = {}
    for name, entry in listed.items():
        try:
            check_relative_path(name, where)
        except UntrustedError as e:
            raise StudyError(f"{e} (nothing written)") from None
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not (name.startswith(f"{RUNS}/") or name in RECORDS) or not isinstance(digest, str):
            raise StudyError(f"{where}: {FILES} lists {printable(repr(name))}, not a study's file (nothing written)")
        if not _SHA256.fullmatch(digest):
            raise StudyError(f"{where}: {FILES} gives {printable(repr(name))} no sha256 (nothing written)")
        path = source / name
        if not path.is_file() or file_sha256(path) != digest:
            what = "does not match its sha256" if path.is_file() else "is missing"
            raise StudyError(f"{where}: {printable(name)} {what} in {FILES} (nothing written)")
        files[name] = digest
    return files


def check_target(out: Path) -> None:
    """A study folder to pull into: new, or a folder (never a link to one, nor below a file)."""
    if out.is_symlink():
        raise StudyError(f"{out}: a symbolic link; give the study folder itself (nothing written)")
    if out.exists() and not out.is_dir():
        raise StudyError(f"{out}: exists and is not a folder (nothing written)")
    if any(p.is_file() for p in out.parents):
        raise StudyError(f"{out}: a parent of it is a file (nothing written)")


def check_runs(out: Path, names: list[str], where: str) -> None:
    """Refuse a folder that holds run folders the pulled study lacks: another study's runs, or this
    one's from another session, which a mixed folder would confuse."""
    if not (out / RUNS).is_dir():
        return
    ours = set(run_folders(names))
    there = run_folders(list(_files(out, under=[RUNS])))
    other = [r for r in there if r not in ours]
    if other:
        shown = _some(other)
        raise StudyError(
            f"{out}: holds runs that are not in {where}'s study ({shown}); pull into that study's folder "
            "or a new one (nothing written)"
        )


def check_clashes(out: Path, files: dict[str, str], where: str) -> list[str]:
    """The files to write: those missing from ``out``. One there with other content (the user's, or a
    run that went on here) refuses the pull, naming it; one with the same content is left."""
    todo, clash = [], []
    for name, digest in files.items():
        path = out / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            clash.append(name)
        elif not path.exists():
            todo.append(name)
        elif file_sha256(path) != digest:
            clash.append(name)
    if clash:
        shown = _some(clash)
        raise StudyError(
            f"{out}: {shown} would be overwritten but differ from {where}'s; move them away first (nothing written)"
        )
    return todo


def _some(names: list[str]) -> str:
    """The first three names and how many more: a refusal names what it found without a wall of paths."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
