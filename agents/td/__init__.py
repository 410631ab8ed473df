"""Study 002's TD value networks (`td:`): the agent, the numba learning and play loops (net), the
two architectures (mlp, ntuple) and their leaf in the alpha-beta core (search)."""
