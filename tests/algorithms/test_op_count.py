"""The host's cost held: operators dispatched per collection step and per update, counted (the same on
any machine), for the recipes the host-cost work is measured on. A change that brings operators back
fails here; the budgets come down as the host work lands (the goal: 60 a collection step)."""

import pytest

from yahtzee_lightning.loop.op_count import count_ops, recipe_args

#: Operators per collection step and per update without logging, counted on 2026-11-28, session 27
#: (186/690, 185/704, 185/6901; a 2 % margin for a library's own operators to move). Each row now
#: runs only the policy head that acts there (a collection step 4 operators fewer, a loss about 21
#: more: the rows split by roll, the heads' outputs padded back), and Adam steps with its fused
#: kernel (one operator a step for every parameter). Before: 190/723, 189/745, 189/7516; session
#: 24: 241/734, 239/755, 239/7526. ``yahtzee-lightning bench ops`` prints them.
BUDGETS = {
    "conf/a2c_long.yaml": (190, 704),
    "conf/a2c.yaml": (189, 718),
    "conf/ppo.yaml": (189, 7039),  # 15 minibatch steps an update (3 epochs of 5)
}


@pytest.mark.parametrize("config", list(BUDGETS))
def test_collection_and_update_stay_within_their_operator_budgets(config):
    # The count does not depend on the network's width (the same operators on other shapes): a narrow one.
    cls, args = recipe_args(config, d_h=16, head_hidden=16, **({"gae_lambda": 0.0} if "a2c.yaml" in config else {}))
    result = count_ops(cls, args, warmup=2, batches=2)
    per_step, update = result.per_batch("collect") / result.steps, result.quiet_update()
    step_budget, update_budget = BUDGETS[config]
    assert per_step <= step_budget, f"{config}: {per_step:.1f} operators a collection step (budget {step_budget})"
    assert update <= update_budget, f"{config}: {update} operators an update (budget {update_budget})"
    wider = count_ops(cls, {**args, "d_h": 32, "head_hidden": 32}, warmup=2, batches=1)
    assert wider.per_batch("collect") == result.per_batch("collect") and wider.quiet_update() == update
