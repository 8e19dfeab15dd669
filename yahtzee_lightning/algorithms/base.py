"""What every on-policy algorithm shares: the Lightning module and its update loop.

A subclass defines only its loss (``OnPolicyAlgorithm.update``). Each training step first
collects a batch of ``games_per_batch`` whole games with the current weights (TorchRL's
``env.rollout`` into one preallocated rollout TensorDict, on the module's device), then learns
from it. Collecting inside the step, rather than in a data loader, keeps the algorithms on-policy:
Lightning fetches a loader's next batch before the current update, which would play it with the
weights of one update ago. One env per rank, seeded ``seed + rank``. One Lightning epoch is one
evaluation interval: the greedy policy plays ``eval_games`` full games in the validation loop,
and a checkpoint follows.

The class is composed by concern, each part in a module named for it. The training loop's parts
(``yahtzee_lightning/loop/``): ``settings`` (checks, network, budget,
schedules), ``collection`` (the env and the batch),
``diagnosis`` (what a logging update measures: regret against the exact oracle, the
collapse metrics),
``evaluation`` (the evaluations and their opponents),
``ensemble`` (K members in one run: it comes first, and runs the other
parts once per member) and ``packed`` (a pack learnt as one update); the
algorithms' own: ``.policy_gradient`` (the pieces of the losses). What each part uses of the
module is listed in ``host``. This module holds the Lightning module
itself: its settings, hooks, optimizer, and the update loop that ties the parts together.
"""

from __future__ import annotations

import math
import time
from typing import Any

import lightning as L
import torch
from tensordict import TensorDictBase

from ..env.games import check_capture
from ..game import Rules
from ..game.rules import episode_unit, episodes_text
from ..loop.collection import Collection, _Players
from ..loop.diagnosis import Diagnosis
from ..loop.ensemble import Ensemble
from ..loop.evaluation import Evaluation
from ..loop.packed import PackedUpdate
from ..loop.resume import checkpoint_digest
from ..loop.settings import Settings
from ..machine import apply_thread_rule
from ..nn import DROPOUT_MASK
from ..schedules import run_lr_factor
from ..solver import TurnOracle
from .policy_gradient import SHAPED_REWARD, PolicyGradient

__all__ = ["OnPolicyAlgorithm"]

#: Devices whose Adam step runs torch's fused kernel (elsewhere its foreach one).
FUSED_ADAM_DEVICES = frozenset({"cpu", "cuda"})


class OnPolicyAlgorithm(
    Ensemble, PackedUpdate, Settings, Collection, PolicyGradient, Diagnosis, Evaluation, L.LightningModule
):
    """Base of REINFORCE, A2C and PPO; hyperparameters: docs/hyperparameters.md.

    Task: ``task`` (full_game or single_turn), ``start_card`` (empty, random, or single turn only
    own_play: turns on the cards of its own play), ``joker``, ``yahtzee_bonus``, ``boxes``.
    Network: see ``PolicyValueNet``. Optimisation: Adam at ``lr`` with warm-up (from
    ``warmup_start * lr``) / hold / decay to ``r_alpha * lr``; gradient-norm clipping at
    ``tau_clip`` (0 = off); value-loss weight ``lambda_v``; entropy coefficients per head held at
    their max for ``entropy_hold`` of training then annealed to their min over ``entropy_anneal``;
    discount from ``gamma_min`` to ``gamma_max`` over the first ``gamma_anneal`` of training.
    ``upper_score_weight`` > 0 builds an upper-score head (it predicts each game's final upper sum)
    and weighs its regression loss; ``upper_shaping`` weighs potential-based shaping on its
    prediction (``rewards``). Settings that run the published code's ways, for ablations (each default ours):
    ``lr_schedule: unstepped`` (the rate held at its first value: its PPO never stepped it),
    ``learn_upper_head: false`` (the head shapes from its starting weights, no gradient reaching it:
    its PPO), ``replay_dropout: false`` (the update draws fresh dropout masks instead of replaying
    those each step was played under, so it learns another policy than the one that acted),
    ``play_ahead: true`` (each batch played one update before it is learnt from: its prefetching
    loader; the first two by the starting weights; its shaped rewards read as it is played, by the
    network that played it, as that code's collection recorded its potentials), ``baseline: update``
    (REINFORCE and A2C at TD(0): ``V(s)`` in the advantage from the update's own forward pass, as that
    code's two took it, instead of the value recorded when the step was played; ``V(s')`` as recorded).
    Budget: ``total_games``
    in batches of ``games_per_batch``, ``evaluations`` evaluation intervals of ``eval_games``
    games each, and a final evaluation of ``final_eval_games`` (0 = skip) against the optimum.
    ``init_from``: a Lightning checkpoint or an agent folder whose network weights start this run
    (transfer, or RL fine-tuning of a distilled agent); it may see fewer features than this run
    (features appended to its own start at zero weight). ``reset_value_head``: the value head's
    output starts at zero, for a fine-tune to a reward on another scale (win/loss, not points);
    ``value_lr_scale``: the value head's learning rate as a multiple of ``lr`` (Adam ignores the
    scale of ``lambda_v`` for parameters only the value loss reaches).
    ``diagnose_games``: games of each batch whose decisions the exact oracle scores, for the
    logged regret per keep and per box decision (0 = off); every interval the evaluation games
    are scored too, with the regret broken down by turn and by box. ``log_every``: the update's
    metrics (the logging-only ones above included) are computed and logged every ``log_every``
    updates (it sets the trainer's ``log_every_n_steps``); learning does not depend on it.
    ``n_players`` >= 2 trains against ``opponent`` (random, greedy, optimal, an agent folder, or
    ``self``: the learner's own current policy, for self-play) in the N-player env
    with ``reward`` (win, margin, fixed_target, moving_target, score); use features that see the
    opponents (the ``two_player`` preset). ``eval_opponent``: whom the evaluations play (default:
    the training opponent; in self-play, where that would always be about half, ``optimal``).
    ``ensemble``: K members trained at once, each with its own seed and settings
    (``ensemble``);
    ``ensemble_update``: ``loop`` (each member's update in turn: a member learns the same weights,
    to the bit, alone or in any pack) or ``batched`` (every member's update as one computation,
    equal to the loop's to float tolerance: ``packed``). ``capture``: the collection's game
    step eager (``none``), compiled (``compile``: ``torch.compile``, any device) or replayed as a
    CUDA graph (``cudagraphs``, CUDA only); the same games, the dice drawn outside the graph.
    """

    def __init__(
        self,
        task: str = "full_game",
        start_card: str = "empty",
        joker: str = "free",
        yahtzee_bonus: bool = True,
        boxes: list[int] | None = None,
        dice_encoder: str = "combined",
        features: str | list[str] = "full_game",
        d_h: int = 600,
        n_layers: int = 3,
        dropout: float = 0.1,
        layer_norm: bool = True,
        activation: str = "silu",
        head_hidden: int = 256,
        roll_head: str = "categorical",
        d_emb: int = 8,
        layout: str = "standard",
        lr: float = 1e-4,
        r_alpha: float = 0.01,
        warmup: float = 0.05,
        hold: float = 0.70,
        tau_clip: float = 1.0,
        lambda_v: float = 0.01,
        normalize_advantage: bool = True,
        beta_roll_max: float = 0.02,
        beta_roll_min: float = 0.005,
        beta_score_max: float = 0.05,
        beta_score_min: float = 0.01,
        entropy_hold: float = 0.1,
        entropy_anneal: float = 0.8,
        gamma_min: float = 0.99,
        gamma_max: float = 0.99,
        gamma_anneal: float = 1.0,
        warmup_start: float = 0.0,
        lr_schedule: str = "stepped",
        upper_score_weight: float = 0.0,
        upper_shaping: float = 0.0,
        learn_upper_head: bool = True,
        replay_dropout: bool = True,
        play_ahead: bool = False,
        baseline: str = "collected",
        total_games: int = 1_000_000,
        games_per_batch: int = 20,
        evaluations: int = 100,
        eval_games: int = 1000,
        final_eval_games: int = 10_000,
        top_k: int = 3,
        n_players: int = 1,
        opponent: str = "random",
        eval_opponent: str | None = None,
        reward: str = "win",
        init_from: str | None = None,
        reset_value_head: bool = False,
        value_lr_scale: float = 1.0,
        diagnose_games: int = 16,
        log_every: int = 10,
        seed: int = 0,
        ensemble: int | list[dict[str, Any]] | dict[str, list[Any]] | None = None,
        ensemble_update: str = "loop",
        capture: str = "none",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.validate_settings()
        self.automatic_optimization = False
        self.rules = Rules(joker=joker, yahtzee_bonus=yahtzee_bonus, boxes=tuple(boxes) if boxes else tuple(range(13)))
        self.net = self.build_network()
        self.check_dropout(self.net)
        if init_from:
            self._load_network(init_from)
        self.build_ensemble()
        self.register_buffer("updates_done", torch.zeros((), dtype=torch.int64))
        self._players: _Players | None = None  # env and policy of collection, built on first use
        self.last_batch: TensorDictBase | None = None  # the preallocated rollout, refilled every update
        self._ahead: TensorDictBase | None = None  # play_ahead: the batch played before this update
        self.final_evaluation: dict | None = None
        self._oracles: dict[str, TurnOracle] = {}  # the exact oracle(s), built on first use

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # What an exported agent's card says about its training.
        checkpoint["yahtzee_lightning"] = {
            "algorithm": type(self).__name__,
            "games": int(self.updates_done) * self.hparams.games_per_batch * self.world_size,
            "devices": self.world_size,
            "accelerator": self.device.type,
        }
        self.save_members(checkpoint)
        checkpoint_digest(checkpoint)

    # -------------------------------------------------------------- lightning
    def setup(self, stage: str) -> None:
        self._started = time.monotonic()  # for the wall clock logged with every evaluation
        if self._trainer is not None:
            # One cadence for the metrics and the loggers (see ``logs_this_update``).
            self.trainer.log_every_n_steps = self.hparams.log_every
            # This node's processes of the run share its cores (docs/guide.md, "Threads").
            apply_thread_rule(processes=self.trainer.num_devices)
            # A capture the device cannot run: said now, before anything trains.
            check_capture(self.hparams.capture, self.trainer.strategy.root_device)
        if stage == "fit":
            # One epoch is one evaluation interval; the number of epochs follows from the budget
            # (a smaller trainer.max_epochs stops early, e.g. to train part of a run).
            budget = math.ceil(self.total_updates / self.updates_per_epoch)
            asked = self.trainer.fit_loop.max_epochs
            self._epochs_asked = asked not in (None, -1, 1000)
            self.trainer.fit_loop.max_epochs = min(asked, budget) if self._epochs_asked else budget

    def on_train_start(self) -> None:
        super().on_train_start()
        if self.global_rank == 0 and int(self.updates_done) == 0:
            print(self.plan_line())  # on stdout, with the next steps at the end (stderr: progress and errors)
        left = self.total_updates - int(self.updates_done)
        if left <= 0:
            self.trainer.should_stop = True  # resumed with its budget already spent
        elif int(self.updates_done) > 0 and not self._epochs_asked:
            # Resumed, perhaps with other intervals than it started with: enough of them for what is
            # left (the run stops at the budget, see on_train_epoch_end).
            needed = self.trainer.current_epoch + 1 + math.ceil(left / self.updates_per_epoch)
            self.trainer.fit_loop.max_epochs = max(self.trainer.fit_loop.max_epochs, needed)

    def plan_line(self) -> str:
        """What the run will do, said once at its start: ranks, games per rank and per update, updates,
        and how often it evaluates."""
        h, ranks = self.hparams, self.world_size
        per_update = h.games_per_batch * ranks * self.ensemble_size
        members = f" x {self.ensemble_size} members" if self.ensemble_size > 1 else ""
        unit, budget = episode_unit(h.task), episodes_text(h.total_games, h.task)  # evaluations play whole games
        return (
            f"plan: {ranks} rank{'s' if ranks > 1 else ''} x {h.games_per_batch} {unit} a batch{members} = "
            f"{per_update:,} {unit} an update; {self.total_updates:,} updates ({budget}); "
            f"an evaluation of {h.eval_games:,} games every {self.updates_per_epoch:,} update"
            f"{'s' if self.updates_per_epoch != 1 else ''}, "
            f"then {h.final_eval_games:,} final games"
        )

    def on_train_epoch_end(self) -> None:
        super().on_train_epoch_end()
        # Each interval ends at the budget at the latest (``_Updates``); a run whose budget is spent
        # stops there, even where its intervals no longer line up with its epochs (a resumed run).
        # Read once an interval, not every update: reading the counter waits for the device.
        if int(self.updates_done) >= self.total_updates:
            self.trainer.should_stop = True

    def configure_optimizers(self) -> Any:
        if self.in_ensemble():
            if self.packed():
                return self.configure_packed_optimizer()
            return self.ensemble_configure_optimizers(self.configure_optimizers)
        # fused: each parameter's whole step in one pass (at 600 x 3 on one CPU thread 0.9 ms a
        # step against foreach's 5.6: PPO steps 15 times an update); the same arithmetic to float
        # rounding. foreach (one kernel per operation over all parameters) where torch has no fused
        # kernel.
        h = self.hparams
        value = list(self.net.value_head.parameters()) if hasattr(self.net, "value_head") else []
        ids = {id(p) for p in value}
        groups = [{"params": [p for p in self.net.parameters() if id(p) not in ids], "lr": h.lr}]
        if value:  # the value head may learn faster (a fine-tune that restarts its values)
            groups.append({"params": value, "lr": h.lr * h.value_lr_scale})
        kernel = {"fused": True} if self.device.type in FUSED_ADAM_DEVICES else {"foreach": True}
        opt = torch.optim.Adam(groups, lr=h.lr, **kernel)

        def factor(step: int) -> float:
            return run_lr_factor(h, step / self.total_updates)

        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.LambdaLR(opt, factor)}

    def update(self, batch: TensorDictBase, coefs: dict[str, float]) -> dict[str, float]:
        """One update on a batch of whole games; returns the metrics to log. Defined by subclasses.

        :param batch: ``(games_per_batch, steps)`` of TensorDict steps from ``collect``, 39 steps
            a game: the state keys of ``env.keys`` (``dice`` ``(..., 5)``, ``card`` ``(..., 13)``,
            ``roll``, ``turn``, masks), the actions ``("action", "keep")`` and ``("action", "box")``
            ``(...)``, ``sample_log_prob`` and ``state_value`` ``(...)`` as recorded while acting,
            ``dropout_mask`` where the network has dropout, and under ``"next"`` the ``reward``,
            ``done`` and ``terminated`` ``(..., 1)``.
        :param coefs: this point of training's ``beta_roll``, ``beta_score`` (entropy weights) and
            ``gamma``.
        :returns: metric name to value (tensors on the device are read once, by ``learn``).
        """
        raise NotImplementedError

    def step_optimizer(self, loss: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Backward, clip at ``tau_clip``, step. Returns the gradient norm and whether it was clipped
        (1.0 or 0.0), as tensors on the device: reading them here would wait for the device."""
        if self._packing:
            raise RuntimeError(
                "a packed update (ensemble_update: batched) steps through optimizer_step(loss_fn, ...), "
                "not step_optimizer"
            )
        opt = self.optimizers()
        opt.zero_grad()
        self.manual_backward(loss)
        tau = self.hparams.tau_clip
        norm = torch.nn.utils.clip_grad_norm_(self.net.parameters(), tau if tau > 0 else float("inf"))
        opt.step()
        return norm.detach(), (norm > tau).float() if tau > 0 else torch.zeros_like(norm)

    def training_step(self, update: int, batch_idx: int) -> None:
        """One update: play a batch of whole games with the current weights, then learn from it
        (``play_ahead``: learn from the batch played before the previous update, then play the next)."""
        if not self.hparams.play_ahead:
            self.learn(self.collect())
            return
        batch = self._ahead if self._ahead is not None else self.play_batch_ahead()
        self._ahead = self.play_batch_ahead()  # what a prefetching loader plays before this update
        self.learn(batch)

    def play_batch_ahead(self) -> TensorDictBase:
        """A batch played now to be learnt from after the next update (``play_ahead``): a copy of the
        rollout, carrying its shaped rewards as the network that played it gives them (its weights,
        its masks), read now: the published code's collection recorded its potentials as it played."""
        batch = self.collect().clone()
        if self.hparams.upper_shaping:
            batch.set(SHAPED_REWARD, self.rewards(batch))
        return batch

    def learn(self, batch: TensorDictBase) -> None:
        """The update on a freshly collected batch (``training_step`` plays it: ``collect``,
        ``yahtzee_lightning.loop.collection``; an ensemble's, ``ensemble``,
        plays every member's games through one stacked forward). One of three routes, each a plain call:

        * one network: ``learn_network``, below;
        * an ensemble packed as one update (``ensemble_update: batched``): ``packed_learn``
          (``yahtzee_lightning.loop.packed``), every member's ``learn_network`` steps at once;
        * an ensemble member by member: ``learn_member_by_member`` (``ensemble``)
          calls ``learn_network`` as each member in turn (``as_member``: its network, settings,
          optimiser, schedule), then counts one update.
        """
        if not self.in_ensemble():
            self.learn_network(batch)
        elif self.packed():
            self.packed_learn(batch)
        else:
            self.learn_member_by_member(batch)

    def learn_network(self, batch: TensorDictBase) -> None:
        """One network's update on its batch, its schedules and, every ``log_every`` updates, its metrics:

        1. ``entropy_coefs`` and ``gamma`` (``settings``): the schedules now;
        2. on a logging update only, ``diagnose`` (``diagnosis``): the
           exact regret of the batch;
        3. ``update`` (the subclass: its loss), built from ``.policy_gradient``'s parts
           (``advantages``, ``evaluate_actions`` under the acting masks, ``policy_gradient_step``),
           each optimiser step through ``step_optimizer`` (backward, clipping, Adam) below;
        4. the learning-rate schedule steps and ``updates_done`` counts the update;
        5. on a logging update, ``log_update`` (``diagnosis``): the collapse metrics and ``log_dict``.

        The logging-only metrics (the exact regret of ``diagnose``, the KL drift, action
        counts, mask diversity, top-k shares) cost about a fifth of an update; they draw no random
        numbers and change no weight, so skipping them leaves learning the same to the bit.
        """
        beta_roll, beta_score = self.entropy_coefs()
        coefs = {"beta_roll": beta_roll, "beta_score": beta_score, "gamma": self.gamma()}
        logs = self.logs_this_update()
        self.logging_now = logs
        if self.has_upper_head:
            self.set_upper_targets(batch)
        if not self.hparams.replay_dropout and DROPOUT_MASK in batch.keys():
            batch = batch.exclude(DROPOUT_MASK)  # the update's forward draws fresh masks (train mode)
        with self.own_generator():  # its minibatch orders and dropout masks: its own
            stats = (self.diagnose(batch) if logs else {}) | self.update(batch, coefs)
        self.lr_schedulers().step()
        self.updates_done += 1
        if logs:
            self.log_update(batch, stats, coefs, self.optimizers().param_groups[0]["lr"])
