"""``yahtzee-lightning demo``: random legal play, cards printed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .args import VerbParser, check_count, check_seed, plain

if TYPE_CHECKING:  # torch loads after parsing, so that --help answers at once
    import torch


def format_card(card: torch.Tensor, yahtzee_bonuses: int, score: int) -> str:
    from ..game import BOX_NAMES

    rows = [f"  {name:<16}{'-' if int(v) < 0 else int(v):>4}" for name, v in zip(BOX_NAMES, card, strict=True)]
    rows.append(f"  {'yahtzee bonuses':<16}{yahtzee_bonuses:>4}")
    rows.append(f"  {'total':<16}{score:>4}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = VerbParser(prog="yahtzee-lightning demo", description=plain(__doc__))
    parser.add_argument("--games", type=int, default=3, help="games to play and print (default: 3)")
    parser.add_argument("--seed", type=int, default=0, help="the same seed plays the same dice (default: 0)")
    args = parser.parse_args(argv)
    check_count(parser, "--games", args.games, 1, 1000, "every game's card is printed")
    check_seed(args.seed, parser)
    from ..env import keys as K
    from ..env.games import Games  # the env's games without TorchRL: the demo starts as fast as torch
    from ..players.reference import RandomPlayer

    games, player = Games(args.games, seed=args.seed), RandomPlayer(seed=args.seed)
    final = games.reset()
    for _ in range(3 * games.rules.n_turns):
        final, _, _ = games.step(*player.act(final))
    for i in range(args.games):
        print(f"game {i}:")
        print(format_card(final[K.CARD][i], int(final[K.YAHTZEE_BONUSES][i]), int(final[K.SCORE][i])))
    scores = final[K.SCORE].float()
    print(f"random legal play over {args.games} games: mean {scores.mean():.1f}")
    return 0
