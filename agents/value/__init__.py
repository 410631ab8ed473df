"""Value networks as a search's leaf evaluation: the per-state inputs they read (features), the
value MLP run inside the alpha-beta loop (leaf) and any value network on onnxruntime (onnx_eval)."""
