"""OpenSpiel as an independent referee for Connect 4 and Othello, and as a peer bot."""

import numpy as np
import pytest
from optional import require_module

from agents import AgentError, make
from engine import load_game
from engine.match import play_match

pyspiel = require_module(
    "pyspiel", "the peers extra: pip install -c constraints.txt -e '.[peers]'", module_level=True
)


@pytest.mark.parametrize("name", ["connect4", "othello"])
def test_rules_agree_with_openspiel_move_by_move(name):
    game = load_game(name)
    peer_game = pyspiel.load_game(game.openspiel_name)
    rng = np.random.default_rng(11)
    for _ in range(60):
        state, peer = game.new_initial_state(), peer_game.new_initial_state()
        while not state.is_terminal():
            assert sorted(state.legal_actions()) == sorted(peer.legal_actions())
            assert state.current_player() == peer.current_player()
            action = state.random_action(rng)
            state.apply_action(action)
            peer.apply_action(action)
        assert peer.is_terminal() and list(peer.returns()) == state.returns()


def test_openspiel_bots_play_gridbots_games():
    game = load_game("connect4")
    result = play_match(
        game,
        lambda s: make("openspiel:mcts:sims=200", game, seed=s),
        lambda s: make("openspiel:random", game, seed=s),
        games=4,
    )
    assert result.wins >= 3


def test_what_openspiel_cannot_play_is_refused_in_one_line():
    for spec, game, words in (
        ("openspiel:mcts", "lazerbike", "openspiel: mcts plays turn-based games, not lazerbike"),
        ("openspiel:minimax", "connect4", "openspiel: unknown bot 'minimax'; known: mcts, random"),
    ):
        with pytest.raises(AgentError) as refused:
            make(spec, load_game(game))
        assert str(refused.value) == words
