"""The bot zoo: every entry under zoo/ plays a legal game from its card's spec, and every one of
its files has the sha256 its card records (hashed here with hashlib, independently of the
loader). Entries are found by their card.json, so a new game's entry is covered when it lands.
Tampering (a changed byte, a file the card does not list, a pickle under a portable name) is
refused."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

import pytest

from engine import parse_game_spec
from engine.match import play_game
from models import zoo
from models.base import ModelError
from models.portable import check_file

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = zoo.entries(ROOT / "zoo")
IDS = [f"{p.parent.name}/{p.name}" for p in ENTRIES]


def test_the_zoo_has_its_connect4_entry():
    assert "connect4/playerzero" in IDS


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_file_has_its_recorded_hash(entry):
    card = json.loads((entry / "card.json").read_text())
    assert card["files"], "an entry lists its files"
    for row in card["files"]:
        data = (entry / row["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["sha256"], row["path"]
        assert len(data) == row["bytes"], row["path"]
    assert zoo.load(entry).model.is_file()


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_it_plays_a_legal_game_from_its_cards_spec(entry):
    from agents import make

    card = zoo.load(entry)
    game = parse_game_spec(card.game)
    spec = card.spec()
    assert str(entry) in spec and "{dir}" not in spec
    for seat in range(game.num_players):
        seats = [make("random", game, seed=7 + p) for p in range(game.num_players)]
        seats[seat] = make(spec, game, seed=seat)
        final = play_game(game, seats, seed=11)
        assert final.is_terminal()
        replay = game.state_from_history(final.history())  # raises on any illegal move
        assert replay.returns() == final.returns()


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_the_human_card_shows_the_spec_and_every_hash(entry):
    card = zoo.load(entry)
    page = (entry / "card.md").read_text()
    shown = card.data["spec"].replace("{dir}", f"zoo/{entry.parent.name}/{entry.name}")
    assert shown in page
    for row in card.data["files"]:
        assert row["sha256"] in page
    for item in card.data["evidence"]:
        assert item["figure"] in page


@pytest.fixture
def copied(tmp_path):
    target = tmp_path / "entry"
    shutil.copytree(ROOT / "zoo/connect4/playerzero", target)
    return target


def test_a_changed_byte_is_refused(copied):
    card = zoo.load(copied)
    data = bytearray(card.model.read_bytes())
    data[len(data) // 2] ^= 0x01
    card.model.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="sha256 differs"):
        zoo.load(copied)


def test_a_file_the_card_does_not_list_is_refused(copied):
    (copied / "notes.txt").write_text("not on the card\n")
    with pytest.raises(ModelError, match="not listed on the card"):
        zoo.load(copied)


def test_a_pickle_is_refused_whatever_it_is_called(tmp_path):
    for name in ("model.onnx", "genome.json", "model.crfsuite", "model.pkl"):
        path = tmp_path / name
        path.write_bytes(pickle.dumps({"weights": [1, 2, 3]}))
        with pytest.raises(ModelError, match=r"pickle|not a portable format"):
            check_file(path)


def test_the_connect4_card_states_what_the_issue_asks():
    card = zoo.load(ROOT / "zoo/connect4/playerzero").data
    assert card["spec"] == "puct:model={dir}/network-int8.onnx,ms=19,prior_temp=3,exact=17"
    assert "exact=17" in card["what"]["search at play time"]  # the exact search at play time
    for key in ("profile", "params", "commit", "dvc_lock", "mlflow_run_id", "training_hours"):
        assert key in card["made"]
    for item in card["evidence"]:
        for key in ("opponent", "seeded_openings", "sides_swapped", "interval"):
            assert key in item, (item["figure"], key)
