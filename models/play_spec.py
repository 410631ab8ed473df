"""How a registered version is played: its own play spec, else the one its artifact kind calls for.

One place for the `registry:` agent (models.registry_agent), the pyfunc bot MLflow loads
(models.pyfunc_bot) and registration (models.registry.register_run), so a version plays the same
through gridbots and through MLflow. A version carries its play spec as the tag `play.spec`
(a zoo card's spec travels this way: `puct:model={dir}/network-int8.onnx,ms=20,prior_temp=3`);
`{path}` stands for the version's model file, `{dir}` for the folder holding it and its sidecars.
"""

from __future__ import annotations

from pathlib import Path

#: artifact kind → the spec of the agent that plays it when the version names none
INNER_SPECS = {
    "onnx": "onnx:{path}",
    "hmm-json": "seq:model={path}",
    "crfsuite": "seq:model={path}",
}
#: the version tag holding its play spec; `bundle.spec` is where imports before it kept theirs
PLAY_SPEC_TAG = "play.spec"
_OLDER_TAGS = ("bundle.spec",)


def version_spec(kind: str, tags: dict[str, str]) -> str:
    """The play spec template of a version: its tag, else its kind's default."""
    for key in (PLAY_SPEC_TAG, *_OLDER_TAGS):
        if tags.get(key):
            return str(tags[key])
    return INNER_SPECS[kind]


def resolve(template: str, model: Path) -> str:
    """A play spec template with `{path}` / `{dir}` made the model file / its folder."""
    return template.replace("{path}", str(model)).replace("{dir}", str(Path(model).parent))


def with_options(spec: str, options: dict[str, str]) -> str:
    """A spec with options added after its own, so they win (`onnx:PATH:ms=50`,
    `puct:model=PATH,ms=20,ms=200`: agents.base.parse_spec keeps the last value of a key)."""
    if not options:
        return spec
    joiner = ":" if spec.count(":") == 1 and "=" not in spec else ","
    return spec + joiner + ",".join(f"{k}={v}" for k, v in options.items())
