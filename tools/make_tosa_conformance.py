#!/usr/bin/env python3
"""Makes `tests/data/tosa_conformance/`: single-operator TOSA conformance tests from the official
generator (`tosa_verif_build_tests` of the `tosa-tools` PyPI package), with the expected outputs of
the TOSA reference model, in conform.py's case layout (graph.tosa, input_<i>.npy,
expected_<j>.npy, meta.json).

Which tests: for every operator of TOSA 1.0's base profiles (integer, floating point) and the
INT16, FFT and control-flow extensions, the generator arguments of the official conformance
configuration (`conformance/cts-config_v1.0.json`, the same the conformance suite is built from)
with three changes so that the selection stays small: tensors of 1..6 per dimension (no
`--target-shape`, no 8K-level or oversize shapes), float values in [-8, 8] instead of
[-max, max], and fp32 only of the float types. Of the tests each configuration makes, at most
`--per-group` are kept (spread evenly over the generator's list, so every attribute variant kind
is sampled), and a test is kept only if its files take under `--max-bytes`.

Tolerance (meta.json `outputs[j].suggested_tolerance`, read by conform.py and by
`tests/tests/tosa_conformance.rs`) follows the compliance mode the generator records: EXACT is
exact (RESCALE with INEXACT_ROUND within one step); ULP n allows n units in the last place (as relative error 2^-23 n); the float modes whose
bound depends on the data (DOT_PRODUCT, ABS_ERROR, REDUCE_PRODUCT, FP_SPECIAL, RELATIVE) allow
1e-5 of the tensor's largest magnitude plus 1e-4 relative, because nnrt sums in another order than
the reference model.

Usage (in a venv with `pip install tosa-tools numpy`):
  tools/make_tosa_conformance.py [--out tests/data/tosa_conformance] [--ops conv2d,add] [--per-group 4]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import tosa_reference_model as ref

SITE = os.path.dirname(os.path.dirname(os.path.abspath(ref.__file__)))
CONFIG = os.path.join(SITE, "conformance", "cts-config_v1.0.json")
GENLIB = os.path.join(os.path.dirname(os.path.abspath(ref.__file__)), "libtosa_reference_generate_lib.so")
BIN = os.path.dirname(os.path.abspath(sys.executable))

# The configurations (keys of an operator's "generation") this selection covers.
GROUPS = {
    "standard", "tosa-pro-int", "tosa-pro-fp", "tosa-pro-int-pro-fp", "tosa-ext-int16",
    "tosa-ext-fft", "tosa-ext-controlflow", "tosa-ext-variable", "tosa-ext-doubleround",
    "tosa-ext-inexactround",
}
# Operators of the TOSA 1.0 base profiles (shape-extension ops, DIM and block-scaled forms are out).
SKIP_OPS = ("_shape", "block_scaled", "dim", "row_gather", "_adaptive", "matmul_t")
DTYPES = {"bool", "int8", "int16", "int32", "int48", "fp32"}
NPY = {"BOOL": "bool", "INT8": "int8", "INT16": "int16", "INT32": "int32", "FP32": "float32", "INT48": "int64"}


# FFT sizes are powers of two the generator rounds down to within the range; its dot-product
# data needs at least 1000 outputs, so H and W are 32 here.
DIMS = {"fft2d": "32,40", "rfft2d": "32,40"}


def adapt(args, dims="1,6"):
    """The configuration's generator arguments with small shapes, fp32 and moderate float values."""
    out, i = [], 0
    while i < len(args):
        a = args[i]
        vals = []
        j = i + 1
        while j < len(args) and not args[j].startswith("--"):
            vals.append(args[j])
            j += 1
        i = j
        if a in ("--target-shape", "--level-8k-sizes", "--allow-pooling-and-conv-oversizes", "--tensor-dim-range", "--fp-values-range", "--tosa-version"):
            continue
        if a == "--target-dtype":
            vals = [v for v in vals if v in DTYPES]
            if not vals:
                return None
        if a == "--target-rank":
            vals = [v for v in vals if int(v) <= 4]
            if not vals:
                return None
        out += [a] + vals
    return out + ["--tensor-dim-range", dims, "--fp-values-range", "-8.0,8.0"]


def tolerance(mode, dtype, expected):
    m = mode.get("mode", "EXACT")
    if not dtype.startswith("float"):
        # INEXACT_ROUND lets an implementation round RESCALE either way: one step.
        return {"kind": "integer", "max_abs_diff": 1, "allowed_mismatch_count": expected.size} if m == "RESCALE_INEXACT" else None
    if m == "EXACT":
        return {"kind": "float", "max_abs_error": 0.0}
    if m == "ULP":
        ulp = float(mode.get("ulp_info", {}).get("ulp", 1))
        return {"kind": "float", "max_abs_error": 1e-38, "rtol_hint": ulp * 2.0 ** -23}
    finite = np.abs(expected[np.isfinite(expected)]) if expected.size else np.zeros(0)
    big = float(finite.max()) if finite.size else 0.0
    return {"kind": "float", "max_abs_error": max(1e-5 * big, 1e-6), "rtol_hint": 1e-4}


def generate(op, group, gen_args, selector, tmp, seed):
    cmd = [os.path.join(BIN, "tosa_verif_build_tests"), "--filter", f"^{op}$", "--tosa-version", "1.0.0",
           "--generate-lib-path", GENLIB, "--test-type", "positive", "--seed", str(seed), "-o", tmp] + gen_args
    if selector:
        cmd += ["--test-selection-config", CONFIG, "--test-selection-criteria", selector]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"  {op}/{group}: generator failed: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
    tests = []
    for root, _, files in os.walk(tmp):
        if "desc.json" in files:
            tests.append(root)
    return sorted(tests)


def run_cli(test, desc):
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([os.path.join(BIN, "tosa_reference_model"), "--test_desc", os.path.join(test, "desc.json"), "--output_dir", out],
                           capture_output=True, text=True, timeout=300)
        files = [os.path.join(out, f) for f in desc.get("ofm_file", [])]
        if r.returncode != 0 or not all(os.path.exists(f) for f in files):
            return None
        return [np.load(f) for f in files]


def spread(items, n):
    if len(items) <= n:
        return items
    return [items[(k * len(items)) // n] for k in range(n)]


# Element types of other extensions (bf16, fp16, fp8, int4, int64), as they appear in test names.
OTHER_TYPES = re.compile(r"(^|_|x|out)(bf16|f16|fp16|f8e4m3|f8e5m2|fp8\w*|i4|i64)(_|x|$)")


def convert(test, out_root, op, group, max_bytes):
    with open(os.path.join(test, "desc.json")) as f:
        desc = json.load(f)
    if desc.get("expected_failure") or OTHER_TYPES.search(os.path.basename(test)):
        return None
    graph = open(os.path.join(test, desc["tosa_file"]), "rb").read()
    inputs = [np.load(os.path.join(test, f)) for f in desc.get("ifm_file", [])]
    if len(graph) + sum(x.nbytes for x in inputs) > max_bytes:
        return None
    try:
        outs, status = ref.run(graph, inputs)
        valid = str(status) == "GraphStatus.TOSA_VALID"
    except ValueError:
        # The binding refuses some inputs (e.g. INT48 ones); the executable reads them.
        outs, valid = run_cli(test, desc), True
    if not valid or outs is None:
        return None
    want_shapes = desc.get("test_details", {}).get("output_shapes", [])
    if any(np.asarray(y).size == 0 and int(np.prod(s)) != 0 for y, s in zip(outs, want_shapes)):
        # The Python binding returns INT48 results empty; the reference model's executable
        # writes them as int64.
        outs = run_cli(test, desc)
        if outs is None:
            return None
    comp = desc.get("meta", {}).get("compliance", {}).get("tensors", {})
    types = desc.get("test_details", {}).get("output_types", [])
    name = os.path.basename(test)
    case = os.path.join(out_root, name)
    if os.path.exists(case):
        return None
    os.makedirs(case)
    with open(os.path.join(case, "graph.tosa"), "wb") as f:
        f.write(graph)
    meta_in, meta_out = [], []
    for i, x in enumerate(inputs):
        np.save(os.path.join(case, f"input_{i}.npy"), x)
        meta_in.append({"file": f"input_{i}.npy", "name": desc["ifm_name"][i], "shape": list(x.shape), "dtype": str(x.dtype)})
    for j, y in enumerate(outs):
        tname = desc["ofm_name"][j] if j < len(desc.get("ofm_name", [])) else f"result-{j}"
        mode = comp.get(tname, {})
        y = np.asarray(y)
        np.save(os.path.join(case, f"expected_{j}.npy"), y)
        meta_out.append({"file": f"expected_{j}.npy", "name": tname, "shape": list(y.shape), "dtype": str(y.dtype),
                         "compliance": mode.get("mode", "EXACT"), "suggested_tolerance": tolerance(mode, str(y.dtype), y)})
    meta = {"name": name, "model_file": "graph.tosa", "op": desc.get("test_details", {}).get("operator", op.upper()),
            "group": group, "output_types": types, "inputs": meta_in, "outputs": meta_out,
            "tool": "tosa-tools (tosa_verif_build_tests + tosa_reference_model), tools/make_tosa_conformance.py"}
    with open(os.path.join(case, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return name


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "tosa_conformance"))
    p.add_argument("--ops", default="", help="comma-separated operator names (default: all)")
    p.add_argument("--per-group", type=int, default=4)
    p.add_argument("--max-bytes", type=int, default=24000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--start", default="", help="skip the operators before this one (to resume a run)")
    a = p.parse_args()
    with open(CONFIG) as f:
        config = json.load(f)
    wanted = [o for o in a.ops.split(",") if o]
    os.makedirs(a.out, exist_ok=True)
    made, started = 0, False
    for op, entry in config.items():
        started = started or not a.start or op == a.start
        if not started:
            continue
        if op.startswith("$") or any(s in op for s in SKIP_OPS) or (wanted and op not in wanted):
            continue
        for group, g in entry.get("generation", {}).items():
            if group not in GROUPS:
                continue
            kept = []
            for k, raw in enumerate(g.get("generator_args", [])):
                gen_args = adapt(raw, DIMS.get(op, "1,6"))
                if gen_args is None:
                    continue
                tmp = tempfile.mkdtemp(prefix="tosa_gen_")
                try:
                    tests = generate(op, group, gen_args, g.get("selector"), tmp, a.seed + k)
                    for t in spread(tests, a.per_group):
                        n = convert(t, a.out, op, group, a.max_bytes)
                        if n:
                            kept.append(n)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            made += len(kept)
            print(f"{op}/{group}: {len(kept)} cases", flush=True)
    print(f"{made} cases in {a.out}")


if __name__ == "__main__":
    main()
