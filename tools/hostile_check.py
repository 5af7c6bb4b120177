"""Hostile inputs through the CLI tools, each under a 2 GiB address-space limit: every case must
end with exit code 1 and a one-line typed error within a few seconds (no abort, no hang, no
memory blow-up). The cases are issue 20's table: huge declared and caller shapes, thread counts,
a MANIFEST model-connect to a missing model, configs pointing out of the package or at a FIFO or
a device, a zip bomb, and WHILE loops made from the corpus's op_while_loop by editing bytes of
its flatbuffer: loop tensors retyped (int8 for int32, a float32 counter for an int32 condition),
and loops that never end (the int32 constants turned into variables; a body that passes its
counter through), which must stop at WHILE_MAX_ITERATIONS within about a second. Standard
library only.

  python3 tools/hostile_check.py [--bin target/release] [--corpus ../shared/corpus]

(--corpus defaults to $NNRT_SHARED/corpus when NNRT_SHARED is set.)

Prints one line per case and ends with 'N passed, M failed'.
"""
import argparse, json, os, resource, shutil, struct, subprocess, sys, tempfile, time, zipfile

LIMIT = 2 << 30


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def check(name, cmd, env=None, seconds=5.0, expect=()):
    """Runs `cmd`: it must exit 1 within `seconds` with one line on stderr that says 'error' and
    holds each of `expect` (the op or tensor at fault)."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds, preexec_fn=limit_memory,
                           env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        return False, f"{name}: no answer in {seconds} s"
    took = time.monotonic() - start
    lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
    ok = p.returncode == 1 and len(lines) == 1 and "error" in lines[0] and all(e in lines[0] for e in expect)
    missing = [e for e in expect if not any(e in l for l in lines)]
    why = f" (missing {missing})" if missing else ""
    return ok, f"{name}: exit {p.returncode} in {took:.2f} s{why}: {' | '.join(lines)[:300]}"


def tflite_index(b):
    """Where to edit a TFLite flatbuffer `b`, read with the standard library: for each tensor
    name, the offset of its `type` byte (None when the field is absent, i.e. float32) and of its
    vtable; for each subgraph k, `@k.outputs`: the offsets of its output indices."""
    u16 = lambda o: struct.unpack_from("<H", b, o)[0]
    u32 = lambda o: struct.unpack_from("<I", b, o)[0]
    ref = lambda o: o + u32(o)

    def field(table, i):  # offset of field i of the table at `table`, or None
        vt = table - struct.unpack_from("<i", b, table)[0]
        off = u16(vt + 4 + 2 * i) if 4 + 2 * i < u16(vt) else 0
        return table + off if off else None

    def vector(o):  # offsets of the elements of the vector referenced at o
        o = ref(o)
        return [o + 4 + 4 * k for k in range(u32(o))]

    index = {}
    # Model.subgraphs is field 2; SubGraph: tensors 0, outputs 2; Tensor: type 1, name 3.
    for k, sg in enumerate(vector(field(ref(0), 2))):
        sg = ref(sg)
        for t in vector(field(sg, 0)):
            t = ref(t)
            name = ref(field(t, 3))
            name = bytes(b[name + 4:name + 4 + u32(name)]).decode()
            index[name] = {"type": field(t, 1), "vtable": t - struct.unpack_from("<i", b, t)[0]}
        index[f"@{k}.outputs"] = vector(field(sg, 2))
    return index


def while_cases(corpus, tmp, run, inspect):
    """op_while_loop edited: While(counter = 0, x, n) loops while counter < n (condition subgraph
    1) and its body (subgraph 2) adds 1 to the counter; n = 2 from the corpus's input_1.npy."""
    src = os.path.join(corpus, "tflite", "op_while_loop")
    if not os.path.exists(os.path.join(src, "model.tflite")):
        return []
    orig = bytes(open(os.path.join(src, "model.tflite"), "rb").read())
    ix = tflite_index(orig)
    inputs = os.path.join(tmp, "while_in")
    for i in range(2):
        shutil.copy(os.path.join(src, f"input_{i}.npy"), f"{inputs}.{i}.npy")
    INT8, FLOAT32 = 9, 0
    cases = []

    def case(name, edit, expect, tools=("run",), seconds=5.0):
        b = bytearray(orig)
        edit(b)
        path = os.path.join(tmp, f"while_{len(cases)}.tflite")
        open(path, "wb").write(b)
        for tool in tools:
            cmd = [run, path, "--load:npy", inputs] if tool == "run" else [inspect, path, "--partition"]
            cases.append((f"WHILE {name} ({tool})", cmd, None, seconds, expect))

    def retype(tensor, dtype):
        def edit(b):
            b[ix[tensor]["type"]] = dtype
        return edit

    case("body's counter output int8, the loop's int32", retype("while/add", INT8), ["While", "body", "'while/add' int8", "int32"], ("run", "inspect"))
    case("body's counter input int8, the loop's int32", retype("while_body_arg0", INT8), ["While", "body", "'while_body_arg0' int8"])
    case("float32 counter given to an int32 condition", retype("arith.constant", FLOAT32), ["While", "'arith.constant' float32"], ("run", "inspect"))
    case("condition's counter float32, the loop's int32", retype("while_cond_arg0", FLOAT32), ["While", "condition", "'while_cond_arg0' float32"])

    def variables(b):
        # One vtable byte: the int32 tensors' (shared) vtable gets an is_variable slot (field 5)
        # pointing at their has_rank byte (field 8, true), so the counter's start and its
        # increment become zero-initialised variables and the counter never moves.
        vt = ix["arith.constant"]["vtable"]
        struct.pack_into("<H", b, vt + 4 + 2 * 5, struct.unpack_from("<H", b, vt + 4 + 2 * 8)[0])
    # A loop that never ends stops at the default WHILE_MAX_ITERATIONS well within a second
    # (allowing for a loaded machine's process start).
    case("constants marked is_variable: a loop that never ends", variables, ["While", "iterations", "WHILE_MAX_ITERATIONS"], seconds=2.0)

    def pass_through(b):
        # The body's first output is its counter input (tensor 0) instead of counter + 1.
        struct.pack_into("<i", b, ix["@2.outputs"][0], 0)
    case("body passes its counter through: a loop that never ends", pass_through, ["While", "iterations", "WHILE_MAX_ITERATIONS"], seconds=2.0)
    return cases


def main():
    ap = argparse.ArgumentParser()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--bin", default=os.path.join(root, "target", "release"))
    shared = os.environ.get("NNRT_SHARED", os.path.join(root, "..", "shared"))
    ap.add_argument("--corpus", default=os.path.join(shared, "corpus"))
    args = ap.parse_args()
    run = os.path.join(args.bin, "nnpackage_run")
    inspect = os.path.join(args.bin, "nnrt-inspect")
    tmp = tempfile.mkdtemp(prefix="hostile-")
    cases = []
    try:
        dyn = os.path.join(args.corpus, "tflite", "op_dynamic_batch", "model.tflite")
        if os.path.exists(dyn):
            b = bytearray(open(dyn, "rb").read())
            # The input's stored shape [1, 12] (its signature is [-1, 12]) becomes [2^31 - 1, 12].
            at = b.find(struct.pack("<3i", 2, 1, 12))
            b[at + 4:at + 8] = struct.pack("<i", 2**31 - 1)
            huge = os.path.join(tmp, "huge_batch.tflite")
            open(huge, "wb").write(b)
            cases += [("declared shape 2^31-1 x 12 (run)", [run, huge]),
                      ("declared shape 2^31-1 x 12 (inspect)", [inspect, huge, "--partition"]),
                      ("--shape_prepare [2^31-1, 12]", [run, dyn, "--shape_prepare", "[0,[2147483647,12]]"]),
                      ("--shape_run [1e8, 12]", [run, dyn, "--shape_run", "[0,[100000000,12]]"]),
                      ("--threads 4294967296", [run, dyn, "--threads", "4294967296"]),
                      ("NUM_THREADS=18446744073709551615", [run, dyn], {"NUM_THREADS": "18446744073709551615"}),
                      ("NUM_THREADS=-5", [run, dyn], {"NUM_THREADS": "-5"}),
                      ("NUM_THREADS=4294967296 (inspect)", [inspect, dyn, "--partition"], {"NUM_THREADS": "4294967296"})]
        two = os.path.join(args.corpus, "nnpackage", "mobilenet_v1_two_models")
        if os.path.isdir(two):
            pkg = os.path.join(tmp, "connect")
            shutil.copytree(two, pkg)
            m = json.load(open(os.path.join(pkg, "metadata", "MANIFEST")))
            m["model-connect"] = [{"from": "0:0:0", "to": ["5:0:0"]}]
            json.dump(m, open(os.path.join(pkg, "metadata", "MANIFEST"), "w"))
            cases += [("model-connect to model 5 (run)", [run, pkg]), ("model-connect to model 5 (inspect)", [inspect, pkg])]
            for name, cfg in [("fifo", None), ("abs", "/dev/zero"), ("dotdot", "../../../dev/zero")]:
                p = os.path.join(tmp, "cfg_" + name)
                shutil.copytree(two, p)
                m = json.load(open(os.path.join(p, "metadata", "MANIFEST")))
                if cfg is None:
                    os.mkfifo(os.path.join(p, "metadata", "x.cfg"))
                    cfg = "x.cfg"
                m["configs"] = [cfg]
                json.dump(m, open(os.path.join(p, "metadata", "MANIFEST"), "w"))
                cases.append((f"MANIFEST configs {cfg}", [run, p]))
            bomb = os.path.join(tmp, "bomb.nnpkg.zip")
            with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
                z.writestr("metadata/MANIFEST", json.dumps({"major-version": "1", "minor-version": "0", "patch-version": "0",
                                                           "models": ["model.tflite"], "model-types": ["tflite"]}))
                with z.open("model.tflite", "w", force_zip64=True) as f:
                    f.write(open(os.path.join(two, "features.tflite"), "rb").read()[:4096])
                    chunk = bytes(64 << 20)
                    for _ in range(16):  # 1 GiB of zeros, about 1 MiB compressed
                        f.write(chunk)
            cases.append((f"zip bomb ({os.path.getsize(bomb) >> 10} KiB inflating to 1 GiB)", [run, bomb]))
        cases += while_cases(args.corpus, tmp, run, inspect)
        if not cases:
            print(f"skipped: {args.corpus} not found")
            print("0 passed, 0 failed")
            return 0
        passed = failed = 0
        for c in cases:
            ok, line = check(*c)
            print(("PASS  " if ok else "FAIL  ") + line)
            passed, failed = passed + ok, failed + (not ok)
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
