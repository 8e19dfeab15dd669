"""The report's tables (Markdown): entropy regimes, the full-game summary, the score distribution and
population-based training; each writes its file and returns its number of rows. A cell's number
is its mean over seeds with the interval of ``stats`` in brackets (none with one seed)."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import pandas as pd

from ...loop.resume import last_checkpoint
from ...manifest import file_sha256
from ..judging.context import (
    THRESHOLD_COLUMNS,
    Context,
    Series,
    agents,
    budget_text,
    label_of_cell,
    markdown_table,
    mean_and_interval,
    reference_columns,
    reference_rows,
)
from ..judging.stats import paired
from ..model import StudyError
from ..records import FRESH, digested_text, read_record

FRESH_SEED = 15_485_863  # added to a member's seed: games that neither its evaluations nor its final one played


def table_entropy(ctx: Context, ablations: list[str], path: Path) -> int:
    """Entropy regimes: mean score, bonus and Yahtzee rates, regret per game, per cell."""
    rows = []
    for s in ctx.all_series(ablations):
        f = s.finals
        if f.empty:
            continue
        pct = [mean_and_interval(f[c], c) for c in ("upper_bonus_rate", "yahtzee_rate")]
        regret = mean_and_interval(f.get("regret_per_game", pd.Series()), "regret_per_game")
        rows.append([s.label, str(len(f)), mean_and_interval(f["mean_score"], "mean_score"), *pct, regret])
    rows += reference_rows(ctx, lambda r: [r["score"]["mean"], r["upper_bonus_rate"], r["yahtzee_rate"]])
    header = ["regime", "seeds", "mean score", "upper bonus %", "Yahtzee %", "regret per game"]
    path.write_text(markdown_table(header, rows))
    return len(rows)


def fresh_scores(ctx: Context, s: Series) -> pd.DataFrame:
    """Each member of a cell played again on fresh games (its seed + ``FRESH_SEED``, as many as its
    final evaluation) from its run folder's last checkpoint: mean and median per seed. Where the
    study folder holds no weights (a report's committed copy), what the cache kept of them, else
    nothing. Cached in ``OUT/fresh.json``, keyed
    by the checkpoint's sha256 too: a run trained again is played again (its old entry dropped)."""
    from ...algorithms import ALGORITHMS
    from ...evaluation import evaluate
    from ...hub import AgentError
    from ...loop.export import agent_from_checkpoint

    path = ctx.out / FRESH
    cache = read_record(path, "computed again") or {}
    games, rows = ctx.study.cells[s.cell].final_eval_games, []
    digests: dict[Path, str] = {}
    for t in ctx.trials:
        ckpt = last_checkpoint(ctx.out / t.run_dir / "checkpoints")  # either layout: flat, or a folder per run
        if t.cell != s.cell or not (ctx.out / t.run_dir / "final.json").exists():
            continue
        # A seed's member in the run: its index among the seeds, or, packed, its place in the pack's
        # ensemble (the cells of a pack share the run folder and the seeds; the key names the member).
        members = t.members or (list(range(len(t.seeds))) if len(t.seeds) > 1 else [None])
        for member, seed in zip(members, t.seeds, strict=True):
            where = f"{t.run_dir}#{seed}#{games}" if member is None else f"{t.run_dir}#member{member}#{seed}#{games}"
            if ckpt is None:  # a committed copy without weights: what the cache played of them, if anything
                rows += [{"seed": seed, **v} for k, v in cache.items() if k.rpartition("#")[0] == where][:1]
                continue
            key = f"{where}#{digests.setdefault(ckpt, file_sha256(ckpt))}"
            for stale in [k for k in cache if k.rpartition("#")[0] == where and k != key]:
                del cache[stale]  # the same member's entry for other weights
            if key not in cache:
                try:
                    agent = agent_from_checkpoint(ckpt, None if member is None else str(member), algorithms=ALGORITHMS)
                except (AgentError, OSError, pickle.UnpicklingError) as e:  # damaged: named, never a traceback
                    raise StudyError(f"{e} (T1 plays each member's last checkpoint again on fresh games)") from None
                summary = evaluate(agent.player(), games, seed + FRESH_SEED, with_optimal=False, regret=False)
                cache[key] = {"mean_score": summary["summary"]["score"]["mean"], "median": summary["summary"]["median"]}
            rows.append({"seed": seed, **cache[key]})
    if rows:
        path.write_text(digested_text(cache))
    return pd.DataFrame(rows, columns=["seed", "mean_score", "median"])


def against_greedy(f: pd.DataFrame) -> str:
    """A cell's mean score minus the greedy player's on each seed's own final games, paired per seed."""
    done = f[f["status"] == "done"] if "status" in f else f
    if "greedy/mean_score" not in done or done["greedy/mean_score"].isna().any() or done.empty:
        return "-"
    c = paired(done["mean_score"], done["greedy/mean_score"])
    return f"{c.effect:+.1f} [{c.low:+.1f}, {c.high:+.1f}]" if not math.isnan(c.low) else f"{c.effect:+.1f}"


def summary_agents(ctx: Context, ablations: list[str]) -> list[tuple[Series, str]]:
    """T1's agents and what each row's "picked" column says: the best cell of each algorithm among
    the cells of ``ablations``, and after it, where another of the study's cells of that algorithm
    scores higher (an ablation T1 does not draw: a lambda, a width), the study's best cell of that
    algorithm. Both picked after the fact, on the games they are judged on."""
    pool = [n for n, ab in ctx.study.ablations.items() if not ab.scheduler]
    scope = "" if set(pool) <= set(ablations) else f" of {', '.join(ablations)}"

    def key(s: Series) -> tuple[str, str, str]:
        cell = ctx.study.cells[s.cell]
        return (cell.algorithm, cell.task, cell.start_from or "")

    best = {key(s): s for s in agents(ctx, pool)} if scope else {}
    out = []
    for s in agents(ctx, ablations):
        many = f"best of {s.picked_from} cells{scope}, after the fact"
        out.append((s, many if s.picked_from > 1 else f"the only cell{scope}"))
        if (b := best.get(key(s))) is not None and b.cell != s.cell:
            out.append((b, f"best of {b.picked_from} cells of the study, after the fact"))
    return out


def table_summary(ctx: Context, ablations: list[str], path: Path) -> int:
    """T1: per agent (best cell of each algorithm among the ablations it draws, and the study's best
    where that is another cell; ``summary_agents``) the budget, mean and median, both again on fresh
    games, SD, rates, share >= 250, regret."""
    rows = []
    for name, r in reference_columns(ctx):
        exact = f"{r['exact_expected_score']:.2f} (exact; {r['score']['mean']:.1f} here)" if name == "optimal" else ""
        rows.append(
            [
                name,
                "-",
                "exact" if name == "optimal" else "-",
                exact or f"{r['score']['mean']:.1f}",
                f"{r['median']:.0f}" if "median" in r else "-",
                "-",
                "-",
                f"{r['score']['sd']:.1f}",
                f"{100 * r['upper_bonus_rate']:.1f}",
                f"{100 * r['yahtzee_rate']:.1f}",
                f"{100 * r['share_at_least_250']:.1f}",
                "0" if name == "optimal" else f"{r['regret']['per_game_mean']:.1f}" if "regret" in r else "-",
                "-",
            ]
        )
    for s, picked in summary_agents(ctx, ablations):
        f, cell = s.finals, ctx.study.cells[s.cell]
        fresh = fresh_scores(ctx, s)
        detail = label_of_cell(ctx, s)
        rows.append(
            [
                s.label if detail in s.label else f"{s.label} ({detail})",
                picked,
                budget_text([cell], per=""),
                mean_and_interval(f["mean_score"], "mean_score"),
                mean_and_interval(f["median"], "median", 0),
                mean_and_interval(fresh["mean_score"], "mean_score") if len(fresh) else "no weights",
                mean_and_interval(fresh["median"], "median", 0) if len(fresh) else "no weights",
                mean_and_interval(f["sd"], "sd"),
                mean_and_interval(f["upper_bonus_rate"], "upper_bonus_rate"),
                mean_and_interval(f["yahtzee_rate"], "yahtzee_rate"),
                mean_and_interval(f["share_at_least_250"], "share_at_least_250"),
                mean_and_interval(f["regret_per_game"], "regret_per_game"),
                against_greedy(f),
            ]
        )
    header = ["agent", "picked", "training", "mean", "median", "mean, fresh games", "median, fresh games"]
    header += ["SD", "upper bonus %", "Yahtzee %", "games >= 250 %", "regret/game", "minus greedy, same games"]
    path.write_text(markdown_table(header, rows))
    return len(rows)


def table_distribution(ctx: Context, ablations: list[str], path: Path) -> int:
    """T2: P(score >= n) per agent, the optimum and the greedy player."""
    rows = []
    for name, summary in reference_columns(ctx):
        rows.append([name, *(f"{100 * summary['p_score_at_least'][n]:.2f}" for n in THRESHOLD_COLUMNS)])
    for s in agents(ctx, ablations):
        rows.append([s.label, *(mean_and_interval(s.finals[f"p_ge_{n}"], f"p_ge_{n}", 2) for n in THRESHOLD_COLUMNS)])
    path.write_text(markdown_table(["agent", *(f"P(>= {n}) %" for n in THRESHOLD_COLUMNS)], rows))
    return len(rows)


def table_population(ctx: Context, ablations: list[str], path: Path) -> int:
    """B2: the population's best member and mean against the fixed settings, with the best's evolved settings."""
    rows = []
    for name in ablations:
        for s in ctx.series(name):
            f = s.finals
            if f.empty:
                continue
            if ctx.study.ablations[name].scheduler:
                best = f.loc[f["mean_score"].idxmax()]
                settings = ", ".join(f"{k.split('.')[-1]}={best[k]:.3g}" for k in f.columns if k.startswith("setting/"))
                rows.append(
                    [f"{name}: best member (seed {int(best['seed'])})", "1", f"{best['mean_score']:.1f}", settings]
                )
                rows.append(
                    [f"{name}: population mean", str(len(f)), mean_and_interval(f["mean_score"], "mean_score"), ""]
                )
            else:
                rows.append(
                    [
                        f"{name}: fixed settings ({s.label})",
                        str(len(f)),
                        mean_and_interval(f["mean_score"], "mean_score"),
                        "",
                    ]
                )
    path.write_text(markdown_table(["who", "members", "final mean score", "evolved settings (the best's last)"], rows))
    return len(rows)
