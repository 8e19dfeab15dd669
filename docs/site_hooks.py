"""MkDocs hooks for the documentation site (``mkdocs.yml``; not part of the package).

The Markdown in this repository is written to be read where it lies (on a forge, in an editor), so
its links are relative to the file: ``docs/guide.md`` from the README, ``../conf/a2c.yaml`` from a
page. The site holds ``docs/`` plus the README (its home page) and CONTRIBUTING; these hooks keep
every link true there. A link into ``docs/`` becomes the page's link; a link to any other file of
the repository (a recipe, a run folder, a source file) becomes a link to the forge when
``repo_url`` is set, otherwise the path as code. A link to a file that exists nowhere stays as
written, so that ``mkdocs build --strict`` still fails on it.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
#: Pages made from files outside ``docs/``: the site's path, the repository's file.
OUTSIDE_PAGES = {"index.md": "README.md", "contributing.md": "CONTRIBUTING.md"}
LINK = re.compile(r"(!?\[[^\]\n]*\])\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)", re.M)


def on_files(files: Files, config) -> Files:
    for site_path, repo_file in OUTSIDE_PAGES.items():
        files.append(File.generated(config, site_path, abs_src_path=str(ROOT / repo_file)))
    return files


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    docs = Path(config["docs_dir"]).resolve()
    src = page.file.src_uri
    where = ROOT / OUTSIDE_PAGES[src] if src in OUTSIDE_PAGES else docs / src
    parts = FENCE.split(markdown)
    # Split on fences: even chunks are prose, odd ones the fence markers, code between pairs is left as it is.
    out, in_code = [], False
    for chunk in parts:
        if FENCE.fullmatch(chunk):
            in_code = not in_code
            out.append(chunk)
            continue
        out.append(chunk if in_code else LINK.sub(lambda m: _rewrite(m, where, docs, src, files, config), chunk))
    return "".join(out)


def _rewrite(match: re.Match, where: Path, docs: Path, src: str, files: Files, config) -> str:
    text, target = match.group(1), match.group(2)
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return match.group(0)
    path, _, anchor = target.partition("#")
    resolved = (where.parent / path).resolve()
    if not resolved.exists() or ROOT not in resolved.parents:
        return match.group(0)  # broken, or outside the repository: the strict build says so
    anchor = f"#{anchor}" if anchor else ""
    if docs in resolved.parents or resolved == docs:
        rel = resolved.relative_to(docs).as_posix()
        if resolved.is_dir() and (resolved / "README.md").exists():
            rel = f"{rel}/README.md"
        found = files.get_file_from_path(rel)
        if found is not None and found.inclusion.is_included():  # an excluded file is not on the site
            return f"{text}({_relative(rel, src)}{anchor})"
    for site_path, repo_file in OUTSIDE_PAGES.items():
        if resolved == ROOT / repo_file:
            return f"{text}({_relative(site_path, src)}{anchor})"
    repo_path = resolved.relative_to(ROOT).as_posix()
    if config.get("repo_url"):
        kind = "tree" if resolved.is_dir() else "blob"
        return f"{text}({config['repo_url'].rstrip('/')}/{kind}/main/{repo_path}{anchor})"
    label = text[text.index("[") + 1 : -1]
    return label if label.startswith("`") else f"{label} (`{repo_path}`)" if label != repo_path else f"`{repo_path}`"


def _relative(target: str, src: str) -> str:
    """``target`` (a path under ``docs/``) as seen from the page ``src``."""
    here = PurePosixPath(src).parent
    up = len(here.parts)
    return "/".join([".."] * up + [target]) if up else target


#: Where the command-line page wants every verb's ``--help`` (written at build time, so never stale).
VERBS_MARKER = "<!-- verbs: their --help, written by the site build -->"
#: Verbs whose help is LightningCLI's (every trainer option): the page describes them in prose.
LIGHTNING_VERBS = ("fit", "validate")


def verbs_help() -> str:
    """Each argparse verb's ``--help``, as the installed package prints it."""
    import contextlib
    import importlib
    import io
    import os

    from yahtzee_lightning.cli import VERBS

    os.environ.setdefault("COLUMNS", "100")
    sections = []
    for verb, (target, summary) in VERBS.items():
        if verb in LIGHTNING_VERBS:
            continue
        module_name, func_name = target.split(":")
        func = getattr(importlib.import_module(module_name), func_name)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            func(["--help"])
        text = out.getvalue()
        if not text.startswith("usage: yahtzee-lightning "):  # a parser whose prog is the verb alone
            text = text.replace("usage: ", "usage: yahtzee-lightning ", 1)
        sections.append(f"### `{verb}`\n\n{summary[0].upper()}{summary[1:]}.\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(sections)


def on_page_read_source(page, config) -> str | None:
    if page.file.src_uri != "api/cli.md":
        return None
    text = Path(page.file.abs_src_path).read_text(encoding="utf-8")
    return text.replace(VERBS_MARKER, verbs_help())
