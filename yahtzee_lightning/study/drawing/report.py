"""A study's report: a file per exhibit (``F1.png``, ``T2.md``, ...), ``claims.md`` and an ``index.md`` showing them.

Every number is a mean over a cell's seeds with its 95 % interval as a band, error bar or in
brackets: Student's t with n - 1 degrees of freedom over the seeds, cut at the quantity's range
(``stats``); none with one seed. The exact optimum and the greedy player are reference lines
where they apply: the optimum's exact expected score, and both players' statistics on the same
games as a member's final evaluation (the optimal player's come with every final evaluation; the
greedy player's are played here once and kept in ``OUT/reference.json``). Captions say what the
lines show, the budget, the games and how the intervals were made; ``claims.md`` judges the
study's orderings from the results (``claims``).
"""

from __future__ import annotations

import json
from pathlib import Path

from ...game import BOX_NAMES
from ...manifest import MANIFEST, Manifest, file_sha256
from ...replace import replacing
from ..chain import scratch_twin
from ..judging.claims import write_claims
from ..judging.context import (
    KEY_BOXES,
    LOWER,
    REFERENCE,
    UPPER,
    Context,
    Exhibit,
)
from ..judging.provenance import provenance_lines, setting_lines
from ..judging.stats import BOOTSTRAP
from ..model import Study, StudyError
from ..ownership import REPORT, locked
from ..records import SESSIONS, read_lines
from ..spec import EXHIBIT_IDS
from .aggregates import draw_profiles, table_aggregates, table_improvement
from .factorial_figure import draw_factorial
from .figures import (
    draw_agent_bars,
    draw_bars,
    draw_curves,
    draw_pareto,
    draw_population,
    draw_regret,
)
from .tables import (
    FRESH,
    table_distribution,
    table_entropy,
    table_population,
    table_summary,
)

BARS, TABLE = "error bars", "brackets"
CLAIMS = "claims.md"
CLAIMS_NOTE = (
    "Confirmatory: the study file's hypotheses, written down before the runs, each tested as written (two-sided "
    "p; Welch's t-test between cells, a paired t-test against a reference player on each seed's own games, a "
    "one-sample t-test against a number, the Brown-Forsythe test for a spread over seeds), with Holm's correction "
    "across them. Exploratory, and labelled so: every other comparison, without correction: within each ablation "
    "each cell against the next one down by its final mean (pairs chosen after ranking), a chained cell (a "
    "transfer) against its settings trained from a random start, a cell against the same recipe at another "
    "network size at the evaluation nearest its budget (the same games trained), the factorial effects "
    "(contrasts of cell means, Welch-Satterthwaite df), each agent of T1 (picked after the fact) against the "
    "greedy player on each seed's own games (paired) and its mean of games against the paper's headline 241.78 "
    "(its best A2C's mean over 100,000 games; its abstract calls it a median), unless the cells stand for the rows "
    "of a published table, each then held against its own row. Not "
    "resolved at this n: the interval holds 0, so these seeds cannot order the two; a difference as large as the "
    "interval's ends is still possible."
)
EXHIBITS: dict[str, Exhibit] = {
    "S1": Exhibit(
        "Single-turn agent: single-turn score over training", draw_curves("single_turn_score", "points in one turn")
    ),
    "S2": Exhibit(
        "Single-turn agent: full-game score over training", draw_curves("mean_score", "full-game mean score")
    ),
    "S3": Exhibit("Single-turn against full-game score, per cell and member", draw_pareto, spread=BARS),
    "S4": Exhibit(
        "Single-turn agent: mean points per box in full games, beside the greedy and optimal players",
        draw_agent_bars("box_mean", BOX_NAMES, "mean points per game"),
        spread=BARS,
    ),
    "F1": Exhibit("Algorithm comparison: learning curves", draw_curves("mean_score", "mean score")),
    "F2": Exhibit("Final mean score per configuration", draw_bars((("mean_score", "final mean score"),)), spread=BARS),
    "F3": Exhibit(
        "Upper-bonus and Yahtzee rates per configuration",
        draw_bars((("upper_bonus_rate", "upper-bonus rate (% of games)"), ("yahtzee_rate", "Yahtzee (50) rate (%)"))),
        spread=BARS,
    ),
    "F4": Exhibit("State representation: learning curves", draw_curves("mean_score", "mean score")),
    "F5": Exhibit(
        "State representation: upper-bonus rate over training",
        draw_curves("upper_bonus_rate", "upper-bonus rate (% of games)"),
    ),
    "F6": Exhibit("Entropy regimes", table_entropy, "md", TABLE),
    "F7": Exhibit(
        "Architecture: width and depth of the trunk, as a factorial",
        draw_factorial("mean_score", "final mean score"),
        spread=BARS,
    ),
    "F8": Exhibit("With and without LayerNorm: learning curves", draw_curves("mean_score", "mean score")),
    "F9": Exhibit(
        "With and without LayerNorm: explained variance of the value head over training",
        draw_curves("explained_variance", "explained variance (last update)", refs=False),
    ),
    "F10": Exhibit("GAE lambda: final mean score", draw_bars((("mean_score", "final mean score"),)), spread=BARS),
    "F11": Exhibit(
        "GAE lambda: upper-bonus rate",
        draw_bars((("upper_bonus_rate", "upper-bonus rate (% of games)"),)),
        spread=BARS,
    ),
    "F12": Exhibit(
        "Rolling-head entropy over training", draw_curves("entropy_roll", "keep-head entropy (nats)", False)
    ),
    "F13": Exhibit(
        "Scoring-head entropy over training", draw_curves("entropy_score", "box-head entropy (nats)", False)
    ),
    "F14": Exhibit(
        "KL divergence between the collecting policy and the updated one, over training",
        draw_curves("kl", "KL per update (nats)", False),
    ),
    "F15": Exhibit(
        "Share of rolling decisions taken by the three most used keeps, over training",
        draw_curves("top3_keep_share", "top-3 keep share", False),
    ),
    "F16": Exhibit("Value loss over training", draw_curves("value", "value loss (squared error)", False)),
    "F17": Exhibit(
        "Saturation: the keep head's largest absolute logit over training",
        draw_curves("max_logit_keep", "largest |keep logit|", False),
    ),
    "T1": Exhibit("Full-game summary", table_summary, "md", TABLE),
    "T2": Exhibit("Score distribution: P(score >= n)", table_distribution, "md", TABLE),
    "P1": Exhibit(
        "Upper section: mean points per upper box and the bonus",
        draw_agent_bars("box_mean", UPPER, "mean points per game", extra="upper bonus"),
        spread=BARS,
    ),
    "P2": Exhibit(
        "Lower section: mean points per lower box",
        draw_agent_bars("box_mean", LOWER, "mean points per game"),
        spread=BARS,
    ),
    "P3": Exhibit(
        "First category filled",
        draw_agent_bars("first_box", BOX_NAMES, "share of games filled first", limits=(0, 1)),
        spread=BARS,
    ),
    "P4": Exhibit(
        "Median turn at which key categories are filled",
        draw_agent_bars("fill_turn", KEY_BOXES, "median turn filled (1-13)", turn=True, limits=(0, 13.5)),
        spread=BARS,
    ),
    "B1": Exhibit("Population-based training against fixed settings: learning curves", draw_population),
    "B2": Exhibit("Population-based training against fixed settings: final scores", table_population, "md", TABLE),
    "R1": Exhibit(
        "Regret against the optimal player on the same dice, by box scored and by turn", draw_regret, spread=BARS
    ),
    "A1": Exhibit(
        "Final mean score over seeds: mean, median and interquartile mean", table_aggregates, "md", BOOTSTRAP
    ),
    "A2": Exhibit("Probability of improvement between cells", table_improvement, "md", BOOTSTRAP),
    "A3": Exhibit("Performance profiles: the share of seeds above each score", draw_profiles, spread=BOOTSTRAP),
}


assert set(EXHIBITS) == set(EXHIBIT_IDS), "every exhibit id has its drawing"


CURVE = (
    "Each line: a cell's {what} at each evaluation during training (circles) and at its final evaluation at the "
    "end of training (a square, on the final evaluation's games), mean over its seeds; band: its interval. The "
    "number at a line's end: its change over the last quarter of training, from the evaluation nearest 75 % of its "
    "games to its last point (the final evaluation where the quantity has one), positive where it was still rising "
    "when training stopped. The legend counts a cell's collapsed seeds (at their last evaluations: a dead value "
    "head, random keeps, keeps narrowed onto three patterns, or a score fallen below 80 % of its best)."
)
#: F14-F16 read diagnostics logged since a later version: a study resumed across it has lines that start late.
LATE = " A line that starts after the first evaluation: its runs logged this quantity only from there on."
LEGEND = "The legend names what each line trains: the algorithm and its advantage (TD(0), GAE(lambda), Monte Carlo)."
NOTES = {
    "S1": CURVE.format(what="single-turn score (points in one turn from a random partly filled card)")
    + " Dotted: the greedy player, which is the exact optimum of a single turn; dashed: the optimal full-game "
    "player's points in one turn (it gives points up for later turns).",
    "S2": CURVE.format(what="full-game mean score") + " Dashed: the exact optimum; dotted: the greedy player.",
    "S3": "Faint points: members; squares: a cell's mean over seeds, error bars its intervals on both axes; where "
    "cells trade one score for the other, the non-dominated cells are joined (no line: no trade-off).",
    "A1": "Per cell, over its finished seeds' final mean scores: the mean, the median and the interquartile mean "
    "(the mean of the middle half), each with a 95 % stratified bootstrap interval (2,000 resamples of the seeds, "
    "percentile; rliable's method, here on numpy and scipy). Collapsed: seeds that collapsed by the rule of claims.md "
    "(counted in, not left out).",
    "A2": "P(X > Y): the chance that a seed of X ends with a higher final mean score than a seed of Y (ties count "
    "half; the Mann-Whitney U over the pairs), with its 95 % stratified bootstrap interval (each cell's seeds "
    "resampled on their own). 0.5: no order. Pairs: the cells of one ablation, and a chained cell (a transfer) "
    "against its settings trained from a random start; cells of different ablations differ in more than one "
    "setting and are not paired.",
    "A3": "For each score tau, the share of a cell's seeds whose final mean score is above it (a run-score "
    "distribution); band: 95 % stratified bootstrap interval. Dashed: the exact optimum, dotted: the greedy player.",
    "S4": "Per box in full games (where every box is filled once), the greedy and optimal players on the same games.",
    "F1": CURVE.format(what="mean score") + " " + LEGEND,
    "F2": "Every cell of the study; dots: its members, red crosses: collapsed members; dashed: the exact optimum, "
    "dotted: the greedy player. " + LEGEND,
    "F3": "Rates in % of the final evaluation's games. " + LEGEND,
    "F4": CURVE.format(what="mean score"),
    "F5": CURVE.format(what="upper-bonus rate (% of the evaluation's games)"),
    "F8": CURVE.format(what="mean score"),
    "F9": CURVE.format(what="explained variance of the value head on the last training batch before the evaluation"),
    "F11": "Rate in % of the final evaluation's games.",
    "F7": "Widths along x, a line per depth: each point a cell's final mean score over its seeds with its "
    "interval, small dots its members (red crosses: collapsed). Lines apart: an effect of depth; lines not "
    "parallel: an interaction; claims.md tests both as contrasts of cell means.",
    "F12": CURVE.format(
        what="keep-head entropy, averaged over the rolling decisions of the last batch before the evaluation"
    )
    + " "
    + LEGEND,
    "F13": CURVE.format(
        what="box-head entropy, averaged over the scoring decisions of the last batch before the evaluation"
    )
    + " "
    + LEGEND,
    "F14": CURVE.format(
        what="approximate KL divergence of the updated policy from the one that collected the batch, on the "
        "last logged update before the evaluation (every log_every-th update is logged)"
    )
    + LATE,
    "F15": CURVE.format(
        what="share of the last logged batch's rolling decisions that took one of the three most used keeps "
        "(near 1: the keep head has collapsed onto a few patterns)"
    )
    + LATE,
    "F16": CURVE.format(what="value loss (squared error to the returns) on the last logged update")
    + LATE
    + " Each algorithm fits its own targets (REINFORCE the whole game's returns, A2C's TD(0) one step ahead, GAE "
    "between them): a level compares over one algorithm's training, not between algorithms.",
    "F17": CURVE.format(
        what="largest absolute keep-head logit on the last logged update, under the network the update differentiates"
    )
    + LATE
    + " Healthy agents stay in the tens to low hundreds; from 1,000 the collapse rule names "
    "saturated logits (a policy that plays one fixed keep whatever the dice).",
    "T1": "Agents: the best cell (final mean score over seeds) of each algorithm among the cells of the ablations "
    "this table draws, and after it, where another of the study's cells of that algorithm scores higher, the study's "
    "best cell of that algorithm (the picked column says which); each picked after the fact among its rivals on the "
    "very games it is judged on, so its mean and median are optimistic; the fresh-games "
    "columns play every member of that cell again on games no evaluation played (as many as its final evaluation), "
    'from its last checkpoint, or, in a copy without them, from the study\'s record of that play ("no weights": '
    "neither). Optimal and greedy: the same "
    "protocol on the games of one member's final evaluation. Minus greedy, same games: each seed's mean score "
    "minus the greedy player's on that seed's own final games, the mean of those differences with its paired t "
    "interval.",
    "P3": "Share of games in which each box is the first one filled.",
    "B1": "The best member is picked after the fact, by its final score.",
    "B2": "The best member is picked after the fact (an optimistic estimate); the population's mean against the "
    "fixed settings is the fair comparison.",
    "P4": "Turns counted 1 to 13.",
    "R1": "The regret is the exact expected points given up against the optimal choice at every decision, on the "
    "agent's own dice; left: summed over each game by the box its turn was scored in, right: by turn (each sums to "
    "the regret per game). The optimal player's regret is 0; the greedy player's is on the reference games. "
    "Agents: the best cell of each algorithm among the cells of the ablations it draws (picked after the fact; "
    "T1's first row of each algorithm).",
}


def write_report(out: Path, force: bool = False) -> Path:
    """Draw every exhibit the study names into ``OUT/report/`` and write ``index.md``; returns its path.
    One writer at a time (the study folder's lock); the study folder is read and checked before
    anything of an earlier report is deleted."""
    out = Path(out)
    with locked(out, "yahtzee-lightning study report"):
        return _write_report(out, force)


def _write_report(out: Path, force: bool) -> Path:
    folder = out / REPORT
    ctx = Context(out)  # study.json, results: refused here, before anything is deleted
    study = ctx.study
    exhibits = {**study.exhibits, **beside_the_mean(study)}
    names = ["index.md", "exhibits.json", CLAIMS] + [f"{eid}.{EXHIBITS[eid].suffix}" for eid in exhibits]
    check_report(folder, force, names)
    # Drawn into a fresh folder that takes the report's place in one step: a report killed half-way
    # leaves the old report whole (and the next one sweeps its litter); the user's files there stay.
    with replacing(folder, "yahtzee-lightning study report") as tmp:
        _draw_report(ctx, tmp, exhibits)
    Manifest.read(out).add([n for n in (FRESH, REFERENCE) if (out / n).is_file()])  # the report's caches
    return folder / "index.md"


def _draw_report(ctx: Context, folder: Path, exhibits: dict[str, list[str]]) -> None:
    study = ctx.study
    lines = [f"# Study {study.name} (profile {study.profile})", "", study.description, "", *setting_lines(ctx)]
    lines += _status_lines(ctx)
    manifest: dict[str, dict] = {}
    if not (ctx.table["status"] == "done").any():  # right after the start, or every run failed
        lines += ["No member has finished yet: no exhibit to draw, no claim to judge.", ""]
        if study.hypotheses:  # what will be judged, as written down before the runs
            lines += ["The hypotheses to test (the study file's, Holm's correction across them):", ""]
            lines += [
                f"* {h.id}: {h.claim} ({h.compare[0]} vs {h.second()}, {h.metric}, {h.direction})"
                for h in study.hypotheses.values()
            ]
            lines.append("")
        (folder / "exhibits.json").write_text(json.dumps(manifest))
        (folder / "index.md").write_text("\n".join(lines))
        return
    for eid, ablations in exhibits.items():
        ex = EXHIBITS[eid]
        path = folder / f"{eid}.{ex.suffix}"
        points = ex.draw(ctx, ablations, path)
        manifest[eid] = {"file": path.name, "points": points, "ablations": ablations}
        lines += [f"## {eid}. {ex.title}", ""]
        lines += [f"![{eid}]({path.name})" if ex.suffix == "png" else path.read_text()]
        lines += ["", f"*{ctx.caption(ablations, NOTES.get(eid, ''), ex.spread)}*", ""]
        print(f"  {eid}: {path.name} ({points} points)")
    claims = write_claims(ctx, folder / CLAIMS)
    lines += ["## Claims, judged from the results", "", (folder / CLAIMS).read_text(), ""]
    lines += [f"*{CLAIMS_NOTE} Also in [{CLAIMS}]({CLAIMS}).*", ""]
    print(f"  claims: {CLAIMS} ({claims} rows)")
    (folder / "exhibits.json").write_text(json.dumps(manifest, indent=1))
    (folder / "index.md").write_text("\n".join(lines))


def beside_the_mean(study: Study) -> dict[str, list[str]]:
    """A1-A3 (median and IQM, probability of improvement, performance profiles) for every report: of the
    ablations of the algorithm comparison (F1's) where the study draws it, else of every ablation
    without a scheduler (and a chain's settings from a random start); a study file may name them itself."""
    pool = [n for n, ab in study.ablations.items() if not ab.scheduler and (len(ab.cells) > 1 or ab.start_from)]
    chained = [c for n in pool if study.ablations[n].start_from for c, _ in study.ablations[n].cells]
    twins = {twin[0] for c in chained if (twin := scratch_twin(study, c))}  # what a transfer is compared with
    pool = [n for n in study.ablations if n in pool or n in twins]
    source = study.exhibits.get("F1", pool)
    return {eid: source for eid in ("A1", "A2", "A3") if eid not in study.exhibits and source}


def check_report(folder: Path, force: bool, names: list[str] | None = None) -> None:
    """Refuse to replace an earlier report in ``folder`` without ``force``, and, ``force`` or not, a
    file of anyone else's at a name the new report writes (``names``), before anything is drawn.
    Replaced (by ``replacing``): only the files the report's manifest
    proves a report wrote, unchanged since; every other file stays, named in a line. A report written
    before manifests has its files of a report's names counted as a report's."""
    report = Manifest.read(folder)
    if not folder.exists():
        return
    if not folder.is_dir() or folder.is_symlink():
        raise StudyError(f"{folder}: exists and is not a folder")
    old = not (folder / MANIFEST).exists()
    ours = {"index.md", "exhibits.json", CLAIMS} | {f"{eid}.{ex.suffix}" for eid, ex in EXHIBITS.items()}
    if not force and any(report.owns(n) or (old and (folder / n).is_file()) for n in ("index.md", "exhibits.json")):
        raise StudyError(f"{folder}: a report is already there; add --force to replace it")

    def replaceable(n: str) -> bool:
        p = folder / n
        if p.is_symlink() or (p.exists() and not p.is_file()):
            return False
        return not p.exists() or report.owns(n) or (old and n in ours)

    clash = [n for n in names or () if not replaceable(n)]
    if clash:
        raise StudyError(
            f"{folder}: {', '.join(clash[:5])} would be overwritten but was not written by a report (or was "
            "changed since); move it away first (nothing deleted)"
        )
    if old:  # before manifests: the files of a report's names are replaced, nothing else
        report.files = {n: file_sha256(folder / n) for n in ours if (folder / n).is_file()}
        report.save()


def _status_lines(ctx: Context) -> list[str]:
    t = ctx.table
    members = t.drop_duplicates(["experiment", "cell", "seed"])  # a packed run folder holds several cells
    counts = members["status"].value_counts().to_dict()
    lines = [f"Members: {', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}. Results: `results.csv`.", ""]
    sessions = ctx.out / SESSIONS
    runs = read_lines(sessions)  # a damaged or edited line is named and left out
    if runs:
        minutes = sum(r["wall_clock_s"] or 0 for r in runs) / 60
        lines.append(f"Wall clock: {minutes:.0f} min in {len(runs)} session(s) of `study run`:")
        for r in runs:
            took = f"{r['wall_clock_s'] / 60:.1f} min" if r["wall_clock_s"] is not None else "killed (no wall clock)"
            lines.append(f"* {r['started']}, {took}, {r['cpus']} CPUs on {r['machine']}: `{r['command']}`")
        lines += ["", *provenance_lines(runs)]
    waiting = set(members.loc[members["status"].isin(["pending", "unfinished"]), "cell"])
    if waiting:
        names = [f"{ab.name}: {ctx.label(c, labels)}" for ab in ctx.study.ablations.values() for c, labels in ab.cells]
        ids = [c for ab in ctx.study.ablations.values() for c, _ in ab.cells]
        pending = [n for n, c in zip(names, ids, strict=True) if c in waiting]
        lines.append(
            f"Still running: {len(waiting)} of {members['cell'].nunique()} cells have members not finished; the "
            "exhibits and claims show the finished members only. Pending, by ablation (a shared cell under each):"
        )
        lines += [f"* pending: {name}" for name in pending] + [""]
    for _, row in members[members["status"] == "failed"].drop_duplicates("run_dir").iterrows():
        lines.append(f"* failed: `{row['run_dir']}`: {row['error']}")
    return lines + ([""] if len(lines) > 2 else [])
