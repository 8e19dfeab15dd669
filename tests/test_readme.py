"""Every Python snippet of the README and the guide runs as written, as a new user would paste it."""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = [
    code
    for page in ("README.md", "docs/guide.md")
    for code in re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)
]


def test_the_readme_has_python_snippets():
    assert SNIPPETS, "the README shows Python usage in ```python blocks; this test runs them"


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code, tmp_path, monkeypatch, default_table):
    # Run from a scratch folder that sees the clone's conf/ and checkpoints/, as the README's paths assume.
    for name in ("conf", "checkpoints"):
        os.symlink(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
