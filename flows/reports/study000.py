"""Study 000's tables (Connect 4 Tables 3, 8-10; Lazerbike Tables 12-15) beside ours.

Reads `evaluation/<game>/summary.json` (the evaluate stage's tournament) and lays our pairings
out as the study does: wins, draws, defeats and success rate (wins / games), the study's success
rate in the next column and the 95% Wilson interval of ours, plus the study's bar charts. Which
of our models stands for which of the study's rows is the params key `<game>.study000`
(our model name -> the study's label); pairings the study did not play are left out, rows the
study has but we lack say so. The report stage writes it under reports/pipeline/; after a run of
the `study` profile, `python -m flows.reports.study000 --root . --out reports` writes the kept copy
reports/study-000.md (+ reports/study-000/). Every line says which profile produced it.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from engine.tournament import wilson_interval

#: the study's published figures: (our table key, study label, opponent label) -> W, D, L
STUDY: dict[str, dict[str, Any]] = {
    "connect4": {
        "random": ("Tables 3, 5, 7 and 8: 10,000 games against the random AI", {
            ("Model 6", "random"): (6848, 260, 2892), ("Model 7", "random"): (7089, 252, 2659),
            ("Model 12", "random"): (5444, 361, 4195), ("Model 20", "random"): (3543, 327, 6130),
            ("HMM", "random"): (5702, 1445, 2853), ("CRF_1", "random"): (5944, 332, 3724),
            ("CRF_2", "random"): (5925, 289, 3786)}),
        "classical": ("Table 9: the neural models against the classical ones", {
            ("Model 6", "HMM"): (5073, 253, 4674), ("Model 6", "CRF_1"): (5505, 284, 4211),
            ("Model 6", "CRF_2"): (5413, 317, 4270), ("Model 7", "HMM"): (6195, 415, 3390),
            ("Model 7", "CRF_1"): (5755, 449, 3796), ("Model 7", "CRF_2"): (5732, 490, 3778)}),
        "alpha-beta": ("Table 10: the two best against alpha-beta", {
            ("Model 6", "alpha-beta"): (2767, 962, 6271),
            ("Model 7", "alpha-beta"): (3030, 949, 6021)}),
    },
    "lazerbike": {
        "random": ("Tables 12 and 13: 10,000 games against the random AI", {
            ("Model 2", "random"): (5865, 1075, 3060), ("Model 3", "random"): (5649, 1038, 3313),
            ("HMM", "random"): (7020, 851, 2129), ("CRF_1", "random"): (4494, 679, 4827),
            ("CRF_2", "random"): (5039, 854, 4107)}),
        "classical": ("Table 14: the neural models against the classical ones", {
            ("Model 2", "HMM"): (3681, 3201, 3118), ("Model 2", "CRF_1"): (5183, 1559, 3118),
            ("Model 2", "CRF_2"): (4902, 1320, 3778), ("Model 3", "HMM"): (3536, 5341, 1123),
            ("Model 3", "CRF_1"): (5934, 2001, 2065), ("Model 3", "CRF_2"): (6160, 1677, 2163)}),
        "alpha-beta": ("Table 15: the two best (and the HMM) against alpha-beta (simab)", {
            ("Model 2", "alpha-beta"): (4878, 623, 4499),
            ("Model 3", "alpha-beta"): (4848, 650, 4502),
            ("HMM", "alpha-beta"): (3781, 533, 5686)}),
    },
}  # fmt: skip
CLASSICAL = ("HMM", "CRF_1", "CRF_2")
#: every study match is 10,000 games: its success rate is wins / 10,000 (Table 14's Model 2 vs
#: CRF_1 row prints W/D/L summing to 9,860 but 51.83%, i.e. wins / 10,000)
STUDY_GAMES = 10_000
#: the study's random AI: in Connect 4 it wins when it can and blocks when it must (Part IV
#: §3.2 (a), (b)); in Lazerbike it never drives into a wall when it has a way out (§4.2)
STUDY_RANDOM = {"connect4": "random:guards=win+block", "lazerbike": "random:guards=safe"}
#: the study's alpha-beta: in Connect 4 any depth of ours (its evaluation is not described); in
#: Lazerbike only simab with results-only leaves, "a naive function which rewards in the case of a
#: victory and punish in the case of a defeat" (§4.4): heuristic simab is a different opponent
STUDY_ALPHABETA = {"connect4": ("alphabeta", ""), "lazerbike": ("simab", "eval=naive")}


def opponent_label(spec: str, labels: dict[str, str], game: str) -> str | None:
    """The study's name for one of our opponents (None: the study has no such opponent)."""
    if spec in labels:
        return labels[spec]
    if spec == STUDY_RANDOM[game]:
        return "random"
    agent, option = STUDY_ALPHABETA[game]
    name, _, options = spec.partition(":")
    if name == agent and (not option or option in options.split(",")):
        return "alpha-beta"
    return None


def distinct_games(folder: Path) -> dict[str, int]:
    """pairing -> distinct histories: two deterministic bots replay each seeded opening, so
    10,000 games may hold only ~100 different ones, and an interval over 10,000 would lie."""
    path = Path(folder) / "games.parquet"
    if not path.is_file():
        return {}
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["pairing", "history"]).to_pandas()
    return {str(k): int(v) for k, v in table.groupby("pairing")["history"].nunique().items()}


def study_rows(
    summary: dict[str, Any],
    labels: dict[str, str],
    game: str,
    distinct: dict[str, int] | None = None,
) -> list[dict]:
    """Our pairings as (study model, study opponent) rows, from the model's side; the interval
    counts distinct games only (repeats of a deterministic game carry no information)."""
    rows = []
    for s in summary["pairings"]:
        for me, other, wins, defeats in (
            (s["spec_a"], s["spec_b"], s["wins"], s["losses"]),
            (s["spec_b"], s["spec_a"], s["losses"], s["wins"]),
        ):
            model, opponent = labels.get(me), opponent_label(other, labels, game)
            if model is None or opponent is None:
                continue
            if model in CLASSICAL and opponent not in ("random", "alpha-beta"):
                continue  # the study reads bot-vs-bot pairings from the neural model's side
            games = wins + s["draws"] + defeats
            different = min(games, (distinct or {}).get(s["pairing"], games))
            low, high = wilson_interval(wins / games, different) if games else (0.0, 1.0)
            rows.append(
                {"model": model, "ours": me, "opponent": opponent, "spec": other, "wins": wins,
                 "draws": s["draws"], "defeats": defeats, "games": games, "distinct": different,
                 "success": wins / games if games else 0.0, "low": low, "high": high}
            )  # fmt: skip
    return rows


def table_of(opponent: str) -> str:
    return opponent if opponent in ("random", "alpha-beta") else "classical"


def table_lines(key: str, rows: list[dict[str, Any]], study: dict) -> list[str]:
    """One table in the study's layout, the study's success rate beside ours."""
    lines = [
        "| PL1 (ours) | PL2 | wins | draws | defeats | success rate | study | 95% interval "
        "| distinct games |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        published = study.get((r["model"], r["opponent"]))
        theirs = f"{100 * published[0] / STUDY_GAMES:.2f}%" if published else "-"
        lines.append(
            f"| {r['model']} (`{r['ours']}`) | {r['opponent']} (`{r['spec']}`) | {r['wins']} "
            f"| {r['draws']} | {r['defeats']} | {100 * r['success']:.2f}% | {theirs} "
            f"| [{100 * r['low']:.2f}%, {100 * r['high']:.2f}%] | {r['distinct']} |"
        )
    ours = {(r["model"], r["opponent"]) for r in rows}
    for (model, opponent), (w, _, _) in study.items():
        if (model, opponent) not in ours:
            lines.append(
                f"| {model} (not played) | {opponent} | - | - | - | - "
                f"| {100 * w / STUDY_GAMES:.2f}% | - | - |"
            )
    return lines


def bar_chart(rows: list[dict[str, Any]], study: dict, path: Path, title: str) -> None:
    """The study's bar chart (success rate per pairing), ours with its interval beside theirs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = [f"{r['model']}\nvs {r['opponent']}" for r in rows]
    ours = np.array([100 * r["success"] for r in rows])
    errors = np.array([[100 * (r["success"] - r["low"]), 100 * (r["high"] - r["success"])]
                       for r in rows]).T  # fmt: skip
    theirs = [study.get((r["model"], r["opponent"])) for r in rows]
    theirs_pct = [100 * t[0] / STUDY_GAMES if t else 0.0 for t in theirs]
    x = np.arange(len(rows))
    figure, axes = plt.subplots(figsize=(max(5.0, 1.2 * len(rows) + 2), 4))
    axes.bar(x - 0.2, ours, 0.4, yerr=errors, capsize=3, label="gridbots (95% interval)")
    axes.bar(x + 0.2, theirs_pct, 0.4, label="study 000", alpha=0.7)
    axes.set_xticks(x, names, fontsize=7)
    axes.set_ylim(0, 100)
    axes.set_ylabel("success rate (%)")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def write_study000(root: Path, params: dict[str, Any], out_md: Path, out_dir: Path) -> Path:
    """out_md (the tables) and out_dir (one PNG and one CSV per table)."""
    root, out_md, out_dir = Path(root), Path(out_md), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    profile = params.get("profile", "default")
    lines = [
        "# Study 000 (Connect 4, Lazerbike sequence models) beside gridbots",
        "",
        f"Produced by the **{profile}** profile (`params.yaml` key `profile`) from "
        "`evaluation/<game>/summary.json`. Success rate = wins / games, as the study; the "
        "study's figures come from 10,000 games per pairing, ours from the games shown. "
        "The study's random AI is guarded (Connect 4: wins and blocks when it can; Lazerbike: "
        "never suicidal): ours is `random:guards=win+block` / `random:guards=safe`. The 95% "
        "interval counts distinct games: deterministic pairs replay each seeded opening. "
        "What the study's model 7 learns, and stronger sequence bots: "
        "`reports/sequence-models.md`.",
    ]
    for game, tables in STUDY.items():
        labels = params.get(game, {}).get("study000") or {}
        summary_path = root / "evaluation" / game / "summary.json"
        lines += ["", f"## {game}", ""]
        if game not in params.get("games", []) or not summary_path.is_file() or not labels:
            lines.append("Not in this profile's results (no tournament or no `study000` map).")
            continue
        summary = json.loads(summary_path.read_text())
        rows = study_rows(summary, labels, game, distinct_games(summary_path.parent))
        lines.append(f"{summary['games_per_pairing']} games per pairing, seed {summary['seed']}.")
        for key, (title, study) in tables.items():
            chosen = [r for r in rows if table_of(r["opponent"]) == key]
            lines += ["", f"### {title}", "", *table_lines(key, chosen, study)]
            if chosen:
                stem = f"{game}-{key}"
                bar_chart(chosen, study, out_dir / f"{stem}.png", f"{game}: {title}")
                with (out_dir / f"{stem}.csv").open("w", newline="") as handle:
                    writer = csv.DictWriter(handle, fieldnames=list(chosen[0]))
                    writer.writeheader()
                    writer.writerows(chosen)
                lines += ["", f"![](study-000/{stem}.png)"]
    out_md.write_text("\n".join(lines) + "\n")
    return out_md


def main(argv: list[str] | None = None) -> int:
    """`python -m flows.reports.study000 --root . --out reports`: the kept copy after a
    study run."""
    from flows.pipeline.params import ParamsError, load
    from flows.pipeline.stage_io import atomic_dir

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--root", default=".")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    try:
        params = load(Path(args.root) / args.params)
    except ParamsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    with atomic_dir(out / "study-000") as scratch:
        write_study000(Path(args.root), params, scratch / "README.md", scratch)
    (out / "study-000" / "README.md").replace(out / "study-000.md")
    print(out / "study-000.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
