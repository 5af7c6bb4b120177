#!/usr/bin/env python3
"""Writes tests/data/pte_variants/: forms of an ExecuTorch program that the 1.5.1 exporter no longer
emits but that the format allows (and older or other writers produce), made by editing a real
program's flatbuffer as JSON with flatc and the project's own schema (loaders/schema/executorch.fbs).

  python3 tools/make_pte_variants.py [--program ../shared/corpus/pte/mlp_linear_relu]

From mlp_linear_relu (addmm, permute_copy, relu; constants in a segment after an eh00 header):
  inline_constants   constants in Program.constant_buffer, no segments, no extended header
                     (programs before 2024-09); same outputs as the original
  move_and_free      + a FreeCall of a constant and a MoveCall of the result into a new value that
                     the method returns; same outputs
  jump_false         + a JumpFalseCall on a constant false Bool that skips a KernelCall whose
                     arguments name values that do not exist; same outputs
  jump_cycle         a JumpFalseCall at the end jumping back to instruction 0: a loop nnrt must
                     refuse at load with an error (expected_error.txt holds a word of it)

Each folder gets program.pte, and input_0.npy / expected_0.npy copied from the source program's.
Needs flatc (the one loaders/schema/regenerate.sh uses) and nothing else.
"""
import argparse
import copy
import json
import os
import shutil
import struct
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "loaders/schema/executorch.fbs")
OUT = os.path.join(ROOT, "tests/data/pte_variants")
ELEM = {"FLOAT": 4, "LONG": 8, "INT": 4, "BOOL": 1, "BYTE": 1, "CHAR": 1, "SHORT": 2, "HALF": 2, "DOUBLE": 8}


def to_json(pte, tmp):
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "--defaults-json", "-o", tmp, SCHEMA, "--", pte], check=True)
    with open(os.path.join(tmp, os.path.splitext(os.path.basename(pte))[0] + ".json")) as f:
        return json.load(f)


def to_pte(program, path, tmp):
    src = os.path.join(tmp, "program.json")
    with open(src, "w") as f:
        json.dump(program, f)
    subprocess.run(["flatc", "-b", "-o", tmp, SCHEMA, src], check=True)
    # The schema declares file_extension "pte".
    shutil.move(os.path.join(tmp, "program.pte"), path)


def inline_constants(program, raw):
    """Moves constant_segment data into constant_buffer; drops segments and the header."""
    base = struct.unpack_from("<Q", raw, 0x18)[0] if raw[8:12] == b"eh00" else 0
    seg = program["segments"][program["constant_segment"].get("segment_index", 0)]
    offsets = program["constant_segment"]["offsets"]
    sizes = {}
    for plan in program["execution_plan"]:
        for v in plan["values"]:
            if v.get("val_type") == "Tensor" and v["val"].get("data_buffer_idx", 0) > 0 and not v["val"].get("allocation_info"):
                t = v["val"]
                n = ELEM[t["scalar_type"]]
                for d in t.get("sizes", []):
                    n *= d
                sizes[t["data_buffer_idx"]] = n
    buffers = [{"storage": []}]
    for k in range(1, len(offsets)):
        start = base + seg.get("offset", 0) + offsets[k]
        buffers.append({"storage": list(raw[start:start + sizes.get(k, 0)])})
    p = copy.deepcopy(program)
    p["constant_buffer"] = buffers
    p["segments"] = []
    p.pop("constant_segment", None)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", default=os.path.join(ROOT, "../shared/corpus/pte/mlp_linear_relu"))
    args = ap.parse_args()
    pte = os.path.join(args.program, "program.pte")
    with open(pte, "rb") as f:
        raw = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        program = to_json(pte, tmp)
        inline = inline_constants(program, raw)
        plan = inline["execution_plan"][0]
        out_value = plan["outputs"][0]
        const_value = next(i for i, v in enumerate(plan["values"]) if v.get("val_type") == "Tensor" and v["val"].get("data_buffer_idx", 0) > 0)

        move = copy.deepcopy(inline)
        mp = move["execution_plan"][0]
        mp["values"].append(copy.deepcopy(mp["values"][out_value]))
        new_value = len(mp["values"]) - 1
        instrs = mp["chains"][0]["instructions"]
        instrs.append({"instr_args_type": "FreeCall", "instr_args": {"value_index": const_value}})
        instrs.append({"instr_args_type": "MoveCall", "instr_args": {"move_from": out_value, "move_to": new_value}})
        mp["outputs"] = [new_value]
        mp["chains"][0]["outputs"] = [new_value]

        jump = copy.deepcopy(inline)
        jp = jump["execution_plan"][0]
        jp["values"].append({"val_type": "Bool", "val": {"bool_val": False}})
        cond = len(jp["values"]) - 1
        instrs = jp["chains"][0]["instructions"]
        bogus = {"instr_args_type": "KernelCall", "instr_args": {"op_index": 0, "args": [100000, 100001]}}
        jp["chains"][0]["instructions"] = [{"instr_args_type": "JumpFalseCall", "instr_args": {"cond_value_index": cond, "destination_instruction": 2}}, bogus] + instrs

        cycle = copy.deepcopy(jump)
        cp = cycle["execution_plan"][0]
        cp["chains"][0]["instructions"].append({"instr_args_type": "JumpFalseCall", "instr_args": {"cond_value_index": cond, "destination_instruction": 0}})

        for name, p, expected_error in [("inline_constants", inline, None), ("move_and_free", move, None), ("jump_false", jump, None), ("jump_cycle", cycle, "loop")]:
            d = os.path.join(OUT, name)
            os.makedirs(d, exist_ok=True)
            to_pte(p, os.path.join(d, "program.pte"), tmp)
            shutil.copy(os.path.join(args.program, "input_0.npy"), d)
            if expected_error:
                with open(os.path.join(d, "expected_error.txt"), "w") as f:
                    f.write(expected_error + "\n")
            else:
                shutil.copy(os.path.join(args.program, "expected_0.npy"), d)
            print(f"wrote {d}")


if __name__ == "__main__":
    main()
