"""The exact solver reproduces the published optima; its tables persist; its oracle is consistent."""

import pytest
import torch

from yahtzee_lightning.game import OPEN, Rules, tables
from yahtzee_lightning.solver import OptimalTable, TurnOracle, load_or_solve, reachable_uppers, solve


@pytest.mark.parametrize(
    "rules, optimum",
    [
        (Rules(), 254.5896),  # Verhoeff 1999, Glenn 2006
        # the variants' tables, each solved from nothing: after the README's tests, with the slow ones
        pytest.param(Rules(joker="forced"), 254.5877, marks=pytest.mark.slow("a variant's table solved: about 12 s")),
        pytest.param(Rules(joker="off"), 253.9702, marks=pytest.mark.slow("a variant's table solved: about 12 s")),
        pytest.param(  # Glenn 2006
            Rules(yahtzee_bonus=False, joker="off"),
            245.8708,
            marks=pytest.mark.slow("a variant's table solved: about 12 s"),
        ),
    ],
)
def test_published_optima(rules, optimum):
    table = load_or_solve(rules, progress=False)
    assert abs(table.optimum - optimum) < 1e-4


def test_reachable_upper_sums():
    assert reachable_uppers([]) == [0]
    assert reachable_uppers([0]) == [0, 1, 2, 3, 4, 5]
    assert reachable_uppers([5]) == [0, 6, 12, 18, 24, 30]
    assert max(reachable_uppers(list(range(6)))) == 63


def test_reduced_game_is_solved_and_bounded(default_table):
    small = solve(Rules(boxes=(0, 12)), progress=False)
    # Chance alone is worth more than 3.5 * 5 with rerolls; ones add a little; nothing else.
    assert 17.5 < small.optimum < 30
    assert small.optimum < default_table.optimum


def test_save_load_and_refusal(tmp_path, default_table):
    path = tmp_path / "t.safetensors"
    default_table.save(path)
    loaded = OptimalTable.load(path, rules=Rules())
    assert torch.equal(loaded.values, default_table.values) and loaded.rules == Rules()
    with pytest.raises(ValueError, match="built for rules joker-free_bonus-on, not joker-forced"):
        OptimalTable.load(path, rules=Rules(joker="forced"))
    with pytest.raises(FileNotFoundError):
        OptimalTable.load(tmp_path / "missing.safetensors")
    from safetensors.torch import save_file

    save_file({"values": default_table.values}, str(tmp_path / "old.safetensors"), metadata={"format_version": "0"})
    with pytest.raises(ValueError, match="format version 0"):
        OptimalTable.load(tmp_path / "old.safetensors")


def test_oracle_is_consistent_with_the_table(default_table):
    rules = Rules()
    oracle = TurnOracle(rules, default_table)
    T = tables()
    dice = T.dice  # every first roll of an empty card
    card = torch.full((252, 13), OPEN)
    keep_values, _ = oracle.action_values(dice, torch.zeros(252, dtype=torch.long), card)
    expected = (T.first_roll * keep_values.amax(-1)).sum()
    assert abs(float(expected) - default_table.optimum) < 1e-9


def test_regret_is_zero_for_the_best_choice_and_positive_otherwise(default_table):
    oracle = TurnOracle(Rules(), default_table)
    card = torch.full((2, 13), OPEN)
    card[:, 5] = 24  # sixes filled
    dice = torch.tensor([[6, 6, 6, 6, 6], [1, 2, 3, 4, 5]])
    roll = torch.tensor([2, 2])
    kv, bv = oracle.action_values(dice, roll, card)
    best = bv.argmax(-1)
    zero = oracle.regret(dice, roll, card, torch.zeros(2, dtype=torch.long), best)
    assert torch.allclose(zero, torch.zeros(2, dtype=torch.float64))
    assert int(best[0]) == 11 and int(best[1]) == 10  # the Yahtzee box; the large straight
    bad = oracle.regret(dice, roll, card, torch.zeros(2, dtype=torch.long), torch.tensor([0, 0]))
    assert bool((bad > 5).all())
    assert bv[0, 5] == float("-inf")  # filled box


def test_oracle_refuses_a_table_for_other_rules(default_table):
    with pytest.raises(ValueError, match="built for"):
        TurnOracle(Rules(joker="forced"), default_table)


def test_solve_cli_saves_then_loads(tmp_path, capsys):
    from yahtzee_lightning.cli import main

    out = tmp_path / "small.safetensors"
    assert main(["solve", "--boxes", "0", "12", "--out", str(out)]) == 0
    assert "solved in" in capsys.readouterr().out and out.exists()
    assert main(["solve", "--boxes", "0", "12", "--out", str(out)]) == 0
    assert "loaded" in capsys.readouterr().out
    for argv, message in (
        (["--boxes", "0", "11", "--out", str(out)], "built for rules"),
        (["--rules-joker", "forced", "--boxes", "0", "12", "--out", str(out)], "not joker-forced"),
        (["--boxes", "0", "12", "--out", str(tmp_path)], "is a folder"),
        (["--boxes", "0", "12", "--out", str(out / "t.safetensors")], "its parent is a file"),
        (["--boxes", "0", "12", "--device", "nonsense"], "is not a device"),
    ):
        with pytest.raises(SystemExit) as e:
            main(["solve", *argv])
        err = capsys.readouterr().err
        assert e.value.code == 2 and message in err and "Traceback" not in err


def _damage(path, offset: int = 4096) -> None:
    """Overwrite bytes in the data region of a safetensors file, its header intact."""
    data = bytearray(path.read_bytes())
    start = 8 + int.from_bytes(data[:8], "little") + offset
    data[start : start + 64] = bytes(range(64))
    path.write_bytes(bytes(data))


def test_a_damaged_table_is_solved_again_never_read(tmp_path, capsys, caplog, monkeypatch):
    from yahtzee_lightning.cli import main
    from yahtzee_lightning.solver import cache
    from yahtzee_lightning.solver.table import TableFormatError

    rules = Rules(boxes=(0, 12))
    out = tmp_path / "small.safetensors"
    assert main(["solve", "--boxes", "0", "12", "--out", str(out)]) == 0
    good = OptimalTable.load(out)
    _damage(out)
    with pytest.raises(TableFormatError, match="do not match their checksum"):
        OptimalTable.load(out)
    capsys.readouterr()
    assert main(["solve", "--boxes", "0", "12", "--out", str(out)]) == 0  # solved again, with a warning
    assert "solved in" in capsys.readouterr().out and "do not match their checksum" in caplog.text
    assert torch.allclose(OptimalTable.load(out).values, good.values, rtol=0, atol=1e-9)

    # The cache behind evaluation: a damaged cached table is rebuilt, not used.
    monkeypatch.setenv("YAHTZEE_LIGHTNING_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_MEMORY", {})
    good.save(cache.table_path(rules))
    _damage(cache.table_path(rules), offset=0)
    caplog.clear()
    table = cache.load_or_solve(rules, progress=False)
    assert "solving it again" in caplog.text and torch.equal(table.values, good.values)
    assert torch.equal(OptimalTable.load(cache.table_path(rules)).values, good.values)  # the cache is repaired


@pytest.mark.parametrize(
    ("field", "value", "detail"),
    [
        ("format_version", "X", "format_version: invalid literal"),
        ("rules", "{not json", "rules:"),
        ("rules", None, "rules: missing"),
    ],
)
def test_damaged_table_metadata_is_named_with_its_file_and_solved_again(tmp_path, caplog, field, value, detail):
    from safetensors.torch import load_file, save_file

    from yahtzee_lightning.solver.cache import load_trusted
    from yahtzee_lightning.solver.table import TableFormatError

    rules = Rules(boxes=(0, 12))
    path = tmp_path / "small.safetensors"
    solve(rules, progress=False).save(path)
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata())
    if value is None:
        del meta[field]
    else:
        meta[field] = value
    save_file(load_file(str(path)), str(path), metadata=meta)
    with pytest.raises(TableFormatError) as e:
        OptimalTable.load(path, rules)
    assert str(e.value).startswith(f"{path}: its metadata is damaged ({detail}") and "\n" not in str(e.value)
    assert load_trusted(path, rules) is None and "solving it again" in caplog.text  # rebuilt, never read


def test_keep_dags_match_the_transition_matrix_and_brute_force():
    """The in-place DAGs (their row layout included) against the dense 462 x 252 re-roll matrix
    and a brute-force best keep over the 32 patterns."""
    from yahtzee_lightning.solver.turn import best_keep, kept_dag, reroll_values

    T, dag = tables(), kept_dag()
    after = torch.rand(252, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    in_rows = after[dag.dice_of_row]  # the DAGs take and give dice in their own row order
    K = reroll_values(in_rows, dag)
    assert torch.allclose(K[dag.row_of_kept], T.transition @ after, atol=1e-12)
    best = best_keep(K, dag)[dag.row_of_dice]  # back to dice order
    brute = K[dag.row_of_kept][T.keep_to_kept].amax(1)  # (252, 32, 7) -> max over patterns
    assert torch.equal(best, brute)


@pytest.mark.parametrize("chunk", [64, 100_000])
def test_chunk_size_does_not_change_the_table(chunk):
    rules = Rules(boxes=(0, 5, 8, 11, 12))
    a, b = solve(rules, progress=False, chunk_states=chunk), solve(rules, progress=False)
    assert torch.allclose(a.values, b.values, atol=1e-9, rtol=0)


@pytest.mark.parametrize(
    "rules",
    [
        Rules(boxes=(0, 1, 6, 11, 12)),
        Rules(boxes=(2, 5, 7, 8, 11), joker="forced"),
        Rules(joker="off", boxes=(0, 3, 9, 12)),
    ],
    ids=["free", "forced", "off"],
)
def test_the_flat_layout_a_gpu_uses_gives_the_same_table_to_the_bit(rules, monkeypatch):
    """A GPU solves each layer one state a row, with the open boxes known on the host; the CPU
    groups states by mask and asks the device. Same formulas: the same bits. The host's list of
    open boxes must be the one the device would find (a wrong one would drop or add a box)."""
    from yahtzee_lightning.solver import turn

    seen = []
    real = turn.box_values

    def spy(masks, *args, open_boxes=None, **kwargs):
        found = tuple(b for b in rules.boxes if bool(((masks >> b) & 1 == 0).any()))
        seen.append(open_boxes == found)
        return real(masks, *args, open_boxes=open_boxes, **kwargs)

    monkeypatch.setattr(turn, "box_values", spy)
    grouped, flat = solve(rules, progress=False), solve(rules, progress=False, flat=True, chunk_states=50)
    assert torch.equal(grouped.values, flat.values)
    assert seen and all(seen)


_SOLVE_ONCE = """
import sys, time
import yahtzee_lightning.solver.cache as cache
from yahtzee_lightning.game import Rules

solve = cache.solve
def logged_solve(*args, **kwargs):
    with open(sys.argv[1], "a") as log:
        log.write("solved\\n")
    time.sleep(3)  # long enough for the other process to look for the table meanwhile
    return solve(*args, **kwargs)
cache.solve = logged_solve
print(cache.load_or_solve(Rules(boxes=(0, 5, 12)), progress=False).optimum)
"""


@pytest.mark.slow("three fresh processes solve (one) and load a table: about 9 s")
def test_processes_that_start_at_once_solve_a_table_once(tmp_path):
    """A study's trials (and test workers) start together on an empty cache: one solves, the others
    wait for its file and load it, rather than all solving and writing the same file at once."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "YAHTZEE_LIGHTNING_CACHE": str(tmp_path / "cache"), "PYTHONPATH": root}
    log = tmp_path / "solves.log"
    command = [sys.executable, "-c", _SOLVE_ONCE, str(log)]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert log.read_text().count("solved") == 1 and outs[0] == outs[1]
    assert [p.name for p in (tmp_path / "cache" / "tables").iterdir() if "partial" in p.name] == []


def test_a_table_for_other_rules_or_without_its_tensor_in_the_cache_is_solved_again(tmp_path, caplog, monkeypatch):
    """Under this rules' cache name: another variant's table, or a file whose tensor has another key.
    Neither is read (a traceback in every verb that plays the optimum, before): both are rebuilt."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from yahtzee_lightning.solver import cache
    from yahtzee_lightning.solver.table import TableFormatError

    monkeypatch.setenv("YAHTZEE_LIGHTNING_CACHE", str(tmp_path))
    cache._MEMORY.clear()
    small, other = Rules(boxes=(0, 12)), Rules(boxes=(1, 12))
    path = cache.table_path(small)
    path.parent.mkdir(parents=True)
    solve(other, progress=False).save(path)  # the other variant's table, under this one's name
    with pytest.raises(TableFormatError, match="was built for rules"):
        OptimalTable.load(path, small)
    table = cache.load_or_solve(small, progress=False)
    assert table.rules == small and "solving it again" in caplog.text
    assert OptimalTable.load(path, small).rules == small  # the cache now holds the right one
    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata())
    save_file({"table": load_file(str(path))["values"]}, str(path), metadata=meta)
    with pytest.raises(TableFormatError, match=r"holds \['table'\], not one 'values' tensor"):
        OptimalTable.load(path, small)
    cache._MEMORY.clear()
    caplog.clear()
    assert cache.load_or_solve(small, progress=False).rules == small and "solving it again" in caplog.text
    cache._MEMORY.clear()
