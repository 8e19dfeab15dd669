"""Evaluation during and after training: the greedy player, whom it plays, and what is logged.

A mixin of ``OnPolicyAlgorithm``: every interval the
validation loop plays ``eval_games``; at the end of training ``final_eval_games`` are played
against the optimum (or, with ``n_players`` >= 2, matches against the evaluation opponent).
"""

from __future__ import annotations

import time
from typing import Any

from ..resolve import load_agent, player_factory


class Evaluation:
    """The learner as a player, its opponents, the interval evaluations and the final one."""

    def opponent(self) -> Any:
        """The N-player env's opponents: ``self`` (the learner, live), else a factory of the named
        player or agent folder (a fresh one per seat)."""
        if self.hparams.opponent == "self":
            return self.player(greedy=False)
        return player_factory(self.hparams.opponent, self.rules, self.device)

    def eval_opponent(self) -> Any:
        """Whom evaluations play: ``eval_opponent``, else the training opponent (``optimal`` in self-play)."""
        name = self.hparams.eval_opponent or self.hparams.opponent
        return "optimal" if name == "self" else name

    def player(self, greedy: bool = True):
        from ..players.agent import AgentPlayer

        return AgentPlayer(self.net, greedy=greedy, name=type(self).__name__.lower())

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        h = self.hparams
        if h.n_players >= 2:
            from ..evaluation.match import play_matches

            r = play_matches(
                self.player(),
                self.eval_opponent(),
                h.eval_games,
                h.seed + 7919,
                self.rules,
                h.n_players,
                device=self.device,
                load=load_agent,
            )
            metrics = {"eval/mean_score": r["player_score"]["mean"], "eval/win_rate": r["win"]["rate"]}
        else:
            from ..evaluation import play_games, summarize

            oracle = self.make_oracle("optimal") if h.diagnose_games > 0 else None
            raw = play_games(self.player(), h.eval_games, h.seed + 7919, self.rules, self.device, regret_oracle=oracle)
            s = summarize(raw, self.rules)
            metrics = {
                "eval/mean_score": s["score"]["mean"],
                "eval/upper_bonus_rate": s["upper_bonus_rate"],
                "eval/yahtzee_rate": s["yahtzee_rate"],
            }
            if "regret" in s:  # where the points go: per decision, per turn, per box
                r = s["regret"]
                metrics |= {"eval/regret_per_game": r["per_game_mean"], "eval/regret_keep": r["keep_mean"]}
                metrics["eval/regret_box"] = r["box_mean"]
                metrics |= {f"eval_regret_turn/{t + 1:02d}": v for t, v in enumerate(r["by_turn"])}
                metrics |= {f"eval_regret_box/{name}": v for name, v in r["by_box"].items()}
        metrics["eval/games"] = float(self.updates_done) * h.games_per_batch * self.world_size
        metrics["eval/wall_clock_s"] = time.monotonic() - getattr(self, "_started", time.monotonic())
        self.log_dict(metrics, sync_dist=True, batch_size=1)
        self.log("eval_score", metrics["eval/mean_score"], prog_bar=True, logger=False, sync_dist=True, batch_size=1)

    def on_train_end(self) -> None:
        h = self.hparams
        if h.final_eval_games <= 0 or self.global_rank != 0:
            return
        games, seed = h.final_eval_games, h.seed + 104729
        if h.n_players >= 2:
            from ..evaluation.match import format_match, play_matches

            self.final_evaluation = play_matches(
                self.player(),
                self.eval_opponent(),
                games,
                seed,
                self.rules,
                h.n_players,
                device=self.device,
                progress=True,  # minutes after the last update: a bar, or a line every interval off a terminal
                load=load_agent,
            )
            print(format_match(self.final_evaluation))
        else:
            from ..evaluation import evaluate
            from ..evaluation.report import format_text

            self.final_evaluation = evaluate(self.player(), games, seed, self.rules, self.device, progress=True)
            print(format_text(self.final_evaluation))
