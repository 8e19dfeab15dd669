"""Training and policy-collapse metrics (docs/metrics.md)."""

from __future__ import annotations

import torch


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> float:
    """1 - Var(returns - values) / Var(returns): 1 is a perfect critic, 0 no better than a constant."""
    var = returns.float().var()
    if var <= 0:
        return float("nan")
    return float(1 - (returns.float() - values.float()).var() / var)


def mask_diversity(keeps: torch.Tensor) -> int:
    """How many distinct keep patterns the policy used: few means a collapsing roll policy."""
    return int(torch.unique(keeps).numel())


def top_k_share(actions: torch.Tensor, k: int = 3) -> float:
    """Share of the ``k`` most frequent actions among all taken: near 1 means collapse."""
    if actions.numel() == 0:
        return float("nan")
    counts = torch.bincount(actions.flatten().long())
    return float(counts.topk(min(k, counts.numel())).values.sum() / actions.numel())


def approx_kl(old_log_prob: torch.Tensor, new_log_prob: torch.Tensor) -> float:
    """The low-variance estimator E[(r - 1) - log r] of KL(old || new), r = new/old."""
    log_ratio = new_log_prob - old_log_prob
    return float((log_ratio.exp() - 1 - log_ratio).mean())
