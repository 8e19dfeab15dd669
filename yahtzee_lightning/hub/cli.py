"""``yahtzee-lightning export`` and ``push``: from a training checkpoint to a shared agent."""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import torch

from ..nn import PolicyValueNet
from .agent import AgentFormatError, YahtzeeAgent


def agent_from_checkpoint(path: str | Path) -> YahtzeeAgent:
    """The network of a Lightning checkpoint (loaded with ``weights_only=True``: no unpickling)."""
    from ..algorithms.base import OnPolicyAlgorithm

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    if "hyper_parameters" not in ckpt or "state_dict" not in ckpt:
        raise AgentFormatError(f"{path}: not a Lightning checkpoint of a yahtzee_lightning algorithm")
    net = PolicyValueNet(**OnPolicyAlgorithm.network_kwargs(ckpt["hyper_parameters"]))
    state = {k.removeprefix("net."): v for k, v in ckpt["state_dict"].items() if k.startswith("net.")}
    missing, unexpected = net.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise AgentFormatError(f"{path}: network weights do not match (missing {missing}, unexpected {unexpected})")
    info = dict(ckpt.get("yahtzee_lightning", {}))
    info.setdefault(
        "games", int(ckpt["state_dict"].get("updates_done", 0)) * ckpt["hyper_parameters"]["games_per_batch"]
    )
    info["hyperparameters"] = {k: v for k, v in ckpt["hyper_parameters"].items() if not k.startswith("_")}
    return YahtzeeAgent(net.eval(), training=info)


def export_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yahtzee-lightning export", description=__doc__)
    parser.add_argument("checkpoint", help="a Lightning .ckpt written by fit")
    parser.add_argument("directory", help="the agent folder to write")
    parser.add_argument("--games", type=int, default=10_000, help="evaluation games for the card (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="the agent's name on its card")
    parser.add_argument("--repo-id", default=None, help="the hub id the card's example should load")
    parser.add_argument("--algorithm", default=None, help="override the algorithm name on the card")
    parser.add_argument("--wall-clock", default=None, help="training wall clock, for the card (e.g. '25 min')")
    parser.add_argument("--config", default=None, help="the training YAML, copied next to the agent")
    args = parser.parse_args(argv)
    agent = agent_from_checkpoint(args.checkpoint)
    t = agent.training
    t["name"] = args.name or Path(args.directory).name
    t.setdefault("hardware", f"{platform.machine()} CPU, {torch.get_num_threads()} threads")
    for key, value in (("algorithm", args.algorithm), ("wall_clock", args.wall_clock), ("repo_id", args.repo_id)):
        if value:
            t[key] = value
    if args.games > 0:
        from ..evaluation import evaluate

        agent.evaluation = evaluate(agent.player(), args.games, args.seed, agent.player().rules, progress=True)
    out = agent.save_pretrained(args.directory)
    if args.config:
        (out / Path(args.config).name).write_text(Path(args.config).read_text())
    print(f"wrote {out}")
    if agent.evaluation:
        print(f"mean score {agent.evaluation['summary']['score']['mean']:.2f} over {args.games} games")
    return 0


def push_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="yahtzee-lightning push", description="upload an agent folder to the Hub")
    parser.add_argument("directory")
    parser.add_argument("--repo-id", required=True)
    parser.add_argument("--private", action="store_true")
    args = parser.parse_args(argv)
    agent = YahtzeeAgent.from_pretrained(args.directory)  # refuse to upload a broken folder
    info = agent.push_to_hub(args.repo_id, private=args.private, directory=Path(args.directory))
    print(f"pushed {args.directory} to {args.repo_id}: {getattr(info, 'commit_url', info)}")
    return 0
