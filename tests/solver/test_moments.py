"""Score moments of the optimal player: exact mean, spread and skew of the points to come."""

import pytest
import torch
from safetensors.torch import save_file

from yahtzee_lightning.evaluation import play_games
from yahtzee_lightning.game import Rules, card_total
from yahtzee_lightning.players import OptimalPlayer
from yahtzee_lightning.solver import load_or_solve
from yahtzee_lightning.solver.cache import _MOMENTS, load_or_solve_moments, moments_path
from yahtzee_lightning.solver.moments import solve_moments

FIVE = Rules(joker="forced", boxes=(0, 5, 8, 11, 12))  # five boxes: solved in well under a second


def test_moments_match_the_optimal_players_simulated_scores():
    """Mean, variance and third central moment at the start agree with 20,000 simulated games of
    the optimal player within 4 standard errors of each sample statistic."""
    table = load_or_solve(FIVE, progress=False)
    m2, m3 = solve_moments(table, progress=False)[:, table.start_mask, 0, 0].tolist()
    mean = table.optimum
    exact = (mean, m2 - mean**2, m3 - 3 * mean * m2 + 2 * mean**3)
    raw = play_games(OptimalPlayer(FIVE, table), 20_000, 0, FIVE, batch_size=10_000)
    scores = card_total(raw["card"], raw["bonuses"]).double()
    n, centred = len(scores), scores - scores.mean()
    samples = (scores, centred**2, centred**3)
    for value, sample in zip(exact, samples, strict=True):
        se = float(sample.std()) / n**0.5
        assert abs(float(sample.mean()) - value) < 4 * se, (float(sample.mean()), value, se)
    assert exact[2] > 0  # the score is skewed to the right (big boxes are rare)


def test_moments_are_cached_on_disk_with_the_tables_checksum():
    table = load_or_solve(FIVE, progress=False)
    first = load_or_solve_moments(table, progress=False)
    assert moments_path(FIVE).exists() and first.shape == (2, *table.values.shape)
    _MOMENTS.clear()
    torch.testing.assert_close(load_or_solve_moments(table, progress=False), first)  # read back
    _MOMENTS.clear()  # moments saved for another table (another checksum) are solved again, not read
    save_file({"moments": torch.zeros_like(first)}, str(moments_path(FIVE)), metadata={"table_sha256": "0" * 64})
    torch.testing.assert_close(load_or_solve_moments(table, progress=False), first)
    _MOMENTS.clear()


def test_damaged_moments_are_solved_again_and_old_ones_load_with_a_warning(caplog):
    from safetensors import safe_open

    table = load_or_solve(FIVE, progress=False)
    _MOMENTS.clear()
    first = load_or_solve_moments(table, progress=False)
    path = moments_path(FIVE)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    assert "sha256" in meta
    damaged = first.clone()
    damaged[0, table.start_mask, 0, 0] *= 1.5  # a moved spread: what winseeking would act on
    save_file({"moments": damaged.cpu()}, str(path), metadata=meta)  # table checksum and digest intact
    _MOMENTS.clear()
    with caplog.at_level("WARNING"):
        torch.testing.assert_close(load_or_solve_moments(table, progress=False), first)
    assert "do not match their sha256" in caplog.text
    old = {k: v for k, v in meta.items() if k != "sha256"}  # as written before digests
    save_file({"moments": first.cpu()}, str(path), metadata=old)
    _MOMENTS.clear()
    caplog.clear()
    with caplog.at_level("WARNING"):
        torch.testing.assert_close(load_or_solve_moments(table, progress=False), first)
    assert "carry no sha256" in caplog.text
    _MOMENTS.clear()


def test_a_folder_where_the_table_cache_should_be_is_one_line(tmp_path, monkeypatch, capsys):
    from yahtzee_lightning.cli import main
    from yahtzee_lightning.solver.cache import table_path

    monkeypatch.setenv("YAHTZEE_LIGHTNING_CACHE", str(tmp_path))
    rules = Rules(boxes=(0, 5, 8, 11, 12))
    table_path(rules).mkdir(parents=True)
    boxes = [str(b) for b in rules.boxes]
    for argv in (
        ["evaluate", "--agent", "greedy", "--games", "2"],
        ["advise", "--dice", "1", "2", "3", "4", "5", "--roll", "0"],
    ):
        try:
            code = main([*argv, "--boxes", *boxes])
        except SystemExit as e:
            code = e.code
        err = capsys.readouterr().err
        assert code == 2 and "the table cache is a folder" in err and "Traceback" not in err, err


def test_the_flat_layout_a_gpu_uses_gives_the_same_moments_to_the_bit(monkeypatch):
    """The moments solve the table's own layout: one state a row on a GPU, each chunk's open boxes
    known on the host (checked against what the device would find), the same bits as the grouped
    layout the CPU uses."""
    from yahtzee_lightning.solver import moments as moments_module

    table = load_or_solve(FIVE, progress=False)
    seen = []
    real = moments_module.box_values

    def spy(masks, *args, open_boxes=None, **kwargs):
        seen.append(open_boxes == tuple(b for b in FIVE.boxes if bool(((masks >> b) & 1 == 0).any())))
        return real(masks, *args, open_boxes=open_boxes, **kwargs)

    monkeypatch.setattr(moments_module, "box_values", spy)
    grouped = solve_moments(table, progress=False)
    flat = solve_moments(table, progress=False, flat=True, chunk_states=7)
    assert torch.equal(grouped, flat)
    assert seen and all(seen)


def test_moments_refuse_a_table_whose_means_they_cannot_reproduce():
    """The check that the moves followed are the table's: a table edited in one state is named."""
    table = load_or_solve(FIVE, progress=False)
    edited = type(table)(table.values.clone(), table.rules)
    edited.values[table.start_mask, 0, 0] += 1.0
    with pytest.raises(AssertionError, match="differ from the optimal table"):
        solve_moments(edited, progress=False)
