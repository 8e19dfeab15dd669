"""An agent folder's optional win value (``winlookahead:AGENT``): its file, ``config.json`` entry and
card section, and the checks it passes before it is trusted (as the turn-start value's, ``.files``).

``win_value.safetensors`` holds a ``..solver.win_value.WinValueNet``; ``config.json``'s
``win_value`` names the file, the network (``WinValueNet(**network)``), its sha256 and how it was
learned. The sha256 is also in the file's metadata and, where the card carries a section on it, on
the card: each must match the tensors, or the folder is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..digest import tensors_sha256
from ..solver.win_value import WinValueNet
from .files import load_side_net, save_side_net_file, with_section, with_side_files
from .layout import WIN_VALUE_NAME

#: The win value's sha256: in its safetensors metadata, config.json and the card.
WIN_DIGEST = "win_value_sha256"
WIN_HEADING = "## Win value (for `winlookahead:`)"


def win_value_entry(net: WinValueNet, info: dict) -> dict[str, Any]:
    """``config.json``'s ``win_value``: its file, network, sha256 and how it was learned."""
    return {"file": WIN_VALUE_NAME, "network": net.config, WIN_DIGEST: tensors_sha256(net.state_dict()), **info}


def save_win_value_file(net: WinValueNet, directory: Path) -> None:
    """Write ``net`` as ``WIN_VALUE_NAME`` in ``directory``, its sha256 in the metadata."""
    save_side_net_file(net, directory, WIN_VALUE_NAME, WIN_DIGEST, "win value")


def win_value_section(entry: dict) -> str:
    """The card's section on the win value, its sha256 last (checked on load)."""
    settings = entry.get("settings", {})
    return "\n".join(
        [
            WIN_HEADING,
            "",
            f"`{WIN_VALUE_NAME}` holds this agent's chance of winning a two-player match from the end of "
            "its turn, learned from its own play (no solver table and no oracle label in any loss). "
            "`winlookahead:<this folder>` plays every keep and box by the exact expectation over the "
            "rest of the turn of this chance at the turn's end.",
            "",
            f"* Method: {entry.get('method', 'unknown')}",
            f"* Settings: {json.dumps(settings)}",
            f"* Held-out log loss: {entry.get('held_out_log_loss')}",
            *([f"* Command: {entry['command']}"] if "command" in entry else []),
            "",
            f"{WIN_DIGEST}: `{entry[WIN_DIGEST]}` (checked on load)",
            "",
        ]
    )


def save_win_value(directory: str | Path, net: WinValueNet, info: dict) -> Path:
    """Add (or replace) the win value in the agent folder ``directory``: its file, ``config.json``'s
    ``win_value`` entry and the card's section (the rest of the card kept), in one step
    (``.files.with_side_files``)."""
    entry = win_value_entry(net, info)

    def card(old: str | None) -> str:
        return with_section(old, WIN_HEADING, win_value_section(entry))

    write = lambda folder: save_win_value_file(net, folder)  # noqa: E731
    return with_side_files(directory, "win-value", write, WIN_VALUE_NAME, "win_value", entry, card)


def load_win_value(directory: Path, entry: Any, card: str | None) -> tuple[WinValueNet | None, dict]:
    """The win value ``config.json``'s ``win_value`` entry names (None where there is none), checked:
    the sha256 in its file and in the config (and on the card, where it is) must match it."""
    return load_side_net(
        directory,
        entry,
        card,
        key="win_value",
        file=WIN_VALUE_NAME,
        digest=WIN_DIGEST,
        cls=WinValueNet,
        what="win value",
    )
