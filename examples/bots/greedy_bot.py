"""An example user bot for `file:examples/bots/greedy_bot.py` (isolated mode only).

    gridbots match connect4 file:examples/bots/greedy_bot.py random --games 10 --isolated

A bot is any class with `step(state, player) -> action`; the constructor may take `game` and
`seed`. It sees a copy of the position (the full State API: legal_actions, clone,
apply_action, returns, ...), never the referee's. This one takes a move that wins at once, else
avoids moves after which the opponent can win at once, else plays at random.
"""

import random


class GreedyBot:
    def __init__(self, game, seed=None):
        self.game = game
        self.rng = random.Random(seed)

    def step(self, state, player):
        legal = state.legal_actions(player)
        if state.is_simultaneous_node():
            return self.rng.choice(legal)
        safe = []
        for action in legal:
            after = state.clone()
            after.apply_action(action)
            if after.is_terminal():
                if after.returns()[player] > 0:
                    return action
                continue
            if not self._opponent_wins(after, player):
                safe.append(action)
        return self.rng.choice(safe or legal)

    @staticmethod
    def _opponent_wins(state, player):
        mover = state.current_player()
        if mover < 0 or mover == player:
            return False
        for reply in state.legal_actions():
            after = state.clone()
            after.apply_action(reply)
            if after.is_terminal() and after.returns()[mover] > 0:
                return True
        return False
