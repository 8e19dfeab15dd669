"""N-player Yahtzee: the learner against pluggable opponents stepped inside the environment.

Players alternate whole turns. The learner takes one decision per env step; when it scores, the
opponents after it in seat order play their turns inside the same step (three decisions each,
chosen by their ``Player``), so a match is 39 learner steps.
All matches of the batch are played at once: the match state is one ``GameState`` of shape
``(num_envs, n_players)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded

from ..game import N_BOXES, OPEN, GameState, card_total, engine, legal_mask, upper_sum
from ..game.rules import N_ROLLS
from . import keys as K
from .games import check_action_range, choice, raise_illegal
from .player import Player
from .yahtzee_env import YahtzeeEnv, observe

REWARDS = ("win", "margin", "fixed_target", "moving_target", "score")
SEATS = ("first", "second", "random", "alternate")


class MultiPlayerYahtzeeEnv(YahtzeeEnv):
    """``num_envs`` matches of ``n_players`` (the learner and ``n_players - 1`` opponents).

    Args:
        opponents: one ``Player`` per opponent seat, a single one used for every seat, or a
            callable that makes a fresh player for each seat (names are turned into players
            above the env: ``yahtzee_lightning.players.make_player`` for the built-in ones,
            ``yahtzee_lightning.resolve.resolve_player`` for agent folders and hub ids too).
        reward: ``win`` (+1/0/-1 at the end), ``margin`` (a loss costs margin/100),
            ``fixed_target`` (+1 if the final score reaches ``target``, else -1),
            ``moving_target`` (the target is ``moving_margin`` above the running mean of the
            learner's recent final scores, at least ``target``), or ``score`` (solitaire reward).
        shaping: add ``(box score - box_baseline[box]) / 10`` at each of the learner's scoring
            steps (``box_baseline``: e.g. the optimal player's mean per box).
        learner_seat: ``first``, ``second``, ``random`` (per match) or ``alternate`` (match i
            sits in seat ``i % n_players``: every seat equally often, without sampling noise).
        Other arguments as ``YahtzeeEnv`` (the task is always the full game).
    """

    def __init__(
        self,
        num_envs: int = 1,
        *,
        opponents: Sequence[Player] | Player | Callable[[], Player],
        n_players: int = 2,
        reward: str = "win",
        target: float = 110.0,
        moving_margin: float = 20.0,
        moving_decay: float = 0.99,
        shaping: bool = False,
        box_baseline: Sequence[float] | None = None,
        learner_seat: str = "first",
        rules=None,
        keep_format: str = "pattern",
        validate_actions: bool = True,
        device: torch.device | str = "cpu",
        seed: int | None = None,
    ) -> None:
        if not isinstance(n_players, int) or n_players < 2:
            raise ValueError(f"n_players must be an int >= 2, got {n_players!r}")
        self.n_players = n_players
        self.reward_mode = choice("reward", reward, REWARDS)
        self.learner_seat = choice("learner_seat", learner_seat, SEATS)
        if learner_seat == "second" and n_players < 2:
            raise ValueError("learner_seat='second' needs n_players >= 2")
        if shaping and (box_baseline is None or len(box_baseline) != N_BOXES):
            raise ValueError("shaping=True needs box_baseline: 13 per-box mean scores (e.g. the optimal player's)")
        super().__init__(
            num_envs,
            task="full_game",
            rules=rules,
            keep_format=keep_format,
            validate_actions=validate_actions,
            device=device,
            seed=seed,
        )
        self.opponents = self._resolve_opponents(opponents)
        self.target, self.moving_margin, self.moving_decay = float(target), float(moving_margin), float(moving_decay)
        self.shaping = shaping
        self.box_baseline = None if box_baseline is None else torch.tensor(box_baseline, dtype=torch.float32)
        self.recent_mean: float | None = None
        self._match: GameState | None = None
        self._seat: torch.Tensor | None = None
        self._own: GameState | None = None  # the learner's games, as its last observation saw them

    @property
    def state(self) -> GameState:
        """The learner's games (after ``reset``)."""
        if self._own is None:
            raise RuntimeError("call reset() before reading the state")
        return self._own

    def _resolve_opponents(self, opponents) -> list[Player]:
        """The player of every opponent seat; names are refused here: the env knows no player by name."""
        if isinstance(opponents, Player):
            opponents = [opponents] * (self.n_players - 1)
        elif callable(opponents):  # a factory: one fresh player per seat
            opponents = [opponents() for _ in range(self.n_players - 1)]
        elif isinstance(opponents, str):
            opponents = [opponents]
        if len(opponents) != self.n_players - 1:
            raise ValueError(f"need {self.n_players - 1} opponents for {self.n_players} players, got {len(opponents)}")
        for opp in opponents:
            if not isinstance(opp, Player):
                got = f"the name {opp!r}" if isinstance(opp, str) else type(opp).__name__
                raise TypeError(
                    f"an opponent must be a Player, got {got} (a name becomes a player through "
                    "yahtzee_lightning.players.make_player, or yahtzee_lightning.resolve.resolve_player)"
                )
        return list(opponents)

    # ----------------------------------------------------------------- specs
    def _make_specs(self) -> None:
        super()._make_specs()
        n, dev, o = self.batch_size, self.device, self.n_players - 1
        long = torch.int64
        self.observation_spec[K.OPPONENT_CARDS] = Bounded(OPEN, 50, shape=(*n, o, N_BOXES), dtype=long, device=dev)
        self.observation_spec[K.OPPONENT_SCORES] = Bounded(0, 1575, shape=(*n, o), dtype=long, device=dev)
        self.observation_spec[K.OPPONENT_UPPER_SUMS] = Bounded(0, 105, shape=(*n, o), dtype=long, device=dev)
        self.observation_spec[K.SCORE_DIFF] = Bounded(-1575, 1575, shape=n, dtype=long, device=dev)
        self.observation_spec[K.SEAT] = Bounded(0, o, shape=n, dtype=long, device=dev)

    # ----------------------------------------------------------- match state
    def _select(self, seat: torch.Tensor) -> GameState:
        """Per match, the state of the player at ``seat`` (N,)."""
        m, i = self._match, seat.unsqueeze(-1)
        return GameState(
            dice_idx=m.dice_idx.gather(1, i).squeeze(1),
            card=m.card.gather(1, i.unsqueeze(-1).expand(-1, 1, N_BOXES)).squeeze(1),
            roll=m.roll.gather(1, i).squeeze(1),
            turn=m.turn.gather(1, i).squeeze(1),
            yahtzee_bonuses=m.yahtzee_bonuses.gather(1, i).squeeze(1),
        )

    def _update(self, seat: torch.Tensor, state: GameState, mask: torch.Tensor) -> None:
        """Write ``state`` to ``seat`` in the matches where ``mask`` holds."""
        at = torch.nn.functional.one_hot(seat, self.n_players).bool() & mask.unsqueeze(-1)  # (N, P)
        m = self._match
        self._match = GameState(
            dice_idx=torch.where(at, state.dice_idx.unsqueeze(1), m.dice_idx),
            card=torch.where(at.unsqueeze(-1), state.card.unsqueeze(1), m.card),
            roll=torch.where(at, state.roll.unsqueeze(1), m.roll),
            turn=torch.where(at, state.turn.unsqueeze(1), m.turn),
            yahtzee_bonuses=torch.where(at, state.yahtzee_bonuses.unsqueeze(1), m.yahtzee_bonuses),
        )

    def _others(self, seat: torch.Tensor) -> torch.Tensor:
        """Seats of the other players in play order after ``seat``: (N, P-1)."""
        k = torch.arange(1, self.n_players, device=self.device)
        return (seat.unsqueeze(-1) + k) % self.n_players

    def _view(self, seat: torch.Tensor) -> tuple[TensorDict, GameState, torch.Tensor]:
        """The observation of the player at ``seat``: its own state and the others' cards."""
        own = self._select(seat)
        legal = legal_mask(own.dice_idx, own.card, self.rules)
        td = observe(own, legal)
        others = self._others(seat)
        cards = self._match.card.gather(1, others.unsqueeze(-1).expand(-1, -1, N_BOXES))
        totals = card_total(self._match.card, self._match.yahtzee_bonuses).gather(1, others)
        td.set(K.OPPONENT_CARDS, cards)
        td.set(K.OPPONENT_SCORES, totals)
        td.set(K.OPPONENT_UPPER_SUMS, upper_sum(cards))
        td.set(K.SCORE_DIFF, td[K.SCORE] - totals.amax(-1))
        td.set(K.SEAT, seat.clone())
        return td, own, legal

    def _play_turn(self, seat: torch.Tensor, mask: torch.Tensor) -> None:
        """The opponents at ``seat`` (N,) play one whole turn in the matches where ``mask`` holds."""
        if not bool(mask.any()):
            return
        learner = self._seat
        player_index = seat - (seat > learner).long()  # j-th opponent sits in the j-th other seat
        for _ in range(N_ROLLS):
            td, own, _ = self._view(seat)
            keep = torch.zeros_like(seat)
            box = torch.zeros_like(seat)
            for j, player in enumerate(self.opponents):
                use = player_index == j
                if len(self.opponents) == 1 or bool((use & mask).any()):
                    k, b = player.act(td)
                    keep, box = torch.where(use, k, keep), torch.where(use, b, box)
            result = engine.step(own, keep, box, self.rules, self._generator)
            if self.validate_actions and not bool((result.legal | ~mask).all()):
                i = int((~result.legal & mask).nonzero()[0, 0])
                raise RuntimeError(f"match {i}: opponent at seat {int(seat[i])} chose illegal box {int(box[i])}")
            self._update(seat, result.state, mask)

    def _play_others(self, only_before_learner: bool) -> None:
        full = (self._match.card != OPEN).all(-1)  # (N, P)
        for k in range(self.n_players - 1):
            seat = self._others(self._seat)[:, k]
            mask = ~full.gather(1, seat.unsqueeze(-1)).squeeze(-1)
            if only_before_learner:
                mask = mask & (seat < self._seat)
            self._play_turn(seat, mask)
            full = (self._match.card != OPEN).all(-1)

    # ------------------------------------------------------------------- env
    def _learner_obs(self) -> TensorDict:
        td, own, legal = self._view(self._seat)
        self._own = own
        self._box_spec.update_mask(legal)  # the action spec's mask follows the learner
        return td

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        n, p = tuple(self.batch_size), self.n_players
        fresh = engine.new_games((*n, p), self.rules, self.device, self._generator)
        if self.learner_seat == "first":
            seat = torch.zeros(n, dtype=torch.int64, device=self.device)
        elif self.learner_seat == "second":
            seat = torch.ones(n, dtype=torch.int64, device=self.device)
        elif self.learner_seat == "alternate":
            seat = torch.arange(self.batch_size.numel(), device=self.device).view(n) % p
        else:
            seat = torch.randint(0, p, n, device=self.device, generator=self._generator)
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is not None and self._match is not None:
            r = reset.reshape(n)
            fresh = fresh.where(r.unsqueeze(-1).expand(*n, p), self._match)
            seat = torch.where(r, seat, self._seat)
            before = self._match
            self._match, self._seat = fresh, seat
            # Only the reset matches' early seats play their first turn now.
            self._play_others(only_before_learner=True)
            self._match = self._match.where(r.unsqueeze(-1).expand(*n, p), before)
        else:
            self._match, self._seat = fresh, seat
            self._play_others(only_before_learner=True)
        out = self._learner_obs()
        done = torch.zeros(*n, 1, dtype=torch.bool, device=self.device)
        out.set(K.DONE, done)
        out.set(K.TERMINATED, done.clone())
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        own = self._select(self._seat)
        keep = self._action(tensordict, K.KEEP, lambda roll: roll < N_ROLLS - 1)
        box = self._action(tensordict, K.BOX, lambda roll: roll == N_ROLLS - 1)
        if self.keep_format == "bits" and keep.dim() > len(self.batch_size):
            keep = engine.keep_bits_to_pattern(keep)
        if self.validate_actions:
            check_action_range(keep, box, own)
        result = engine.step(own, keep, box, self.rules, self._generator)
        if self.validate_actions and not bool(result.legal.all()):
            raise_illegal(own, box, result.legal)
        scored = own.roll == N_ROLLS - 1
        everyone = torch.ones_like(scored)
        self._update(self._seat, result.state, everyone)
        if bool(scored.any()):
            self._play_others(only_before_learner=False)
        done = (self._match.card != OPEN).all(-1).all(-1)
        out = self._learner_obs()
        reward = self._reward(result.reward, scored, own, result.state, done, out)
        out.set(K.REWARD, reward.unsqueeze(-1))
        out.set(K.DONE, done.unsqueeze(-1))
        out.set(K.TERMINATED, done.unsqueeze(-1).clone())
        return out

    def _reward(
        self,
        score_reward: torch.Tensor,
        scored: torch.Tensor,
        before: GameState,
        after: GameState,
        done: torch.Tensor,
        obs: TensorDict,
    ) -> torch.Tensor:
        if self.reward_mode == "score":
            reward = score_reward.float()
        else:
            own, diff = obs[K.SCORE].float(), obs[K.SCORE_DIFF].float()
            if self.reward_mode == "win":
                final = torch.sign(diff)
            elif self.reward_mode == "margin":
                final = torch.where(diff > 0, 1.0, torch.where(diff == 0, 0.0, diff / 100.0))
            else:
                target = self.target
                if self.reward_mode == "moving_target" and self.recent_mean is not None:
                    target = max(self.target, self.recent_mean + self.moving_margin)
                final = torch.where(own >= target, 1.0, -1.0)
            reward = torch.where(done, final, 0.0)
        if self.shaping:
            filled = (before.card == OPEN) & (after.card != OPEN)
            box_score = (after.card.clamp(min=0) * filled).sum(-1).float()
            baseline = (self.box_baseline.to(self.device) * filled).sum(-1)
            reward = reward + torch.where(scored, (box_score - baseline) / 10.0, 0.0)
        if self.reward_mode == "moving_target" and bool(done.any()):
            mean = float(obs[K.SCORE][done].float().mean())
            d = self.moving_decay
            self.recent_mean = mean if self.recent_mean is None else d * self.recent_mean + (1 - d) * mean
        return reward
