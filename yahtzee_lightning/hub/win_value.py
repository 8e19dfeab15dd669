"""An agent folder's optional win value (``winlookahead:AGENT``): its file, ``config.json`` entry and
card section, and the checks it passes before it is trusted (as the turn-start value's, :mod:`.files`).

``win_value.safetensors`` holds a :class:`..solver.win_value.WinValueNet`; ``config.json``'s
``win_value`` names the file, the network (``WinValueNet(**network)``), its sha256 and how it was
learned. The sha256 is also in the file's metadata and, where the card carries a section on it, on
the card: each must match the tensors, or the folder is refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..digest import nonfinite, tensors_sha256
from ..solver.win_value import WinValueNet
from .files import CARD_NAME, CONFIG_NAME, WIN_VALUE_NAME, AgentFormatError, check_weights

#: The win value's sha256: in its safetensors metadata, config.json and the card.
WIN_DIGEST = "win_value_sha256"
WIN_HEADING = "## Win value (for `winlookahead:`)"


def win_value_entry(net: WinValueNet, info: dict) -> dict[str, Any]:
    """``config.json``'s ``win_value``: its file, network, sha256 and how it was learned."""
    return {"file": WIN_VALUE_NAME, "network": net.config, WIN_DIGEST: tensors_sha256(net.state_dict()), **info}


def save_win_value_file(net: WinValueNet, directory: Path) -> None:
    """Write ``net`` as ``WIN_VALUE_NAME`` in ``directory``, its sha256 in the metadata."""
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    if bad := nonfinite(state):
        raise AgentFormatError(f"{directory}: win value not finite (NaN or inf) in {bad[:5]}; not saved")
    save_file(state, str(directory / WIN_VALUE_NAME), metadata={"format": "pt", WIN_DIGEST: tensors_sha256(state)})


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
    ``win_value`` entry and the card's section (the rest of the card kept)."""
    directory = Path(directory)
    if not (directory / CONFIG_NAME).is_file():
        raise AgentFormatError(f"{directory}: missing {CONFIG_NAME} (not an agent folder)")
    save_win_value_file(net, directory)
    config = json.loads((directory / CONFIG_NAME).read_text())
    config["win_value"] = entry = win_value_entry(net, info)
    (directory / CONFIG_NAME).write_text(json.dumps(config, indent=2))
    card_path = directory / CARD_NAME
    if card_path.is_file():
        card = card_path.read_text(encoding="utf-8")
        start = card.find(WIN_HEADING)
        end = card.find("\n## ", start + len(WIN_HEADING)) if start >= 0 else -1
        if start < 0:
            card = card.rstrip("\n") + "\n\n" + win_value_section(entry)
        else:
            card = card[:start] + win_value_section(entry) + (card[end + 1 :] if end >= 0 else "")
        card_path.write_text(card, encoding="utf-8")
    return directory


def load_win_value(directory: Path, entry: Any, card: str | None) -> tuple[WinValueNet | None, dict]:
    """The win value ``config.json``'s ``win_value`` entry names (None where there is none), checked:
    the sha256 in its file and in the config (and on the card, where it is) must match it."""
    if entry is None:
        return None, {}
    config_path, path = directory / CONFIG_NAME, directory / WIN_VALUE_NAME
    if not isinstance(entry, dict) or entry.get("file") != WIN_VALUE_NAME or not isinstance(entry.get("network"), dict):
        raise AgentFormatError(f"{config_path}: win_value must name the file {WIN_VALUE_NAME!r} and its network")
    if not path.is_file():
        raise AgentFormatError(f"{directory}: missing {WIN_VALUE_NAME} (config.json names a win value)")
    try:
        net = WinValueNet(**entry["network"])
    except (TypeError, ValueError) as e:
        raise AgentFormatError(f"{config_path}: win_value network does not build a WinValueNet ({e})") from e
    try:
        with safe_open(str(path), framework="pt") as f:
            saved = (f.metadata() or {}).get(WIN_DIGEST)
            state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is no dict)
    except (SafetensorError, OSError) as e:
        raise AgentFormatError(f"{path}: corrupt safetensors file ({e})") from e
    check_weights(net, state, path)
    actual = tensors_sha256(state)
    on_card = re.search(rf"{WIN_DIGEST}: `([0-9a-f]+)`", card or "")
    card_path = directory / CARD_NAME
    for where, digest in ((path, saved), (config_path, entry.get(WIN_DIGEST)), (card_path, on_card and on_card[1])):
        if digest is None and where != card_path:
            raise AgentFormatError(f"{where}: the win value carries no {WIN_DIGEST}")
        if digest and digest != actual:
            raise AgentFormatError(f"{where}: its {WIN_DIGEST} does not match {WIN_VALUE_NAME} (one is damaged)")
    if bad := nonfinite(state):
        raise AgentFormatError(f"{path}: win value not finite (NaN or inf) in {bad[:5]}; refusing it")
    net.load_state_dict(state)
    return net.eval(), {k: v for k, v in entry.items() if k not in ("file", "network", WIN_DIGEST)}
