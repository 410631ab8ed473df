"""AlphaZero-style search (`puct:`, `policy:`): the agent, its flat numba forest (tree), solved
nodes and exact leaf search (proof), the sequential-halving root (gumbel), the network (pv_net)."""
