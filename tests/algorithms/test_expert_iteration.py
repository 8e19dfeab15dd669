"""Expert iteration: the labels are the agent's own search, nothing reads the exact table, it learns."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from yahtzee_lightning.algorithms.distill import BOX_VALUES, KEEP_VALUES
from yahtzee_lightning.algorithms.expert_iteration import ExpertIteration
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.yahtzee_env import YahtzeeEnv
from yahtzee_lightning.evaluation import play_games, summarize
from yahtzee_lightning.game import Rules
from yahtzee_lightning.loop.trainer import quiet_trainer
from yahtzee_lightning.players.lookahead import lookahead_player
from yahtzee_lightning.resolve import load_agent

AGENT = "checkpoints/a2c-best-stage2-128x2"  # the shipped self-play agent, with its turn-start value
TINY = {"features": "all", "evaluations": 1, "eval_games": 8, "games_per_minibatch": 4}


def test_every_position_is_labelled_by_the_agents_own_search(no_table, monkeypatch):
    import yahtzee_lightning.resolve as resolve

    net = {"d_h": 128, "n_layers": 2, "head_hidden": 128}  # the agent's own network
    loads = []
    real_load = resolve.load_agent
    monkeypatch.setattr(resolve, "load_agent", lambda *a, **k: loads.append(a[0]) or real_load(*a, **k))
    model = ExpertIteration(value_from=AGENT, init_from=AGENT, games_per_batch=4, total_games=4, **net, **TINY)
    policy = model.collection_policy()
    assert loads == [AGENT]  # value_from's agent loaded once: checked at construction, searched with after
    assert not any(k.startswith("_search") for k in model.state_dict())  # the search is no weight of this run
    search = lookahead_player(load_agent(AGENT), AGENT)
    env = YahtzeeEnv(4, seed=5)
    td = env.reset()
    for _ in range(5):  # a few decisions into the game: keeps and a box
        td = policy(td)
        search.prepare(td[K.CARD])
        keep_values, box_values = search.oracle.action_values(td[K.DICE], td[K.ROLL], td[K.CARD])
        assert torch.allclose(td[KEEP_VALUES], keep_values.float())
        assert torch.equal(torch.isfinite(td[BOX_VALUES]), torch.isfinite(box_values))
        finite = torch.isfinite(box_values)
        assert torch.allclose(td[BOX_VALUES][finite], box_values.float()[finite])
        td = env.step(td)["next"]


@pytest.mark.slow("a stage taught by the search, then judged against the first: about 30 s")
def test_a_seeded_stage_learns_from_the_search_without_the_exact_table(no_table):
    """From a random start, imitating the agent's search raises the score; trained and evaluated
    with the exact table's loader refusing."""
    L.seed_everything(0)
    model = ExpertIteration(
        value_from=AGENT, d_h=64, n_layers=2, head_hidden=64, games_per_batch=64, total_games=1536, lr=3e-3, **TINY
    )
    rules = Rules()
    before = summarize(play_games(model.player(), 400, seed=3, rules=rules), rules)["score"]
    quiet_trainer().fit(model)
    after = summarize(play_games(model.player(), 400, seed=3, rules=rules), rules)["score"]
    assert after["mean"] - before["mean"] > 4 * (before["se"] ** 2 + after["se"] ** 2) ** 0.5


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"value_from": "checkpoints/distilled-128x2"}, "carries no turn-start value"),
        ({"value_from": ""}, "value_from must name an agent"),
        ({"value_from": AGENT, "diagnose_games": 4}, "diagnose_games must be 0"),
        ({"value_from": AGENT, "teacher": "optimal"}, "teacher must be auto"),
        ({"value_from": AGENT, "joker": "forced"}, "the agent plays"),
    ],
)
def test_a_setting_that_would_need_the_table_or_has_no_search_is_refused(settings, why):
    with pytest.raises(ValueError, match=why) as raised:
        ExpertIteration(games_per_batch=4, total_games=4, **{**TINY, **settings})
    assert "\n" not in str(raised.value)


def test_an_exported_stage_searches_with_the_value_that_taught_it(tmp_path, default_table):
    """export carries value_from's turn-start value into the agent (the same weights, said on the
    card), and with --games puts its look-ahead beside the network alone on the card."""
    from yahtzee_lightning.cli import main
    from yahtzee_lightning.digest import VALUE_DIGEST
    from yahtzee_lightning.hub import YahtzeeAgent

    L.seed_everything(0)
    model = ExpertIteration(
        value_from=AGENT, d_h=16, n_layers=1, head_hidden=16, games_per_batch=4, total_games=8, **TINY
    )
    trainer = quiet_trainer()
    trainer.fit(model)
    trainer.save_checkpoint(tmp_path / "last.ckpt")
    assert main(["export", str(tmp_path / "last.ckpt"), str(tmp_path / "stage"), "--games", "6"]) == 0
    agent, teacher = YahtzeeAgent.from_pretrained(tmp_path / "stage"), YahtzeeAgent.from_pretrained(AGENT)
    assert agent.turn_value is not None
    assert agent.config["turn_value"][VALUE_DIGEST] == teacher.config["turn_value"][VALUE_DIGEST]
    assert AGENT in agent.turn_value_info["taught_by"]
    comparison = agent.turn_value_info["evaluation"]
    assert comparison["games"] == 6 and comparison["network"]["mean"] == round(
        agent.evaluation["summary"]["score"]["mean"], 2
    )
    card = (tmp_path / "stage" / "README.md").read_text()
    assert "the agent whose search taught this one" in card and "| statistic | lookahead | network alone |" in card
