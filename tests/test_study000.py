"""Study 000's tables from a hand-made tournament summary: rows, intervals, report files."""

from __future__ import annotations

import json

import pytest

from flows.reports.study000 import main, study_rows, write_study000


def pairing(a: str, b: str, wins: int, draws: int, losses: int) -> dict:
    return {"pairing": f"{a} vs {b}", "spec_a": a, "spec_b": b, "wins": wins, "draws": draws,
            "losses": losses}  # fmt: skip


SUMMARY = {
    "games_per_pairing": 10,
    "seed": 0,
    "bots": ["lstm_mse", "hmm"],
    "pairings": [
        pairing("lstm_mse", "random:guards=win+block", 7, 1, 2),
        pairing("lstm_mse", "random", 9, 0, 1),  # not the study's random: left out
        pairing("hmm", "random:guards=win+block", 5, 0, 5),
        pairing("lstm_mse", "alphabeta:depth=2", 3, 1, 6),
        pairing("hmm", "lstm_mse", 4, 0, 6),  # the study's layout: from the neural model's side
    ],
}
LABELS = {"lstm_mse": "Model 7", "hmm": "HMM"}


def test_rows_follow_the_study_layout_with_wilson_intervals():
    rows = {(r["model"], r["opponent"]): r for r in study_rows(SUMMARY, LABELS, "connect4")}
    assert set(rows) == {
        ("Model 7", "random"),
        ("HMM", "random"),
        ("Model 7", "alpha-beta"),
        ("Model 7", "HMM"),
    }
    versus_hmm = rows[("Model 7", "HMM")]
    assert (versus_hmm["wins"], versus_hmm["draws"], versus_hmm["defeats"]) == (6, 0, 4)
    first = rows[("Model 7", "random")]
    assert first["success"] == pytest.approx(0.7)  # wins / games, draws not counted
    # Wilson 95% for 7 of 10, worked by hand: (0.7 + z²/20 ± z·sqrt(0.021 + z²/400)) / (1 + z²/10)
    assert first["low"] == pytest.approx(0.3968, abs=1e-4)
    assert first["high"] == pytest.approx(0.8922, abs=1e-4)
    # 10 games that are 5 distinct ones replayed: the interval is that of 7 in 10 over 5 games
    replayed = study_rows(SUMMARY, LABELS, "connect4", {"lstm_mse vs random:guards=win+block": 5})
    assert replayed[0]["success"] == pytest.approx(0.7) and replayed[0]["distinct"] == 5
    assert replayed[0]["low"] < first["low"] - 0.05


def test_lazerbike_alpha_beta_is_the_naive_simab_only():
    """Study 000's Lazerbike alpha-beta scored only wins and losses (§4.4): heuristic simab, far
    stronger, is not set beside Table 15; `simab:…,eval=naive` at any depth is."""
    summary = {"pairings": [
        pairing("m2", "simab", 1, 0, 9),
        pairing("m2", "simab:depth=2,eval=naive", 4, 2, 4),
        pairing("simab:eval=naive,depth=3", "m2", 5, 2, 3),
        pairing("m2", "random:guards=safe", 6, 2, 2),
    ]}  # fmt: skip
    rows = study_rows(summary, {"m2": "Model 2"}, "lazerbike")
    found = [(r["opponent"], r["spec"], r["wins"]) for r in rows]
    assert found == [("alpha-beta", "simab:depth=2,eval=naive", 4),
                     ("alpha-beta", "simab:eval=naive,depth=3", 3),
                     ("random", "random:guards=safe", 6)]  # fmt: skip


def test_report_names_its_profile_and_sets_the_study_beside_ours(tmp_path):
    (tmp_path / "evaluation" / "connect4").mkdir(parents=True)
    (tmp_path / "evaluation" / "connect4" / "summary.json").write_text(json.dumps(SUMMARY))
    params = {"profile": "tiny", "games": ["connect4"], "connect4": {"study000": LABELS}}
    path = write_study000(tmp_path, params, tmp_path / "s.md", tmp_path / "study-000")
    text = path.read_text()
    assert "**tiny** profile" in text
    assert (
        "| Model 7 (`lstm_mse`) | random (`random:guards=win+block`) | 7 | 1 | 2 | 70.00% " in text
    )
    assert "70.89%" in text and "30.30%" in text  # Tables 3 and 10 beside ours
    assert "Model 6 (not played)" in text
    assert "## lazerbike" in text and "Not in this profile's results" in text
    assert (tmp_path / "study-000" / "connect4-random.png").stat().st_size > 0
    assert (tmp_path / "study-000" / "connect4-alpha-beta.csv").read_text().count("\n") == 2


def test_missing_params_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_study_profile_is_study_000_and_every_stage_reads_it():
    from flows.pipeline.params import check, load

    params = load("params-study.yaml")
    for game in ("connect4", "lazerbike"):
        for name in params[game]["datasets"]:
            check(params, "generate", game, name)
        for name in params[game]["models"]:
            check(params, "train", game, name)
        check(params, "evaluate", game)
    check(params, "report")
    model_7 = params["connect4"]["models"]["model_7"]["params"]  # Table 2, ID 7
    assert (model_7["layers"], model_7["cells"], model_7["dense_units"]) == (3, "96", 42)
    assert (model_7["dropout"], model_7["batch_size"]) == (0.4, 1)
    assert params["connect4"]["evaluate"]["games"] == params["lazerbike"]["evaluate"]["games"]
    assert params["connect4"]["evaluate"]["games"] == 10_000


def test_study_pairings_name_bots_or_baselines():
    from engine.protocol import GameError
    from models.pairings import chosen_pairings

    bots = {"model_6": "onnx:/m6.onnx", "hmm": "seq:model=/h.json"}
    pairs = chosen_pairings([["model_6", "hmm"], ["hmm", "random"]], bots, ["random"])
    assert pairs == [("onnx:/m6.onnx", "seq:model=/h.json"), ("seq:model=/h.json", "random")]
    with pytest.raises(GameError, match="model_9"):  # one line and exit 2 from a stage
        chosen_pairings([["model_9", "random"]], bots, ["random"])


def test_study_profile_keeps_every_other_chain_as_the_default():
    from flows.pipeline.params import load

    default, study = load("params.yaml"), load("params-study.yaml")
    others = set(default) - {"connect4", "lazerbike", "profile"}
    assert set(study) - {"connect4", "lazerbike", "profile"} == others
    assert all(study[key] == default[key] for key in others)  # one place to edit them
