"""engine.noise: library start-up chatter muted where it arises, everything else passed on,
and all of it shown with `--verbose`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import noise

REPO = Path(__file__).resolve().parents[1]
CHATTER = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1795449088.473152   16324 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.\n"
    "E0000 00:00:1795449102.459281   16324 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
)


def test_chatter_is_dropped_and_other_lines_pass(capfd, monkeypatch):
    monkeypatch.delenv(noise.VERBOSE, raising=False)
    with noise.startup_chatter_muted():
        os.write(2, CHATTER.encode() + b"a warning from another thread\n")
    assert capfd.readouterr().err == "a warning from another thread\n"


def test_everything_shows_when_the_body_fails_or_when_verbose(capfd, monkeypatch):
    monkeypatch.setenv(noise.VERBOSE, "")  # restored after the test, whatever set_verbose does
    with pytest.raises(ImportError), noise.startup_chatter_muted():
        os.write(2, CHATTER.encode())
        raise ImportError("no tensorflow")
    assert capfd.readouterr().err == CHATTER
    noise.set_verbose(True)
    assert noise.verbose()
    with noise.startup_chatter_muted():
        os.write(2, CHATTER.encode())
    assert capfd.readouterr().err == CHATTER


def test_the_verbose_flag_reaches_the_children(monkeypatch, capsys):
    from flows.entry import main

    monkeypatch.setenv(noise.VERBOSE, "")
    assert main(["games", "--json"]) == 0 and not noise.verbose()
    assert main(["--verbose", "games", "--json"]) == 0
    assert os.environ[noise.VERBOSE] == "1"  # what the stages `dvc repro` starts inherit


@pytest.mark.slow
def test_verbose_shows_tensorflow_loading():
    """(Quiet loading is checked on a real training stage: test_pipeline.)"""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-c", "from engine.noise import import_tensorflow; import_tensorflow()"],
        cwd=REPO, env={**env, noise.VERBOSE: "1"}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr.strip()  # absl, oneDNN, CUDA: it always speaks
