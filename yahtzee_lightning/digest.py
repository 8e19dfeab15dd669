"""Digests of the files we write and later trust, so that a damaged one is refused, never used.

A zip or safetensors file whose tensor bytes were flipped still loads: only a digest of the
content, written with it and checked on load, tells. Tensors are digested by name, dtype, shape
and raw bytes (the same state gives the same digest however it is stored); JSON records by their
canonical text. ``nonfinite`` names the floating tensors holding NaN or infinity: weights like
that are refused at load, never played or trained.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: The key under which a digest is stored: in safetensors metadata, config.json, a checkpoint, a JSON record.
DIGEST_KEY = "sha256"
#: An agent's weights' sha256 (``tensors_sha256``): in config.json, the safetensors metadata and the card.
WEIGHTS_DIGEST = "weights_sha256"
#: An agent's turn-start value's sha256 (``lookahead:``): its safetensors metadata, config.json, the card.
VALUE_DIGEST = "turn_value_sha256"


class DigestError(ValueError):
    """A file whose content does not match the digest written with it (damaged, or edited by hand)."""


def _update(h: Any, name: str, value: Any) -> None:
    import torch  # here, not at the top: the verbs that only read JSON records (pull, a study's
    # report) need no torch, whose import is most of their start-up

    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"{name}|{str(t.dtype)}|{list(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, Mapping):
        for k in sorted(value, key=str):
            _update(h, f"{name}/{k}", value[k])
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _update(h, f"{name}/{i}", v)


def _update_state(h: Any, name: str, value: Any) -> None:
    """As ``_update``, plain values too (an optimiser's step count and learning rate, a loop's counters)."""
    import torch

    if isinstance(value, torch.Tensor | Mapping | list | tuple):
        if isinstance(value, Mapping):
            for k in sorted(value, key=str):
                _update_state(h, f"{name}/{k}", value[k])
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                _update_state(h, f"{name}/{i}", v)
        else:
            _update(h, name, value)
    else:
        h.update(f"{name}={type(value).__name__}:{value!r}|".encode())


def state_sha256(state: Any) -> str:
    """The sha256 of a saved training state (optimiser, schedule, loops, callbacks): its tensors as
    ``tensors_sha256`` digests them, and its plain values (numbers, strings) by type and value."""
    h = hashlib.sha256()
    _update_state(h, "", state)
    return h.hexdigest()


def tensors_sha256(tensors: Any) -> str:
    """The sha256 of every tensor in ``tensors`` (a mapping, nested mappings and lists: by path)."""
    h = hashlib.sha256()
    _update(h, "", tensors)
    return h.hexdigest()


def record_sha256(record: Mapping[str, Any]) -> str:
    """The sha256 of a JSON record's canonical text, its own ``sha256`` entry left out."""
    body = {k: v for k, v in record.items() if k != DIGEST_KEY}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def nonfinite(tensors: Mapping[str, torch.Tensor]) -> list[str]:
    """The names of the floating tensors that hold a NaN or an infinity."""
    import torch

    return [k for k, v in tensors.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
