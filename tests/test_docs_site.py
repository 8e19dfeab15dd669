"""The documentation site builds strictly (a warning or a broken link fails), with every verb's help
and the API reference drawn from the code; the link rewriting that lets pages written for the repo
work on the site."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote

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


@pytest.mark.slow("MkDocs builds the whole site in a process of its own: about 9 s")
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
    # The first hour's pages and the API reference: in the site, and no reStructuredText role left raw
    # in them (mkdocstrings renders a docstring's :func:`x` as that text).
    pages = [tmp_path / "site" / page / "index.html" for page in ("getting-started", "pretrained")]
    for html in [*pages, *(tmp_path / "site" / "api").rglob("*.html")]:
        assert not RAW_ROLE.search(html.read_text()), html
    assert "What works offline" in (tmp_path / "site" / "api" / "agent" / "index.html").read_text()
    # The algorithm template CONTRIBUTING links to is on the site, and no page links to a missing file.
    for name in ("clipped_a2c.py", "clipped_a2c.yaml", "test_clipped_a2c.py"):
        served = tmp_path / "site" / "templates" / "algorithm" / name
        assert served.read_text() == (ROOT / "docs" / "templates" / "algorithm" / name).read_text()
    assert not _missing_targets(tmp_path / "site")


#: A reStructuredText role (``:class:`X```) in a docstring or on a page: MkDocs shows it raw.
RAW_ROLE = re.compile(r":(func|class|meth|mod|attr|data|exc|obj):(`|<code>)")


def _missing_targets(site: Path) -> list[str]:
    """The built pages' relative links and sources that lead to no file of the site (a 404 there)."""
    missing = []
    for page in site.rglob("*.html"):
        for target in re.findall(r'(?:href|src)="([^"]*)"', page.read_text()):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
                continue  # another site, an anchor of the page, the site's root
            path = unquote(target.partition("#")[0].partition("?")[0])
            resolved = page.parent / path / ("index.html" if path.endswith("/") else "")
            if path and not resolved.exists():
                missing.append(f"{page.relative_to(site)}: {target}")
    return missing


def test_a_link_to_a_missing_file_is_found_in_a_built_site(tmp_path):
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "index.html").write_text('<a href="../templates/x.py">x</a> <a href="../guide/">g</a>')
    assert _missing_targets(tmp_path) == ["guide/index.html: ../templates/x.py"]


def test_no_docstring_holds_a_raw_restructuredtext_role():
    """The API pages render docstrings as Markdown: ``name`` for a reference, never :class:`name`."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "yahtzee_lightning").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if RAW_ROLE.search(line)
    ]
    assert not found, found


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
    """MkDocs' file list as the hooks use it: ``excluded`` files are known but not on the site."""

    def __init__(self, paths, excluded=()):
        self.paths, self.excluded = set(paths) | set(excluded), set(excluded)

    def get_file_from_path(self, path):
        if path not in self.paths:
            return None
        return SimpleNamespace(inclusion=SimpleNamespace(is_included=lambda: path not in self.excluded))


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
        # a file MkDocs leaves off the site is named as the repository's, never linked (a 404 there)
        ("guide.md", "[t](templates/algorithm/clipped_a2c.py)", None, "t (`docs/templates/algorithm/clipped_a2c.py`)"),
        ("guide.md", "[web](https://lightning.ai)", None, "[web](https://lightning.ai)"),
    ],
)
def test_links_written_for_the_repository_work_on_the_site(src, link, repo_url, expected):
    hooks = _hooks()

    class Page:
        class file:
            src_uri = src

    config = {"docs_dir": str(ROOT / "docs"), "repo_url": repo_url}
    files = _Files({"guide.md", "api/cli.md", "index.md"}, excluded={"templates/algorithm/clipped_a2c.py"})
    assert hooks.on_page_markdown(link, Page, config, files) == expected


def test_code_blocks_keep_their_links_as_written():
    hooks = _hooks()

    class Page:
        class file:
            src_uri = "guide.md"

    text = "```md\n[r](../conf/a2c.yaml)\n```\n"
    assert hooks.on_page_markdown(text, Page, {"docs_dir": str(ROOT / "docs"), "repo_url": None}, _Files(set())) == text
