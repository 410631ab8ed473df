"""The provider probe: picks what really runs, says nothing while probing."""

import numpy as np

from agents.onnx import runtime as onnx_runtime


def test_probe_is_quiet_and_answers_a_working_provider(capfd):
    onnx_runtime._probe_providers.cache_clear()
    chosen = onnx_runtime.providers()
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    assert chosen[-1] == onnx_runtime.CPU
    assert set(chosen) <= {onnx_runtime.CPU, onnx_runtime.CUDA}


def test_session_runs_a_model_on_the_chosen_provider(tmp_path):
    path = tmp_path / "identity.onnx"
    path.write_bytes(onnx_runtime._probe_model())
    session = onnx_runtime.session(path)
    assert session.get_providers()[0] == onnx_runtime.providers()[0]
    x = np.array([2.5], dtype=np.float32)
    assert session.run(None, {"x": x})[0].tolist() == [2.5]


def test_probes_from_many_threads_at_once_stay_quiet(capfd):
    """Stages run bots on threads; the first calls probe together (a race once let onnxruntime's
    CUDA loading error through when one thread restored the logger mid-probe)."""
    import threading

    onnx_runtime._probe_providers.cache_clear()
    start = threading.Barrier(8)
    answers = []

    def probe():
        start.wait()
        answers.append(onnx_runtime.providers())

    threads = [threading.Thread(target=probe) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    captured = capfd.readouterr()
    assert captured.err == "" and len(set(answers)) == 1 and len(answers) == 8


def test_a_serving_process_starts_sessions_whose_idle_threads_sleep(tmp_path, monkeypatch):
    """`gridbots web` calls stop_spinning: its sessions say so in their options, and still run."""
    path = tmp_path / "identity.onnx"
    path.write_bytes(onnx_runtime._probe_model())
    key = "session.intra_op.allow_spinning"
    monkeypatch.setitem(onnx_runtime.SPINNING, "on", True)  # restored after the test
    onnx_runtime.stop_spinning()
    served = onnx_runtime.session(path)
    assert served.get_session_options().get_session_config_entry(key) == "0"
    x = np.array([1.5], dtype=np.float32)
    assert served.run(None, {"x": x})[0].tolist() == [1.5]


def test_processes_side_by_side_share_the_cores(tmp_path, monkeypatch):
    """A stage's pool process (onnx_runtime.process_pool) calls share_cores: its sessions
    take their share of the cores and sleep when idle; a session that names its threads keeps
    them."""
    import os

    path = tmp_path / "identity.onnx"
    path.write_bytes(onnx_runtime._probe_model())
    monkeypatch.setitem(onnx_runtime.SPINNING, "on", True)  # both restored after the test
    monkeypatch.setitem(onnx_runtime.DEFAULT_THREADS, "n", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    onnx_runtime.share_cores(4)
    shared = onnx_runtime.session(path).get_session_options()
    assert shared.intra_op_num_threads == 2
    assert shared.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert onnx_runtime.session(path, threads=3).get_session_options().intra_op_num_threads == 3
    onnx_runtime.share_cores(16)  # more processes than cores: one thread each
    assert onnx_runtime.session(path).get_session_options().intra_op_num_threads == 1


def test_a_process_told_its_share_of_cores_by_omp_num_threads_keeps_to_it(tmp_path, monkeypatch):
    """Cluster workers, sealed bots and the test suite's workers run with OMP_NUM_THREADS=1;
    onnxruntime's own pool ignores it, so a fresh process's sessions must read it here (before,
    each took every core beside its neighbours)."""
    import os
    import subprocess
    import sys

    for value, threads in (("1", 1), ("3", 3), ("0", 0), ("many", 0), ("-2", 0)):
        monkeypatch.setenv("OMP_NUM_THREADS", value)
        assert onnx_runtime._threads_from_environment() == threads, value
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert onnx_runtime._threads_from_environment() == 0  # onnxruntime's default: every core

    path = tmp_path / "identity.onnx"
    path.write_bytes(onnx_runtime._probe_model())
    probe = (
        "import sys; from agents.onnx import runtime as o; "
        "print(o.session(sys.argv[1]).get_session_options().intra_op_num_threads)"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "3"}  # read once, when the module loads
    done = subprocess.run([sys.executable, "-c", probe, str(path)], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == 3
