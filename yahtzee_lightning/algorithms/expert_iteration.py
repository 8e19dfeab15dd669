"""Expert iteration: the network learns from its own search, never from the exact table.

The student plays; every position it reaches is labelled by the look-ahead of ``lookahead:AGENT``:
the rest of the turn searched exactly (its dice, keeps and boxes) against the agent's own learned
turn-start value, the value read where the batch's cards need it. The student learns those labels
with ``Distill``'s loss (cross-entropy to the search's choice, the expected points
its own choices give up against the search, the value toward the search's value). The search is
better than the network that feeds it (it sees the whole turn exactly), so imitating it improves
the network; learning the turn-start value again from the improved network's games
(``yahtzee-lightning turn-value``) improves the search; the loop repeats, one stage at a time:

    yahtzee-lightning fit --config conf/expert_iteration.yaml          # value_from: the agent
    yahtzee-lightning export runs/expert_iteration/checkpoints/last.ckpt stage1
    yahtzee-lightning turn-value --agent stage1 --config conf/turn_value/a2c_best_stage2.yaml
    yahtzee-lightning fit --config conf/expert_iteration.yaml --model.init_args.init_from stage1 \\
        --model.init_args.value_from stage1                           # the next stage

Nothing here reads the solver's table or an oracle label: the labels are the search's, the
training diagnostics (``diagnose_games``, the evaluations' regret) that would read the table are
refused, and the table is only for judging the result afterwards (``evaluate``).
"""

from __future__ import annotations

from typing import Any

import torch

from .distill import Distill, LabelledPolicy


class SearchTeacher:
    """The action values of ``lookahead:AGENT``'s search, as the labelling policy asks an oracle for them."""

    def __init__(self, search: Any) -> None:
        self.search = search  # a LookaheadPlayer: its oracle searches against the agent's value

    @torch.no_grad()
    def action_values(self, dice: torch.Tensor, roll: torch.Tensor, card: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self.search.prepare(card)  # the value at the states one box after these cards, read once
        return self.search.oracle.action_values(dice, roll, card)


class ExpertIteration(Distill):
    """``Distill`` toward the agent's own search (``lookahead:value_from``) instead of the exact optimum.

    Args:
        value_from: an agent (folder, shipped name or hub id) carrying a turn-start value, learned
            from its own games (``yahtzee-lightning turn-value``): the search's value. Usually the
            agent this stage starts from (``init_from``).
        diagnose_games: must be 0: the logged regret against the exact table would read it.
    """

    def __init__(self, value_from: str = "", diagnose_games: int = 0, final_eval_games: int = 0, **kwargs: Any) -> None:
        super().__init__(diagnose_games=diagnose_games, final_eval_games=final_eval_games, **kwargs)
        # Loaded once, now: an agent without a search to learn from is refused here, not mid-run.
        # (A player, not a module: it is not this module's weights and stays out of checkpoints.)
        self._search = self.search_agent()

    def validate_settings(self) -> None:
        super().validate_settings()
        h = self.hparams
        if h.teacher != "auto":
            raise ValueError(
                f"teacher must be auto for expert iteration, got {h.teacher!r}: the teacher is the search of value_from"
            )
        if not h.value_from:
            raise ValueError(
                "value_from must name an agent that carries a turn-start value (its search labels the games)"
            )
        if h.diagnose_games:
            raise ValueError(
                f"diagnose_games must be 0 for expert iteration, got {h.diagnose_games}: it would read the exact "
                "table (judge the agent afterwards: yahtzee-lightning evaluate)"
            )
        if h.final_eval_games:
            raise ValueError(
                f"final_eval_games must be 0 for expert iteration, got {h.final_eval_games}: the final evaluation "
                "compares with the exact optimum (run yahtzee-lightning evaluate afterwards)"
            )

    def search_agent(self) -> Any:
        """``lookahead:value_from`` (on the CPU); an agent without a turn-start value, or playing
        other rules than this run, is one line naming it and the command that learns its value."""
        from ..players.lookahead import lookahead_player
        from ..resolve import load_agent

        name = self.hparams.value_from
        agent = load_agent(name, "cpu", self.rules)
        if agent.rules != self.rules:
            raise ValueError(f"value_from {name}: the agent plays {agent.rules.tag()}, this run {self.rules.tag()}")
        return lookahead_player(agent, name)

    @classmethod
    def complete_agent(cls, agent: Any, hparams: Any) -> None:
        """The exported network carries the turn-start value that taught it (``value_from``'s): its
        ``lookahead:`` searches as its teacher did. ``yahtzee-lightning turn-value`` on the agent
        learns its own from its games in place of it."""
        from ..hub import YahtzeeAgent
        from ..resolve import agent_source

        name = hparams["value_from"]
        teacher = YahtzeeAgent.from_pretrained(agent_source(name))
        agent.turn_value = teacher.turn_value
        agent.turn_value_info = {
            **teacher.turn_value_info,
            "taught_by": f"the value of {name}, whose search labelled this network's games",
        }

    def search_teacher(self) -> SearchTeacher:
        """The search on this module's device, as the labelling policy's oracle."""
        from ..players.lookahead import LookaheadPlayer

        search = self._search
        return SearchTeacher(LookaheadPlayer(search.value.value.to(self.device), self.rules, self.device, search.name))

    def collection_policy(self) -> LabelledPolicy:
        return LabelledPolicy(self.net, self.search_teacher(), self.teacher_mix())


__all__ = ["ExpertIteration", "SearchTeacher"]
