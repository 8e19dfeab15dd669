"""Numbers in prose drawn from the report's tables: filled, checked, and a bad marker refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from yahtzee_lightning.commands.study import main
from yahtzee_lightning.study.drawing.prose import fill, marks, stale
from yahtzee_lightning.study.model import StudyError

ROOT = Path(__file__).resolve().parents[2]

TABLE = """\
| agent | mean | p-ish |
|---|---:|---:|
| **PPO** | 181.6 [176.0, 187.1] | +2.5 [-1.0, +6.0] (Welch, p = 0.041) |
| REINFORCE | 159.8 [139.3, 180.3] | - |
"""


def _prose(tmp_path: Path, body: str) -> Path:
    (tmp_path / "report").mkdir(exist_ok=True)
    (tmp_path / "report" / "T1.md").write_text(TABLE)
    path = tmp_path / "README.md"
    path.write_text(body)
    return path


def test_marked_numbers_are_filled_from_their_table_and_the_rest_left_alone(tmp_path):
    path = _prose(
        tmp_path,
        'PPO scores <!--n report/T1.md "PPO" "mean" estimate-->170.0 [1, 2]<!--/n--> (hand: 12.3),\n'
        'its p <!--n report/T1.md "PPO" "p-ish" p-->0.5<!--/n-->, '
        'REINFORCE <!--n report/T1.md "REINFORCE" "mean" value-->159.8<!--/n-->.\n',
    )
    assert [(m.line, m.written, m.table) for m in stale(path)] == [
        (1, "170.0 [1, 2]", "181.6 [176.0, 187.1]"),
        (2, "0.5", "0.041"),
    ]
    assert fill(path) == 2
    text = path.read_text()
    assert "-->181.6 [176.0, 187.1]<!--/n--> (hand: 12.3)" in text and "-->0.041<!--/n-->" in text
    assert stale(path) == [] and len(marks(path)) == 3 and fill(path) == 0


def test_the_verb_checks_and_fills(tmp_path, capsys):
    path = _prose(tmp_path, 'x <!--n report/T1.md "PPO" "mean" interval-->[0, 1]<!--/n-->\n')
    assert main(["prose", str(path), "--check"]) == 1
    assert f"{path}:1: written '[0, 1]', the table says '[176.0, 187.1]'" in capsys.readouterr().out
    assert main(["prose", str(path)]) == 0 and main(["prose", str(path), "--check"]) == 0
    assert main(["prose", str(tmp_path / "missing.md")]) == 2


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ('report/T1.md "A2C" "mean"', "has no row 'A2C' (rows: PPO, REINFORCE)"),
        ('report/T1.md "PPO" "median"', "has no column 'median' (it has: agent, mean, p-ish)"),
        ('report/T2.md "PPO" "mean"', "names report/T2.md, which is not there"),
        ('report/T1.md "PPO" "mean" digits', "must name FILE"),
        ('report/T1.md "REINFORCE" "p-ish" value', "no value in '-'"),
        ('report/T1.md "PPO', "No closing quotation"),
    ],
)
def test_a_bad_marker_is_one_line_naming_the_file_and_line(tmp_path, spec, why):
    path = _prose(tmp_path, f"\n<!--n {spec}-->1<!--/n-->\n")
    with pytest.raises(StudyError) as raised:
        marks(path)
    assert why in str(raised.value) and f"{path}:2" in str(raised.value) and "\n" not in str(raised.value)


def test_the_published_study_readme_holds_to_its_tables():
    readme = ROOT / "docs" / "study" / "README.md"
    assert len(marks(readme)) >= 8
    assert stale(readme) == [], "run: yahtzee-lightning study prose docs/study/README.md"
