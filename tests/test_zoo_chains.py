"""The zoo's chains (issue 66 item 3): rebuild/dvc.yaml, a DVC project of its own, rebuilds each
zoo entry from nothing under params-zoo.yaml. Here every chain runs through `dvc repro` at the
tiny profile (params-zoo-tiny.yaml copied over params-zoo.yaml in a copy of the tracked files),
and each rebuilt folder must be a zoo entry: a card models.zoo.load accepts (every file hashed),
evidence measured by its card's commands, and a bot that plays a legal game in every seat. The
root project never sees the chains, and a rebuilt entry installs into a zoo only past its floors.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from engine import parse_game_spec
from engine.match import play_game
from engine.noise import TELEMETRY_OFF
from flows.pipeline.dependencies import subproject_deps
from flows.pipeline.host import start_host, wait_ready
from models import zoo
from models.base import ModelError
from tests.test_dvc_repro import BIN, REPO, copy_repo, git

CHAINS = yaml.safe_load((REPO / "rebuild" / "dvc.yaml").read_text())["stages"]
ENTRIES = [name for name in CHAINS if name.startswith("rebuild-")]
PROFILE = yaml.safe_load((REPO / "params-zoo.yaml").read_text())
TINY = yaml.safe_load((REPO / "params-zoo-tiny.yaml").read_text())


def test_each_chain_names_the_source_files_its_commands_run():
    """rebuild/dvc.yaml's source deps are what flows.pipeline.dependencies derives (its
    --write keeps them), and every entry of the profile has its chain's last stage."""
    wanted = subproject_deps(REPO, "rebuild")
    for name, stage in CHAINS.items():
        source = [d for d in stage["deps"] if d.startswith("../") and d.endswith(".py")]
        assert source == wanted[name], name
    made = {f"rebuild-{s['game']}" for s in PROFILE["zoo"].values()}
    assert made == set(ENTRIES)
    # a generation runs its technique's module, a training its own family's and no other's
    assert "../features/generate/imitation.py" in wanted["generate-lazerbike"]
    assert "../models/cost_to_go.py" in wanted["train-sokoban"]
    assert "../models/lstm.py" not in wanted["train-sokoban"]
    assert "../models/td.py" in wanted["train-othello"]
    assert "../models/neat.py" not in wanted["train-othello"]


def test_the_tiny_profile_has_the_zoo_profiles_keys():
    def keys(tree, prefix=""):
        if not isinstance(tree, dict):
            return {prefix}
        return set().union(*(keys(v, f"{prefix}.{k}") for k, v in tree.items()))

    assert keys(TINY) == keys(PROFILE)
    assert TINY["profile"] == "zoo-tiny" and PROFILE["profile"] == "zoo"


@pytest.mark.slow
def test_every_zoo_chain_rebuilds_a_playable_entry_at_tiny_scale(tmp_path, prefect_api):
    from agents import make

    root = tmp_path / "repo"
    root.mkdir()
    copy_repo(root)
    shutil.copyfile(root / "params-zoo-tiny.yaml", root / "params-zoo.yaml")
    git(root, "init", "-q")
    git(root, "config", "user.email", "test@example.invalid")
    git(root, "config", "user.name", "test")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "zoo-tiny")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                            text=True, check=True).stdout.strip()  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PREFECT_", "DVC_"))}
    env.update(TELEMETRY_OFF, PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               GRIDBOTS_MODEL_CACHE=str(tmp_path / "model-cache"))  # fmt: skip
    env["PREFECT_API_URL"] = prefect_api
    host, env = start_host(env)  # as `gridbots repro` does: stages fork from a warm host
    try:
        assert wait_ready(host, env, timeout=300)
        done = subprocess.run([str(BIN / "dvc"), "repro"], cwd=root / "rebuild", env=env,
                              capture_output=True, text=True, timeout=900)  # fmt: skip
    finally:
        host.terminate()
        host.wait(timeout=60)
    (tmp_path / "repro.log").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    lock = yaml.safe_load((root / "rebuild" / "dvc.lock").read_text())["stages"]
    assert set(lock) == set(CHAINS)
    for name in ENTRIES:
        settings = next(s for s in TINY["zoo"].values() if f"rebuild-{s['game']}" == name)
        folder = root / "rebuild" / "zoo" / settings["game"] / settings["name"]
        card = zoo.load(folder)  # every file there, listed, with its hash
        assert card.data["made"]["profile"].startswith("zoo-tiny")
        assert card.data["made"]["commit"] == commit
        assert len(card.data["evidence"]) == len(settings["evidence"])
        for item, wanted in zip(card.data["evidence"], settings["evidence"], strict=True):
            kept = json.loads((folder / item["file"]).read_text())
            assert item["status"] == "measured" and isinstance(item["floor_met"], bool)
            assert str(folder) not in json.dumps(kept)  # the folder as {dir}
            if wanted["argv"][:2] == ["solved", "rate"]:  # one row per spec
                assert item["value"] == kept[0]["optimal_rate"]
                assert item["positions"] == kept[0]["positions"] == 10
            elif wanted["argv"][:2] == ["puzzle", "rate"]:  # per level, beside the planner
                tries = int(wanted["argv"][wanted["argv"].index("--attempts") + 1])
                assert item["attempts"] == kept["attempts"] == tries * len(kept["levels"])
                assert item["value"] == kept["success_rate"]
                assert item["floor_met"] == kept["at_reference_rate"]
            else:  # a match, or the Othello League's benchmark: games, W/D/L, score
                games = int(wanted["argv"][wanted["argv"].index("--games") + 1])
                assert kept["games"] == item["games"] == games
                assert kept["wins"] + kept["draws"] + kept["losses"] == games
                assert item["value"] == kept["score"]
            assert item["command"].endswith(" ".join(wanted["argv"][-2:]))
            assert item["spec"] in wanted["argv"]  # the spec its command played
        game = parse_game_spec(card.game)
        for seat in range(game.num_players):
            seats = [make("random", game, seed=3 + p) for p in range(game.num_players)]
            seats[seat] = make(card.spec(), game, seed=seat)
            final = play_game(game, seats, seed=5)
            assert final.is_terminal()
            assert game.state_from_history(final.history()).returns() == final.returns()
    # the root project never sees the chains (their folder is a DVC project of its own)
    from dvc.repo import Repo

    with Repo(str(root)) as project:
        seen = {stage.name for stage in project.index.stages}
    assert "zoo-import" in seen and not seen & set(CHAINS)
    # a rebuilt entry goes into a zoo only when its floors hold (tiny figures: some do not)
    rebuilt = root / "rebuild" / "zoo" / "pig" / "playerzero"
    short = zoo.below_floor(zoo.load(rebuilt))
    target = tmp_path / "zoo"
    if short:
        with pytest.raises(ModelError, match="floor not met"):
            zoo.install(rebuilt, target)
        assert not (target / "pig" / "playerzero").exists()
    installed = zoo.install(rebuilt, target, allow_below_floor=True)
    assert installed == target / "pig" / "playerzero"
    assert zoo.load(installed).data["files"] == zoo.load(rebuilt).data["files"]
    assert "zoo/pig/playerzero/network.onnx" in (installed / "card.md").read_text()
