"""The Python API on the repository's own models: tensor facts, running, errors for bad
arguments, profiling, resizing, threads, and the README's Python snippet."""

import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import nnrt
from conftest import FIRST_RUN, REPO, built_or_skip, corpus_or_skip

TINY = REPO / "examples" / "models" / "tiny_mobilenet.tflite"
TINY_PKG = REPO / "examples" / "models" / "tiny_mobilenet.nnpkg"
TINY_INPUT = REPO / "examples" / "models" / "tiny_mobilenet_input.0.npy"
TINY_EXPECTED = REPO / "examples" / "models" / "tiny_mobilenet_expected.0.npy"
PTE_DYNAMIC = REPO / "tests" / "data" / "pte" / "dynamic_batch"


@pytest.fixture
def tiny():
    with nnrt.Session(TINY, backends="cpu", threads=1) as s:
        yield s


def test_tensor_facts(tiny):
    (i,) = tiny.inputs
    (o,) = tiny.outputs
    assert (i.name, i.shape, i.signature, i.dtype) == ("input", (1, 32, 32, 3), (1, 32, 32, 3), np.dtype("float32"))
    assert (o.name, o.shape, o.dtype, o.quantization) == ("probs", (1, 10), np.dtype("float32"), None)
    assert tiny.methods == ["serving_default"] and tiny.method is None and tiny.threads == 1


def test_quantization_facts():
    with nnrt.Session(FIRST_RUN / "model.tflite") as s:
        q = s.inputs[0].quantization
        assert (q.scales, q.zero_points, q.axis) == ((0.0078125,), (128,), None)
        assert s.outputs[0].quantization.dequantize(np.array([0, 128, 255], np.uint8)).tolist() == [0.0, 0.5, 255 / 256]


def test_run_matches_the_expected_output_every_way_inputs_are_given(tiny):
    x = np.load(TINY_INPUT)
    want = np.load(TINY_EXPECTED)
    # The expected output was written by nnpackage_run on cpu; float sums may differ in the last bits
    # across thread counts and SIMD paths, hence a tolerance of 1e-5 on softmax probabilities.
    for given in ([x], (x,), {"input": x}, x):
        (y,) = tiny.run(given)
        assert y.dtype == np.float32 and y.shape == (1, 10)
        np.testing.assert_allclose(y, want, atol=1e-5)
    # Non-contiguous and Fortran-ordered arrays of the right dtype are copied to C order first.
    wide = np.zeros((1, 32, 64, 3), np.float32)
    wide[:, :, ::2, :] = x
    (a,) = tiny.run([wide[:, :, ::2, :]])
    (b,) = tiny.run([np.asfortranarray(x)])
    (c,) = tiny.run([x.tolist()])  # a list is converted to the input's dtype
    for got in (a, b, c):
        np.testing.assert_array_equal(got, tiny.run([x])[0])


def test_outputs_own_their_memory(tiny):
    x = np.load(TINY_INPUT)
    (first,) = tiny.run([x])
    kept = first.copy()
    tiny.run([np.zeros_like(x)])
    np.testing.assert_array_equal(first, kept)  # the next run did not overwrite it
    first[...] = 0  # and it is the caller's to change


def test_a_package_with_cfg_runs():
    with nnrt.Session(TINY_PKG, backends=None) as s:
        (y,) = s.run([np.load(TINY_INPUT)])
        np.testing.assert_allclose(y, np.load(TINY_EXPECTED), atol=1e-5)


def test_bad_inputs_are_invalid_argument_errors(tiny):
    x = np.load(TINY_INPUT)
    cases = [
        ([], "the model has 1 inputs, got 0"),
        ([x, x], "the model has 1 inputs, got 2"),
        ([x.astype(np.float64)], "is float32, got an array of float64"),
        ([x.astype(">f4")], "is float32, got an array of >f4"),
        ([x[:, :16]], "does not fit the model's [1,32,32,3]"),
        ([x.reshape(1, 32, 96)], "does not fit the model's [1,32,32,3]"),
        ({"nope": x}, "unknown ['nope'], missing ['input']"),
        (42, "inputs must be a list, a tuple, a dict or an array"),
    ]
    for given, message in cases:
        with pytest.raises(nnrt.InvalidArgumentError) as e:
            tiny.run(given)
        assert message in str(e.value), str(e.value)
        assert isinstance(e.value, ValueError) and isinstance(e.value, nnrt.Error)
    # The session is still usable.
    np.testing.assert_allclose(tiny.run([x])[0], np.load(TINY_EXPECTED), atol=1e-5)


def test_bad_session_arguments():
    with pytest.raises(nnrt.LoadError, match="no/such.tflite"):
        nnrt.Session("no/such.tflite")
    with pytest.raises(nnrt.LoadError):
        nnrt.Session(TINY_INPUT)  # an .npy file is not a model
    with pytest.raises(nnrt.InvalidArgumentError, match="NUM_THREADS"):
        nnrt.Session(TINY, threads=1000)
    with pytest.raises(nnrt.InvalidArgumentError, match="threads must be a positive integer"):
        nnrt.Session(TINY, threads=0)
    with pytest.raises(nnrt.InvalidArgumentError, match="no backend is named 'tpu'"):
        nnrt.Session(TINY, backends="tpu")
    with pytest.raises(nnrt.InvalidArgumentError, match="serving_default"):
        nnrt.Session(TINY, method="nope")
    with pytest.raises(nnrt.LoadError, match="libnope.so"):
        nnrt.Session(TINY, custom_op_libs=["libnope.so"])
    with pytest.raises(nnrt.InvalidArgumentError, match="NUM_THREADS"):
        nnrt.Session(TINY, config={"NUM_THREADS": "0"})
    with pytest.raises(nnrt.InvalidArgumentError, match="lists of paths"):
        nnrt.Session(TINY, custom_op_libs="libnope.so")


def test_closed_session(tiny):
    tiny.close()
    tiny.close()  # twice is fine
    assert tiny.closed
    for call in (lambda: tiny.inputs, lambda: tiny.run([np.load(TINY_INPUT)]), tiny.profile, tiny.placements):
        with pytest.raises(nnrt.InvalidArgumentError, match="the session is closed"):
            call()


def test_resize_and_run_with_other_shapes():
    with nnrt.Session(PTE_DYNAMIC / "program.pte") as s:
        assert None in s.inputs[0].signature, s.inputs[0]
        for b in ("b1", "b5", "b8"):
            x = np.load(PTE_DYNAMIC / f"input_{b}_0.npy")
            s.resize({0: x.shape})
            assert s.inputs[0].shape == x.shape
            got = s.run([x])
            for j, y in enumerate(got):
                want = np.load(PTE_DYNAMIC / f"expected_{b}_{j}.npy")
                assert y.shape == want.shape
                # ExecuTorch's outputs: float sums in another order, within 1e-4 (conform.py's default).
                np.testing.assert_allclose(y, want, atol=1e-4, rtol=1e-4)
        with pytest.raises(nnrt.InvalidArgumentError):
            s.resize({"nope": [1, 2]})


def test_profile_and_placements(tiny):
    x = np.load(TINY_INPUT)
    tiny.set_profiling(True)
    for _ in range(3):
        tiny.run([x])
    prof = tiny.profile()
    placed = tiny.placements()
    assert [p.backend for p in placed] == ["cpu"] * 8 and all(p.fallback_reason is None for p in placed)
    assert {t.kind for t in prof} <= {p.kind for p in placed} and prof
    assert all(t.backend == "cpu" and t.ms >= 0 for t in prof)
    assert [t.total_ms for t in prof] == sorted((t.total_ms for t in prof), reverse=True)
    assert sum(t.total_ms for t in prof) > 0
    for t in prof:
        assert t.ms == pytest.approx(t.total_ms / 3)
    tiny.set_profiling(False)


def test_cancel_stops_the_next_run_and_the_session_stays_usable(tiny):
    x = np.load(TINY_INPUT)
    tiny.cancel()
    with pytest.raises(nnrt.RunError, match="cancel"):
        tiny.run([x])
    np.testing.assert_allclose(tiny.run([x])[0], np.load(TINY_EXPECTED), atol=1e-5)


def test_two_sessions_on_two_threads_run_at_once():
    """Each thread runs its own session at the same time; each gets the single-thread result, and
    their runs overlap in time."""
    model = FIRST_RUN / "model.tflite"
    x = np.load(FIRST_RUN / "cat_input.0.npy")
    with nnrt.Session(model, threads=1) as s:
        (want,) = s.run([x])
    spans = {0: [], 1: []}
    results = {0: [], 1: []}
    errors = []
    start = threading.Barrier(2)

    def work(k):
        try:
            with nnrt.Session(model, threads=1) as s:
                start.wait()
                for _ in range(40):
                    t0 = time.perf_counter()
                    (y,) = s.run([x])
                    spans[k].append((t0, time.perf_counter()))
                    results[k].append(y)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in (0, 1):
        assert len(results[k]) == 40
        for y in results[k]:
            np.testing.assert_array_equal(y, want)
    overlaps = sum(1 for a0, a1 in spans[0] for b0, b1 in spans[1] if a0 < b1 and b0 < a1)
    assert overlaps > 0, "no two runs overlapped"


def test_the_gil_is_released_while_running():
    """A heartbeat thread keeps ticking during one long run (MobileNetV2, one thread, ~10-20 ms).
    Were the GIL held, it could tick only before the call entered nnrt and after it returned:
    none of its ticks could fall in the middle of the run. The heartbeat needs the machine's
    other core, which a busy virtual machine's host may take away for a few milliseconds, so a
    run without a tick inside is tried again (up to five runs): a held GIL fails every one."""
    folder = corpus_or_skip("tflite/keras_mobilenet_v2_224_float")
    x = np.load(folder / "input_0.npy")
    spans = []
    with nnrt.Session(folder / "model.tflite", threads=1) as s:
        s.run([x])  # warm up
        for _ in range(5):
            beats, stop = [], threading.Event()

            def heartbeat():
                while not stop.is_set():
                    beats.append(time.perf_counter())
                    time.sleep(0.0002)

            h = threading.Thread(target=heartbeat)
            h.start()
            try:
                time.sleep(0.01)
                t0 = time.perf_counter()
                s.run([x])
                t1 = time.perf_counter()
            finally:
                stop.set()
                h.join()
            span = t1 - t0
            spans.append(f"{1e3 * span:.1f}")
            if any(t0 + 0.3 * span < b < t1 - 0.1 * span for b in beats):
                return
    raise AssertionError(f"no heartbeat in the middle of any of {len(spans)} runs ({', '.join(spans)} ms): the GIL was held")


def test_one_session_shared_by_threads_takes_turns():
    x = np.load(TINY_INPUT)
    want = np.load(TINY_EXPECTED)
    out, errors = [], []
    with nnrt.Session(TINY, threads=1) as s:
        def work():
            try:
                for _ in range(20):
                    out.append(s.run([x])[0])
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors and len(out) == 60
    for y in out:
        np.testing.assert_allclose(y, want, atol=1e-5)


def _readme_python_snippet() -> str:
    text = (REPO / "README.md").read_text()
    m = re.search(r"<!-- first-run-python -->\s*```python\n(.*?)```", text, re.S)
    assert m, "README.md has the first-run Python snippet after <!-- first-run-python -->"
    return m.group(1)


def _top_lines(text: str):
    return [l.split(None, 2) for l in text.splitlines() if re.match(r"^  \d+\.\d{4}  +\d+  ", l)]


def test_readme_snippet_prints_the_same_top5_as_nnpackage_run():
    cli = built_or_skip("nnpackage_run")
    py = subprocess.run([sys.executable, "-c", _readme_python_snippet()], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert py.returncode == 0, py.stderr
    d = "examples/models/mobilenet_v1_0.25_128_quant"
    run = subprocess.run([str(cli), f"{d}/model.tflite", "--load:npy", f"{d}/cat_input", "--labels", f"{d}/labels.txt"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    ours, theirs = _top_lines(py.stdout), _top_lines(run.stdout)
    assert len(ours) == 5 and ours == theirs, f"python:\n{py.stdout}\nnnpackage_run:\n{run.stdout}"
    assert ours[0][2] == "Egyptian cat"
