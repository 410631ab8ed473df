"""Training, ONNX export, MLflow tracking and the bot registry."""
