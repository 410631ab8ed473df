"""`gridbots generate`: the command writes a dataset; bad input is one stderr line, exit 2."""

from __future__ import annotations

import numpy as np
import pytest

from features.store import load_dataset, read_manifest
from flows.entry import main


def test_generate_writes_a_complete_dataset(tmp_path, capsys):
    out = tmp_path / "c4"
    argv = ["generate", "connect4", "randomized", "--out", str(out), "--games", "50", "--y", "5"]
    assert main([*argv, "--shard-size", "20", "--seed", "3"]) == 0
    said = capsys.readouterr().out
    assert "50 games, 100 sequences, 10 positions in 3 shards" in said
    manifest = read_manifest(out)
    assert manifest["complete"] and manifest["params"]["x"] == 10
    assert load_dataset(out, "games").num_rows == 50
    assert main([*argv, "--shard-size", "20", "--seed", "3"]) == 0  # already whole: a no-op
    assert read_manifest(out)["content_hash"] == manifest["content_hash"]


def test_thorough_through_the_cli(tmp_path, capsys):
    out = tmp_path / "t"
    assert (
        main(["generate", "connect4", "thorough", "--out", str(out), "--x", "1", "--y", "1"]) == 0
    )
    assert "8 positions in 7 shards" in capsys.readouterr().out
    assert load_dataset(out, "positions").num_rows == 8


@pytest.mark.parametrize(
    "extra, message",
    [
        (["randomized", "--y", "0"], "Y = 0 cannot work"),
        (["randomized", "--w", "1.5"], "W = 1.5 cannot work"),
        (["randomized", "--w", "-0.1"], "W = -0.1 cannot work"),
        (["randomized", "--agents", "random"], "does not use --agents"),
        (["randomized", "--opening", "2"], "does not use --opening"),
        (["battle", "--rotate"], "does not use --rotate"),
        (["bogus"], "unknown technique 'bogus'"),
        (["thorough", "--y", "40"], "too deep"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, extra, message):
    argv = ["generate", "connect4", *extra, "--out", str(tmp_path / "d")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_imitation_with_an_opening_and_rotated_seats(tmp_path, capsys):
    from features.store import load_dataset

    out = tmp_path / "i"
    argv = ["generate", "connect4", "imitation", "--out", str(out), "--x", "4", "--w", "0",
            "--opening", "2", "--rotate", "--agents", "alphabeta:depth=2,random"]  # fmt: skip
    assert main(argv) == 0
    games = load_dataset(out, "games").to_pylist()
    assert [g["agents"][0] for g in games] == ["alphabeta:depth=2", "random"] * 2
    assert {g["scenario"] for g in games} == {'{"opening": 2}'}


def test_lazerbike_imitation_from_the_random_starts_matches_play(tmp_path, capsys):
    """Matches play Lazerbike from seeded random starts; data made with `--scenario
    start=random` starts where the scenario seed puts the bikes, not at the symmetric start."""
    import json

    from engine import load_game
    from features.schema import initial_state

    out = tmp_path / "b"
    argv = ["generate", "lazerbike", "imitation", "--out", str(out), "--x", "6", "--w", "0",
            "--scenario", "start=random",
            "--agents", "simab:depth=1,random:guards=safe"]  # fmt: skip
    assert main(argv) == 0
    games = load_dataset(out, "games").to_pylist()
    assert {g["scenario"] for g in games} == {'{"start": "random"}'}
    bikes = load_game("lazerbike")
    symmetric = bikes.new_initial_state().array
    starts = {tuple(initial_state(bikes, g["seed"], g["scenario"]).array) for g in games}
    assert len(starts) == len(games) and tuple(symmetric) not in starts
    for g in games:  # each history replays to its recorded result from its own start
        state = initial_state(bikes, g["seed"], g["scenario"])
        for lap in np.asarray(g["history"], dtype=np.int64).reshape(-1, 2):
            state.apply_actions([int(a) for a in lap])
        assert state.is_terminal() and state.returns() == g["returns"], json.dumps(g)
    assert main([*argv[:-4], "--scenario", "start"]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_other_command_on_existing_dataset_is_refused(tmp_path, capsys):
    out = str(tmp_path / "d")
    assert main(["generate", "connect4", "randomized", "--out", out, "--x", "4", "--y", "2"]) == 0
    capsys.readouterr()
    assert main(["generate", "connect4", "randomized", "--out", out, "--x", "4", "--y", "3"]) == 2
    err = capsys.readouterr().err
    assert "another command" in err and err.count("\n") == 1


def test_unknown_game_is_refused(tmp_path, capsys):
    argv = ["generate", "chess", "randomized", "--out", str(tmp_path / "d")]
    assert main(argv) == 2
    assert "unknown game" in capsys.readouterr().err
