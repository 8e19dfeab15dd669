"""What a learning curve says about its end: was it still rising when training stopped?"""

import numpy as np

from yahtzee_lightning.study.figures import last_quarter_change


def test_a_curve_s_change_over_its_last_quarter_says_whether_it_was_still_rising():
    games = np.array([100, 200, 300, 400, 500, 600, 700, 800])
    rising = np.array([10.0, 20, 30, 40, 50, 60, 70, 80])
    assert last_quarter_change(games, rising) == 20.0  # from 600 (75 % of 800) to 800
    assert last_quarter_change(games, np.r_[rising[:6], 70, 55]) == -5.0  # fell at the end
    assert last_quarter_change(games[:2], rising[:2]) == 10.0  # two evaluations: the last step
    assert last_quarter_change(games[:1], rising[:1]) is None  # one evaluation: nothing to say
    assert last_quarter_change(games, np.r_[rising[:7], np.nan]) is None
