"""TensorDict keys of the environment, named once."""

DICE = "dice"  # (5,) sorted face values 1..6
CARD = "card"  # (13,) box scores, -1 while open
ROLL = "roll"  # () 0, 1, 2: which decision of the turn
TURN = "turn"  # () boxes filled so far
YAHTZEE_BONUSES = "yahtzee_bonuses"  # () Yahtzee bonuses earned
SCORE = "score"  # () total score so far
KEEP_MASK = "keep_mask"  # (32,) legal keep patterns
BOX_MASK = "box_mask"  # (13,) legal boxes for the current dice
ACTION = "action"
KEEP = (ACTION, "keep")  # () pattern index 0..31, or (5,) keep bits
BOX = (ACTION, "box")  # () box index 0..12
REWARD = "reward"
DONE = "done"
TERMINATED = "terminated"
OBSERVATION = "observation"  # flat float features written by FeatureTransform

STATE_KEYS = (DICE, CARD, ROLL, TURN, YAHTZEE_BONUSES, SCORE, KEEP_MASK, BOX_MASK)

# N-player games: the learner's view of the other players, ordered by seat after its own.
OPPONENT_CARDS = "opponent_cards"  # (P-1, 13)
OPPONENT_SCORES = "opponent_scores"  # (P-1,)
OPPONENT_UPPER_SUMS = "opponent_upper_sums"  # (P-1,)
SCORE_DIFF = "score_diff"  # () own score minus the best opponent's
SEAT = "seat"  # () 0 moves first
