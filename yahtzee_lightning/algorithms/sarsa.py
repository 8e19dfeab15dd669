"""Tabular SARSA on reduced games: every state indexed exactly, no network.

The reduced-game study (docs/metrics.md) played a few boxes only; with ``boxes`` of 4 the table
has 2^4 masks x 252 dice x 3 rolls rows (times the capped upper sum when an upper box is in
play). Games are played in a batch on the rules engine directly; each update averages the TD
errors of the games that visited the same (state, action) so that a large batch does not
overshoot on common states.
"""

from __future__ import annotations

from collections.abc import Sequence

import lightning as L
import torch
from tensordict import TensorDictBase

from ..env import keys as K
from ..game import N_BOXES, N_KEEPS, OPEN, GameState, Rules, box_options, dice_index, engine, upper_sum
from ..game.rules import N_ROLLS, UPPER_BONUS_THRESHOLD, YAHTZEE_BOX
from ..players.base import Player

N_ACTIONS = N_KEEPS + N_BOXES  # flat: 0..31 keep patterns, 32..44 boxes
MAX_STATES = 20_000_000


class StateIndex:
    """Exact index of (filled in-play boxes, capped upper sum, Yahtzee-bonus flag, dice, roll)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.boxes = torch.tensor(rules.boxes)
        self.n_masks = 2 ** len(rules.boxes)
        self.n_upper = UPPER_BONUS_THRESHOLD + 1 if any(b < 6 for b in rules.boxes) else 1
        self.n_flag = 2 if (YAHTZEE_BOX in rules.boxes and rules.yahtzee_bonus) else 1
        self.size = self.n_masks * self.n_upper * self.n_flag * 252 * N_ROLLS
        if self.size > MAX_STATES:
            raise ValueError(
                f"{len(rules.boxes)} boxes in play give {self.size:,} tabular states (limit {MAX_STATES:,}): "
                "tabular SARSA is for reduced games; use fewer boxes"
            )

    def __call__(self, dice_idx: torch.Tensor, card: torch.Tensor, roll: torch.Tensor) -> torch.Tensor:
        boxes = self.boxes.to(card.device)
        filled = (card[..., boxes] != OPEN).long()
        mask = (filled << torch.arange(len(boxes), device=card.device)).sum(-1)
        upper = upper_sum(card).clamp(max=UPPER_BONUS_THRESHOLD) if self.n_upper > 1 else torch.zeros_like(mask)
        flag = (card[..., YAHTZEE_BOX] == 50).long() if self.n_flag > 1 else torch.zeros_like(mask)
        idx = ((mask * self.n_upper + upper) * self.n_flag + flag) * 252 + dice_idx
        return idx * N_ROLLS + roll


def legal_actions(state: GameState, rules: Rules) -> torch.Tensor:
    """Flat action mask (..., 45): any keep while rolling, the legal boxes when scoring."""
    legal = box_options(state.dice_idx, state.card, rules)[1]
    rolling = (state.roll < N_ROLLS - 1).unsqueeze(-1)
    keeps = rolling.expand(*rolling.shape[:-1], N_KEEPS)
    return torch.cat([keeps, legal & ~rolling], -1)


def split_action(action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat action to (keep pattern, box)."""
    return action.clamp(max=N_KEEPS - 1), (action - N_KEEPS).clamp(min=0)


class TabularSARSA(L.LightningModule):
    """SARSA(0) with epsilon-greedy exploration on an exactly indexed table.

    Args:
        boxes: the boxes in play (the reduced game); the rest start filled.
        joker, yahtzee_bonus: the rule variant.
        num_envs: games played in parallel.
        steps_per_update: decisions played per ``training_step`` (each one updates the table).
        alpha, gamma: step size and discount.
        epsilon_start, epsilon_end, epsilon_games: linear decay over that many games.
        eval_games: greedy games played at each validation.
    """

    def __init__(
        self,
        boxes: Sequence[int] = (6, 8, 9, 12),
        joker: str = "free",
        yahtzee_bonus: bool = True,
        num_envs: int = 256,
        steps_per_update: int = 12,
        alpha: float = 0.1,
        gamma: float = 1.0,
        epsilon_start: float = 1.0,
        epsilon_end: float = 0.02,
        epsilon_games: int = 20_000,
        eval_games: int = 2_000,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.rules = Rules(joker=joker, yahtzee_bonus=yahtzee_bonus, boxes=tuple(boxes))
        self.index = StateIndex(self.rules)
        self.register_buffer("q", torch.zeros(self.index.size, N_ACTIONS))
        self.register_buffer("games_played", torch.zeros((), dtype=torch.int64))
        self._generator: torch.Generator | None = None
        self._state: GameState | None = None
        self._action: torch.Tensor | None = None

    # ------------------------------------------------------------- acting
    def epsilon(self) -> float:
        h = self.hparams
        frac = min(float(self.games_played) / max(h.epsilon_games, 1), 1.0)
        return h.epsilon_start + frac * (h.epsilon_end - h.epsilon_start)

    def choose(self, state: GameState, epsilon: float, generator: torch.Generator | None = None) -> torch.Tensor:
        """Epsilon-greedy flat action over the legal ones (epsilon 0: greedy)."""
        legal = legal_actions(state, self.rules)
        q = self.q[self.index(state.dice_idx, state.card, state.roll)]
        greedy = q.masked_fill(~legal, float("-inf")).argmax(-1)
        if epsilon <= 0:
            return greedy
        noise = torch.rand(legal.shape, device=legal.device, generator=generator).masked_fill_(~legal, -1)
        explore = torch.rand(greedy.shape, device=legal.device, generator=generator) < epsilon
        return torch.where(explore, noise.argmax(-1), greedy)

    # ----------------------------------------------------------- training
    def train_dataloader(self):
        # One item per update; the data is played inside training_step.
        return torch.utils.data.DataLoader(_Counter(), batch_size=None)

    def on_train_start(self) -> None:
        self._generator = torch.Generator(device=self.device).manual_seed(self.hparams.seed + self.global_rank)
        self._state = engine.new_games((self.hparams.num_envs,), self.rules, self.device, self._generator)
        self._action = self.choose(self._state, self.epsilon(), self._generator)

    def training_step(self, batch, batch_idx: int) -> None:
        h, g = self.hparams, self._generator
        returns = []
        for _ in range(h.steps_per_update):
            s, a = self._state, self._action
            keep, box = split_action(a)
            out = engine.step(s, keep, box, self.rules, g)
            s_next = out.state
            done = out.game_over
            if bool(done.any()):
                returns.append(s_next.score[done].float())
                self.games_played += int(done.sum())
                fresh = engine.new_games(tuple(done.shape), self.rules, self.device, g)
                s_next = fresh.where(done, s_next)
            a_next = self.choose(s_next, self.epsilon(), g)
            idx = self.index(s.dice_idx, s.card, s.roll) * N_ACTIONS + a
            q_next = self.q.view(-1)[self.index(s_next.dice_idx, s_next.card, s_next.roll) * N_ACTIONS + a_next]
            target = out.reward.float() + h.gamma * torch.where(done, 0.0, q_next)
            delta = target - self.q.view(-1)[idx]
            count = torch.bincount(idx, minlength=self.q.numel())[idx].float()
            self.q.view(-1).index_add_(0, idx, h.alpha * delta / count)
            self._state, self._action = s_next, a_next
        self.log("train/epsilon", self.epsilon())
        self.log("train/games", float(self.games_played))
        if returns:
            self.log("train/episode_return", torch.cat(returns).mean(), prog_bar=True)

    def configure_optimizers(self):
        return None

    # --------------------------------------------------------- evaluation
    @torch.no_grad()
    def play(self, games: int, seed: int, greedy: bool = True) -> torch.Tensor:
        """Final scores of ``games`` games with the greedy policy (or uniform random play)."""
        g = torch.Generator(device=self.device).manual_seed(seed)
        s = engine.new_games((games,), self.rules, self.device, g)
        for _ in range(N_ROLLS * self.rules.n_turns):
            a = self.choose(s, 0.0 if greedy else 1.0, g)
            s = engine.step(s, *split_action(a), self.rules, g).state
        return s.score.float()

    def on_train_epoch_end(self) -> None:
        scores = self.play(self.hparams.eval_games, seed=12345)
        self.log("eval/mean_score", scores.mean(), prog_bar=True)


class _Counter(torch.utils.data.IterableDataset):
    def __iter__(self):
        i = 0
        while True:
            yield i
            i += 1


class TabularPlayer(Player):
    """Greedy play from a trained SARSA table, through the common player interface."""

    name = "sarsa"

    def __init__(self, model: TabularSARSA) -> None:
        super().__init__(model.rules)
        self.model = model

    @torch.no_grad()
    def act(self, obs: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        dice_idx = dice_index(obs[K.DICE])
        state = GameState(dice_idx, obs[K.CARD], obs[K.ROLL], obs[K.TURN], obs[K.YAHTZEE_BONUSES])
        return split_action(self.model.choose(state, 0.0))
