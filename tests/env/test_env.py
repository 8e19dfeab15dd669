"""The TorchRL environment: specs, tasks, resets, seeding, bad input, features."""

import pytest
import torch
from torchrl.envs import TransformedEnv
from torchrl.envs.utils import check_env_specs

from yahtzee_lightning import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.features import FEATURES, PRESETS, FeatureTransform, encode, feature_size

VARIANTS = [None, {"joker": "forced"}, {"joker": "off"}, {"yahtzee_bonus": False}, {"boxes": [0, 5, 8, 12]}]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


STARTS = [("full_game", "empty"), ("single_turn", "empty"), ("single_turn", "random"), ("single_turn", "own_play")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rules", VARIANTS)
@pytest.mark.parametrize("task,start", STARTS)
@pytest.mark.parametrize("keep_format", ["pattern", "bits"])
def test_check_env_specs(device, rules, task, start, keep_format):
    env = YahtzeeEnv(5, task=task, rules=rules, start_card=start, keep_format=keep_format, device=device, seed=0)
    check_env_specs(env, seed=None)


@pytest.mark.parametrize("rules", VARIANTS)
def test_random_rollouts_are_legal_and_score_like_random_play(rules):
    env = YahtzeeEnv(64, rules=rules, seed=0)  # validate_actions=True: an illegal action raises
    n = 3 * env.rules.n_turns
    td = env.rollout(n)
    assert td.shape == (64, n)
    assert bool(td["next", K.DONE][:, -1].all()) and not bool(td["next", K.DONE][:, :-1].any())
    rewards = td["next", K.REWARD].squeeze(-1).sum(-1)
    assert torch.equal(rewards.long(), td["next", K.SCORE][:, -1])


def test_full_game_is_39_steps_and_single_turn_is_3():
    td = YahtzeeEnv(4, seed=1).rollout(100, break_when_any_done=True)
    assert td.shape[-1] == 39
    td = YahtzeeEnv(4, task="single_turn", start_card="random", seed=1).rollout(100, break_when_any_done=True)
    assert td.shape[-1] == 3


def test_batched_auto_reset_keeps_games_going():
    env = YahtzeeEnv(8, task="single_turn", start_card="random", seed=2)
    td = env.rollout(30, break_when_any_done=False)
    done = td["next", K.DONE].squeeze(-1)
    assert int(done.sum()) == 8 * 10  # every game finishes every third step
    # After a reset the roll index starts again at 0.
    assert bool((td[K.ROLL][:, 3::3] == 0).all())
    random_mean = 46  # reported for random play (docs/metrics.md)
    full = YahtzeeEnv(256, seed=3).rollout(39 * 4, break_when_any_done=False)
    per_game = full["next", K.REWARD].sum() / full["next", K.DONE].sum()
    assert abs(float(per_game) - random_mean) < 6


def _first_legal_box(td):
    td[K.KEEP] = torch.zeros(td.batch_size, dtype=torch.long)
    td[K.BOX] = td[K.BOX_MASK].float().argmax(-1)
    return td


def test_same_seed_same_games():
    a = YahtzeeEnv(16, seed=11).rollout(39, policy=_first_legal_box)
    b = YahtzeeEnv(16, seed=11).rollout(39, policy=_first_legal_box)
    c = YahtzeeEnv(16, seed=12).rollout(39, policy=_first_legal_box)
    assert torch.equal(a[K.DICE], b[K.DICE]) and torch.equal(a[K.CARD], b[K.CARD])
    assert not torch.equal(a[K.DICE], c[K.DICE])
    env = YahtzeeEnv(16, seed=0)
    env.set_seed(11)
    assert torch.equal(env.rollout(39, policy=_first_legal_box)[K.DICE], a[K.DICE])


@pytest.mark.parametrize("start_card", ["empty", "random", "own_play"])
def test_a_list_of_seeds_gives_each_block_of_games_its_own_dice(start_card):
    def play(seeds):
        env = YahtzeeEnv(8 * len(seeds), seed=seeds, task="single_turn", start_card=start_card)
        return env.rollout(3, policy=_first_legal_box)

    one, three, other = play([5]), play([5, 6, 7]), play([9, 6, 8])
    single = YahtzeeEnv(8, seed=5, task="single_turn", start_card=start_card).rollout(3, policy=_first_legal_box)
    for key in (K.DICE, K.CARD):
        assert torch.equal(one[key], single[key])  # one seed in a list plays as that seed alone
        assert torch.equal(three[key][:8], single[key])  # a block's games do not depend on the other seeds
        assert torch.equal(three[key][8:16], other[key][8:16])
    assert not torch.equal(three[K.DICE][16:], other[K.DICE][16:])
    with pytest.raises(ValueError, match="equal blocks: 10 games, 3 seeds"):
        YahtzeeEnv(10, seed=[1, 2, 3])


@pytest.mark.parametrize("rules", [None, {"boxes": [0, 5, 8, 12]}])
def test_own_play_single_turns_continue_their_own_cards_from_staggered_starts(rules):
    """``start_card: own_play``: game i starts at turn i mod n (random play before it), every episode
    is its next turn on the card its own play left, and a full card starts a new game."""
    env = YahtzeeEnv(10, task="single_turn", start_card="own_play", rules=rules, seed=3)
    n = len(env.rules.boxes)
    td = env.rollout(3 * (n + 2), policy=_first_legal_box, break_when_any_done=False)
    first = td[:, ::3]  # each episode's first step
    turn = first[K.CARD].ne(-1).sum(-1) - (13 - n)  # boxes in play filled
    episodes = torch.arange(first.shape[1])
    assert torch.equal(turn, (torch.arange(10)[:, None] + episodes) % n)
    assert bool((first[K.ROLL] == 0).all())
    ended = td["next"][:, 2::3]  # each episode's last step (its box scored)
    go_on = turn[:, 1:] > 0
    assert torch.equal(first[K.CARD][:, 1:][go_on], ended[K.CARD][:, :-1][go_on])  # the card it left
    assert torch.equal(first[K.SCORE][:, 1:][go_on], ended[K.SCORE][:, :-1][go_on])
    assert bool((first[K.SCORE][:, 1:][~go_on] == 0).all()) and bool((~go_on).any())  # a new game
    again = YahtzeeEnv(10, task="single_turn", start_card="own_play", rules=rules, seed=3)
    assert torch.equal(again.rollout(3, policy=_first_legal_box)[K.CARD], td[:, :3][K.CARD])


def test_own_play_is_for_single_turns_only():
    with pytest.raises(ValueError, match="own_play continues single-turn episodes.*task must be single_turn"):
        YahtzeeEnv(4, start_card="own_play")


def _at_scoring(env):
    td = env.reset()
    for _ in range(2):
        td[K.KEEP] = torch.zeros(env.batch_size, dtype=torch.long)
        td[K.BOX] = torch.zeros(env.batch_size, dtype=torch.long)
        td = env.step(td)["next"]
    return td


def test_illegal_box_names_the_game_and_the_reason():
    env = YahtzeeEnv(3, seed=0)
    td = _at_scoring(env)
    td[K.BOX] = torch.tensor([12, 12, 12])
    td = env.step(td)["next"]
    for _ in range(2):
        td[K.KEEP] = torch.zeros(3, dtype=torch.long)
        td = env.step(td)["next"]
    td[K.BOX] = torch.tensor([0, 12, 1])
    with pytest.raises(ValueError, match=r"game 1: illegal box 12 \(chance\).*already filled"):
        env.step(td)


def test_out_of_range_actions_are_refused():
    env = YahtzeeEnv(2, seed=0)
    td = env.reset()
    td[K.KEEP] = torch.tensor([0, 40])
    td[K.BOX] = torch.tensor([0, 0])
    with pytest.raises(ValueError, match="game 1: keep pattern 40 is out of range"):
        env.step(td)
    td = _at_scoring(env)
    td[K.BOX] = torch.tensor([-1, 0])
    with pytest.raises(ValueError, match="game 0: box -1 is out of range"):
        env.step(td)


def test_float_and_nan_actions_are_refused_not_truncated():
    env = YahtzeeEnv(2, seed=0)
    td = env.reset()
    td[K.KEEP] = torch.tensor([0.0, 2.9])
    td[K.BOX] = torch.tensor([0, 0])
    with pytest.raises(TypeError, match="keep action has dtype torch.float32; it must be integer"):
        env.step(td)
    td = _at_scoring(env)
    td[K.BOX] = torch.tensor([2.9, 0.0])
    with pytest.raises(TypeError, match="box action has dtype torch.float32; it must be integer"):
        env.step(td)
    td[K.BOX] = torch.tensor([float("nan"), 0.0])
    with pytest.raises(TypeError, match=r"box action has dtype torch.float32 \(it holds NaN\)"):
        env.step(td)
    bits = YahtzeeEnv(2, keep_format="bits", seed=0)
    td = bits.reset()
    td[K.KEEP] = torch.full((2, 5), 0.5)
    td[K.BOX] = torch.zeros(2, dtype=torch.long)
    with pytest.raises(TypeError, match="it must be bool or integer"):
        bits.step(td)


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize(
    "keep_format,keep_shape,box_shape,wrong",
    [
        ("pattern", (3, 1), (3,), "keep action has shape (3, 1); it must be (3,)"),
        ("pattern", (3, 5), (3,), "keep action has shape (3, 5); it must be (3,)"),
        ("bits", (3,), (3,), "keep action has shape (3,); it must be (3, 5)"),  # else read as patterns 0/1
        ("bits", (3, 3), (3,), "keep action has shape (3, 3); it must be (3, 5)"),
        ("pattern", (3,), (3, 13), "box action has shape (3, 13); it must be (3,)"),
        ("bits", (3, 5), (3, 1), "box action has shape (3, 1); it must be (3,)"),
    ],
)
def test_actions_of_the_wrong_shape_are_refused_by_name(validate, keep_format, keep_shape, box_shape, wrong):
    env = YahtzeeEnv(3, keep_format=keep_format, validate_actions=validate, seed=0)
    td = env.reset()
    keep_dtype = torch.bool if keep_format == "bits" else torch.long
    td[K.KEEP] = torch.zeros(keep_shape, dtype=keep_dtype)
    td[K.BOX] = torch.zeros(box_shape, dtype=torch.long)
    with pytest.raises(ValueError) as e:
        env.step(td)
    assert wrong in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("keep_format", ["pattern", "bits"])
def test_an_action_entry_no_game_needs_may_be_left_out(keep_format):
    env = YahtzeeEnv(2, keep_format=keep_format, seed=0)
    td = env.reset()
    td[K.KEEP] = torch.ones((2, 5) if keep_format == "bits" else (2,), dtype=torch.long)
    td = env.step(td.exclude(K.BOX))["next"]  # rolling: no box needed
    td = env.step(td.set(K.KEEP, td[K.ROLL] * 0 if keep_format == "pattern" else torch.zeros(2, 5, dtype=torch.long)))
    td = td["next"].exclude(K.KEEP)  # scoring: no keep needed
    td[K.BOX] = td[K.BOX_MASK].float().argmax(-1)
    assert env.step(td)["next", K.ROLL].tolist() == [0, 0]
    with pytest.raises(KeyError, match="needs it this step"):
        env.step(env.reset())


@pytest.mark.parametrize("validate", [True, False])
def test_the_unused_action_slot_is_ignored(validate):
    env = YahtzeeEnv(2, validate_actions=validate, seed=0)
    td = env.reset()
    td[K.KEEP] = torch.tensor([0, 31])
    td[K.BOX] = torch.tensor([13, -5])  # out of range, but no game scores at roll 0
    td = env.step(td)["next"]
    assert td[K.ROLL].tolist() == [1, 1]
    td = _at_scoring(env)
    td[K.KEEP] = torch.tensor([99, -1])  # nor keeps when scoring
    td[K.BOX] = td[K.BOX_MASK].float().argmax(-1)
    assert env.step(td)["next", K.ROLL].tolist() == [0, 0]


def test_bad_config_values_name_themselves():
    for kwargs, word in [
        ({"task": "half_game"}, "task"),
        ({"keep_format": "bytes"}, "keep_format"),
        ({"start_card": "full"}, "start_card"),
        ({"rules": {"joker": "maybe"}}, "joker"),
    ]:
        with pytest.raises(ValueError, match=word):
            YahtzeeEnv(2, **kwargs)
    with pytest.raises(ValueError, match="num_envs"):
        YahtzeeEnv(0)


def test_keep_bits_and_patterns_agree():
    a, b = YahtzeeEnv(4, seed=5), YahtzeeEnv(4, seed=5, keep_format="bits")
    ta, tb = a.reset(), b.reset()
    pattern = torch.tensor([0, 5, 31, 18])
    ta[K.KEEP], ta[K.BOX] = pattern, torch.zeros(4, dtype=torch.long)
    tb[K.KEEP] = ((pattern.unsqueeze(-1) >> torch.arange(5)) & 1).bool()
    tb[K.BOX] = torch.zeros(4, dtype=torch.long)
    assert torch.equal(a.step(ta)["next", K.DICE], b.step(tb)["next", K.DICE])


def test_features_sizes_and_transform():
    from yahtzee_lightning.env.multiplayer import MultiPlayerYahtzeeEnv
    from yahtzee_lightning.players import RandomPlayer

    env = MultiPlayerYahtzeeEnv(4, opponents=RandomPlayer(), seed=0)  # its observation has every key
    td = env.reset()
    for name, feat in FEATURES.items():
        assert encode(td, [name], env.rules).shape == (4, feat.size), name
    for preset in PRESETS:
        base = MultiPlayerYahtzeeEnv(4, opponents=RandomPlayer()) if preset == "two_player" else YahtzeeEnv(4, seed=0)
        tenv = TransformedEnv(base, FeatureTransform(preset))
        check_env_specs(tenv)
        assert tenv.rollout(3)[K.OBSERVATION].shape == (4, 3, feature_size(preset))
    with pytest.raises(ValueError, match="unknown features"):
        encode(td, ["dice_onehot", "telepathy"], env.rules)


def test_feature_values_on_a_known_state():
    env = YahtzeeEnv(1, seed=0)
    td = env.reset()
    td[K.DICE] = torch.tensor([[2, 3, 4, 5, 6]])
    td[K.CARD] = torch.tensor([[3, 6, 9, 12, -1, 18, -1, -1, -1, -1, -1, 50, -1]])
    assert encode(td, ["potentials"], env.rules)[0, 10] == pytest.approx(40 / 50)
    assert encode(td, ["bonus_progress"], env.rules)[0, 0] == pytest.approx(48 / 63)
    # 48 + one five = 53 < 63: no lock-in; five fives would reach 73.
    assert encode(td, ["upper_lockin"], env.rules)[0].tolist() == [0, 0, 0, 0, 0, 0]
    td[K.DICE] = torch.tensor([[5, 5, 5, 5, 5]])
    assert encode(td, ["upper_lockin"], env.rules)[0].tolist() == [0, 0, 0, 0, 1, 0]
    assert encode(td, ["joker_active"], env.rules)[0, 0] == 1


@pytest.mark.slow("compiles TorchRL's step_and_maybe_reset with inductor: 10-25 s on 2 cores")
def test_torchrl_compile_plays_the_same_games():
    """TorchRL's ``compile=True`` (``step_and_maybe_reset`` through ``torch.compile``) works on this
    env: the games (dice, cards, rewards) are the eager ones."""
    policy = _first_legal_box
    eager = YahtzeeEnv(6, seed=5).rollout(39 * 2, policy=policy, break_when_any_done=False)
    compiled = YahtzeeEnv(6, seed=5, compile=True).rollout(39 * 2, policy=policy, break_when_any_done=False)
    for key in (K.DICE, K.CARD, K.SCORE, K.BOX_MASK, ("next", K.REWARD), ("next", K.DONE)):
        assert torch.equal(eager[key], compiled[key]), key
