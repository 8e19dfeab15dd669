"""A pack's update as one computation: ``ensemble_update: batched``.

An ensemble (``.ensemble``) plays its K members' games through one stacked forward pass, but by
default learns member by member: K losses, K backward passes, K clippings and K Adam steps, each
a few hundred operators, so that an update's host cost grows with K (a pack of 64 dispatched 63x
one member's operators). With ``ensemble_update: batched`` the members' weights live stacked, one
tensor ``(K, ...)`` per parameter (each member's parameters are views of its slice, so
checkpoints, exports and evaluations read the members as before), and each optimiser step is:

1. the algorithm's own loss, written for one member, mapped over the members with
   ``torch.func.vmap`` of ``torch.func.grad`` (``functional_call`` of the member's network on
   its slice of the weights): every member's gradient in one pass of batched operators;
2. each member's gradient clipped by its own norm (``tau_clip`` per member);
3. one Adam step over the stacked tensors (``PackAdam``): Adam is elementwise, so its
   stacked state is each member's own, and each member's learning rate is its own schedule's.

The losses reach this through ``PackedUpdate.optimizer_step`` (the single run's optimiser
step where there is no pack) and the minibatch orders through ``PackedUpdate.game_orders``:
an algorithm written for one run is packed without code of its own if its update draws no random
numbers beyond those and reads no setting that differs between members inside its loss. Members
may differ in the settings of ``PACKED_MEMBER_SETTINGS`` (their seed, learning rate and its
schedule, clipping, entropy schedules); any other difference is refused when the module is built.

What is given up: a member's numbers equal its single run's to float tolerance, not to the bit (a
batched matrix product rounds as it likes), so two packs of different K drift apart over a long
run as two machines would. The loop stays the default for that reason (the study's runs rely on
a member learning the same weights alone or in any pack).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn
from torch.func import functional_call, grad, vmap

from ..env.games import own_code

#: The settings an ``ensemble_update: batched`` pack's members may differ in: what is computed on
#: the host per member (its schedules) or applied per member outside the loss (clipping, Adam).
PACKED_MEMBER_SETTINGS = frozenset(
    {
        "seed",
        "lr",
        "r_alpha",
        "warmup",
        "hold",
        "value_lr_scale",
        "tau_clip",
        "beta_roll_max",
        "beta_roll_min",
        "beta_score_max",
        "beta_score_min",
        "entropy_hold",
        "entropy_anneal",
    }
)
ENSEMBLE_UPDATES = ("loop", "batched")


class PackAdam(torch.optim.Optimizer):
    """Adam over one ``(K, P)`` tensor, the K members' P weights, each member at its own learning rate.

    ``member_lr``, a ``(K,)`` tensor, is set before every ``step`` (the members' schedules);
    ``scale``, ``(K, P)`` or None, multiplies it weight by weight (the value head's
    ``value_lr_scale``). The arithmetic is ``torch.optim.Adam``'s (no weight decay, no amsgrad):
    the same numbers to float rounding, member by member, in a dozen operators whatever K and the
    number of layers."""

    def __init__(
        self,
        flat: torch.Tensor,
        scale: torch.Tensor | None = None,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        super().__init__([flat], {"betas": betas, "eps": eps})
        self.scale = scale
        self.member_lr: torch.Tensor | None = None

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if self.member_lr is None:
            raise RuntimeError("PackAdam.member_lr must be set before a step")
        group = self.param_groups[0]
        (p,), ((b1, b2), eps) = group["params"], (group["betas"], group["eps"])
        if p.grad is None:
            return loss
        state = self.state[p]
        if not state:
            state.update(step=torch.zeros(()), exp_avg=torch.zeros_like(p), exp_avg_sq=torch.zeros_like(p))
        state["step"] += 1
        step = float(state["step"])
        m, v, g = state["exp_avg"], state["exp_avg_sq"], p.grad
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / math.sqrt(1 - b2**step)).add_(eps)
        step_size = (self.member_lr / (1 - b1**step)).unsqueeze(1)  # (K, 1): each member's step
        if self.scale is not None:
            step_size = step_size * self.scale
        p.addcdiv_(m * step_size, denom, value=-1.0)
        return loss


def stack_weights(members: nn.ModuleList) -> tuple[torch.Tensor, dict[str, slice], dict[str, torch.Tensor]]:
    """The members' parameters as one ``(K, P)`` tensor, and per parameter name its columns and its
    ``(K, ...)`` view; each member's parameters become views of its row (stepping the tensor steps
    the members)."""
    names = [name for name, _ in members[0].named_parameters()]
    flat = torch.stack([torch.cat([m.get_parameter(n).detach().reshape(-1) for n in names]) for m in members])
    columns, stacks, start = {}, {}, 0
    for name in names:
        shape = members[0].get_parameter(name).shape
        columns[name] = slice(start, start + math.prod(shape))
        stacks[name] = flat[:, columns[name]].view(len(members), *shape)
        for k, m in enumerate(members):
            m.get_parameter(name).data = flat[k, columns[name]].view(shape)
        start = columns[name].stop
    return flat, columns, stacks


def clip_members(grad: torch.Tensor, tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each member's gradient, a row of ``grad`` ``(K, P)``, scaled to norm ``tau[k]`` at most, in
    place (``clip_grad_norm_`` member by member; ``tau`` inf: none). Returns the norms before
    clipping and whether each was clipped."""
    norm = torch.linalg.vector_norm(grad, dim=1)
    grad.mul_((tau / (norm + 1e-6)).clamp(max=1.0).unsqueeze(1))
    return norm, (norm > tau).float()


class _MemberNet:
    """One member's network inside the mapped loss: the template's code on the member's weights."""

    def __init__(self, template: nn.Module, params: dict[str, torch.Tensor]) -> None:
        self._template, self._params = template, params

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return functional_call(self._template, self._params, args, kwargs)

    def __getattr__(self, name: str) -> Any:  # its settings and weight-free methods: the template's
        return getattr(self._template, name)


class PackedUpdate:
    """The ``ensemble_update: batched`` part of
    ``OnPolicyAlgorithm`` (module docstring)."""

    #: Whether the algorithm's update can be packed: each of its optimiser steps through
    #: ``optimizer_step`` (not ``step_optimizer``), its random draws through ``game_orders``, no
    #: setting that differs between members read inside its loss. An algorithm says so (REINFORCE,
    #: A2C and PPO do); ``ensemble_update: batched`` refuses the others by name.
    PACKABLE = False
    _packing = False  # inside a packed update (``self.net`` the stacked forward, steps mapped)

    def packed(self) -> bool:
        """Whether this module's ensemble learns as one update (``ensemble_update: batched``)."""
        return self.members is not None and self.hparams.ensemble_update == "batched"

    def check_packed_settings(self) -> None:
        """Refuse, naming the setting, a batched pack whose algorithm or members it cannot pack."""
        if not self.packed():
            return
        if not self.PACKABLE:
            raise ValueError(
                f"ensemble_update: batched cannot pack {type(self).__name__} (its loss is not mapped over "
                "members); use ensemble_update: loop"
            )
        first = self.member_settings[0]
        for i, settings in enumerate(self.member_settings):
            for key in (set(settings) | set(first)) - PACKED_MEMBER_SETTINGS:
                if settings.get(key, self.hparams[key]) != first.get(key, self.hparams[key]):
                    raise ValueError(
                        f"ensemble member {i}: {key} differs from member 0's, which ensemble_update: batched "
                        f"cannot map (members may differ in {', '.join(sorted(PACKED_MEMBER_SETTINGS))}); "
                        "use ensemble_update: loop"
                    )

    def configure_packed_optimizer(self) -> dict[str, Any]:
        """The members' weights stacked (their parameters views of them) and one ``PackAdam``
        over the stacks; no Lightning schedule (each member's learning rate is set every update)."""
        if self.world_size > 1:
            raise ValueError("ensemble_update: batched trains on one device; use ensemble_update: loop under DDP")
        flat, columns, stacks = stack_weights(self.members)
        object.__setattr__(self, "_flat", flat)
        object.__setattr__(self, "_stacks", stacks)
        object.__setattr__(self, "_template", copy.deepcopy(self.members[0]))
        self._stacked.share_(stacks)
        scales = [s.get("value_lr_scale", self.hparams.value_lr_scale) for s in self.member_settings]
        scale = None
        if any(x != 1.0 for x in scales):  # the value head's weights at their members' scale
            scale = torch.ones_like(flat)
            for name, cols in columns.items():
                if name.startswith("value_head."):
                    scale[:, cols] = torch.tensor(scales, device=flat.device).unsqueeze(1)
        return {"optimizer": PackAdam(flat, scale)}

    def member_tensor(self, read: Callable[[], float]) -> torch.Tensor:
        """``(K,)``: ``read()`` as each member (its settings and schedules), on the device."""
        values = []
        for k in range(self.ensemble_size):
            with self.as_member(k):
                values.append(float(read()))
        return torch.tensor(values, device=self.device)

    def packed_learn(self, batch: TensorDictBase) -> None:
        """One update of every member at once (``learn_network`` as each member in turn, as one)."""
        logs = self.logs_this_update()
        self.logging_now = logs
        progress = self.progress  # one read of the update counter, not one per member and schedule
        beta = [self.member_tensor(lambda i=i: self.entropy_coefs(progress)[i]) for i in (0, 1)]
        coefs = {"beta_roll": beta[0], "beta_score": beta[1], "gamma": self.gamma(progress)}  # gamma: shared
        opt = self.optimizers().optimizer
        opt.member_lr = self.member_tensor(lambda: self.lr_at(progress))
        diagnosis = []
        if logs:  # before the update, as in the loop
            for k in range(self.ensemble_size):
                with self.as_member(k):
                    diagnosis.append(self.diagnose(self.member_batch(batch, k)))
        with self._packed_update():
            stats = self.update(batch, coefs)
        done = int(self.updates_done)
        if logs:
            for k in range(self.ensemble_size):
                with self.as_member(k):
                    member_coefs = {
                        "beta_roll": float(beta[0][k]),
                        "beta_score": float(beta[1][k]),
                        "gamma": coefs["gamma"],
                    }
                    member_stats = diagnosis[k] | {name: value[k] for name, value in stats.items()}
                    self.log_update(self.member_batch(batch, k), member_stats, member_coefs, float(opt.member_lr[k]))
        self.updates_done.fill_(done + 1)
        self._write_steps()
        self._log_bar(on_step=True)

    @contextlib.contextmanager
    def _packed_update(self) -> Iterator[None]:
        """Inside: ``self.net`` is the stacked forward (the update's weight-free passes: next values),
        and ``optimizer_step`` and ``game_orders`` work on every member at once."""
        saved = self.net
        object.__setattr__(self, "net", self._stacked)
        self._packing = True
        try:
            yield
        finally:
            self._packing = False
            object.__setattr__(self, "net", saved)

    def captured(self, loss_fn: Callable[..., Any]) -> Callable[..., Any]:
        """``loss_fn``, compiled where ``capture`` asks (forward and backward as fused kernels, by
        ``torch.compile``'s default mode for either setting: a replayed graph would overwrite the
        metrics an update keeps until its end), once per loss; as it is elsewhere, and in an
        ensemble's loop (each member's network would be a graph of its own: K compilations)."""
        if self.hparams.capture == "none" or self.members is not None:
            return loss_fn
        cache = self.__dict__.setdefault("_compiled_losses", {})
        key = getattr(loss_fn, "__func__", loss_fn)
        if key not in cache:
            cache[key] = torch.compile(own_code(loss_fn), dynamic=False)  # its own recompile count
        return cache[key]

    def _as_tensors(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """A compiled loss's arguments: the numbers of a dict (the schedules' coefficients, new every
        update) as tensors, which a compiled function reads as inputs rather than recompiling for."""
        if self.hparams.capture == "none" or self.members is not None:
            return args
        return tuple(
            {k: torch.tensor(v, device=self.device) if isinstance(v, float) else v for k, v in a.items()}
            if isinstance(a, dict)
            else a
            for a in args
        )

    @property
    def members_learning(self) -> int:
        """How many members the update being made learns at once: K in a packed update, else 1."""
        return self.ensemble_size if self._packing else 1

    def game_orders(self, games: int) -> torch.Tensor:
        """A random order of a batch's ``games``: ``(games,)``, or in a packed update ``(K, games)``,
        row ``k`` member ``k``'s games (batch rows ``k * games ..``) in an order from its own generator."""
        if not self._packing:
            return torch.randperm(games, device=self.device)
        orders = []
        for k in range(self.ensemble_size):
            with self.as_member(k), self.own_generator():
                orders.append(torch.randperm(games, device=self.device) + k * games)
        return torch.stack(orders)

    def optimizer_step(self, loss_fn: Callable[..., tuple[torch.Tensor, dict]], *args: Any) -> dict[str, torch.Tensor]:
        """``loss_fn(*args)``'s optimiser step: ``(loss, metrics)`` of one member's data; returns the
        metrics with the loss, the gradient norm and whether it was clipped (tensors on the device).

        In a packed update every tensor or TensorDict in ``args`` holds the K members' rows,
        member-major, and a dict holds per-member ``(K,)`` tensors (or numbers shared by all): the
        loss runs once per member under ``vmap`` and every metric comes back ``(K,)``."""
        if not self._packing:
            loss, stats = self.captured(loss_fn)(*self._as_tensors(args))
            grad_norm, clipped = self.step_optimizer(loss)
            return {"loss": loss.detach(), **stats, "grad_norm": grad_norm, "grad_clipped": clipped}
        k = self.ensemble_size
        template, stacks, flat = self._template, self._stacks, self._flat
        template.train(self.training)

        def member_loss(params: dict[str, torch.Tensor], *member_args: Any) -> tuple[torch.Tensor, Any]:
            saved = self.net
            object.__setattr__(self, "net", _MemberNet(template, params))
            try:
                loss, stats = loss_fn(*member_args)
            finally:
                object.__setattr__(self, "net", saved)
            return loss, (loss.detach(), stats)

        def split(x: Any) -> Any:
            if isinstance(x, (torch.Tensor, TensorDictBase)):
                return x.reshape(k, -1, *x.shape[1:])
            return x

        def dims(x: Any) -> Any:
            if isinstance(x, dict):
                return {name: 0 if isinstance(v, torch.Tensor) else None for name, v in x.items()}
            return 0 if isinstance(x, (torch.Tensor, TensorDictBase)) else None

        in_dims = (0, *[dims(a) for a in args])
        grads, (loss, stats) = vmap(grad(member_loss, has_aux=True), in_dims=in_dims)(stacks, *[split(a) for a in args])
        tau = self.member_tensor(lambda: self.hparams.tau_clip if self.hparams.tau_clip > 0 else math.inf)
        flat.grad = torch.cat([grads[name].reshape(k, -1) for name in stacks], dim=1)
        grad_norm, clipped = clip_members(flat.grad, tau)
        self.optimizers().step()
        flat.grad = None
        return {"loss": loss, **stats, "grad_norm": grad_norm, "grad_clipped": clipped}
