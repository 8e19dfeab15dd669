"""The documentation site builds strictly (a warning or a broken link fails), with every verb's help
and the API reference drawn from the code; the link rewriting that lets pages written for the repo
work on the site."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _hooks():
    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "docs" / "site_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(tmp_path: Path, config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"NO_MKDOCS_2_WARNING": "1", **__import__("os").environ},
    )


def test_site_builds_strictly_with_the_verbs_and_the_reference(tmp_path):
    done = _build(tmp_path, ROOT / "mkdocs.yml")
    assert done.returncode == 0, done.stderr[-3000:]
    from yahtzee_lightning.cli import VERBS

    cli_page = (tmp_path / "site" / "api" / "cli" / "index.html").read_text()
    for verb in VERBS:
        if verb not in ("fit", "validate"):
            assert f"usage: yahtzee-lightning {verb}" in cli_page, verb
    algorithms = (tmp_path / "site" / "api" / "algorithms" / "index.html").read_text()
    assert "policy_gradient_step" in algorithms and "(games_per_batch, steps)" in algorithms
    home = (tmp_path / "site" / "index.html").read_text()
    assert 'href="guide/' in home  # the README's docs/guide.md, as the site's page
    assert "conf/quickstart.yaml" in home
    # The first hour's pages: in the site, and no reStructuredText role left raw in them (mkdocstrings
    # renders a docstring's :func:`x` as that text).
    for page in ("getting-started", "pretrained", "api/agent"):
        html = (tmp_path / "site" / page / "index.html").read_text()
        assert not re.search(r":(func|class|meth|mod|attr|data|exc|obj):(`|<code>)", html), page
    assert "What works offline" in (tmp_path / "site" / "api" / "agent" / "index.html").read_text()


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# A page\n\nSee [the missing page](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"site_name: t\ndocs_dir: {docs}\nhooks: [{ROOT / 'docs' / 'site_hooks.py'}]\nexclude_docs: site_hooks.py\n"
    )
    done = _build(tmp_path, config)
    assert done.returncode != 0 and "missing.md" in done.stderr


class _Files:
    def __init__(self, paths):
        self.paths = set(paths)

    def get_file_from_path(self, path):
        return path if path in self.paths else None


@pytest.mark.parametrize(
    ("src", "link", "repo_url", "expected"),
    [
        ("index.md", "[guide](docs/guide.md#threads)", None, "[guide](guide.md#threads)"),
        ("api/cli.md", "[guide](../guide.md)", None, "[guide](../guide.md)"),
        ("guide.md", "[README](../README.md)", None, "[README](index.md)"),
        ("guide.md", "[the recipe](../conf/a2c.yaml)", None, "the recipe (`conf/a2c.yaml`)"),
        ("guide.md", "[`conf/a2c.yaml`](../conf/a2c.yaml)", None, "`conf/a2c.yaml`"),
        (
            "guide.md",
            "[r](../conf/a2c.yaml)",
            "https://example.org/yl",
            "[r](https://example.org/yl/blob/main/conf/a2c.yaml)",
        ),
        ("guide.md", "[gone](nowhere.md)", None, "[gone](nowhere.md)"),
        ("guide.md", "[web](https://lightning.ai)", None, "[web](https://lightning.ai)"),
    ],
)
def test_links_written_for_the_repository_work_on_the_site(src, link, repo_url, expected):
    hooks = _hooks()

    class Page:
        class file:
            src_uri = src

    config = {"docs_dir": str(ROOT / "docs"), "repo_url": repo_url}
    files = _Files({"guide.md", "api/cli.md", "index.md"})
    assert hooks.on_page_markdown(link, Page, config, files) == expected


def test_code_blocks_keep_their_links_as_written():
    hooks = _hooks()

    class Page:
        class file:
            src_uri = "guide.md"

    text = "```md\n[r](../conf/a2c.yaml)\n```\n"
    assert hooks.on_page_markdown(text, Page, {"docs_dir": str(ROOT / "docs"), "repo_url": None}, _Files(set())) == text
