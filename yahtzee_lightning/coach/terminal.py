"""The terminal game: reads choices from an input stream, writes the game and the advice to an output stream."""

from __future__ import annotations

from typing import TextIO

from ..game import BOX_NAMES
from ..game.rules import N_ROLLS
from .advice import format_choices, keep_pattern, parse_box
from .game import CoachedGame, summary, verdict

HELP = (
    "  keep: type the dice to keep ('66 4'), 'none' to re-roll all, or a box name to score now\n"
    "  box: a name or an unambiguous start ('sixes', '6', 'full', 'fh', 'lar', 'chance')\n"
    "  '?' shows the optimum's ranked choices, 'card' the cards, 'quit' leaves"
)


class Quit(Exception):
    """The person asked to leave."""


def format_cards(game: CoachedGame) -> str:
    """Both cards side by side (open boxes as '-'), boxes out of play left out."""
    agent = game.agent_card
    width = max(12, len(game.agent.name) + 2) if agent is not None else 0  # a long name keeps a gap after 'you'
    head = f"  {'box':<16}{'you':>6}" + (f"{game.agent.name:>{width}}" if agent is not None else "")
    rows = [head]
    for b in game.rules.boxes:
        mine = "-" if int(game.card[b]) < 0 else str(int(game.card[b]))
        row = f"  {BOX_NAMES[b]:<16}{mine:>6}"
        if agent is not None:
            row += f"{'-' if int(agent[b]) < 0 else str(int(agent[b])):>{width}}"
        rows.append(row)
    total = f"  {'total':<16}{game.total:>6}" + (f"{game.agent_total:>{width}}" if agent is not None else "")
    return "\n".join([*rows, total])


def _ask(prompt: str, inp: TextIO, out: TextIO) -> str:
    out.write(prompt)
    out.flush()
    line = inp.readline()
    if not line:  # end of input
        raise EOFError
    if not inp.isatty():  # a script or a pipe: echo it, so the transcript reads like a session
        out.write(line if line.endswith("\n") else line + "\n")
    word = line.strip()
    if word.lower() in ("q", "quit", "exit"):
        raise Quit
    return word


def _turn_header(game: CoachedGame) -> str:
    n = int((game.card >= 0).sum()) - len(game.rules.boxes_out_of_play) + 1
    return f"\n--- turn {n} of {game.rules.n_turns} --- your score {game.total}" + (
        f", {game.agent.name} {game.agent_total}" if game.agent is not None else ""
    )


def play(game: CoachedGame, inp: TextIO, out: TextIO) -> CoachedGame:
    """Play ``game`` to its end (or until the input ends or the person quits: ``EOFError``/``Quit``)."""
    out.write(f"Yahtzee ({game.rules.tag()}): you" + (f" against {game.agent.name}" if game.agent else "") + ".\n")
    out.write(HELP + "\n")
    header = ""
    while not game.over:
        if _turn_header(game) != header:
            header = _turn_header(game)
            out.write(header + "\n")
        dice = game.dice
        rolling = game.roll < N_ROLLS - 1
        prompt = f"roll {game.roll + 1}: dice {' '.join(map(str, dice))}  " + ("keep? " if rolling else "box? ")
        word = _ask(prompt, inp, out)
        if word == "?":
            out.write(format_choices(game.advice(), limit=8) + "\n")
            continue
        if word.lower() == "card":
            out.write(format_cards(game) + "\n")
            continue
        if word.lower() in ("help", "h"):
            out.write(HELP + "\n")
            continue
        try:
            typed_dice = all(c.isdigit() or c in " ," for c in word) or word.lower() in ("all", "none", "-")
            is_box = not rolling or not typed_dice  # while rolling, a box name scores now
            made = game.score(parse_box(word)) if is_box else game.keep(keep_pattern(word, dice))
        except ValueError as e:
            out.write(f"  {e}\n  (type '?' for the ranked choices, 'help' for how to type them)\n")
            continue
        for d in made:
            out.write("  " + verdict(d) + "\n")
    out.write("\nGame over.\n" + format_cards(game) + "\n")
    out.write("\n".join(summary(game)) + "\n")
    return game
