"""How a registered model file is played: the agent spec each artifact kind calls for.

One table for the `registry:` agent (models.registry_agent) and the pyfunc bot MLflow loads
(models.pyfunc_bot), so a version plays the same through gridbots and through MLflow.
"""

from __future__ import annotations

#: artifact kind → the spec of the agent that plays it ({path} is the local file)
INNER_SPECS = {
    "onnx": "onnx:{path}",
    "hmm-json": "seq:model={path}",
    "crfsuite": "seq:model={path}",
}


def with_options(spec: str, options: dict[str, str]) -> str:
    """An inner spec with options added (`onnx:PATH:ms=50`, `seq:model=PATH,guards=win`)."""
    if not options:
        return spec
    joiner = ":" if spec.count(":") == 1 and "=" not in spec else ","
    return spec + joiner + ",".join(f"{k}={v}" for k, v in options.items())
