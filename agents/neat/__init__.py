"""Study 003's NEAT networks (`neat:`): the agent, the tile-move interface between board and
network (codec) and genomes as flat arrays and ONNX graphs (network)."""
