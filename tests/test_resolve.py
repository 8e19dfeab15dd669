"""Names to players: the built-in names below the hub, agent folders and hub ids above it."""

from pathlib import Path

import pytest

from yahtzee_lightning.evaluation.match import play_matches
from yahtzee_lightning.players import EndgamePlayer, GreedyPlayer, make_player
from yahtzee_lightning.players.agent import AgentPlayer
from yahtzee_lightning.resolve import load_agent, player_factory, resolve_player

AGENT = str(Path(__file__).parents[1] / "checkpoints" / "a2c-128x2")


def test_the_players_know_no_folder_and_say_where_folders_resolve():
    with pytest.raises(ValueError, match="unknown player .*yahtzee_lightning.resolve"):
        make_player(AGENT)


def test_resolve_plays_built_in_names_folders_and_endgame_wrappers():
    assert isinstance(resolve_player("greedy"), GreedyPlayer)
    assert isinstance(resolve_player(AGENT), AgentPlayer)
    wrapped = resolve_player(f"endgame:{AGENT}")
    assert isinstance(wrapped, EndgamePlayer) and isinstance(wrapped.base, AgentPlayer)
    with pytest.raises(ValueError, match="unknown player .genius.*a folder, a hub id nor sb3:PATH"):
        resolve_player("genius")
    make = player_factory("greedy", None, "cpu")
    assert make() is not make()  # a fresh player per seat


def test_matches_take_a_folder_by_name_through_load():
    with pytest.raises(ValueError, match="unknown player"):
        play_matches(GreedyPlayer(), AGENT, games=2, seed=0)
    r = play_matches(GreedyPlayer(), AGENT, games=2, seed=0, load=load_agent)
    assert r["opponent"] == AGENT and r["games"] == 2
