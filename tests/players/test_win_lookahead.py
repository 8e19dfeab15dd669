"""winlookahead:AGENT: the exact rest of each turn against a learned chance of winning the match."""

import json
import shutil

import pytest
import torch

from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
from yahtzee_lightning.evaluation.match import play_matches
from yahtzee_lightning.game import Rules
from yahtzee_lightning.hub import YahtzeeAgent
from yahtzee_lightning.hub.agent import AgentFormatError, agent_files
from yahtzee_lightning.hub.win_value import WIN_DIGEST, save_win_value
from yahtzee_lightning.nn import PolicyValueNet
from yahtzee_lightning.players import LookaheadPlayer, WinLookaheadPlayer
from yahtzee_lightning.players.lookahead import self_play_turns
from yahtzee_lightning.players.win_lookahead import (
    StateValues,
    WinSettings,
    learn_win_value,
    match_key,
    paired_examples,
)
from yahtzee_lightning.resolve import resolve_player
from yahtzee_lightning.solver.endgame import win_values
from yahtzee_lightning.solver.value import TurnValueNet
from yahtzee_lightning.solver.win_value import WinValueNet, finished

SMALL = dict(d_h=16, n_layers=1, head_hidden=16)


def state_value(m, u, f):
    """Any turn-start value whose sums are exact in float64 (ties break alike in both searches)."""
    return ((m & 7) + u + 3 * f).double()


def affine_leaf(rules):
    values = StateValues(state_value, rules)

    def leaf(own, opp, diff):  # an increasing affine function of the points: the solitaire objective
        return 0.25 * (diff + values(*own.unbind(-1))) - 3.0

    return leaf


def play(n, seed, learner, opponent, rules, check, seat="alternate"):
    env = MultiPlayerYahtzeeEnv(n, opponents=opponent, rules=rules, learner_seat=seat, seed=seed)
    td = env.reset()
    for _ in range(3 * rules.n_turns):
        keep, box = learner.act(td)
        check(td, keep, box)
        td.set(K.KEEP, keep)
        td.set(K.BOX, box)
        td = env.step(td)["next"]
    return td


def test_with_an_affine_leaf_of_the_points_it_plays_as_the_solitaire_lookahead():
    """W = a * (lead + V(next)) + b, a > 0: the search maximises the expected points this turn plus V,
    the solitaire look-ahead's objective, so every keep and box is the same (but where the turn
    ends the match: there the leaf is the result)."""
    rules = Rules()
    solitaire = LookaheadPlayer(state_value, rules)
    player = WinLookaheadPlayer(affine_leaf(rules), rules)
    compared = []

    def check(td, keep, box):
        key = match_key(td, rules)
        ends = (rules.n_turns - 1 == (td[K.CARD] != -1).sum(-1)) & finished(key[:, 3:6], rules)
        k, b = player.action_values(td)
        solitaire.prepare(td[K.CARD])  # its value read where this search needs it
        k2, b2 = solitaire.oracle.action_values(td[K.DICE], td[K.ROLL], td[K.CARD])
        lead = key[:, 6:].double()
        assert torch.allclose(k[~ends], (0.25 * (lead + k2) - 3.0)[~ends], rtol=0, atol=1e-9)
        assert torch.allclose(b[~ends], (0.25 * (lead + b2) - 3.0)[~ends], rtol=0, atol=1e-9)
        # the same choices, up to ties within rounding
        k_best = k2.gather(1, keep.unsqueeze(1)).squeeze(1) >= k2.amax(1) - 1e-9
        b_best = b2.gather(1, box.unsqueeze(1)).squeeze(1) >= b2.amax(1) - 1e-9
        assert bool(torch.where(td[K.ROLL] < 2, k_best, b_best)[~ends].all())
        compared.append(int((~ends).sum()))

    play(64, 3, player, solitaire, rules, check)
    assert sum(compared) == 64 * 39 - 32 * 3  # all but the second seat's last turn


def test_on_the_last_turn_against_a_finished_opponent_it_is_the_exact_end_game():
    """Both cards full at the turn's end: the leaf is the result, so the values are endgame.win_values."""
    rules = Rules()

    def never(own, opp, diff):
        raise AssertionError("the leaf was read where the match is over")

    player = WinLookaheadPlayer(never, rules)
    seen = []

    def check(td, keep, box):
        key = match_key(td, rules)
        ends = ((td[K.CARD] == -1).sum(-1) == 1) & finished(key[:, 3:6], rules)
        if bool(ends.any()):
            i = ends.nonzero().squeeze(-1)
            sub = td[i]
            k, b = player.action_values(sub)
            need = sub[K.OPPONENT_SCORES][:, 0] - sub[K.SCORE]
            k2, b2 = win_values(sub[K.DICE], sub[K.ROLL], sub[K.CARD], need, rules)
            assert torch.allclose(k, k2) and torch.equal(b, b2)
            seen.append(len(i))

    play(32, 5, LookaheadPlayer(state_value, rules), LookaheadPlayer(state_value, rules), rules, check, "second")
    assert sum(seen) == 3 * 32  # the three decisions of the second seat's last turn


def test_paired_examples_are_the_matches_two_games_make():
    rules = Rules()
    player = LookaheadPlayer(state_value, rules)
    states, returns = self_play_turns(player, 6, 0, rules)
    own, opp, lead, res = paired_examples(states, returns, 2, 0, rules)
    T = rules.n_turns
    assert len(res) == 2 * 6 * (2 * T - 1)
    finals = returns.view(6, T)[:, 0]
    first = slice(0, 6 * T)  # the first pairing's first seat, game by game
    a_last = own[first].view(6, T, 3)[:, -1]
    assert bool(finished(a_last, rules).all())
    # The first seat's lead after its last turn is its final score minus the second seat's after 12 turns.
    a_res = res[first].view(6, T)[:, 0]
    assert set(a_res.tolist()) <= {0.0, 0.5, 1.0}
    assert float(lead[first].view(6, T)[:, 0].min()) >= 0  # after one turn against an empty card
    assert bool((finals.max() >= lead[first].view(6, T)[:, -1]).all())
    second = slice(6 * T, 6 * (2 * T - 1))
    assert torch.equal(res[second].view(6, T - 1)[:, 0], 1 - a_res)
    assert not bool((finished(own, rules) & finished(opp, rules)).any())


@pytest.fixture
def agent_folder(tmp_path):
    torch.manual_seed(0)
    folder = tmp_path / "agent"
    agent = YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "tiny"})
    agent.turn_value = TurnValueNet(Rules().to_dict(), hidden=8, layers=1)
    agent.save_pretrained(folder)
    return folder


def test_an_agent_without_a_win_value_or_turn_value_is_refused_in_one_line(agent_folder, tmp_path):
    with pytest.raises(ValueError, match=r"carries no win value .*yahtzee-lightning win-value --agent") as e:
        resolve_player(f"winlookahead:{agent_folder}")
    assert "\n" not in str(e.value)
    bare = tmp_path / "bare"
    YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "bare"}).save_pretrained(bare)
    with pytest.raises(ValueError, match="carries no turn-start value") as e:
        resolve_player(f"winlookahead:{bare}")
    assert "\n" not in str(e.value)
    other = WinValueNet(Rules(joker="forced").to_dict(), hidden=4, layers=1)
    save_win_value(agent_folder, other, {"method": "a test"})
    with pytest.raises(ValueError, match="win value of .* was learned under rules") as e:
        resolve_player(f"winlookahead:{agent_folder}")
    assert "\n" not in str(e.value)


def test_a_learned_win_value_round_trips_through_the_folder_with_its_digest(agent_folder, tmp_path):
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    base = agent.player()
    settings = WinSettings(games=24, pairings=2, hidden=8, layers=1, epochs=1, batch_size=256, own_matches=8)
    net, info = learn_win_value(base, resolve_player(f"lookahead:{agent_folder}"), settings, log=lambda _: None)
    assert info["examples"] == 2 * 24 * 25 + 8 * 13 and len(info["held_out_log_loss"]) == 2
    save_win_value(agent_folder, net, info)
    config = json.loads((agent_folder / "config.json").read_text())
    assert config["win_value"][WIN_DIGEST] in (agent_folder / "README.md").read_text()
    assert "win_value.safetensors" in agent_files(agent_folder)
    loaded = YahtzeeAgent.from_pretrained(agent_folder)
    for a, b in zip(loaded.win_value.state_dict().values(), net.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    # saved again elsewhere, the agent carries it on
    copy = loaded.save_pretrained(tmp_path / "copy")
    assert YahtzeeAgent.from_pretrained(copy).win_value is not None
    player = resolve_player(f"winlookahead:{agent_folder}")
    assert player.name == "winlookahead:tiny" and player.matches_only
    result = play_matches(player, "greedy", games=4, seed=0, rules=player.rules)
    assert result["games"] == 4
    # A value file changed after its digest is refused, as the weights would be.
    damaged = tmp_path / "damaged"
    shutil.copytree(agent_folder, damaged)
    from safetensors.torch import load_file, save_file

    state = load_file(damaged / "win_value.safetensors")
    state[next(iter(state))] += 1.0
    meta = {"format": "pt", WIN_DIGEST: config["win_value"][WIN_DIGEST]}
    save_file(state, str(damaged / "win_value.safetensors"), metadata=meta)
    with pytest.raises(AgentFormatError, match="does not match win_value.safetensors"):
        YahtzeeAgent.from_pretrained(damaged)


def test_solitaire_observations_and_more_players_are_refused():
    rules = Rules()
    player = WinLookaheadPlayer(affine_leaf(rules), rules)
    from yahtzee_lightning.env import YahtzeeEnv

    with pytest.raises(ValueError, match="needs a match observation"):
        player.act(YahtzeeEnv(2, seed=0).reset())
    env = MultiPlayerYahtzeeEnv(2, opponents=LookaheadPlayer(state_value, rules), n_players=3, seed=0)
    with pytest.raises(ValueError, match="two-player matches"):
        player.act(env.reset())


def test_the_win_value_verb_writes_into_the_folder_and_refuses_in_one_line(agent_folder, tmp_path, capsys):
    from yahtzee_lightning.cli import main as cli_main

    bare = tmp_path / "bare"
    YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "bare"}).save_pretrained(bare)
    with pytest.raises(SystemExit) as e:
        cli_main(["win-value", "--agent", str(bare), "--games", "4"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "carries no turn-start value" in err and "\n" not in err
    config = tmp_path / "typo.yaml"
    config.write_text("gmaes: 4\n")
    with pytest.raises(SystemExit):
        cli_main(["win-value", "--agent", str(agent_folder), "--config", str(config)])
    assert "unknown settings ['gmaes']" in capsys.readouterr().err
    args = ["--games", "6", "--pairings", "1", "--hidden", "4", "--layers", "1", "--epochs", "1", "--features", "lead"]
    assert cli_main(["win-value", "--agent", str(agent_folder), *args]) == 0
    entry = json.loads((agent_folder / "config.json").read_text())["win_value"]
    assert entry["network"]["features"] == "lead" and entry["command"].startswith("yahtzee-lightning win-value")
    assert resolve_player(f"winlookahead:{agent_folder}").name == "winlookahead:tiny"
