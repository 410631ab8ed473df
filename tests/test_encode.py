"""Encoders on hand-worked rows, symmetries against the engine, and `gridbots encode`.

Symmetries are checked against independent truth: a transformed game (mirrored history,
transformed start position) is played through the engine, and its observations and legal
masks must be the transformed ones of the original game.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from engine import load_game
from features import encode as enc
from features.schema import POSITIONS, SEQUENCES
from features.symmetry import augment, game_symmetries, map_actions
from flows.entry import main


def sequences_table(rows: list[tuple[int, int, int, list[int], float]], players: int) -> pa.Table:
    """Rows (game_id, player, length, step-major actions, outcome)."""
    return pa.Table.from_pylist(
        [
            {
                "game_id": g,
                "player": p,
                "num_players": players,
                "length": n,
                "actions": a,
                "outcome": o,
            }
            for g, p, n, a, o in rows
        ],
        schema=SEQUENCES,
    )


def positions_table(game, states, players, actions=None, policies=None) -> pa.Table:
    """Position rows of engine states, filled the way the techniques fill them."""
    rows = []
    for i, (state, player) in enumerate(zip(states, players, strict=True)):
        mask = state.legal_actions_mask(player) if not state.is_terminal() else None
        mask = np.zeros(game.num_actions, np.int8) if mask is None else mask
        rows.append(
            {
                "game_id": i,
                "ply": len(state.history()),
                "player": player,
                "state": state.array.tolist(),
                "legal_mask": mask.tolist(),
                "features": state.observation_tensor(player).ravel().tolist(),
                "action": game.neutral_action if actions is None else actions[i],
                "outcome": 0.0,
                "action_scores": [float("nan")] * game.num_actions,
                "immediate_wins": 0,
                "policy": None if policies is None else policies[i],
            }
        )
    return pa.Table.from_pylist(rows, schema=POSITIONS)


# ---- sequences -----------------------------------------------------------------------------
def test_quantitative_connect4_folds_plies_into_rounds_and_shifts_targets():
    c4 = load_game("connect4")
    # plies: P0 column 3, P1 column 3, P0 column 4 (game cut short: rows are hand-made)
    table = sequences_table([(7, 1, 3, [3, -1, -1, 3, 4, -1], -1.0)], 2)
    arrays = enc.quantitative(table, c4)
    assert arrays["inputs"].shape == (1, 20, 2)  # the study's window
    assert arrays["inputs"][0, :3].tolist() == [[3, 3], [4, -1], [-1, -1]]
    assert (arrays["inputs"][0, 2:] == -1).all()
    assert arrays["targets"][0, :2].tolist() == [[4, -1], [-1, -1]]
    assert arrays["rounds"].tolist() == [2]
    assert arrays["game_id"].tolist() == [7] and arrays["outcome"].tolist() == [-1.0]


def test_plies_make_every_move_a_round_of_its_own():
    c4 = load_game("connect4")
    table = sequences_table([(7, 1, 3, [3, -1, -1, 3, 4, -1], -1.0)], 2)  # as above
    arrays = enc.quantitative(table, c4, plies=True)
    assert arrays["inputs"].shape == (1, 42, 2)  # the longest game in moves
    assert arrays["inputs"][0, :4].tolist() == [[3, -1], [-1, 3], [4, -1], [-1, -1]]
    assert arrays["targets"][0, :3].tolist() == [[-1, 3], [4, -1], [-1, -1]]
    assert arrays["rounds"].tolist() == [3]
    bits = enc.qualitative(table, c4, length=5, plies=True)
    assert bits["inputs"].shape == (1, 5, 16)
    decoded = enc.decode_one_hot_actions(bits["targets"], 2, c4.num_actions, -1)
    assert decoded[0, :2].tolist() == [[-1, 3], [4, -1]]
    with pytest.raises(enc.DataError, match="turn-based"):
        enc.quantitative(sequences_table([(1, 0, 1, [1, 0], 1.0)], 2), load_game("lazerbike"),
                         plies=True)  # fmt: skip


def test_qualitative_connect4_matches_the_studys_example():
    c4 = load_game("connect4")
    table = sequences_table([(0, 0, 1, [5, -1], 1.0)], 2)  # round [5, -1]
    arrays = enc.qualitative(table, c4, length=4)
    assert arrays["inputs"].shape == (1, 4, 16)
    study = [0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert arrays["inputs"][0, 0].tolist() == study
    assert arrays["targets"][0, 0].tolist() == [1] + [0] * 7 + [1] + [0] * 7  # [-1, -1]
    decoded = enc.decode_one_hot_actions(arrays["inputs"], 2, c4.num_actions, -1)
    assert decoded[0, 0].tolist() == [5, -1]


def test_lazerbike_laps_are_rounds_with_the_neutral_value_for_dead_bikes():
    bikes = load_game("lazerbike")
    # lap 1: bike 0 forward, bike 1 left; lap 2: bike 0 right, bike 1 dead (-2)
    table = sequences_table([(1, 0, 2, [1, 0, 2, -2], 1.0)], 2)
    arrays = enc.quantitative(table, bikes)
    assert arrays["inputs"].shape == (1, 112, 2)
    assert arrays["inputs"][0, :3].tolist() == [[1, 0], [2, -2], [-2, -2]]
    bits = enc.qualitative(table, bikes)["inputs"]
    assert bits.shape == (1, 112, 8)
    assert bits[0, 0].tolist() == [0, 0, 1, 0, 0, 1, 0, 0]
    assert bits[0, 1].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]


def test_one_hot_round_trip_and_range_check():
    rng = np.random.default_rng(0)
    actions = rng.integers(-1, 65, size=(5, 9, 2))
    bits = enc.one_hot_actions(actions, 65, -1)
    assert bits.shape == (5, 9, 132) and (bits.sum(axis=-1) == 2).all()
    assert np.array_equal(enc.decode_one_hot_actions(bits, 2, 65, -1), actions)
    with pytest.raises(enc.EncodingError):
        enc.one_hot_actions(np.array([[7, -1]]), 7, -1)


# ---- boards --------------------------------------------------------------------------------
def test_connect4_board_codes_and_one_hot_by_hand():
    c4 = load_game("connect4")
    state = c4.state_from_history(c4.parse_moves("4453"))  # X d1, O d2, X e1, O c1
    table = positions_table(c4, [state, state], [0, 1])
    codes = enc.board_codes(table, c4)["codes"]
    expected = np.zeros((6, 7), np.int8)
    expected[5, 3], expected[4, 3], expected[5, 4], expected[5, 2] = 1, 2, 1, 2
    assert np.array_equal(codes[0], expected) and np.array_equal(codes[1], expected)
    board = enc.board_onehot_encoding(table, c4)["board"]
    assert board.shape == (2, 84)
    own0 = np.flatnonzero(board[0, :42]).tolist()
    assert own0 == [5 * 7 + 3, 5 * 7 + 4]  # player 0's stones first
    assert np.flatnonzero(board[1, :42]).tolist() == [4 * 7 + 3, 5 * 7 + 2]
    back = enc.decode_board_one_hot(board, np.array([0, 1]), 2, (6, 7), deadly=False)
    assert np.array_equal(back, np.stack([expected, expected]))


def test_othello_board_one_hot_is_64_own_plus_64_opponent():
    othello = load_game("othello")
    start = othello.new_initial_state()
    table = positions_table(othello, [start, start], [0, 1])
    codes = enc.board_codes(table, othello)["codes"][0]
    # white d4 and e5, black d5 and e4 (rows 1-8 top to bottom)
    assert codes[3, 3] == 2 and codes[4, 4] == 2 and codes[4, 3] == 1 and codes[3, 4] == 1
    assert (codes != 0).sum() == 4
    board = enc.board_onehot_encoding(table, othello)["board"]
    assert board.shape == (2, 128)
    assert np.flatnonzero(board[0]).tolist() == [28, 35, 64 + 27, 64 + 36]  # black's view
    assert np.flatnonzero(board[1]).tolist() == [27, 36, 64 + 28, 64 + 35]  # white's view


def test_lazerbike_board_codes_mark_heads_and_deadly_trails():
    bikes = load_game("lazerbike")
    state = bikes.new_initial_state()  # bike 0 at (7, 2) heading E, bike 1 at (7, 12) W
    state.apply_actions([1, 1])
    table = positions_table(bikes, [state], [1])
    codes = enc.board_codes(table, bikes)["codes"][0]
    assert codes[7, 3] == 1 and codes[7, 11] == 2
    assert codes[7, 2] == -2 and codes[7, 12] == -3  # the necks: each start tile, now trail
    assert (codes != 0).sum() == 4
    board = enc.board_onehot_encoding(table, bikes)["board"]
    assert board.shape == (1, 5 * 225)  # own head, the other head, deadly tiles, two necks
    assert np.flatnonzero(board[0]).tolist() == [
        7 * 15 + 11,
        225 + 7 * 15 + 3,
        450 + 7 * 15 + 2,
        450 + 7 * 15 + 12,
        675 + 7 * 15 + 12,  # own (bike 1's) neck
        900 + 7 * 15 + 2,
    ]
    back = enc.decode_board_one_hot(board, np.array([1]), 2, (15, 15), deadly=True, necks=True)
    assert (back[0] == codes).all()


def test_lazerbike_necks_show_the_heading_a_relative_turn_needs():
    bikes = load_game("lazerbike")
    state = bikes.new_initial_state()
    start = bikes.board_codes(state.array[None])[0]
    assert (start < 0).sum() == 0  # no lap played, no trail and no neck
    state.apply_actions([1, 1])
    state.apply_actions([0, 2])  # bike 0 (heading E) turns left, bike 1 (heading W) right
    codes = bikes.board_codes(state.array[None])[0]
    assert codes[6, 3] == 1 and codes[7, 3] == -2  # head north of its neck: heading N
    assert codes[6, 11] == 2 and codes[7, 11] == -3  # bike 1 also turned north
    assert codes[7, 2] == -1 and codes[7, 12] == -1  # older trail is plain deadly


def test_count_one_hot_by_hand():
    bits = enc.count_one_hot(np.array([[0, 39, 45], [3, 1, 2]]))
    assert bits.shape == (2, 120)
    assert np.flatnonzero(bits[0]).tolist() == [0, 40 + 39, 80 + 39]  # 45 saturates
    assert np.flatnonzero(bits[1]).tolist() == [3, 41, 82]
    c4 = load_game("connect4")
    state = c4.state_from_history(c4.parse_moves("4453"))
    arrays = enc.counts(positions_table(c4, [state], [0]), c4)
    assert arrays["raw_counts"].tolist() == [[2, 2, 7, 0]]  # own, opponent, legal, wins
    assert arrays["counts"].shape == (1, 160)


def test_planes_carry_the_mask_as_second_input_and_policies():
    c4 = load_game("connect4")
    state = c4.state_from_history(c4.parse_moves("1111112"))  # column 1 full
    uniform = [0.0] + [1 / 6] * 6
    table = positions_table(c4, [state, state], [1, 1], actions=[3, 6], policies=[uniform, None])
    arrays = enc.planes(table, c4)
    assert arrays["planes"].shape == (2, 2, 6, 7)
    assert arrays["mask"][0].tolist() == [0, 1, 1, 1, 1, 1, 1]
    assert arrays["has_policy"].tolist() == [True, False]
    assert np.allclose(arrays["policy"][0], uniform) and (arrays["policy"][1] == 0).all()
    assert arrays["planes"][0, 0].sum() == 3 and arrays["planes"][0, 1].sum() == 4


# ---- symmetries against the engine ---------------------------------------------------------
def test_connect4_mirror_matches_the_mirrored_game():
    c4 = load_game("connect4")
    (_, identity), (obs, act) = game_symmetries(c4)
    assert identity.tolist() == list(range(7)) and act.tolist() == [6, 5, 4, 3, 2, 1, 0]
    rng = np.random.default_rng(1)
    state, mirror = c4.new_initial_state(), c4.new_initial_state()
    while not state.is_terminal():
        player = state.current_player()
        assert np.array_equal(
            state.observation_tensor(player).ravel()[obs], mirror.observation_tensor(player).ravel()
        )
        assert np.array_equal(state.legal_actions_mask()[act], mirror.legal_actions_mask())
        action = state.random_action(rng)
        state.apply_action(action)
        mirror.apply_action(int(map_actions(np.array([action]), act, -1)[0]))
    assert state.returns() == mirror.returns()


def test_othello_eight_symmetries_match_transformed_games():
    othello = load_game("othello")
    symmetries = game_symmetries(othello)
    assert len(symmetries) == 8
    k = othello.kernels
    start = othello.new_initial_state().array
    for index, (obs, act) in enumerate(symmetries):
        assert act[64] == 64  # the pass stays the pass
        where = np.argsort(act[:64])  # square -> its square after the transform
        moved = [
            sum(1 << int(where[q]) for q in range(64) if (int(start[side]) >> q) & 1)
            for side in (0, 1)
        ]
        state = othello.new_initial_state()
        twin_array = k.init(np.array([moved[0], moved[1], 0], dtype=np.int64))
        rng = np.random.default_rng(index)
        while not state.is_terminal():
            player = state.current_player()
            out = np.zeros(192, np.float32)
            k.observation(twin_array, player, out)
            assert np.array_equal(state.observation_tensor(player).ravel()[obs], out)
            action = state.random_action(rng)
            state.apply_action(action)
            k.apply_action(twin_array, int(map_actions(np.array([action]), act, -1)[0]))
        assert k.current_player(twin_array) == -4


def test_lazerbike_rotations_keep_turns_and_reflections_swap_them():
    from engine.games.lazerbike import HEADINGS, bikes

    game = load_game("lazerbike")
    symmetries = game_symmetries(game)
    assert len(symmetries) == 8
    assert sum(a.tolist() == [2, 1, 0] for _, a in symmetries) == 4  # the reflections
    for index, (obs, act) in enumerate(symmetries):
        where = np.argsort(obs[:225])
        heading = {int(obs[(6 + h) * 225]) // 225 - 6: h for h in range(4)}
        state = game.new_initial_state(seed=index, start="random")
        setup = [
            (int(where[r * 15 + c]) // 15, int(where[r * 15 + c]) % 15, heading[HEADINGS.index(h)])
            for r, c, h, _ in bikes(state)
        ]
        twin = game.new_initial_state(start=setup)
        rng = np.random.default_rng(index)
        while not state.is_terminal():
            for p in range(2):
                assert np.array_equal(
                    state.observation_tensor(p).ravel()[obs], twin.observation_tensor(p).ravel()
                )
            joint = [int(rng.integers(3)) if state.legal_actions(p) else -2 for p in range(2)]
            state.apply_actions(joint)
            twin.apply_actions(map_actions(np.array(joint), act, -2).tolist())
        assert state.returns() == twin.returns()


def test_augment_moves_planes_mask_policy_and_action_together():
    c4 = load_game("connect4")
    state = c4.state_from_history(c4.parse_moves("1111112"))  # column 1 (action 0) full
    policy = [0.0, 0.5, 0.1, 0.1, 0.1, 0.1, 0.1]
    table = positions_table(c4, [state], [1], actions=[1], policies=[policy])
    arrays = augment(enc.planes(table, c4), c4)
    assert arrays["symmetry"].tolist() == [0, 1]
    assert arrays["mask"][1].tolist() == [1, 1, 1, 1, 1, 1, 0]
    assert np.allclose(arrays["policy"][1], policy[::-1])
    assert arrays["action"].tolist() == [1, 5]
    assert np.array_equal(arrays["planes"][1], arrays["planes"][0][:, :, ::-1])
    assert arrays["outcome"].tolist() == [0.0, 0.0]


def test_games_without_symmetries_get_the_identity_only():
    pig = load_game("pig")
    assert len(game_symmetries(pig)) == 1
    with pytest.raises(enc.DataError):
        enc.board_codes(positions_table(pig, [pig.new_initial_state()], [0]), pig)


# ---- the command ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from features.store import generate_dataset

    root = tmp_path_factory.mktemp("encode") / "c4"
    generate_dataset(root, "connect4", "randomized", {"x": 8, "y": 2}, seed=3)
    return root


@pytest.mark.parametrize(
    ("encoding", "suffix", "extra", "key", "shape"),
    [
        ("qualitative", ".npz", [], "inputs", (32, 20, 16)),
        ("quantitative", ".parquet", ["--length", "5"], "targets", (32, 5, 2)),
        ("planes", ".npz", ["--augment"], "planes", (16, 2, 6, 7)),
        ("board-onehot", ".parquet", [], "board", (8, 84)),
        ("qualitative", ".npz", ["--plies"], "inputs", (32, 42, 16)),
        ("qualitative", ".npz", ["--plies", "--boards"], "boards", (32, 42, 84)),
        ("qualitative", ".npz", ["--seat", "1"], "seat_outcomes", (16, 2)),
    ],
)
def test_encode_command_writes_arrays_with_shapes(
    dataset, tmp_path, encoding, suffix, extra, key, shape
):
    out = tmp_path / f"arrays{suffix}"
    assert main(["encode", str(dataset), "--encoding", encoding, "--out", str(out), *extra]) == 0
    arrays, meta = enc.load(out)
    assert meta["encoding"] == encoding and meta["game"] == "connect4"
    assert arrays[key].shape == shape and meta["shapes"][key] == list(shape)
    flags = {"--length": {"length": 5}, "--augment": {"augment": True},
             "--plies": {"plies": True}, "--boards": {"boards": True},
             "--seat": {"seat": 1}}  # fmt: skip
    options = {k: v for flag in extra if flag in flags for k, v in flags[flag].items()}
    direct, _ = enc.encode_dataset(dataset, encoding, **options)
    assert meta["options"] == options
    for name, values in direct.items():
        assert np.array_equal(arrays[name], values, equal_nan=values.dtype.kind == "f"), name


def test_encode_bad_input_is_one_line_exit_2(dataset, tmp_path, capsys):
    out = str(tmp_path / "x.npz")
    assert main(["encode", str(dataset), "--encoding", "morse", "--out", out]) == 2
    assert (
        main(["encode", str(dataset), "--encoding", "planes", "--length", "3", "--out", out]) == 2
    )
    assert main(["encode", str(tmp_path / "none"), "--encoding", "planes", "--out", out]) == 2
    assert main(["encode", str(dataset), "--encoding", "planes", "--plies", "--out", out]) == 2
    assert main(["encode", str(dataset), "--encoding", "planes", "--boards", "--out", out]) == 2
    only_boards = ["--encoding", "qualitative", "--boards", "--out", out]
    assert main(["encode", str(dataset), *only_boards]) == 2
    assert main(["encode", str(dataset), "--encoding", "planes", "--seat", "0", "--out", out]) == 2
    seat_two = ["--encoding", "qualitative", "--seat", "2", "--out", out]
    assert main(["encode", str(dataset), *seat_two]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 8 and "unknown encoding 'morse'" in err[0]
    assert "--seat applies to sequence encodings" in err[6]
    assert "seat 2: connect4 has seats 0..1" in err[7]
    assert "--plies applies to sequence encodings" in err[3]
    assert "--boards applies to sequence encodings" in err[4]
    assert "boards need one round per move: add --plies" in err[5]


def test_several_datasets_encode_as_one_file_with_their_games_kept_apart(dataset, tmp_path, capsys):
    """Two folders of one game: the file is each folder's own encoding, in order, with the
    second folder's game ids moved past the first's (a split by game keeps games whole);
    datasets of different games are refused."""
    from features.store import generate_dataset, read_manifest

    other = tmp_path / "c4-seed4"
    generate_dataset(other, "connect4", "randomized", {"x": 5, "y": 2}, seed=4)
    out = tmp_path / "both.npz"
    args = ["--encoding", "qualitative", "--plies", "--boards", "--seat", "0", "--out", str(out)]
    assert main(["encode", str(dataset), str(other), *args]) == 0
    joined, meta = enc.load(out)
    options = {"plies": True, "boards": True, "seat": 0}
    first, _ = enc.encode_dataset(dataset, "qualitative", **options)
    second, _ = enc.encode_dataset(other, "qualitative", **options)
    n = len(first["inputs"])
    assert meta["rows"] == n + len(second["inputs"]) == len(joined["inputs"])
    assert meta["dataset"] == f"{dataset}+{other}" and meta["options"] == options
    hashes = [read_manifest(folder)["content_hash"] for folder in (dataset, other)]
    assert meta["manifest_hash"] == "+".join(hashes)
    for name in ("inputs", "targets", "boards", "seat_outcomes"):
        assert np.array_equal(joined[name][:n], first[name], equal_nan=True), name
        assert np.array_equal(joined[name][n:], second[name], equal_nan=True), name
    assert np.array_equal(joined["game_id"][:n], first["game_id"])
    shift = joined["game_id"][n:] - second["game_id"]
    assert (shift == first["game_id"].max() + 1).all()
    assert not set(joined["game_id"][:n]) & set(joined["game_id"][n:])
    bikes = tmp_path / "bikes"
    generate_dataset(bikes, "lazerbike", "randomized", {"x": 2, "y": 1}, seed=1)
    assert main(["encode", str(dataset), str(bikes), "--encoding", "qualitative",
                 "--out", str(tmp_path / "mixed.npz")]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gridbots: error: the datasets hold different games (connect4, lazerbike)"]


def test_encoded_file_records_the_dataset_content_hash(dataset):
    from features.store import read_manifest

    _, meta = enc.encode_dataset(dataset, "quantitative")
    assert meta["manifest_hash"] == read_manifest(dataset)["content_hash"]
    assert len(meta["manifest_hash"]) == 64


def test_replayed_positions_hold_every_ply_and_agree_with_the_recorded_decisions(tmp_path):
    """Replaying a tactics games table gives every ply's state, chance nodes (a unit's draw
    pending) included; at the plies where the generator recorded a decision, the replayed
    state is the recorded one, and each row carries player 0's result."""
    from engine.protocol import CHANCE
    from features.store import generate_dataset, load_dataset

    spec = "tactics:units=1"
    game = load_game("tactics", units=1)
    options = {"x": 3, "y": 1, "w": 0.0, "agents": ["random", "random"]}
    generate_dataset(tmp_path / "data", spec, "imitation", options, seed=1)
    games = load_dataset(tmp_path / "data", "games")
    decisions = load_dataset(tmp_path / "data", "positions")
    every = enc.replayed_positions(games, game)
    assert every.num_rows == sum(games.column("length").to_pylist())  # the terminal one dropped
    states = enc.list_matrix(every.column("state"), len(every["state"][0]), np.int64)
    plies = zip(every["game_id"].to_pylist(), every["ply"].to_pylist(), strict=True)
    key = {(g, p): i for i, (g, p) in enumerate(plies)}
    recorded = enc.list_matrix(decisions.column("state"), len(every["state"][0]), np.int64)
    recorded_plies = zip(
        decisions["game_id"].to_pylist(), decisions["ply"].to_pylist(), strict=True
    )
    for row, (g, ply) in enumerate(recorded_plies):
        assert np.array_equal(states[key[(g, ply)]], recorded[row])
    probe = game.new_initial_state(seed=0)
    movers = []
    for s in states:
        probe.array[:] = s
        movers.append(probe.current_player())
    assert CHANCE in movers and 0 in movers and 1 in movers
    returns = {r["game_id"]: r["returns"][0] for r in games.to_pylist()}
    assert every["outcome"].to_pylist() == [returns[g] for g in every["game_id"].to_pylist()]
    sparse = enc.replayed_positions(games, game, every=3)
    assert set(sparse["ply"].to_pylist()) <= set(range(0, 10_000, 3))
    assert sparse.num_rows == sum(1 for p in every["ply"].to_pylist() if p % 3 == 0)
    arrays = enc.value_planes(sparse, game)
    assert np.array_equal(arrays["outcome"][1::2], -arrays["outcome"][0::2])


@pytest.mark.parametrize("suffix", [".npz", ".parquet"])
def test_save_replaces_the_file_only_when_complete(tmp_path, monkeypatch, suffix):
    out = tmp_path / f"arrays{suffix}"
    first = {"inputs": np.arange(6, dtype=np.int8).reshape(3, 2)}

    def meta(arrays, name):
        return {
            "encoding": name,
            "shapes": {k: list(v.shape) for k, v in arrays.items()},
            "dtypes": {k: str(v.dtype) for k, v in arrays.items()},
        }

    enc.save(first, meta(first, "first"), out)
    written = out.read_bytes()

    def killed_midway(path):
        Path(path).write_bytes(b"half a file")
        raise KeyboardInterrupt

    import pyarrow.parquet as pq

    monkeypatch.setattr(np, "savez_compressed", lambda path, **arrays: killed_midway(path))
    monkeypatch.setattr(pq, "write_table", lambda table, path: killed_midway(path))
    with pytest.raises(KeyboardInterrupt):
        second = {"inputs": np.zeros((5, 2), dtype=np.int8)}
        enc.save(second, meta(second, "second"), out)
    assert out.read_bytes() == written
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    arrays, kept = enc.load(out)
    assert np.array_equal(arrays["inputs"], first["inputs"]) and kept["encoding"] == "first"
