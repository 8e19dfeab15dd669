"""The checks an agent folder's files pass before they are trusted: the weights (and the optional
turn-start value) against their config and their sha256, wherever that is recorded (the files'
names and the agent errors: ``.layout``)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file

from ..digest import VALUE_DIGEST, WEIGHTS_DIGEST, nonfinite, tensors_sha256
from ..solver.value import TurnValueNet
from ..untrusted import UntrustedError, read_json
from .layout import (
    CARD_NAME,
    CONFIG_NAME,
    VALUE_NAME,
    WEIGHTS_NAME,
    WIN_VALUE_NAME,
    AgentFormatError,
)


def verify_weights(
    state: dict[str, torch.Tensor], path: Path, saved: str | None, recorded: str | None, card: str | None
) -> None:
    """Refuse weights that do not match the sha256 written with them (``saved``: the safetensors
    metadata), recorded in ``config.json`` or on the card, or that are not finite. A folder written
    before digests loads with a warning."""
    actual = tensors_sha256(state)
    if saved is not None and saved != actual:
        raise AgentFormatError(f"{path}: the weights do not match their sha256 (the file is damaged)")
    if recorded is not None and recorded != actual:
        raise AgentFormatError(
            f"{path.parent / CONFIG_NAME}: the weights sha256 it records does not match {path.name} (one is damaged)"
        )
    on_card = re.search(rf"{WEIGHTS_DIGEST}: `([0-9a-f]+)`", card or "")
    if on_card and on_card[1] != actual:
        raise AgentFormatError(f"{path.parent / CARD_NAME}: the card's weights sha256 does not match {path.name}")
    if saved is None and recorded is None and on_card is None:
        logging.getLogger(__name__).warning(
            "warning: %s: the weights carry no sha256 (written before digests); loaded unchecked", path
        )
    if bad := nonfinite(state):
        raise AgentFormatError(f"{path}: weights that are not finite (NaN or inf) in {bad[:5]}; refusing to play them")


def check_weights(net: torch.nn.Module, state: dict[str, torch.Tensor], path: str | Path) -> None:
    """Raise ``AgentFormatError`` naming the missing, unexpected and mis-shaped (or mis-typed) tensors."""
    expected = net.state_dict()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    wrong = [
        f"{k}: {str(state[k].dtype)[6:]}{list(state[k].shape)} != {str(v.dtype)[6:]}{list(v.shape)}"
        for k, v in expected.items()
        if k in state and (state[k].shape != v.shape or state[k].dtype != v.dtype)
    ]
    if missing or extra or wrong:
        parts = [
            f"{label} {names[:5]}"
            for label, names in (("missing", missing), ("unexpected", extra), ("wrong shape or dtype", wrong))
            if names
        ]
        raise AgentFormatError(f"{path}: weights do not match the config ({'; '.join(parts)})")


def load_side_net(
    directory: Path, entry: Any, card: str | None, *, key: str, file: str, digest: str, cls: type, what: str
) -> tuple[torch.nn.Module | None, dict]:
    """A network an agent carries beside its weights (``config.json``'s ``key`` entry: ``file``, the
    network ``cls(**network)`` builds, its ``digest``), checked as the weights are: the sha256 in its
    file, in the config and on the card must match it. None where the config names none; ``what``
    names it in the errors."""
    if entry is None:
        return None, {}
    config_path, path, card_path = directory / CONFIG_NAME, directory / file, directory / CARD_NAME
    if not isinstance(entry, dict) or entry.get("file") != file or not isinstance(entry.get("network"), dict):
        raise AgentFormatError(f"{config_path}: {key} must name the file {file!r} and its network")
    if not path.is_file():
        raise AgentFormatError(f"{directory}: missing {file} (config.json names a {what})")
    try:
        net = cls(**entry["network"])
    except (TypeError, ValueError) as e:
        raise AgentFormatError(f"{config_path}: {key} network does not build a {cls.__name__} ({e})") from e
    try:
        with safe_open(str(path), framework="pt") as f:
            saved = (f.metadata() or {}).get(digest)
            state = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is no dict)
    except (SafetensorError, OSError) as e:
        raise AgentFormatError(f"{path}: corrupt safetensors file ({e})") from e
    check_weights(net, state, path)
    actual = tensors_sha256(state)
    on_card = re.search(rf"{digest}: `([0-9a-f]+)`", card or "")
    for where, found in ((path, saved), (config_path, entry.get(digest)), (card_path, on_card and on_card[1])):
        if found is None and where != card_path:
            raise AgentFormatError(f"{where}: the {what} carries no {digest}")
        if found and found != actual:
            raise AgentFormatError(f"{where}: its {digest} does not match {file} (one is damaged)")
    if bad := nonfinite(state):
        raise AgentFormatError(f"{path}: {what} not finite (NaN or inf) in {bad[:5]}; refusing it")
    net.load_state_dict(state)
    return net.eval(), {k: v for k, v in entry.items() if k not in ("file", "network", digest)}


def save_side_net_file(net: torch.nn.Module, directory: Path, file: str, digest: str, what: str) -> None:
    """Write ``net`` as ``file`` in ``directory``, its sha256 (``digest``) in the metadata."""
    state = {k: v.detach().cpu().contiguous() for k, v in net.state_dict().items()}
    if bad := nonfinite(state):
        raise AgentFormatError(f"{directory}: {what} not finite (NaN or inf) in {bad[:5]}; not saved")
    save_file(state, str(directory / file), metadata={"format": "pt", digest: tensors_sha256(state)})


def load_turn_value(directory: Path, entry: Any, card: str | None) -> tuple[TurnValueNet | None, dict]:
    """The turn-start value ``config.json``'s ``turn_value`` entry names (None where there is none)."""
    return load_side_net(
        directory,
        entry,
        card,
        key="turn_value",
        file=VALUE_NAME,
        digest=VALUE_DIGEST,
        cls=TurnValueNet,
        what="turn-start value",
    )


def save_turn_value_file(value: TurnValueNet, directory: Path) -> None:
    """Write ``value`` as ``VALUE_NAME`` in ``directory``, its sha256 in the metadata."""
    save_side_net_file(value, directory, VALUE_NAME, VALUE_DIGEST, "turn-start value")


def agent_files(folder: Path) -> list[str]:
    """The files of the agent in ``folder``: the artefact files (the turn-start value where there is
    one) and the training YAML its config names (nothing else there is part of it, nor pushed or copied)."""
    names = [CONFIG_NAME, WEIGHTS_NAME, CARD_NAME, VALUE_NAME, WIN_VALUE_NAME]
    try:
        yaml_name = (read_json(folder / CONFIG_NAME).get("training") or {}).get("config_file")
    except (OSError, ValueError, AttributeError):
        yaml_name = None
    if isinstance(yaml_name, str) and Path(yaml_name).name == yaml_name and (folder / yaml_name).is_file():
        names.append(yaml_name)
    return [n for n in names if (folder / n).is_file()]


def with_section(card: str | None, heading: str, section: str) -> str:
    """``card`` with the section under ``heading`` (up to the next ``## `` heading) replaced by
    ``section``, or ``section`` added at its end (the section alone where there is no card); the
    rest kept, a blank line before the next heading. A side value's card section is written so."""
    section = section.rstrip("\n") + "\n"
    if card is None:
        return section
    start = card.find(heading)
    if start < 0:
        return card.rstrip("\n") + "\n\n" + section
    end = card.find("\n## ", start + len(heading))
    return card[:start] + section + (card[end:] if end >= 0 else "")


def with_side_files(
    directory: str | Path,
    command: str,
    write: Callable[[Path], None],
    file: str,
    key: str,
    entry: dict[str, Any],
    card: Callable[[str | None], str],
) -> Path:
    """Add (or replace) a side network of the agent folder ``directory`` (the turn-start or win
    value) in one step: ``write(folder)`` writes its ``file``, ``config.json`` gains ``entry`` under
    ``key`` and the card becomes ``card(old card or None)``. The agent's other files are linked
    into a new sibling folder beside them, and the two swap places (``..replace.replacing``):
    a kill at any instant leaves the old agent or the new one, never a value its config does not
    name. Files of the user's in the folder stay (and stay the user's)."""
    from ..manifest import Manifest
    from ..replace import carry, replacing

    directory = Path(directory)

    def read_config() -> dict[str, Any]:
        if not (directory / CONFIG_NAME).is_file():
            raise AgentFormatError(f"{directory}: missing {CONFIG_NAME} (not an agent folder)")
        try:
            return read_json(directory / CONFIG_NAME)
        except UntrustedError as e:
            raise AgentFormatError(str(e)) from None

    read_config()  # refused before anything is written
    with replacing(directory, command) as tmp:
        # Read once this writer holds the folder: another writer's value, finished meanwhile, stays.
        config = read_config()
        card_path = directory / CARD_NAME
        old_card = card_path.read_text(encoding="utf-8") if card_path.is_file() else None
        changed = {file, CONFIG_NAME, CARD_NAME}
        manifest = Manifest.read(directory)
        ours = set(agent_files(directory)) | {name for name in manifest.files if manifest.owns(name)}
        for name in sorted(ours - changed):  # the same files, never written through: links will do
            if (directory / name).is_file():
                carry(directory, tmp, name)
        write(tmp)
        config[key] = entry
        (tmp / CONFIG_NAME).write_text(json.dumps(config, indent=2))
        (tmp / CARD_NAME).write_text(card(old_card), encoding="utf-8")
    return directory
