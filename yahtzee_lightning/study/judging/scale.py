"""A cell's network and budget against the paper's agent: one reading for the report's first line and
for the verdicts that say "at this scale".

The paper calls its network "600 x 3"; its published code builds that as two 600-unit trunk layers and
one 600-unit hidden layer in each head (``hidden_size: 600, num_hidden: 3``), which is our ``d_h: 600,
n_layers: 2, head_hidden: 600``. Our own labels name the trunk (``128 x 2``: ``d_h`` x ``n_layers``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fit_config import compose


@dataclass(frozen=True, order=True)
class Network:
    width: int  # d_h
    trunk: int  # n_layers
    head: int  # head_hidden: the hidden layer in each policy head (0: none)

    @property
    def depth(self) -> int:
        """Hidden layers from the input to an action, as the paper's code counts them (its ``num_hidden``)."""
        return self.trunk + (1 if self.head else 0)

    def label(self) -> str:
        return "the paper's network" if self == PAPER_NETWORK else f"{self.width} x {self.trunk}"

    def text(self) -> str:
        """The report's words for it: the trunk and the heads' layer."""
        if self == PAPER_NETWORK:
            return f"the paper's network ({PAPER_TEXT})"
        heads = f" with {self.head}-unit head layers" if self.head else ""
        return f"trunk {self.width} x {self.trunk}{heads}"


#: The paper's agent as its code builds it, and the budget of its headline agent (its best A2C).
PAPER_NETWORK, PAPER_GAMES = Network(600, 2, 600), 1_000_000
PAPER_TEXT = "its code's 600 x 3: trunk 600 x 2 and a 600-unit layer in each head"


def network_of(cell: Any) -> Network | None:
    """The cell's network: its base config with its overrides (None where neither names ``d_h``)."""
    base = Path(getattr(cell, "base", "") or "")  # a study run elsewhere: its overrides alone
    config = compose(base.read_text() if base.is_file() else "{}", cell.overrides)
    args = (config.get("model") or {}).get("init_args") or {}
    if "d_h" not in args:
        return None
    return Network(int(args["d_h"]), int(args.get("n_layers", 0)), int(args.get("head_hidden") or 0))


def smaller_network(net: Network) -> bool:
    """Narrower than the paper's, or fewer hidden layers on the way to an action."""
    return net.width < PAPER_NETWORK.width or net.depth < PAPER_NETWORK.depth
