"""A training checkpoint as a shareable agent: the network of a Lightning checkpoint of our
algorithms, read without unpickling, with the training facts its card tells (``export``'s library;
the study reads its runs' agents through it too)."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hub.agent import YahtzeeAgent


#: Where the network lives in a Lightning checkpoint of our algorithms: ``self.net`` of the module.
NET_PREFIX = "net."


def agent_from_checkpoint(
    path: str | Path, member: str | None = None, *, algorithms: Mapping[str, type]
) -> YahtzeeAgent:
    """The network of a Lightning checkpoint (loaded with ``weights_only=True``: no unpickling).

    A small adapter over the checkpoint layout: the module's ``hyper_parameters`` give the network's
    constructor arguments, ``state_dict`` entries under ``net.`` its weights, and the
    ``yahtzee_lightning`` entry (written by ``on_save_checkpoint``) the training facts for the card.
    An ensemble's checkpoint holds every member (under ``members.K.``): ``member`` picks one, by
    index or ``best`` (the best last evaluation), and the card says which and how it was chosen.
    ``algorithms`` maps the algorithm the checkpoint names to its class
    (``yahtzee_lightning.algorithms.ALGORITHMS``): its ``network_kwargs`` and ``complete_agent``;
    one not there (a user's own) is read as the base class reads it.
    """
    import torch

    from ..hub.agent import AgentFormatError, YahtzeeAgent, check_weights
    from ..nn import PolicyValueNet

    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"{path} is a folder, not a checkpoint file")
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    from .resume import checkpoint_problem
    from .settings import Settings

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise  # weights_only refused what it read: the caller says so, never unpickling it
    except Exception as e:  # truncated, garbage, not a zip: one line naming the file, never a traceback
        raise AgentFormatError(
            f"{path}: does not load as a checkpoint ({type(e).__name__}: damaged or truncated?)"
        ) from None
    if not isinstance(ckpt, dict) or "hyper_parameters" not in ckpt or "state_dict" not in ckpt:
        raise AgentFormatError(f"{path}: not a Lightning checkpoint of a yahtzee_lightning algorithm")
    if problem := checkpoint_problem(ckpt, path):
        raise AgentFormatError(f"{path}: {problem}")
    hparams, info = ckpt["hyper_parameters"], dict(ckpt.get("yahtzee_lightning", {}))
    algorithm = info.get("algorithm", "this algorithm")
    cls = algorithms.get(algorithm)  # its own network_kwargs; a user's algorithm: the base class's (Settings')
    if not (isinstance(cls, type) and issubclass(cls, Settings)):
        cls = Settings
    try:
        net = PolicyValueNet(**cls.network_kwargs(hparams))
    except (TypeError, ValueError) as e:
        raise AgentFormatError(f"{path}: {algorithm}'s hyperparameters do not build a PolicyValueNet ({e})") from e
    prefix = NET_PREFIX
    if member is not None and "members" not in info:
        raise AgentFormatError(f"--member {member}: {path} is a single run, not an ensemble")
    if "members" in info:
        k, info["member"] = choose_member(info["members"], member, path)
        hparams = {**hparams, **info.pop("members")[k]["settings"]}
        prefix = f"members.{k}."
    state = {k.removeprefix(prefix): v for k, v in ckpt["state_dict"].items() if k.startswith(prefix)}
    try:
        check_weights(net, state, path)
    except AgentFormatError as e:
        raise AgentFormatError(f"{e} -- is {algorithm}'s network a PolicyValueNet?") from None
    net.load_state_dict(state)
    info.setdefault("games", int(ckpt["state_dict"].get("updates_done", 0)) * hparams["games_per_batch"])
    info["hyperparameters"] = {k: v for k, v in hparams.items() if not k.startswith("_")}
    agent = YahtzeeAgent(net.eval(), training=info)
    cls.complete_agent(agent, hparams)
    return agent


def carried_config_of(path: str | Path) -> tuple[str, str] | None:
    """The training YAML a checkpoint of ``fit`` carries (file name, text), or None (an older one)."""
    import torch

    from .training_config import carried_config

    return carried_config(torch.load(path, map_location="cpu", weights_only=True))


def choose_member(members: list[dict], member: str | None, path: Path) -> tuple[int, str]:
    """The index of the asked ensemble member (``k`` or ``best``), and how the card tells it."""
    from ..hub.agent import AgentFormatError

    n = len(members)
    if member is None:
        raise AgentFormatError(f"{path} holds an ensemble of {n} members: choose one with --member 0..{n - 1} or best")
    if member == "best":
        scores = [m.get("last_eval_score") for m in members]
        if all(s is None for s in scores):
            raise AgentFormatError(f"--member best: no member of {path} has been evaluated yet; choose one by index")
        k = max(range(n), key=lambda i: -float("inf") if scores[i] is None else scores[i])
        told = ", ".join("-" if s is None else f"{s:.2f}" for s in scores)
        return k, f"{k} of {n}, the best last evaluation (mean score per member: {told})"
    if not member.isdigit() or int(member) >= n:
        raise AgentFormatError(f"--member {member}: {path} has members 0..{n - 1} (or: best)")
    return int(member), f"{member} of {n}, chosen by index"
