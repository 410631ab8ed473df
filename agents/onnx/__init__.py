"""onnxruntime for every learned agent (runtime: sessions, providers, models read once) and the
`onnx:PATH` agent that picks the agent a model file's kind asks for (agent)."""
