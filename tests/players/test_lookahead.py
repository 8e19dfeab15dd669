"""lookahead:AGENT: exact search over the rest of each turn against a learned turn-start value."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from yahtzee_lightning.cli import main as cli_main
from yahtzee_lightning.commands.coach import advise_main
from yahtzee_lightning.commands.turn_value import read_config
from yahtzee_lightning.digest import VALUE_DIGEST
from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.evaluation import evaluate
from yahtzee_lightning.game import Rules
from yahtzee_lightning.hub import YahtzeeAgent
from yahtzee_lightning.hub.agent import VALUE_NAME, AgentFormatError, agent_files, is_agent_folder
from yahtzee_lightning.nn import PolicyValueNet
from yahtzee_lightning.players import LookaheadPlayer, OptimalPlayer
from yahtzee_lightning.players.lookahead import (
    ValueSettings,
    backup_error,
    learn_turn_value,
    self_play_turns,
    successor_states,
    with_successors,
)
from yahtzee_lightning.resolve import resolve_player
from yahtzee_lightning.solver import turn_state
from yahtzee_lightning.solver.value import TurnValueNet, td_targets, value_table

SMALL = dict(d_h=16, n_layers=1, head_hidden=16)
TINY = ValueSettings(games=40, hidden=8, layers=1, epochs=1, batch_size=256, td_rounds=1, td_epochs=1)


def _exact_value(table):
    return lambda m, u, f: table.values[m, u, f]


def test_with_the_exact_table_it_plays_exactly_as_the_optimal_player(default_table):
    """The search is the optimal player's, so the exact values in place of the learned ones give
    the optimal player's every action, on the positions the optimal player reaches."""
    rules = default_table.rules
    optimal, lookahead = OptimalPlayer(rules, default_table), LookaheadPlayer(_exact_value(default_table), rules)
    env = YahtzeeEnv(300, rules=rules, seed=11)
    td = env.reset()
    for _ in range(3 * rules.n_turns):
        (keep, box), (keep2, box2) = optimal.act(td), lookahead.act(td)
        decides_keep = td[K.ROLL] < 2
        assert torch.equal(keep[decides_keep], keep2[decides_keep])
        assert torch.equal(box[~decides_keep], box2[~decides_keep])
        td["action", "keep"], td["action", "box"] = keep, box
        td = env.step(td)["next"]


def test_one_game_reads_the_value_at_a_few_hundred_states_only():
    calls = []

    def value(m, u, f):
        calls.append(len(m))
        return (m & 7).double() + u  # any function of the state

    player = LookaheadPlayer(value, Rules())
    evaluate(player, games=1, seed=0, rules=Rules(), with_optimal=False, regret=False)
    assert 13 <= sum(calls) == int(player.value.known.sum()) < 1000  # each state read once
    m, u, f = player.value.known.nonzero().unbind(-1)
    assert torch.equal(player.value.values[m, u, f], (m & 7).double() + u)


def test_the_exact_table_is_its_own_one_turn_backup(default_table):
    """td_targets is the solver's turn: the exact values are a fixed point of it."""
    states = turn_state(YahtzeeEnv(64, seed=3).reset()[K.CARD], default_table.rules)
    mid, _ = self_play_turns(OptimalPlayer(table=default_table), 8, 5, default_table.rules)
    states = torch.cat([states, mid])
    m, u, f = states.unbind(-1)
    backed = td_targets(default_table.values, states, default_table.rules)
    assert torch.allclose(backed, default_table.values[m, u, f], atol=1e-9)


def test_value_table_puts_finished_cards_at_zero_and_the_net_elsewhere():
    rules = Rules(boxes=[0, 5, 12])
    net = TurnValueNet(rules.to_dict(), hidden=4, layers=1)
    with torch.no_grad():
        net.mlp[-1].bias.fill_(1.0)  # a nonzero network everywhere
    table = value_table(net, rules)
    finished = sum(1 << b for b in rules.boxes)  # every box in play filled, whatever the others
    assert float(table[finished, 10, 0]) == 0.0 and float(table[finished | (1 << 3), 10, 1]) == 0.0
    assert float(table[finished - (1 << 12), 10, 1]) != 0.0  # chance still open
    start = sum(1 << b for b in rules.boxes_out_of_play)
    m, u, f = torch.tensor([start]), torch.tensor([0]), torch.tensor([0])
    assert float(table[start, 0, 0]) == pytest.approx(float(net(m, u, f).detach()), rel=1e-6)


def test_successor_states_are_one_box_on():
    rules = Rules()
    # Only ones (box 0) and the Yahtzee box (11) open, upper sum 60.
    mask = (1 << 13) - 1 - (1 << 0) - (1 << 11)
    nxt = successor_states(torch.tensor([[mask, 60, 0]]), rules)
    expected = {(mask | 1, min(63, 60 + k), 0) for k in range(6)} | {(mask | 1 << 11, 60, f) for f in (0, 1)}
    assert {tuple(s) for s in nxt.tolist()} == expected


def test_the_stopping_rule_keeps_the_round_closest_to_its_own_backups_on_held_out_games():
    """td_keep 'best' returns the value of lowest held-out error to its own backups, not the last;
    the error is measured on the turn starts of the held-out games (and one box after them)."""
    torch.manual_seed(0)
    player = YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "tiny"}).player()
    # A learning rate this large makes the rounds jump about: here the middle round is the best one.
    settings = ValueSettings(games=40, hidden=8, layers=1, epochs=1, batch_size=256, lr=0.1, td_rounds=2, td_epochs=1)
    best, kept = learn_turn_value(player, replace(settings, td_holdout=0.25, td_keep="best"), log=lambda _: None)
    last, info = learn_turn_value(player, replace(settings, td_holdout=0.25), log=lambda _: None)
    errors = kept["td_residual"]
    assert len(errors) == 3 and errors == info["td_residual"]  # the same rounds, whatever is kept
    assert kept["kept_round"] == min(range(3), key=errors.__getitem__) == 1 and "kept_round" not in info
    assert kept["turn_starts"] == 30 * 13 and kept["held_out_turn_starts"] == 10 * 13
    held = with_successors(self_play_turns(player, 40, 0, player.rules)[0][30 * 13 :], player.rules)
    assert backup_error(value_table(best, player.rules), held, player.rules) == pytest.approx(errors[1], rel=1e-6)
    assert backup_error(value_table(last, player.rules), held, player.rules) == pytest.approx(errors[2], rel=1e-6)
    with pytest.raises(ValueError, match="td_keep 'best' measures on held-out games"):
        ValueSettings(games=40, td_keep="best")
    with pytest.raises(ValueError, match="td_keep must be one of"):
        ValueSettings(td_keep="first")


@pytest.fixture
def agent_folder(tmp_path):
    torch.manual_seed(0)
    folder = tmp_path / "agent"
    YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "tiny"}).save_pretrained(folder)
    return folder


def test_a_learned_value_is_saved_checked_loaded_and_searched(agent_folder, monkeypatch, capsys):
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    weights = (agent_folder / "model.safetensors").read_bytes()
    value, info = learn_turn_value(agent.player(), TINY, log=lambda _: None)
    assert info["turn_starts"] == 40 * 13 and len(info["td_mse"]) == 1
    agent.turn_value, agent.turn_value_info = value, info
    agent.save_turn_value(agent_folder)
    assert (agent_folder / "model.safetensors").read_bytes() == weights  # the weights untouched
    config = json.loads((agent_folder / "config.json").read_text())
    card = (agent_folder / "README.md").read_text()
    assert config["turn_value"]["file"] == VALUE_NAME and config["turn_value"][VALUE_DIGEST] in card
    loaded = YahtzeeAgent.from_pretrained(agent_folder)
    for a, b in zip(loaded.turn_value.state_dict().values(), value.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    # The look-ahead never reads the exact table.
    import yahtzee_lightning.players.reference as reference
    import yahtzee_lightning.solver.cache as cache

    def refuse(*args, **kwargs):
        raise AssertionError("the exact table was read")

    monkeypatch.setattr(cache, "load_or_solve", refuse)
    monkeypatch.setattr(reference, "load_or_solve", refuse)
    player = resolve_player(f"lookahead:{agent_folder}")
    assert player.name == "lookahead:tiny"
    result = evaluate(player, games=6, seed=0, rules=player.rules, with_optimal=False, regret=False)
    assert result["summary"]["score"]["mean"] > 0
    # advise ranks by the agent's own values: its best keep is the look-ahead's keep.
    dice = ["6", "6", "4", "2", "1"]
    assert advise_main(["--agent", f"lookahead:{agent_folder}", "--dice", *dice, "--roll", "1", "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    td = YahtzeeEnv(1, seed=0).reset()
    td[K.DICE], td[K.ROLL] = torch.tensor([[1, 2, 4, 6, 6]]), torch.tensor([1])
    keep_values, _ = player.oracle.action_values(td[K.DICE], td[K.ROLL], td[K.CARD])
    assert ranked[0]["value"] == pytest.approx(float(keep_values.max()))
    assert advise_main(["--agent", "greedy", "--dice", *dice, "--roll", "1"]) == 2
    assert "only a look-ahead player" in capsys.readouterr().err
    # push and pull carry it: it is one of the agent's files, and the folder is still an agent's.
    assert VALUE_NAME in agent_files(agent_folder) and is_agent_folder(agent_folder)
    # Saving the value again replaces its card section instead of adding one.
    agent.save_turn_value(agent_folder)
    assert (agent_folder / "README.md").read_text().count("## Turn-start value") == 1


def test_an_agent_saved_with_a_value_comes_back_with_it_and_says_so(tmp_path):
    """save_pretrained -> from_pretrained of a fresh folder: the value is the same to the bit, the
    config and the card say the agent carries one, and a value file edited after its digest, or a
    card whose digest differs, is refused as the weights would be."""
    torch.manual_seed(0)
    value = TurnValueNet(Rules().to_dict(), hidden=4, layers=1)
    info = {"method": "a test", "td_residual": [2.0, 1.0], "kept_round": 1}
    agent = YahtzeeAgent(PolicyValueNet(**SMALL), {"name": "carrier"}, turn_value=value, turn_value_info=info)
    folder = agent.save_pretrained(tmp_path / "carrier")
    loaded = YahtzeeAgent.from_pretrained(folder)
    for a, b in zip(loaded.turn_value.state_dict().values(), value.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert loaded.turn_value_info == info and loaded.player().turn_value is loaded.turn_value
    entry = json.loads((folder / "config.json").read_text())["turn_value"]
    assert entry["file"] == VALUE_NAME and entry["network"] == value.config
    assert "## Turn-start value" in loaded.card and entry[VALUE_DIGEST] in loaded.card
    assert resolve_player(f"lookahead:{folder}").name == "lookahead:carrier"
    from safetensors.torch import load_file, save_file

    damaged = tmp_path / "damaged"
    shutil.copytree(folder, damaged)
    state = load_file(damaged / VALUE_NAME)
    state["mlp.0.bias"] = state["mlp.0.bias"] + 1  # the same shapes, the old digest in its metadata
    save_file(state, str(damaged / VALUE_NAME), metadata={"format": "pt", VALUE_DIGEST: entry[VALUE_DIGEST]})
    with pytest.raises(AgentFormatError, match=f"{VALUE_NAME}: its {VALUE_DIGEST} does not match"):
        YahtzeeAgent.from_pretrained(damaged)
    card = tmp_path / "card"
    shutil.copytree(folder, card)
    (card / "README.md").write_text(loaded.card.replace(entry[VALUE_DIGEST], "1" * 64))
    with pytest.raises(AgentFormatError, match=f"README.md: its {VALUE_DIGEST} does not match"):
        YahtzeeAgent.from_pretrained(card)


def test_a_damaged_value_is_refused(agent_folder, tmp_path):
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    agent.turn_value, _ = learn_turn_value(agent.player(), TINY, log=lambda _: None)
    agent.save_turn_value(agent_folder)
    edited = tmp_path / "edited"
    shutil.copytree(agent_folder, edited)
    config = json.loads((edited / "config.json").read_text())
    config["turn_value"][VALUE_DIGEST] = "0" * 64
    (edited / "config.json").write_text(json.dumps(config))
    with pytest.raises(AgentFormatError, match="config.json: its turn_value_sha256 does not match"):
        YahtzeeAgent.from_pretrained(edited)
    (agent_folder / VALUE_NAME).unlink()
    with pytest.raises(AgentFormatError, match=f"missing {VALUE_NAME}"):
        YahtzeeAgent.from_pretrained(agent_folder)


def test_lookahead_refuses_an_agent_without_a_value_or_with_one_for_other_rules(agent_folder):
    with pytest.raises(ValueError, match=r"lookahead:.*agent'? carries no turn-start value") as e:
        resolve_player(f"lookahead:{agent_folder}")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="'optimal' carries no turn-start value"):
        resolve_player("lookahead:optimal")
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    agent.turn_value = TurnValueNet(Rules(joker="forced").to_dict(), hidden=4, layers=1)
    agent.save_turn_value(agent_folder)
    with pytest.raises(ValueError, match="learned under rules joker-forced_bonus-on, but the agent plays joker-free"):
        resolve_player(f"lookahead:{agent_folder}")


def test_the_turn_value_verb_writes_the_value_into_the_folder(agent_folder, tmp_path, capsys):
    config = tmp_path / "value.yaml"
    config.write_text(f"agent: {agent_folder}\ngames: 30\nhidden: 8\nlayers: 1\nepochs: 1\nbatch_size: 128\n")
    flags = ["--td-rounds", "1", "--td-epochs", "1", "--diagnostic-games", "3", "--evaluate", "3"]
    assert cli_main(["turn-value", "--config", str(config), *flags]) == 0
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    info = agent.turn_value_info
    assert agent.turn_value is not None and info["settings"]["td_rounds"] == 1 and info["settings"]["games"] == 30
    assert "turn-value --config" in info["command"] and info["diagnostic"]["optimum"] == pytest.approx(254.59, abs=0.01)
    assert len(info["evaluation"]["lookahead"]["by_turn"]) == 13
    assert "| regret in turn 13 |" in agent.card and "Against the exact table" in agent.card
    assert "* Machine: " in agent.card and "load average" in info["machine"]
    config.write_text(f"agent: {agent_folder}\ngamez: 30\n")
    with pytest.raises(SystemExit):
        cli_main(["turn-value", "--config", str(config)])
    assert "unknown settings ['gamez']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main(["turn-value", "--agent", str(agent_folder), "--games", "0"])
    assert "games must be >= 1, got 0" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[2].glob("conf/turn_value/*.yaml")), ids=lambda p: p.name)
def test_every_turn_value_config_reads(path):
    """A shipped turn-value config has only known settings, valid ones, and names an agent folder."""
    import argparse

    values = read_config(str(path), argparse.ArgumentParser())
    agent = Path(__file__).parents[2] / values.pop("agent")
    assert (agent / "config.json").is_file()
    values.pop("diagnostic_games", None), values.pop("evaluate", None)
    if games_from := values.pop("games_from", None):
        assert (Path(__file__).parents[2] / games_from / "config.json").is_file()
    ValueSettings(**values)


def test_the_self_play_games_can_sample_the_agents_policy_for_more_varied_turn_starts(agent_folder, capsys):
    """play: sample draws the self-play actions from the policy (other turn starts than its most likely
    actions give, the same ones for the same seed); the network alone is still judged greedy; a play
    that is neither is refused."""
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    mode, _ = self_play_turns(agent.player(greedy=True), 30, 0, agent.player().rules)
    sample, _ = self_play_turns(agent.player(greedy=False), 30, 0, agent.player().rules)
    again, _ = self_play_turns(agent.player(greedy=False), 30, 0, agent.player().rules)
    assert not torch.equal(mode, sample) and torch.equal(sample, again)
    flags = ["--games", "30", "--hidden", "8", "--layers", "1", "--epochs", "1", "--td-rounds", "0", "--no-diagnostic"]
    assert cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--play", "sample"]) == 0
    assert YahtzeeAgent.from_pretrained(agent_folder).turn_value_info["settings"]["play"] == "sample"
    with pytest.raises(SystemExit):
        cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--play", "greedy"])
    assert "play must be one of ('mode', 'sample'), got 'greedy'" in capsys.readouterr().err


class Killed(Exception):
    """Stands for a kill between two TD rounds."""


def test_a_killed_value_learning_resumes_from_its_last_round_to_the_same_value(tmp_path):
    """The value is saved after every TD round; the same call again goes on from there (the same
    games drawn again from their seed) and ends with the weights of a run never killed; the rounds
    file of other settings is refused, and a finished learning leaves none behind."""
    torch.manual_seed(0)
    player = YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "tiny"}).player()
    settings = replace(TINY, td_rounds=3, td_holdout=0.25, td_keep="best")
    whole, whole_info = learn_turn_value(player, settings, log=lambda _: None)
    rounds = tmp_path / "rounds.safetensors"

    def kill_after_round_two(line):
        if line.startswith("TD round 2:"):
            raise Killed

    with pytest.raises(Killed):
        learn_turn_value(player, settings, log=kill_after_round_two, rounds_file=rounds)
    assert rounds.is_file()
    with pytest.raises(ValueError, match="rounds of other settings"):
        learn_turn_value(player, replace(settings, seed=1), log=lambda _: None, rounds_file=rounds)
    with pytest.raises(ValueError, match="rounds of other settings"):  # another agent's games
        learn_turn_value(player, settings, log=lambda _: None, rounds_file=rounds, games_of="another")
    lines = []
    resumed, info = learn_turn_value(player, settings, log=lines.append, rounds_file=rounds)
    assert f"resuming after TD round 2 from {rounds}" in lines and not any(x.startswith("TD round 1:") for x in lines)
    for a, b in zip(resumed.state_dict().values(), whole.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert info["td_residual"] == whole_info["td_residual"] and info["kept_round"] == whole_info["kept_round"]
    assert info["td_mse"] == whole_info["td_mse"] and not rounds.exists()


@pytest.mark.slow("learns a value, then warm-starts it through the verb: about 30 s")
def test_a_warm_start_goes_on_from_the_agents_own_value(agent_folder, capsys):
    """warm_start begins the TD rounds at the value the agent carries (no returns regression): with no
    rounds it gives that value back, and its first held-out error is that value's own; a value of
    another width is refused naming both, and an agent without a value in one line with the command."""
    torch.manual_seed(0)
    player = YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "tiny"}).player()
    start, _ = learn_turn_value(player, TINY, log=lambda _: None)
    warm = replace(TINY, warm_start=True, td_rounds=0, td_holdout=0.25, seed=3)
    value, info = learn_turn_value(player, warm, log=lambda _: None, init=start)
    for a, b in zip(value.state_dict().values(), start.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    held = with_successors(self_play_turns(player, 40, 3, player.rules)[0][30 * 13 :], player.rules)
    assert info["td_residual"][0] == pytest.approx(backup_error(value_table(start, player.rules), held, player.rules))
    assert "returns_mse" not in info and info["method"].startswith("the agent's own value (warm start)")
    with pytest.raises(ValueError, match=r"the agent's value is 8 x 1 .* these settings learn 16 x 1"):
        learn_turn_value(player, replace(warm, hidden=16), log=lambda _: None, init=start)
    with pytest.raises(ValueError, match="warm_start must be true or false"):
        ValueSettings(warm_start="yes")
    flags = ["--games", "30", "--epochs", "1", "--td-rounds", "0", "--no-diagnostic"]
    with pytest.raises(SystemExit):
        cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--warm-start"])
    err = capsys.readouterr().err
    assert "carries no turn-start value to start from" in err and f"turn-value --agent {agent_folder}" in err
    assert cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--hidden", "8", "--layers", "1"]) == 0
    assert cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--warm-start", "--td-rounds", "1"]) == 0
    info = YahtzeeAgent.from_pretrained(agent_folder).turn_value_info
    assert info["settings"]["warm_start"] and (info["settings"]["hidden"], info["settings"]["layers"]) == (8, 1)
    # The games of another agent (the one this agent was taught from), written into this one.
    teacher = agent_folder.parent / "teacher"
    torch.manual_seed(1)
    YahtzeeAgent(PolicyValueNet(**SMALL), training={"name": "teacher"}).save_pretrained(teacher)
    own = cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--warm-start", "--td-rounds", "1"])
    own_info = YahtzeeAgent.from_pretrained(agent_folder).turn_value_info
    more = ["--warm-start", "--td-rounds", "1", "--games-from", str(teacher)]
    assert own == 0 and cli_main(["turn-value", "--agent", str(agent_folder), *flags, *more]) == 0
    info = YahtzeeAgent.from_pretrained(agent_folder).turn_value_info
    assert info["games_from"] == str(teacher) and info["self_play_mean_score"] != own_info["self_play_mean_score"]
    assert info["warm_start_from"]["command"] == own_info["command"]  # how the value it went on from was learned
    card = (agent_folder / "README.md").read_text()
    assert f"those of `{teacher}`" in card and "Its rounds went on from the value learned by: the agent's own" in card
    other = agent_folder.parent / "other-rules"
    forced = PolicyValueNet(**SMALL, rules=Rules(joker="forced").to_dict())
    YahtzeeAgent(forced, training={"name": "o"}).save_pretrained(other)
    with pytest.raises(SystemExit):
        cli_main(["turn-value", "--agent", str(agent_folder), *flags, "--games-from", str(other)])
    assert f"--games-from {other}: it plays rules" in capsys.readouterr().err
    # --no-warm-start undoes a YAML's warm_start: true (a fresh value, its own returns regression).
    config = agent_folder.parent / "warm.yaml"
    config.write_text(f"agent: {agent_folder}\nwarm_start: true\n")
    assert cli_main(["turn-value", "--config", str(config), *flags, "--no-warm-start", "--td-rounds", "1"]) == 0
    info = YahtzeeAgent.from_pretrained(agent_folder).turn_value_info
    assert not info["settings"]["warm_start"] and "warm_start_from" not in info


@pytest.mark.parametrize("side", ["turn value", "win value"])
def test_a_value_written_into_an_agent_folder_changes_it_in_one_step(agent_folder, monkeypatch, side):
    """Adding a side value rewrites the folder as one swap: a writer killed after the value's file is
    written leaves the old agent whole (its old value, loading as before), a finished one the new;
    the user's own file in the folder stays, and stays the user's (not counted as ours)."""
    import yahtzee_lightning.hub.agent as agent_module
    import yahtzee_lightning.hub.win_value as win_module
    from yahtzee_lightning.hub.win_value import save_win_value
    from yahtzee_lightning.manifest import Manifest
    from yahtzee_lightning.solver.win_value import WinValueNet

    torch.manual_seed(0)
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    agent.turn_value = TurnValueNet(Rules().to_dict(), hidden=4, layers=1)
    agent.save_turn_value(agent_folder)
    (agent_folder / "notes.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in agent_folder.iterdir() if p.is_file()}
    if side == "turn value":
        module, name, save = agent_module, "save_turn_value_file", lambda: agent.save_turn_value(agent_folder)
        agent.turn_value = TurnValueNet(Rules().to_dict(), hidden=4, layers=1)
    else:
        net = WinValueNet(Rules().to_dict(), hidden=4, layers=1)
        module, name, save = win_module, "save_win_value_file", lambda: save_win_value(agent_folder, net, {})
    real = getattr(module, name)

    def killed_after_the_file(value, folder):
        real(value, folder)
        raise KeyboardInterrupt  # a kill before config.json names the new file

    monkeypatch.setattr(module, name, killed_after_the_file)
    with pytest.raises(KeyboardInterrupt):
        save()
    assert {p.name: p.read_bytes() for p in agent_folder.iterdir() if p.is_file()} == before
    assert not [p for p in agent_folder.parent.iterdir() if ".yl-new-" in p.name or ".yl-old-" in p.name]
    YahtzeeAgent.from_pretrained(agent_folder)  # whole: every sha256 still matches
    monkeypatch.setattr(module, name, real)
    save()
    loaded = YahtzeeAgent.from_pretrained(agent_folder)
    if side == "turn value":
        for a, b in zip(loaded.turn_value.state_dict().values(), agent.turn_value.state_dict().values(), strict=True):
            assert torch.equal(a, b)
    else:
        assert json.loads((agent_folder / "config.json").read_text())["win_value"]["network"] == net.config
    assert (agent_folder / "model.safetensors").read_bytes() == before["model.safetensors"]
    assert (agent_folder / "notes.txt").read_text() == "mine" and not Manifest.read(agent_folder).owns("notes.txt")


def test_a_value_written_while_another_writer_finishes_keeps_the_other_value(agent_folder, monkeypatch):
    """Two writers of one agent folder (a turn value and a win value): the second to take the
    folder's lock reads its config after the first's swap, so neither value is lost."""
    import yahtzee_lightning.replace as replace
    from yahtzee_lightning.hub.win_value import save_win_value
    from yahtzee_lightning.solver.win_value import WinValueNet

    torch.manual_seed(0)
    agent = YahtzeeAgent.from_pretrained(agent_folder)
    agent.turn_value = TurnValueNet(Rules().to_dict(), hidden=4, layers=1)
    win = WinValueNet(Rules().to_dict(), hidden=4, layers=1)
    real, raced = replace.folder_lock, []

    def another_writer_first(*args, **kwargs):  # the win value's writer takes the lock just before
        if not raced:
            raced.append(True)
            save_win_value(agent_folder, win, {})
        return real(*args, **kwargs)

    monkeypatch.setattr(replace, "folder_lock", another_writer_first)
    agent.save_turn_value(agent_folder)
    config = json.loads((agent_folder / "config.json").read_text())
    assert raced and "win_value" in config and "turn_value" in config
    loaded = YahtzeeAgent.from_pretrained(agent_folder)
    assert loaded.turn_value is not None and "## Win value" in (agent_folder / "README.md").read_text()
