"""The report's statistics over seeds, computed in one place: a mean's interval and two cells' comparison.

A study has few seeds a cell (2 to 5), so the normal multiplier (1.96) would be far too small:
with ``n`` seeds a mean's 95 % interval is ``mean +- t(0.975, n - 1) * SD / sqrt(n)``, Student's
t with ``n - 1`` degrees of freedom (12.71 for two seeds, 2.78 for five). It is cut where the
quantity ends (a score below 0, a rate outside 0-100 %). One seed gives no interval at all. Two
cells are compared by Welch's t-test over their seeds (unequal variances, Welch-Satterthwaite
degrees of freedom); a difference whose interval holds 0 is "not resolved at this n".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache

import numpy as np

LEVEL = 0.95
METHOD = "Student's t interval with n - 1 degrees of freedom over seeds"
#: ``method_text``'s ``what`` for intervals that resample the seeds instead (``bootstrap``).
BOOTSTRAP = "stratified bootstrap"


@cache
def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(q, df))


def _finite(values: Iterable[float]) -> np.ndarray:
    x = np.asarray(list(values), dtype=float)
    return x[np.isfinite(x)]


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` seeds and its interval (``low``/``high`` NaN where there is none: n < 2)."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def has_interval(self) -> bool:
        return self.n > 1

    def errors(self) -> tuple[float, float]:
        """Distances below and above the mean, for error bars (0 where there is no interval)."""
        if not self.has_interval:
            return 0.0, 0.0
        return self.mean - self.low, self.high - self.mean

    def text(self, scale: float = 1, digits: int = 1) -> str:
        """``mean [low, high]``; the mean alone with one seed; ``-`` without data."""
        if math.isnan(self.mean):
            return "-"
        m = f"{self.mean * scale:.{digits}f}"
        return f"{m} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]" if self.has_interval else m


def interval(
    values: Iterable[float], bounds: tuple[float, float] = (-math.inf, math.inf), level: float = LEVEL
) -> Interval:
    """The mean of ``values`` (one per seed) with its t interval (``n - 1`` df), cut to ``bounds``."""
    x = _finite(values)
    n = len(x)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = float(x.mean())
    if n == 1:
        return Interval(mean, math.nan, math.nan, 1)
    half = t_quantile(0.5 + level / 2, n - 1) * float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, max(mean - half, bounds[0]), min(mean + half, bounds[1]), n)


@dataclass(frozen=True)
class Comparison:
    """A test of a difference over seeds: its size, interval and p, the test's name and the n."""

    effect: float
    low: float
    high: float
    p: float
    n: str  # "2 vs 2 seeds", "2 seeds"
    df: float
    test: str

    @property
    def resolved(self) -> bool:
        """Whether the difference's interval excludes 0 (never with one seed on a side: no interval)."""
        return not math.isnan(self.low) and not self.low <= 0 <= self.high

    def text(self, digits: int = 1) -> str:
        if math.isnan(self.low):
            return f"{self.effect:+.{digits}f} (n = {self.n}: no test with one seed)"
        return (
            f"{self.effect:+.{digits}f} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] "
            f"({self.test}, n = {self.n}, {self.df:.1f} df, p = {self.p:.2g})"
        )


def _compare(effect: float, se: float, df: float, n: str, test: str, level: float) -> Comparison:
    if se == 0:  # every seed alike: the difference is exact
        return Comparison(effect, effect, effect, float(effect == 0), n, math.inf, test)
    half = t_quantile(0.5 + level / 2, df) * se
    p = 2 * _t_sf(abs(effect) / se, df)  # the upper tail itself: 1 - cdf rounds a tiny p to 0
    return Comparison(effect, effect - half, effect + half, p, n, float(df), test)


def welch(a: Iterable[float], b: Iterable[float], level: float = LEVEL) -> Comparison:
    """Welch's t-test of ``mean(a) - mean(b)`` over seeds (unequal variances), with its interval."""
    x, y = _finite(a), _finite(b)
    effect = float(x.mean() - y.mean()) if len(x) and len(y) else math.nan
    n, test = f"{len(x)} vs {len(y)} seeds", "Welch t-test"
    if len(x) < 2 or len(y) < 2:
        return Comparison(effect, math.nan, math.nan, math.nan, n, math.nan, test)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1)) if vx + vy else math.inf
    return _compare(effect, math.sqrt(vx + vy), df, n, test, level)


def against(values: Iterable[float], reference: float, level: float = LEVEL) -> Comparison:
    """One-sample t-test of ``mean(values) - reference`` over seeds (``n - 1`` df), with its interval."""
    x = _finite(values)
    effect = float(x.mean() - reference) if len(x) else math.nan
    n, test = f"{len(x)} seeds", "one-sample t-test"
    if len(x) < 2:
        return Comparison(effect, math.nan, math.nan, math.nan, n, math.nan, test)
    return _compare(effect, float(x.std(ddof=1)) / math.sqrt(len(x)), len(x) - 1, n, test, level)


def _t_sf(x: float, df: float) -> float:
    from scipy.stats import t

    return float(t.sf(x, df))


def method_text(ns: Iterable[int], what: str = "") -> str:
    """The caption's account of the intervals: the method, the n, and what happens with one seed."""
    ns = sorted(set(ns))
    seeds = " / ".join(map(str, ns)) or "0"
    if what == BOOTSTRAP:
        text = f"n = {seeds} seeds a cell; intervals: 95 % {BOOTSTRAP} over the seeds (percentile)"
        return text + ("; a cell with one seed has no interval" if 1 in ns else "")
    text = f"mean over n = {seeds} seeds a cell"
    if any(n > 1 for n in ns):
        dfs = " / ".join(str(n - 1) for n in ns if n > 1)
        text += f"; {what or 'bands and bars'}: 95 % {METHOD} ({dfs} df)"
        text += ", cut at the quantity's range (scores and points >= 0, rates within 0-100 %)"
    if 1 in ns:
        text += "; a cell with one seed has no interval"
    return text


def paired(values: Iterable[float], references: Iterable[float], level: float = LEVEL) -> Comparison:
    """``mean(values - references)`` over seeds, each seed against a reference on its own games (a
    one-sample t-test of the per-seed differences, ``n - 1`` df); pairs with a missing side are dropped."""
    x, y = np.asarray(list(values), dtype=float), np.asarray(list(references), dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    c = against(x[keep] - y[keep], 0.0, level)
    return Comparison(c.effect, c.low, c.high, c.p, c.n.replace("seeds", "seeds, paired"), c.df, "paired t-test")


def contrast(groups: list[Iterable[float]], coefs: list[float], level: float = LEVEL) -> Comparison:
    """A contrast ``sum(c_j * mean_j)`` of cell means (a main effect, an interaction, a trend), its
    interval and p by Welch-Satterthwaite: each cell's variance its own, as in ``welch``."""
    used = [(c, _finite(g)) for c, g in zip(coefs, groups, strict=True) if c]
    n = " / ".join(str(len(x)) for _, x in used) + " seeds"
    test = "contrast of cell means, Welch-Satterthwaite df"
    if any(len(x) < 2 for _, x in used):
        effect = float(sum(c * x.mean() for c, x in used)) if all(len(x) for _, x in used) else math.nan
        return Comparison(effect, math.nan, math.nan, math.nan, n, math.nan, test)
    effect = float(sum(c * x.mean() for c, x in used))
    parts = [(c * c * x.var(ddof=1) / len(x), len(x)) for c, x in used]
    var = sum(v for v, _ in parts)
    denom = sum(v * v / (k - 1) for v, k in parts)
    return _compare(effect, math.sqrt(var), var * var / denom if denom else math.inf, n, test, level)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (in their order; NaN stays NaN): the
    family-wise error rate held at the level across all of them."""
    p = np.asarray(pvalues, dtype=float)
    ok = np.flatnonzero(np.isfinite(p))
    adjusted = np.full(len(p), math.nan)
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def iqm(values: Iterable[float]) -> float:
    """The interquartile mean: the mean of the middle half (25 % trimmed from each end), as rliable's."""
    from scipy.stats import trim_mean

    x = _finite(values)
    return float(trim_mean(x, 0.25)) if len(x) else math.nan


BOOTSTRAP_REPS = 2000


def bootstrap(
    func: Callable[..., float],
    *samples: Iterable[float],
    reps: int = BOOTSTRAP_REPS,
    level: float = LEVEL,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``func`` of the samples with its stratified bootstrap percentile interval: each sample (an
    algorithm's seeds, a stratum) resampled with replacement on its own, as rliable does over runs
    within each task. Returns (estimate, low, high); NaN ends with fewer than 2 values in a sample."""
    xs = [_finite(s) for s in samples]
    estimate = float(func(*xs)) if all(len(x) for x in xs) else math.nan
    if any(len(x) < 2 for x in xs):
        return estimate, math.nan, math.nan
    rng = np.random.default_rng(seed)
    draws = np.array([func(*(x[rng.integers(0, len(x), len(x))] for x in xs)) for _ in range(reps)], dtype=float)
    low, high = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return estimate, float(low), float(high)


def probability_of_improvement(x: Iterable[float], y: Iterable[float]) -> float:
    """P(X > Y) + P(X = Y) / 2 for a run of X and a run of Y drawn at random (the Mann-Whitney U over
    n * m; rliable's probability of improvement on one task)."""
    a, b = _finite(x), _finite(y)
    if not len(a) or not len(b):
        return math.nan
    diff = a[:, None] - b[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def performance_profile(values: Iterable[float], taus: np.ndarray) -> np.ndarray:
    """The share of runs scoring above each threshold ``tau`` (rliable's run-score distribution)."""
    x = _finite(values)
    return (x[None, :] > np.asarray(taus, dtype=float)[:, None]).mean(1) if len(x) else np.full(len(taus), math.nan)


def spread(a: Iterable[float], b: Iterable[float], level: float = LEVEL) -> Comparison:
    """Whether ``a``'s seeds spread more than ``b``'s: the difference of their SDs, its stratified
    bootstrap interval, and the Brown-Forsythe test of equal spread (Levene's, about the medians)."""
    from scipy.stats import levene

    x, y = _finite(a), _finite(b)
    n, test = f"{len(x)} vs {len(y)} seeds", "Brown-Forsythe test; SD difference, bootstrap interval"
    if len(x) < 3 or len(y) < 3:  # with 2 seeds both lie equally far from their median: no test of spread
        effect = float(x.std(ddof=1) - y.std(ddof=1)) if len(x) > 1 and len(y) > 1 else math.nan
        return Comparison(effect, math.nan, math.nan, math.nan, n, math.nan, test)
    effect, low, high = bootstrap(lambda u, v: u.std(ddof=1) - v.std(ddof=1), x, y, level=level)
    p = float(levene(x, y, center="median").pvalue)
    return Comparison(effect, low, high, p if math.isfinite(p) else 1.0, n, float(len(x) + len(y) - 2), test)
