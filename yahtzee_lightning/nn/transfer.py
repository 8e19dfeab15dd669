"""Starting one policy/value network from another's weights: a fine-tune, a transfer to another task."""

from __future__ import annotations

import torch

from .network import PolicyValueNet


def transfer_weights(source: PolicyValueNet, target: PolicyValueNet, reset_value_head: bool = False) -> None:
    """Start ``target`` from ``source``'s weights (a fine-tune, a transfer to another task).

    The two networks must be the same shape (dropout apart: it has no weights, and layers are
    matched by ``PolicyValueNet.layer_key``), except that ``target`` may see more features
    appended after ``source``'s (e.g. the ``two_player`` preset after ``full_game``): their
    first-layer weights start at zero, so ``target`` plays exactly as ``source`` until it learns
    to use them. ``reset_value_head`` zeroes the value head's output layer (the value starts at
    0): for a fine-tune to a reward on another scale (a +1/-1 match result instead of points),
    where the old values would make every advantage wrong.
    """
    old = {source.layer_key(k): v for k, v in source.state_dict().items()}
    new = target.state_dict()
    names = {target.layer_key(k): k for k in new}  # the target's own key of each layer's weight
    src_names, dst_names = source.feature_names, target.feature_names
    widened = dst_names != src_names
    if widened and dst_names[: len(src_names)] != src_names:
        raise ValueError(
            f"the networks see different features: {list(src_names)} and {list(dst_names)} "
            "(the new features may only be appended after the old ones)"
        )
    first = "trunk.0.weight"
    for key, value in old.items():
        if key not in names:
            raise ValueError(f"the networks differ: {key} is only in the source")
        name = names[key]
        if widened and name == first and value.shape[0] == new[name].shape[0]:
            grown = torch.zeros_like(new[name])
            grown[:, : value.shape[1]] = value
            value = grown
        if value.shape != new[name].shape:
            raise ValueError(f"the networks differ in {name}: {tuple(value.shape)} and {tuple(new[name].shape)}")
        new[name] = value
    missing = set(names) - set(old)
    if missing:
        raise ValueError(f"the networks differ: {sorted(missing)} only in the target")
    if reset_value_head:
        last = target.value_head[-1]
        new[f"value_head.{len(target.value_head) - 1}.weight"] = torch.zeros_like(last.weight)
        new[f"value_head.{len(target.value_head) - 1}.bias"] = torch.zeros_like(last.bias)
    target.load_state_dict(new)
