"""The report's statistics over seeds: the t interval, its range, one seed, Welch's test and the claims' verdicts."""

import math

import numpy as np
import pandas as pd
import pytest

from yahtzee_lightning.study.judging.claims import ordering_claims
from yahtzee_lightning.study.judging.context import Series, bounds, stat
from yahtzee_lightning.study.judging.factorial import RESOLVED_NOT
from yahtzee_lightning.study.judging.stats import BOOTSTRAP, against, interval, method_text, t_quantile, welch


def _t_cdf_by_integration(x: float, df: int, steps: int = 200_000) -> float:
    """P(T <= x) for x > 0, integrating Student's density from 0 to x (Simpson's rule) plus the half below 0."""
    norm = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    grid = np.linspace(0.0, x, steps + 1)
    density = norm * (1 + grid**2 / df) ** (-(df + 1) / 2)
    h = x / steps
    simpson = h / 3 * (density[0] + density[-1] + 4 * density[1:-1:2].sum() + 2 * density[2:-1:2].sum())
    return 0.5 + simpson


@pytest.mark.parametrize("df", [1, 2, 4, 9])
def test_the_t_quantile_is_where_the_integrated_density_reaches_97_5_percent(df):
    q = t_quantile(0.975, df)
    assert _t_cdf_by_integration(q, df) == pytest.approx(0.975, abs=1e-7)
    assert q > 1.96  # fewer seeds, wider intervals than the normal's


def test_the_interval_uses_n_minus_1_degrees_of_freedom_and_covers_95_percent():
    rng = np.random.default_rng(0)
    two = interval([180.0, 182.0])
    se = np.std([180.0, 182.0], ddof=1) / math.sqrt(2)
    assert two.high - two.mean == pytest.approx(t_quantile(0.975, 1) * se)
    assert (two.high - two.mean) / se > 12  # 12.7 standard errors with two seeds, not 1.96
    samples = rng.normal(10.0, 3.0, size=(4000, 3))  # three seeds: the interval must hold the mean 95 % of the time
    covered = np.mean([(iv := interval(x)).low <= 10.0 <= iv.high for x in samples])
    assert covered == pytest.approx(0.95, abs=0.015)


def test_the_interval_never_leaves_the_quantity_s_range():
    low_rate = interval([0.0, 0.02], bounds("upper_bonus_rate"))
    assert low_rate.low == 0.0 and 0.0 < low_rate.high <= 1.0 and low_rate.mean == pytest.approx(0.01)
    assert interval([0.99, 1.0], bounds("yahtzee_rate")).high == 1.0
    assert stat(pd.Series([0.5, 3.0]), "box_mean/ones").low == 0.0  # a box never scores below 0
    assert stat(pd.Series([4.0, 5.0]), "box_mean/ones").high == 5.0  # nor above five ones
    assert stat(pd.Series([0.0, 35.0]), "upper_bonus_mean").high == 35.0
    assert stat(pd.Series([3.0, 12.0]), "fill_turn/yahtzee").high == 12.0


def test_one_seed_gives_no_interval_and_says_so():
    one = interval([187.5])
    assert one.n == 1 and not one.has_interval and math.isnan(one.low) and one.errors() == (0.0, 0.0)
    assert one.text() == "187.5"
    assert "one seed has no interval" in method_text({1})
    assert "n - 1 degrees of freedom" in method_text({2, 4}) and "n = 2 / 4" in method_text({2, 4})
    boot = method_text({4}, BOOTSTRAP)  # the aggregates resample seeds: no t interval, no df, in their caption
    assert "95 % stratified bootstrap" in boot and "Student" not in boot and "df" not in boot
    assert not welch([1.0], [2.0, 3.0]).resolved and "no test with one seed" in welch([1.0], [2.0, 3.0]).text()


def test_welch_agrees_with_scipy_and_is_resolved_only_when_its_interval_excludes_0():
    from scipy.stats import ttest_ind

    a, b = [201.0, 202.0, 199.5], [180.0, 181.5, 179.0, 182.0]
    c = welch(a, b)
    assert c.p == pytest.approx(ttest_ind(a, b, equal_var=False).pvalue)
    assert c.resolved and c.low > 0 and "Welch t-test" in c.text() and "3 vs 4 seeds" in c.text()
    close = welch([173.2 - 11, 173.2 + 11], [180.0, 181.0])
    assert close.low < 0 < close.high and not close.resolved
    below = against([187.0, 188.0], 215.4)
    assert below.resolved and below.high < 0 and "one-sample t-test" in below.text()


class _Results:
    """The part of a report's context that ``ordering_claims`` reads: an ablation's cells with their finals."""

    def __init__(self, cells: dict[str, list[float]]) -> None:
        self.cells = cells

    def series(self, ablation):
        rows = {name: pd.DataFrame({"seed": range(len(v)), "mean_score": v}) for name, v in self.cells.items()}
        return [Series(name, ablation, name, pd.DataFrame(), f) for name, f in rows.items()]


def test_a_claim_whose_interval_holds_0_is_not_resolved_at_this_n():
    rows = ordering_claims(_Results({"A2C": [180.0, 181.0], "REINFORCE": [162.0, 184.0], "PPO": [201.0, 202.0]}), "alg")
    verdicts = {row[1].removesuffix(" (ranked after the fact)"): row[3] for row in rows}
    assert verdicts["A2C vs REINFORCE"] == f"exploratory: {RESOLVED_NOT}"  # +7.5 with an interval of about +-70
    assert verdicts["PPO vs A2C"] == "exploratory: **PPO > A2C**"  # pairs chosen after ranking: never confirmatory
    assert set(verdicts) == {"PPO vs A2C", "A2C vs REINFORCE", "PPO vs REINFORCE"}
    assert all("Welch t-test" in row[2] and "2 vs 2 seeds" in row[2] for row in rows)


def test_a_tiny_p_value_is_reported_not_rounded_to_zero():
    from yahtzee_lightning.study.judging.stats import against

    c = against([0.0001, 0.0002, 0.0, 0.0001, 0.0, 0.0003], 0.249)  # six seeds far below a claimed rate
    assert 0 < c.p < 1e-12 and "p = 0)" not in c.text(3)
