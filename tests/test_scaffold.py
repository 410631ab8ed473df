"""`write_game`: every template becomes a game that passes the protocol checks, its generated
test file passes on its own, the registry picks a new module up, and bad requests write nothing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from optional import missing

import engine
from engine import registry
from engine.conformance import check_game
from engine.protocol import KINDS, GameError
from engine.scaffold import class_name, render_template, write_game

REAL_ROOT = Path(engine.__file__).resolve().parents[1]
PROBES = {kind: f"probe_{kind}" for kind in KINDS}


def _env(pythonpath: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    return env


def _repo_like(root: Path) -> Path:
    (root / "engine" / "games").mkdir(parents=True)
    return root


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """One temporary checkout with a game of every kind; their registry entries go afterwards."""
    root = _repo_like(tmp_path_factory.mktemp("checkout"))
    paths = {kind: write_game(name, kind, root) for kind, name in PROBES.items()}
    yield root, paths
    for name in PROBES.values():
        registry._GAMES.pop(name, None)
        sys.modules.pop(f"engine.games.{name}", None)


def test_files_land_where_the_registry_and_pytest_look(generated):
    root, paths = generated
    for kind, name in PROBES.items():
        assert paths[kind] == [
            root / "engine" / "games" / f"{name}.py",
            root / "tests" / f"test_{name}.py",
        ]
        module_text, test_text = (p.read_text() for p in paths[kind])
        assert "{{" not in module_text + test_text and "#@" not in test_text
        assert (
            f'name = "{name}"' in module_text and f"class {class_name(name)}(Game)" in module_text
        )
        assert "# RULES:" in module_text and "REPLACE" in test_text


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_generated_game_conforms(generated, kind):
    _, paths = generated
    # the name the generated test file uses too: numba's on-disk cache of the kernels records it
    spec = importlib.util.spec_from_file_location(f"engine.games.{PROBES[kind]}", paths[kind][0])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    game = getattr(module, class_name(PROBES[kind]))()
    assert game.kind == kind and game.name == PROBES[kind]
    assert registry._GAMES[PROBES[kind]] is type(game)
    for seed in (0, 1, 2):
        check_game(game, seed)


def test_generated_test_files_pass(generated):
    root, _ = generated
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        env=_env(REAL_ROOT),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # duel: 3 conformance + 1 hand-worked; war: 3 + 2 three-player + 1; puzzle: 3 + 1
    assert "14 passed" in result.stdout, result.stdout


def test_generated_files_are_lint_clean(generated):
    root, paths = generated
    ruff = Path(sys.executable).with_name("ruff")
    config = REAL_ROOT / "pyproject.toml"
    if not ruff.exists():
        missing("ruff", "the dev extra: pip install -c constraints.txt -e '.[dev]'")
    files = [str(p) for pair in paths.values() for p in pair]
    # outside the checkout ruff cannot tell that `engine` is the project's own package
    first_party = "lint.isort.known-first-party = ['engine']"
    for args in (["check"], ["format", "--check"]):
        result = subprocess.run(
            [str(ruff), *args, "--config", str(config), "--config", first_party, *files],
            cwd=root,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_registry_discovers_a_new_game(tmp_path):
    """A copy of the engine package with a new module: load_game finds it by name."""

    def skip_games(folder: str, names: list[str]) -> list[str]:
        skipped = [n for n in names if n == "__pycache__"]
        if Path(folder).name == "games":
            skipped += [n for n in names if n != "__init__.py"]
        return skipped

    shutil.copytree(REAL_ROOT / "engine", tmp_path / "engine", ignore=skip_games)
    write_game("probe_found", "duel", tmp_path)
    script = (
        "import engine\n"
        f"assert engine.__file__.startswith({str(tmp_path)!r}), engine.__file__\n"
        "from engine import game_names, load_game\n"
        "assert 'probe_found' in game_names(), game_names()\n"
        "state = load_game('probe_found').new_initial_state()\n"
        "state.apply_action(4)\n"
        "print(state)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:4] == [". . .", ". X .", ". . .", "O to move"]


@pytest.mark.parametrize(
    "name", ["Connect", "1game", "my-game", "", "class", "match", "_hidden", "naïve", 42]
)
def test_bad_names_are_refused(tmp_path, name):
    root = _repo_like(tmp_path)
    with pytest.raises(GameError):
        write_game(name, "duel", root)
    assert not any(root.rglob("*.py"))


def test_existing_game_names_are_refused(tmp_path):
    root = _repo_like(tmp_path)
    with pytest.raises(GameError, match="already exists"):
        write_game("connect4", "duel", root)
    assert not any(root.rglob("*.py"))


def test_existing_files_are_never_overwritten(tmp_path):
    root = _repo_like(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_fresh.py").write_text("# mine\n")
    with pytest.raises(GameError, match="already exists"):
        write_game("fresh", "war", root)
    assert (root / "tests" / "test_fresh.py").read_text() == "# mine\n"
    assert not (root / "engine" / "games" / "fresh.py").exists()
    (root / "engine" / "games" / "other.py").write_text("# mine\n")
    with pytest.raises(GameError, match="already exists"):
        write_game("other", "puzzle", root)
    assert (root / "engine" / "games" / "other.py").read_text() == "# mine\n"


def test_bad_kind_and_bad_root_are_refused(tmp_path):
    with pytest.raises(GameError, match="kind"):
        write_game("fresh", "chess", _repo_like(tmp_path))
    with pytest.raises(GameError, match="engine/games"):
        write_game("fresh", "duel", tmp_path / "elsewhere")


def test_placeholders_and_sections():
    assert class_name("my_game2") == "MyGame2" and class_name("pig") == "Pig"
    template = "x = '{{name}}'\nclass {{Class}}:\n    pass\n#@ duel\nduel {{name}}\n#@ war\nwar\n"
    assert render_template(template, "ab_c") == template.replace("{{name}}", "ab_c").replace(
        "{{Class}}", "AbC"
    )
    assert (
        render_template(template, "ab_c", "duel") == "x = 'ab_c'\nclass AbC:\n    pass\nduel ab_c\n"
    )
    with pytest.raises(GameError):
        render_template(template, "ab_c", "puzzle")
