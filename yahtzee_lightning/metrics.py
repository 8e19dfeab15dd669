"""Training and policy-collapse metrics (docs/metrics.md).

Each returns a 0-dim tensor on the input's device, computed without reading anything back to
the host: training reads all of an update's metrics at once (one synchronisation per update).
"""

from __future__ import annotations

import torch


def masked_mean(x: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``where`` holds (NaN where none does), without the
    device-to-host read of boolean indexing."""
    return (x * where).sum() / where.sum()


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """1 - Var(returns - values) / Var(returns): 1 is a perfect critic, 0 no better than a constant.

    NaN when the returns do not vary.
    """
    var = returns.float().var()
    ratio = (returns.float() - values.float()).var() / var
    return torch.where(var > 0, 1 - ratio, torch.nan)


def action_counts(actions: torch.Tensor, n_actions: int, where: torch.Tensor | None = None) -> torch.Tensor:
    """``(n_actions,)``: how often each action was taken (only where ``where`` is true, if given)."""
    weights = torch.ones(actions.shape, device=actions.device) if where is None else where.float()
    counts = torch.zeros(n_actions, device=actions.device)
    return counts.scatter_add_(0, actions.flatten().long(), weights.flatten())


def mask_diversity(counts: torch.Tensor) -> torch.Tensor:
    """How many distinct keep patterns the policy used (from ``action_counts``): few means a
    collapsing roll policy."""
    return (counts > 0).sum()


def top_k_share(counts: torch.Tensor, k: int = 3) -> torch.Tensor:
    """Share of the ``k`` most frequent actions among all taken (from ``action_counts``): near 1
    means collapse; NaN when none was taken."""
    return counts.topk(min(k, counts.numel())).values.sum() / counts.sum()


def approx_kl(old_log_prob: torch.Tensor, new_log_prob: torch.Tensor) -> torch.Tensor:
    """The low-variance estimator E[(r - 1) - log r] of KL(old || new), r = new/old."""
    log_ratio = new_log_prob - old_log_prob
    return (log_ratio.exp() - 1 - log_ratio).mean()


def read_stats(stats: dict[str, torch.Tensor | float]) -> dict[str, float]:
    """Metrics as floats, the tensors among them read from the device in one transfer."""
    tensors = {k: v for k, v in stats.items() if isinstance(v, torch.Tensor)}
    values = torch.stack([v.detach().float().reshape(()) for v in tensors.values()]).tolist() if tensors else []
    read = dict(zip(tensors, values, strict=True))
    return {k: read[k] if k in read else float(v) for k, v in stats.items()}
