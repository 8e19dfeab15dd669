"""A batch of games stepped on tensors alone: the environment's core, without TorchRL or TensorDict.

``YahtzeeEnv`` wraps it in TorchRL's specs and TensorDicts for
learning. What only plays (the evaluation protocol, the demo, the coached game) steps it directly
and so starts without importing TensorDict and TorchRL, about 2.6 s of imports on a 2-core box.
Both see the same games for the same seed: the dice come from here.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import torch

from ..game import BOX_NAMES, N_BOXES, N_KEEPS, OPEN, GameState, Rules, card_total, engine, legal_mask
from ..game.rules import N_FACES, N_ROLLS, TASKS
from . import keys as K

#: Where a single-turn episode starts: an empty card, a random partly filled one
#: (``engine.random_partial_cards``), or the card the agent's own play left (``own_play``: each game
#: plays on, one turn an episode, a new game after its last box; the first batch spread over the
#: turns by ``engine.staggered_games``), as the published code's single-turn training did.
START_CARDS = ("empty", "random", "own_play")
#: How a step's arithmetic runs: eagerly (``none``), as one compiled function (``compile``:
#: ``torch.compile``, fused kernels on any device) or as a replayed CUDA graph (``cudagraphs``:
#: ``torch.compile``'s ``reduce-overhead`` mode, CUDA only). The dice are drawn before it, outside
#: the compiled code, so a replayed graph rolls fresh dice every step.
CAPTURES = ("none", "compile", "cudagraphs")

#: An observation: the keys of ``yahtzee_lightning.env.keys`` to tensors with the games' batch
#: shape in front. A TensorDict is one as well: players read it by key alone.
Observation = dict[str, torch.Tensor]


def choice(name: str, value: str, options: tuple[str, ...]) -> str:
    """``value`` if it is one of ``options``; a setting's error naming both otherwise."""
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def observation(
    state: GameState,
    box_mask: torch.Tensor,
    score: torch.Tensor | None = None,
    keep_mask: torch.Tensor | None = None,
) -> Observation:
    """The raw-state observation of a batch of games (any batch shape), with its masks.

    ``score`` (the card's total) and ``keep_mask`` (every keep is always legal) may be passed in
    by a caller that keeps them, to save recomputing them every step.
    """
    if keep_mask is None:
        keep_mask = torch.ones(*state.dice_idx.shape, N_KEEPS, dtype=torch.bool, device=state.card.device)
    return {
        K.DICE: state.dice,
        K.CARD: state.card,
        K.ROLL: state.roll,
        K.TURN: state.turn,
        K.YAHTZEE_BONUSES: state.yahtzee_bonuses,
        K.SCORE: card_total(state.card, state.yahtzee_bonuses) if score is None else score,
        K.KEEP_MASK: keep_mask,
        K.BOX_MASK: box_mask,
    }


def check_capture(capture: str, device: torch.device) -> str:
    """``capture`` if this device can run it; else one line naming the setting and what would."""
    choice("capture", capture, CAPTURES)
    if capture == "cudagraphs" and device.type != "cuda":
        raise ValueError(
            f"capture: cudagraphs replays CUDA graphs and needs a CUDA device, not {device.type} "
            "(capture: compile fuses the step on any device)"
        )
    return capture


def own_code(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a function or a bound method) running a code object of its own. The compiler keeps its
    graphs per code object and, past its recompile limit (8), fails a ``fullgraph`` compile hard:
    every env's and policy's captured step shares one method's code, so a process that captured a
    few batch sizes or networks (a sweep, a benchmark's rows) failed at the next one."""
    func = getattr(fn, "__func__", fn)
    copy = types.FunctionType(
        func.__code__.replace(), func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    copy.__kwdefaults__, copy.__qualname__ = func.__kwdefaults__, func.__qualname__
    copy.__dict__.update(func.__dict__)
    return types.MethodType(copy, fn.__self__) if isinstance(fn, types.MethodType) else copy


def captured(fn: Callable[..., tuple], capture: str) -> Callable[..., tuple]:
    """``fn`` (tensors in, a tuple of tensors out) as ``capture`` runs it: itself, compiled, or
    replayed as a CUDA graph, whose outputs are copied out after each replay (the next replay
    overwrites them, and a rollout keeps every step's). Each compiled one with its own code
    (``own_code``), so that captures never count against each other's recompile limit."""
    if capture == "none":
        return fn
    if capture == "compile":
        return torch.compile(own_code(fn), dynamic=False, fullgraph=True)
    graph = torch.compile(own_code(fn), dynamic=False, fullgraph=True, mode="reduce-overhead")

    def replay(*args: Any) -> tuple:
        torch.compiler.cudagraph_mark_step_begin()
        return tuple(t.clone() if t is not None else None for t in graph(*args))

    return replay


def check_action_range(keep: torch.Tensor, box: torch.Tensor, state: GameState) -> None:
    """A keep pattern outside 0..31 while rolling, or a box outside 0..12 when scoring: refused."""
    rolling = state.roll < N_ROLLS - 1
    bad_keep = rolling & ((keep < 0) | (keep >= N_KEEPS))
    bad_box = ~rolling & ((box < 0) | (box >= N_BOXES))
    if bool(bad_keep.any()):
        i = int(bad_keep.nonzero()[0, 0])
        raise ValueError(f"game {i}: keep pattern {int(keep[i])} is out of range 0..{N_KEEPS - 1}")
    if bool(bad_box.any()):
        i = int(bad_box.nonzero()[0, 0])
        raise ValueError(f"game {i}: box {int(box[i])} is out of range 0..{N_BOXES - 1}")


def raise_illegal(state: GameState, box: torch.Tensor, legal: torch.Tensor) -> NoReturn:
    """The first game whose box was illegal, named with its dice and why."""
    i = int((~legal).nonzero()[0, 0])
    b = int(box.reshape(-1)[i])
    why = "is already filled" if int(state.card[i, b]) != OPEN else "is barred by the forced joker rule"
    dice = state.dice[i].tolist()
    raise ValueError(f"game {i}: illegal box {b} ({BOX_NAMES[b]}) for dice {dice}: it {why}")


class Games:
    """``num_games`` games of solitaire Yahtzee with their own random generator(s).

    One decision a step: the keep pattern while ``roll < 2``, the box when ``roll == 2``
    (``step`` takes both and uses the one the roll calls for). The arguments are
    ``YahtzeeEnv``'s, which holds one of these.
    """

    def __init__(
        self,
        num_games: int = 1,
        *,
        task: str = "full_game",
        rules: Rules | dict | None = None,
        start_card: str = "empty",
        validate_actions: bool = True,
        device: torch.device | str = "cpu",
        seed: int | Sequence[int] | None = None,
        capture: str = "none",
    ) -> None:
        if not isinstance(num_games, int) or num_games < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_games!r}")
        if isinstance(seed, Sequence) and (not seed or num_games % len(seed)):
            raise ValueError(f"a list of seeds splits the games in equal blocks: {num_games} games, {len(seed)} seeds")
        self.num_games = num_games
        self.device = torch.device(device)
        self.task = choice("task", task, TASKS)
        self.start_card = choice("start_card", start_card, START_CARDS)
        if self.start_card == "own_play" and self.task != "single_turn":
            raise ValueError(
                "start_card own_play continues single-turn episodes on their own cards: task must be single_turn"
            )
        self.rules = rules if isinstance(rules, Rules) else Rules.from_dict(rules)
        self.validate_actions = validate_actions
        self.capture = check_capture(capture, self.device)
        self._advance = captured(self._advance_eagerly, self.capture)
        self.generator: torch.Generator | engine.ReadAhead
        if isinstance(seed, Sequence):
            # One generator a block of games (an ensemble member's), read ahead: a step's dice for
            # every block in one slice (the same dice; with random start cards, whose draws are of
            # other kinds from the same generators, they are drawn block by block as they come).
            blocks = [torch.Generator(device=self.device).manual_seed(s) for s in seed]
            self.generator = (
                engine.ReadAhead(blocks, engine.randint(N_FACES), free=True) if self.start_card == "empty" else blocks
            )
        else:
            self.generator = torch.Generator(device=self.device)
            self.generator.manual_seed(int(torch.empty((), dtype=torch.int64).random_()) if seed is None else seed)
        self.state: GameState | None = None
        self.score: torch.Tensor | None = None  # each game's total, kept up to date by its rewards
        # Every keep is always legal: one all-True mask, shared by every observation (never written).
        self.keep_mask = torch.ones(num_games, N_KEEPS, dtype=torch.bool, device=self.device)

    def seed(self, seed: int | None) -> None:
        """Reseed: generator i (of a list) gets ``seed + i``; None draws a seed."""
        if seed is None:
            seed = int(torch.empty((), dtype=torch.int64).random_())
        generators = self.generator if isinstance(self.generator, list) else [self.generator]
        if isinstance(self.generator, engine.ReadAhead):
            self.generator.clear()  # its held dice came from the old seeds
            generators = self.generator.generators
        for i, g in enumerate(generators):
            g.manual_seed(seed + i)

    def current(self) -> GameState:
        """The games now (after ``reset``)."""
        if self.state is None:
            raise RuntimeError("call reset() before reading the state")
        return self.state

    def reset(self, which: torch.Tensor | None = None) -> Observation:
        """New games: all of them, or those where ``which`` (num_games,) is True (the rest play on).
        With ``start_card: own_play`` a game's next turn on its own card instead (after the first)."""
        shape, card = (self.num_games,), None
        if self.start_card == "own_play" and self.state is not None:
            # Each game's next turn on its own card (its last step rolled the dice); a full card starts anew.
            over = self.state.turn == len(self.rules.boxes)
            fresh = engine.new_games(shape, self.rules, self.device, self.generator).where(over, self.state)
        elif self.start_card == "own_play":
            blocks = len(self.generator) if isinstance(self.generator, list) else 1  # an ensemble's members alike
            fresh = engine.staggered_games(shape, self.rules, self.device, self.generator, self.num_games // blocks)
        else:
            if self.start_card == "random":
                card = engine.random_partial_cards(shape, self.rules, self.device, self.generator)
            fresh = engine.new_games(shape, self.rules, self.device, self.generator, card=card)
        if which is not None and self.state is not None:
            fresh = fresh.where(which, self.state)
        score = fresh.score
        self.state, self.score = fresh, score
        return observation(fresh, legal_mask(fresh.dice_idx, fresh.card, self.rules), score, self.keep_mask)

    def step(self, keep: torch.Tensor, box: torch.Tensor) -> tuple[Observation, torch.Tensor, torch.Tensor]:
        """One decision of every game: ``keep`` patterns (0..31) and ``box`` indices (num_games,).

        Returns the next observation, the points each game scored (int64) and whether it is over
        (the single-turn task ends each game after its box). With ``validate_actions`` an action
        out of range or an illegal box raises, naming the game, its dice and why.
        """
        state = self.current()
        rolling = state.roll < N_ROLLS - 1
        if self.validate_actions:
            check_action_range(keep, box, state)
        box = box.masked_fill(rolling, 0)  # the unused slot is ignored, whatever it holds
        fresh = engine.fresh_faces((self.num_games,), self.device, self.generator)  # outside any graph
        *tensors, score, reward, legal_box, done, legal = self._advance(*state.tensors(), self.score, keep, box, fresh)
        if self.validate_actions and not bool(legal_box.all()):
            raise_illegal(state, box, legal_box)
        self.state, self.score = GameState(*tensors), score
        return observation(self.state, legal, score, self.keep_mask), reward, done

    def _advance_eagerly(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A step's arithmetic on tensors alone (what ``capture`` compiles): the state's tensors,
        the scores, the actions and the drawn faces in; the next state's tensors, the scores, the
        rewards, whether each box was legal, whether each game is over and the next legal boxes out."""
        *tensors, score, keep, box, fresh = args
        state = GameState(*tensors)
        result = engine.step(state, keep, box, self.rules, fresh=fresh)
        done = result.game_over
        if self.task == "single_turn":
            done = done | (state.roll == N_ROLLS - 1)
        nxt = result.state
        legal = legal_mask(nxt.dice_idx, nxt.card, self.rules)
        return (*nxt.tensors(), score + result.reward, result.reward, result.legal, done, legal)
