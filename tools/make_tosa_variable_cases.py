#!/usr/bin/env python3
"""Makes `tests/data/tosa_variables/`: TOSA graphs with variables (VARIABLE, VARIABLE_READ,
VARIABLE_WRITE), each run several times in one session, with the TOSA reference model's outputs
for every run. `tosa_verif_build_tests` makes no variable tests, so the graphs are written here as
TOSA MLIR and serialized by tosa-tools' own `tosa-opt --tosa-serialize` (which writes a read as
IDENTITY with a VariableReadAttribute, a write as IDENTITY with a VariableWriteAttribute, and the
variable as a tensor marked `variable` whose data is the initial value).

The reference model runs one inference per call: run 1 starts from the flatbuffer's initial
values; run k > 1 starts from the variables' values after run k - 1, given to it as numpy files
(`--initialize_variable_tensor_from_numpy 1`). Each graph returns every value it writes, so the
state after a run is known from that run's outputs (`meta.json` `state_outputs`: for each
variable tensor, the output holding its new value).

Case layout: graph.tosa, run<k>_input_<i>.npy, run<k>_expected_<j>.npy, meta.json. Results must
be exact (the variable operators copy).

Usage (in the tosa-tools venv): tools/make_tosa_variable_cases.py [--out tests/data/tosa_variables]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BIN = os.path.dirname(os.path.abspath(sys.executable))

# name: (MLIR, input specs [(shape, dtype)], runs, {variable name: output index of its new value})
CASES = {
    # Read the old value, add the input, write the sum back; returns old and new.
    "accumulate_f32": ("""
module {
  tosa.variable @acc = dense<[[1.5, 2.0, -3.0]]> : tensor<1x3xf32>
  func.func @main(%x: tensor<1x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>) {
    %0 = tosa.variable_read @acc : tensor<1x3xf32>
    %1 = tosa.add %0, %x : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
    tosa.variable_write @acc, %1 : tensor<1x3xf32>
    return %0, %1 : tensor<1x3xf32>, tensor<1x3xf32>
  }
}
""", [((1, 3), "float32")], 3, {"acc": 1}),
    # No initial value: written before it is read; int8.
    "write_then_read_i8": ("""
module {
  tosa.variable @state : tensor<2x2xi8>
  func.func @main(%x: tensor<2x2xi8>) -> (tensor<2x2xi8>) {
    tosa.variable_write @state, %x : tensor<2x2xi8>
    %0 = tosa.variable_read @state : tensor<2x2xi8>
    return %0 : tensor<2x2xi8>
  }
}
""", [((2, 2), "int8")], 2, {"state": 0}),
    # Two variables, each run: a <- b, b <- a + x (returns a, b before and the new b).
    "two_variables_f32": ("""
module {
  tosa.variable @a = dense<[0.25, -1.0, 4.0, 8.0]> : tensor<4xf32>
  tosa.variable @b = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %a = tosa.variable_read @a : tensor<4xf32>
    %b = tosa.variable_read @b : tensor<4xf32>
    %s = tosa.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tosa.variable_write @a, %b : tensor<4xf32>
    tosa.variable_write @b, %s : tensor<4xf32>
    return %a, %b, %s : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
""", [((4,), "float32")], 3, {"a": 1, "b": 2}),
}

# Graphs whose first run must fail: name: (MLIR, input specs, the words the error must contain).
# VARIABLE_READ REQUIREs a written variable (the specification leaves the result unpredictable
# otherwise); nnrt fails the run. The reference model (tosa-tools 2026.8.0) does not check it and
# returns zeros (meta.json `reference_model_refuses` records which).
FAILING = {
    "read_before_write_i8": ("""
module {
  tosa.variable @state : tensor<2x2xi8>
  func.func @main(%x: tensor<2x2xi8>) -> (tensor<2x2xi8>) {
    %0 = tosa.variable_read @state : tensor<2x2xi8>
    tosa.variable_write @state, %x : tensor<2x2xi8>
    return %0 : tensor<2x2xi8>
  }
}
""", [((2, 2), "int8")], "is read before anything is written to it and has no initial value"),
}


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: {r.stderr}")


def serialize(mlir, graph, tmp):
    """Writes `mlir` as the flatbuffer `graph`; returns its entry block as JSON."""
    src = os.path.join(tmp, "g.mlir")
    with open(src, "w") as f:
        f.write(mlir)
    sh([os.path.join(BIN, "tosa-opt"), src, "--tosa-serialize", f"--tosa-flatbuffer-filename={graph}", "-o", os.devnull])
    js = os.path.join(tmp, "g.json")
    schema = os.path.join(os.path.dirname(BIN), "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages", "bin", "tosa.fbs")
    sh([os.path.join(BIN, "tosa-opt"), src, "--tosa-serialize-json", f"--tosa-flatbuffer-filename={js}", f"--tosa-flatbuffer-schema={schema}", "-o", os.devnull])
    with open(js) as f:
        return json.load(f)["regions"][0]["blocks"][0]


def values(shape, dtype, rng):
    return rng.integers(-100, 100, size=shape).astype(dtype) if dtype == "int8" else rng.uniform(-8, 8, size=shape).astype(dtype)


def make_failing(name, mlir, specs, error, out_root, rng):
    case = os.path.join(out_root, name)
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(case)
    with tempfile.TemporaryDirectory() as tmp:
        block = serialize(mlir, os.path.join(case, "graph.tosa"), tmp)
        ins = []
        for i, (shape, dtype) in enumerate(specs):
            ins.append(os.path.join(case, f"run1_input_{i}.npy"))
            np.save(ins[-1], values(shape, dtype, rng))
        desc = {"tosa_file": os.path.join(case, "graph.tosa"), "ifm_name": block["inputs"], "ifm_file": ins, "ofm_name": block["outputs"],
                "ofm_file": [os.path.join(tmp, "out.npy")], "expected_failure": False}
        with open(os.path.join(tmp, "desc.json"), "w") as f:
            json.dump(desc, f)
        r = subprocess.run([os.path.join(BIN, "tosa_reference_model"), "--test_desc", os.path.join(tmp, "desc.json"), "--output_dir", "/", "--flatbuffer_dir", "/"], capture_output=True, text=True)
        refused = r.returncode != 0 or not os.path.exists(desc["ofm_file"][0])
    meta = {"name": name, "model_file": "graph.tosa", "runs": 1, "expected_error": error, "reference_model_refuses": refused,
            "tool": "tosa-tools (tosa-opt --tosa-serialize + tosa_reference_model), tools/make_tosa_variable_cases.py"}
    with open(os.path.join(case, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: must fail ({'the reference model refuses it too' if refused else 'the reference model ran it'})")


def make(name, mlir, specs, runs, state, out_root, rng):
    case = os.path.join(out_root, name)
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(case)
    with tempfile.TemporaryDirectory() as tmp:
        graph = os.path.join(case, "graph.tosa")
        block = serialize(mlir, graph, tmp)
        variables = {t["variable_name"]: t["name"] for t in block["tensors"] if t.get("variable")}
        prev = None
        for k in range(1, runs + 1):
            ins = []
            for i, (shape, dtype) in enumerate(specs):
                np.save(os.path.join(case, f"run{k}_input_{i}.npy"), values(shape, dtype, rng))
                ins.append(os.path.join(case, f"run{k}_input_{i}.npy"))
            outs = [os.path.join(tmp, f"out{k}_{j}.npy") for j in range(len(block["outputs"]))]
            desc = {"tosa_file": graph, "ifm_name": block["inputs"], "ifm_file": ins, "ofm_name": block["outputs"], "ofm_file": outs, "expected_failure": False}
            cmd = [os.path.join(BIN, "tosa_reference_model"), "--test_desc", os.path.join(tmp, "desc.json"), "--output_dir", "/", "--flatbuffer_dir", "/"]
            if prev is not None:
                files = []
                for var, j in state.items():
                    f = os.path.join(tmp, f"state{k}_{var}.npy")
                    np.save(f, prev[j])
                    files.append(f)
                desc.update({"variable_name": [variables[v] for v in state], "variable_file": files})
                cmd += ["--initialize_variable_tensor_from_numpy", "1"]
            with open(os.path.join(tmp, "desc.json"), "w") as f:
                json.dump(desc, f)
            sh(cmd)
            prev = [np.load(o) for o in outs]
            for j, y in enumerate(prev):
                np.save(os.path.join(case, f"run{k}_expected_{j}.npy"), y)
    meta = {"name": name, "model_file": "graph.tosa", "runs": runs, "variables": variables, "state_outputs": state,
            "tool": "tosa-tools (tosa-opt --tosa-serialize + tosa_reference_model), tools/make_tosa_variable_cases.py"}
    with open(os.path.join(case, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: {runs} runs")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tosa_variables"))
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    for name, (mlir, specs, runs, state) in CASES.items():
        make(name, mlir, specs, runs, state, a.out, rng)
    for name, (mlir, specs, error) in FAILING.items():
        make_failing(name, mlir, specs, error, a.out, rng)


if __name__ == "__main__":
    main()
