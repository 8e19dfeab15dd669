"""Yuan's meta-actions map to the right keeps and boxes."""

import torch

from yahtzee_lightning.env import YahtzeeEnv
from yahtzee_lightning.env import keys as K
from yahtzee_lightning.env.meta_actions import META_NAMES, N_META, meta_mask, meta_to_action


def _kept(dice, pattern):
    return [d for i, d in enumerate(dice) if (pattern >> i) & 1]


def test_meta_keeps_on_known_dice():
    obs = YahtzeeEnv(1).reset()
    obs[K.DICE] = torch.tensor([[2, 3, 3, 4, 6]])
    expected = {
        "keep_3s": [3, 3],
        "keep_1s": [],
        "keep_most_common": [3, 3],
        "keep_longest_run": [2, 3, 4],
        "keep_two_most_common": [3, 3, 6],  # ties among singletons go to the higher face
        "keep_4_to_6": [4, 6],
    }
    for name, kept in expected.items():
        keep, _ = meta_to_action(torch.tensor([META_NAMES.index(name)]), obs)
        assert _kept([2, 3, 3, 4, 6], int(keep)) == kept, name
    _, box = meta_to_action(torch.tensor([META_NAMES.index("score_12")]), obs)
    assert int(box) == 12


def test_meta_mask_and_random_meta_play_is_legal():
    env = YahtzeeEnv(64, seed=0)
    td = env.reset()
    assert len(META_NAMES) == N_META == 23
    g = torch.Generator().manual_seed(0)
    for _ in range(39):
        mask = meta_mask(td)
        assert bool(mask.any(-1).all())
        meta = torch.multinomial(mask.float(), 1, generator=g).squeeze(-1)
        td["action", "keep"], td["action", "box"] = meta_to_action(meta, td)
        td = env.step(td)["next"]  # the env validates every box
    assert bool(td[K.DONE].all())
