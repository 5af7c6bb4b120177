"""Each class of model through Python, against the reference outputs the conformance corpus
holds, with the tolerances `conform.py` applies (its own `compare`): float, quantized, float16
weights, dynamic shapes, control flow, multi-method programs, packages, TOSA, and custom ops
from plugins."""

import csv
import json
import os
from pathlib import Path
import re
import shutil
from typing import List, Optional

import numpy as np
import pytest

import nnrt
from conftest import CORPUS, REPO, built_or_skip, corpus_or_skip

try:
    import conform  # the shared corpus' checker, for its tolerances
except ImportError:  # no shared corpus: the tests that need it skip
    conform = None


def _meta(folder: Path, method: Optional[str], case: Optional[dict]):
    """Input files, expected files and tolerances of one run, read as `conform.run_method` does."""
    meta = json.loads((folder / "meta.json").read_text())
    tag = f"{method}_" if method else ""
    files = os.listdir(folder)
    if case:
        inputs = list(case["inputs"])
        outputs = [dict(o, file=f) for o, f in zip(meta.get("outputs") or [{}] * len(case["outputs"]), case["outputs"])]
    else:
        if method or not isinstance(meta.get("inputs"), list) or not all(isinstance(i, dict) for i in meta["inputs"]):
            n = len([f for f in files if re.fullmatch(rf"input_{tag}\d+\.npy", f)])
            inputs = [f"input_{tag}{i}.npy" for i in range(n)]
        else:
            inputs = [i.get("file", f"input_{k}.npy") for k, i in enumerate(meta["inputs"])]
        outputs = meta.get("outputs")
        if method or not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
            n = len([f for f in files if re.fullmatch(rf"expected_{tag}\d+\.npy", f)])
            outputs = [{"suggested_tolerance": None} for _ in range(n)]
    for o in outputs:
        o.setdefault("default_float", {"kind": "float", "max_abs_error": 1e-4, "rtol_hint": 1e-4})
    return meta, inputs, outputs


def _model(folder: Path, meta: dict) -> Path:
    name = meta.get("model_file") or next(
        (m for m in ("model.tflite", "program.pte", "graph.tosa") if (folder / m).exists()), "model.tflite")
    return folder / name


def _check_outputs(folder: Path, got: List[np.ndarray], outputs: list, method, case) -> None:
    assert len(got) >= len(outputs), f"{len(got)} outputs, {len(outputs)} expected"
    for j, o in enumerate(outputs):
        refs = conform.references(str(folder), j, method, case)
        assert refs, f"output {j}: no reference file"
        out = (got[j].dtype.name, got[j].shape, got[j].ravel().tolist())
        reasons = []
        for ref in refs:
            expected = conform.npy.read(ref)
            tol = o.get("suggested_tolerance") or (o.get("default_float") if expected[0].startswith("float") else None)
            why = conform.compare(out, expected, tol)
            if why is None:
                break
            reasons.append(f"{os.path.basename(ref)}: {why}")
        else:
            pytest.fail(f"{folder.name} output {j}: " + "; ".join(reasons))


def run_folder(folder: Path, **session_args) -> int:
    """Runs every method and input set of a corpus folder through `nnrt.Session`, comparing each
    output with its references; returns how many runs were checked."""
    assert conform is not None
    methods = conform.methods_of(str(folder)) or [None]
    checked = 0
    for method in methods:
        cases = [None] + ([] if method else conform.extra_cases(str(folder)))
        meta, _, _ = _meta(folder, method, None)
        with nnrt.Session(_model(folder, meta), method=method, **session_args) as s:
            if method:
                assert s.method == method and method in s.methods
            for case in cases:
                _, inputs, outputs = _meta(folder, method, case)
                arrays = [np.load(folder / f) for f in inputs]
                # The same session takes every input set: other shapes resize it.
                got = s.run(arrays)
                _check_outputs(folder, got, outputs, method, case)
                checked += 1
    return checked


# One or more models of each class nnrt runs, by the corpus' folder names.
CASES = {
    "float CNN": "tflite/keras_small_resnet_64_float",
    "float MobileNetV2": "tflite/keras_mobilenet_v2_224_float",
    "float16 weights": "tflite/keras_mobilenet_v2_224_float16",
    "dynamic-range quantized": "tflite/keras_mobilenet_v2_224_dynamic_range",
    "uint8 quantized": "tflite/coral_mobilenet_v1_0.25_128_quant",
    "int8 quantized": "tflite/keras_mobilenet_v2_224_int8",
    "dynamic batch": "tflite/op_dynamic_batch",
    "IF": "tflite/op_if_cond",
    "WHILE (LSTM)": "tflite/op_lstm_keras3_while",
    "gather, int inputs": "tflite/op_gather",
    "multi-model nnpackage": "nnpackage/mobilenet_v1_two_models",
    "ExecuTorch two methods": "pte/two_methods",
    "ExecuTorch XNNPACK": "pte/xnnpack_mlp",
    "ExecuTorch dynamic shapes": "pte/shape_ops",
    "TOSA int8": "tosa/conv2d_stride2_rescale_int8",
    "TOSA COND_IF": "tosa/cond_if_fp32",
}


@pytest.mark.parametrize("rel", list(CASES.values()), ids=list(CASES.keys()))
def test_corpus_model_matches_its_reference(rel):
    corpus_or_skip(rel)
    if conform is None:
        pytest.skip("the shared corpus' tools/conform.py is absent")
    assert run_folder(CORPUS / rel, backends="cpu", threads=2) >= 1


# The repository's own ExecuTorch programs (made by the real exporter, with ExecuTorch's
# outputs): need no shared corpus, only its checker.
REPO_PTE = ["dynamic_batch", "two_methods_cnn", "two_methods_cnn_xnnpack", "mobilenet_v2_tiny", "lstm"]


@pytest.mark.parametrize("name", REPO_PTE)
def test_repository_pte_program_matches_executorch(name):
    if conform is None:
        pytest.skip("the shared corpus' tools/conform.py is absent (set NNRT_SHARED)")
    folder = REPO / "tests" / "data" / "pte" / name
    n = run_folder(folder, backends="cpu")
    if name == "dynamic_batch":
        assert n == 4, "the main input and batches 1, 5 and 8 through one session"


def test_model_the_reference_fails_on_raises_a_clean_error():
    """LiteRT fails on this model (an unresolved custom op); nnrt says which op, at prepare."""
    folder = corpus_or_skip("tflite/coral_invalid_model_invoking_error")
    with pytest.raises(nnrt.PrepareError, match="custom operator 'fake-op-double' has no kernel"):
        nnrt.Session(folder / "model.tflite")


def test_plugin_mediapipe_selfie_segmentation():
    lib = built_or_skip("libnnrt_mediapipe_ops.so")
    corpus_or_skip("tflite/mediapipe_selfie_segmentation")
    if conform is None:
        pytest.skip("tools/conform.py is absent")
    assert run_folder(CORPUS / "tflite/mediapipe_selfie_segmentation", backends="cpu", custom_op_libs=[lib]) == 1


def test_plugin_posenet_decoder_reproduces_corals_poses():
    lib = built_or_skip("libnnrt_posenet_decoder.so")
    folder = corpus_or_skip("tflite/coral_posenet_mobilenet_v1_075_353_481_16_quant_decoder")
    with pytest.raises(nnrt.PrepareError, match="PosenetDecoderOp"):
        nnrt.Session(folder / "model.tflite")
    with nnrt.Session(folder / "model.tflite", custom_op_libs=[lib]) as s:
        h, w = s.inputs[0].shape[1:3]
        keypoints, kp_scores, pose_scores, count = s.run([np.load(folder / "input_0.npy")])
    want = {}
    with open(folder / "coral_reference_poses.csv") as f:
        for row in csv.DictReader(f):
            pose = want.setdefault(int(row["pose_id"]), {"score": float(row["pose_score"]), "kp": {}})
            pose["kp"][int(row["keypoint_id"])] = (float(row["keypoint_score"]), float(row["keypoint_x"]), float(row["keypoint_y"]))
    # The tolerances of the plugin's own corpus test for the corpus input (Coral's were taken on
    # Coral's own resize of the photo): 0.02 for pose scores and positions, 0.15 for keypoint scores.
    assert int(count.ravel()[0]) == len(want)
    for i, pose in want.items():
        assert abs(pose_scores.ravel()[i] - pose["score"]) <= 0.02
        for k, (score, x, y) in pose["kp"].items():
            gy, gx = keypoints[0, i, k] / np.array([h, w], np.float32)
            assert abs(gx - x) <= 0.02 and abs(gy - y) <= 0.02, (i, k)
            assert abs(kp_scores[0, i, k] - score) <= 0.15, (i, k)


def test_device_driver_runs_an_edge_tpu_model():
    """No Edge TPU here: without a driver prepare says what is needed; with the test driver
    (which writes known tensors in the package's tile layout) the host side runs end to end."""
    lib = built_or_skip("libnnrt_edgetpu_test_driver.so")
    model = corpus_or_skip("darwinn/mobilenet_v1_0.25_128_quant") / "model_edgetpu.tflite"
    with pytest.raises(nnrt.PrepareError, match="needs a device driver"):
        nnrt.Session(model)
    with nnrt.Session(model, device_libs=[lib]) as s:
        (i,) = s.inputs
        outs = s.run([np.zeros(i.shape, i.dtype)])
        assert [(o.shape, o.dtype) for o in outs] == [(o.shape, o.dtype) for o in s.outputs]


def test_package_plugins_load_only_when_allowed(tmp_path):
    """A package whose custom_op/ folder holds the op's plugin: its code runs only with
    allow_package_plugins=True."""
    lib = built_or_skip("libnnrt_posenet_decoder.so")
    folder = corpus_or_skip("tflite/coral_posenet_mobilenet_v1_075_353_481_16_quant_decoder")
    pkg = tmp_path / "posenet.nnpkg"
    (pkg / "metadata").mkdir(parents=True)
    (pkg / "custom_op").mkdir()
    (pkg / "metadata" / "MANIFEST").write_text(json.dumps({
        "major-version": "1", "minor-version": "2", "patch-version": "0", "configs": [],
        "models": ["model.tflite"], "model-types": ["tflite"]}))
    shutil.copy(folder / "model.tflite", pkg / "model.tflite")
    shutil.copy(lib, pkg / "custom_op" / lib.name)
    with pytest.raises(nnrt.PrepareError, match="custom_op/libnnrt_posenet_decoder.so"):
        nnrt.Session(pkg)
    with nnrt.Session(pkg, allow_package_plugins=True) as s:
        *_, count = s.run([np.load(folder / "input_0.npy")])
        assert int(count.ravel()[0]) > 0
