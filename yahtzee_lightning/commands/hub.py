"""``yahtzee-lightning export``, ``push`` and ``pull``: from a training checkpoint to a shared agent and back."""

from __future__ import annotations

import argparse
import pickle
import shutil
from pathlib import Path

from .args import VerbParser


def export_main(argv: list[str] | None = None, training: dict | None = None) -> int:
    """``export``; ``training``: facts added to the agent's training record (the expert-iteration
    loop's stages, drawn as a table on the card)."""
    parser = VerbParser(
        prog="yahtzee-lightning export", description="turn a Lightning checkpoint into a shareable agent folder"
    )
    parser.add_argument("checkpoint", help="a Lightning .ckpt written by fit")
    parser.add_argument("directory", help="the agent folder to write")
    parser.add_argument(
        "--games",
        type=int,
        default=10_000,
        help="evaluation games for the card (0: none); an agent that carries a turn-start value "
        "(expert iteration's) gets its look-ahead measured on the same games beside it",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the evaluation games (default: 0)")
    parser.add_argument("--name", default=None, help="the agent's name on its card (default: the folder's name)")
    parser.add_argument("--repo-id", default=None, help="the hub id the card's example should load")
    parser.add_argument("--algorithm", default=None, help="override the algorithm name on the card")
    parser.add_argument("--wall-clock", default=None, help="training wall clock, for the card (e.g. '25 min')")
    parser.add_argument("--hardware", default=None, help="training hardware, for the card (default: this machine)")
    parser.add_argument(
        "--config", default=None, help="the training YAML to copy next to the agent (default: the checkpoint's)"
    )
    parser.add_argument("--command", default=None, help="the training command, for the card")
    parser.add_argument("--member", default=None, help="an ensemble's member to export: its index, or best")
    parser.add_argument("--force", action="store_true", help="replace an agent folder already there, as a whole")
    args = parser.parse_args(argv)
    from ..manifest import FolderBusy
    from ..replace import replacing as writing
    from .args import MAX_GAMES, WHY_GAMES, check_count, check_seed

    check_count(parser, "--games", args.games, 0, MAX_GAMES, WHY_GAMES)
    from ..algorithms import ALGORITHMS
    from ..hub.agent import AgentError
    from ..loop.export import agent_from_checkpoint, carried_config_of
    from ..machine import describe_machine

    check_seed(args.seed, parser)
    check_folder_target(Path(args.directory), parser, args.force)
    try:
        agent = agent_from_checkpoint(args.checkpoint, args.member, algorithms=ALGORITHMS)
    except (AgentError, FileNotFoundError) as e:
        parser.error(str(e))
    except pickle.UnpicklingError as e:  # weights_only refused what it read: never fall back to full unpickling
        detail = str(e).split("WeightsUnpickler error:")[-1].split("Check the documentation")[0].strip()
        what = "damaged, not a checkpoint, or holds objects that only full unpickling could load"
        parser.error(f"{args.checkpoint}: {what}; refusing ({detail})")
    carried = None if args.config else carried_config_of(args.checkpoint)  # the run's own YAML, as fit saved it
    t = agent.training
    t.update(training or {})
    t["name"] = args.name or Path(args.directory).resolve().name
    t["hardware"] = args.hardware or t.get("hardware") or describe_machine()
    for key, value in (
        ("algorithm", args.algorithm),
        ("wall_clock", args.wall_clock),
        ("command", args.command and f"`{args.command}`"),
        ("repo_id", args.repo_id),
        ("config_file", Path(args.config).name if args.config else carried and carried[0]),
    ):
        if value:
            t[key] = value
    if args.games > 0:
        from ..env.features import sees_opponents

        player = agent.player()
        if sees_opponents(agent.net.feature_names):  # a two-player agent: its card shows matches
            from ..evaluation.match import play_matches

            matches = play_matches(player, "optimal", args.games, args.seed, player.rules, progress=True)
            agent.evaluation = {"matches": matches}
        else:
            from ..evaluation import evaluate

            agent.evaluation = evaluate(player, args.games, args.seed, player.rules, progress=True)
            if agent.turn_value is not None:  # its look-ahead beside it, on the same games
                from ..evaluation.protocol import lookahead_comparison
                from ..players.lookahead import lookahead_player

                search = lambda: lookahead_player(player, t["name"])  # noqa: E731
                summary = agent.evaluation["summary"]  # the network's, on these games: not played again
                agent.turn_value_info["evaluation"] = lookahead_comparison(
                    player, search, args.games, args.seed, network=summary
                )
    from ..hub.agent import CARD_NAME, CONFIG_NAME, WEIGHTS_NAME

    names = [CONFIG_NAME, WEIGHTS_NAME, CARD_NAME] + ([Path(args.config).name] if args.config else [])
    names += [carried[0]] if carried else []
    check_clashes(Path(args.directory), names, parser)

    def recheck() -> None:  # under the folder's lock: another writer may have written it since
        check_folder_target(Path(args.directory), parser, args.force)
        check_clashes(Path(args.directory), names, parser)

    try:
        with writing(Path(args.directory), "yahtzee-lightning export", recheck) as out:
            agent.save_pretrained(out)
            if args.config:
                shutil.copyfile(args.config, out / Path(args.config).name)
            elif carried:
                (out / carried[0]).write_text(carried[1])
    except OSError as e:  # a full disk, a file-size limit: one line, and the folder as it was
        parser.error(f"{args.directory}: could not be written ({e.strerror or type(e).__name__}); nothing replaced")
    except FolderBusy as e:
        parser.error(str(e))
    print(f"wrote {args.directory}")
    if agent.evaluation and "matches" in agent.evaluation:
        m = agent.evaluation["matches"]
        win, se = 100 * m["win"]["rate"], 100 * m["win"]["se"]
        print(f"win rate {win:.2f}% ± {se:.2f} in {args.games} matches against optimal")
    elif agent.evaluation:
        print(f"mean score {agent.evaluation['summary']['score']['mean']:.2f} over {args.games} games")
    return 0


def push_main(argv: list[str] | None = None) -> int:
    parser = VerbParser(prog="yahtzee-lightning push", description="upload an agent folder to the Hub")
    parser.add_argument("directory", help="an agent folder (written by export)")
    parser.add_argument("--repo-id", required=True, help="user/name on the Hub; created if missing")
    parser.add_argument("--private", action="store_true", help="create the repo private")
    args = parser.parse_args(argv)
    directory = Path(args.directory)
    if not directory.is_dir():
        parser.error(f"{directory} is not a folder")
    from ..hub.agent import AgentError, YahtzeeAgent
    from ..hub.download import hub_errors, hub_failure

    try:
        agent = YahtzeeAgent.load(directory)  # refuse to upload a broken folder
    except AgentError as e:
        parser.error(str(e))
    try:
        info = agent.push_to_hub(args.repo_id, private=args.private, directory=directory)
    except hub_errors() as e:
        parser.error(hub_failure(args.repo_id, e))
    print(f"pushed {directory} to {args.repo_id}: {info.commit_url}")
    return 0


def pull_main(argv: list[str] | None = None) -> int:
    parser = VerbParser(prog="yahtzee-lightning pull", description="download an agent from the Hub")
    parser.add_argument(
        "repo_id", help="user/name on the Hub, or a shipped agent's name (a copy of your own to change)"
    )
    parser.add_argument("directory", help="the agent folder to write")
    parser.add_argument("--revision", default=None, help="branch, tag or commit (default: main)")
    parser.add_argument("--force", action="store_true", help="replace an agent folder already there, as a whole")
    args = parser.parse_args(argv)
    from ..hub.download import hub_errors, hub_failure, resolve_folder
    from ..hub.layout import AgentError
    from ..manifest import FolderBusy
    from ..replace import replacing as writing

    out = Path(args.directory)
    check_folder_target(out, parser, args.force)
    try:
        source = resolve_folder(args.repo_id, revision=args.revision, hub_only=True)
        from ..hub.agent import YahtzeeAgent, agent_files  # torch: once there is something to load

        YahtzeeAgent.load(source)  # check before copying
    except AgentError as e:
        parser.error(str(e))
    except hub_errors() as e:
        parser.error(hub_failure(args.repo_id, e))
    names = agent_files(source)
    check_clashes(out, names, parser)

    def recheck() -> None:  # under the folder's lock: another writer may have written it since
        check_folder_target(out, parser, args.force)
        check_clashes(out, names, parser)

    try:
        with writing(out, "yahtzee-lightning pull", recheck) as tmp:
            for name in names:
                shutil.copyfile(source / name, tmp / name)  # the cache holds symlinks: copy the content
    except OSError as e:
        parser.error(f"{out}: could not be written ({e.strerror or type(e).__name__}); nothing replaced")
    except FolderBusy as e:
        parser.error(str(e))
    print(f"wrote {out}")
    return 0


def check_folder_target(path: Path, parser: argparse.ArgumentParser, force: bool = False) -> None:
    """A folder to write an agent to: new, empty, or (with ``force``) one that holds an agent of
    ours, whose files (its manifest's) are replaced. A folder holding anything else is refused,
    ``force`` or not; so is a link (the folder it points to would be written)."""
    if path.is_symlink():
        parser.error(f"{path} is a symbolic link; give the folder itself or a new one (nothing written)")
    if path.exists() and not path.is_dir():
        parser.error(f"{path} exists and is not a folder")
    if any(p.is_file() for p in path.parents):
        parser.error(f"{path}: a parent of it is a file")
    if not path.is_dir() or not any(path.iterdir()):
        return
    from ..hub.agent import is_agent_folder

    if not is_agent_folder(path):
        names = sorted(p.name for p in path.iterdir())[:5]
        parser.error(f"{path} is not an agent folder and not empty ({names}); choose a new or empty folder")
    if not force:
        parser.error(f"{path} holds an agent already; add --force to replace its files (any others stay)")


def check_clashes(path: Path, names: list[str], parser: argparse.ArgumentParser) -> None:
    """Refuse, before anything is written, to overwrite a file of ``names`` in ``path`` that its
    manifest does not prove ours: the user's, or one edited since. A folder written before manifests
    has its three artefact files replaced (nothing else)."""
    from ..hub.agent import CARD_NAME, CONFIG_NAME, WEIGHTS_NAME
    from ..manifest import MANIFEST, Manifest

    if not path.is_dir():
        return
    manifest = Manifest.read(path)
    old = not manifest.files and not (path / MANIFEST).exists()

    def ours(n: str) -> bool:
        p = path / n
        if p.is_symlink() or (p.exists() and not p.is_file()):
            return False
        return not p.exists() or manifest.owns(n) or (old and n in (CONFIG_NAME, WEIGHTS_NAME, CARD_NAME))

    clash = [n for n in names if not ours(n)]
    if clash:
        parser.error(
            f"{path}: {', '.join(clash)} would be overwritten but was not written by yahtzee-lightning (or was "
            "changed since); move it away first (nothing written)"
        )
