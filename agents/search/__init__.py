"""Search agents over the kernel protocol: the one alpha-beta core (core, loop, table) and the
agents on it (alphabeta, simab, hps), UCT (mcts) and the A* box-pushing planner."""
