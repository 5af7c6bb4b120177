"""Hostile inputs through the CLI tools, each under a 2 GiB address-space limit: every case must
end with exit code 1 and a one-line typed error within a few seconds (no abort, no hang, no
memory blow-up). The cases are issue 20's table: huge declared and caller shapes, thread counts,
a MANIFEST model-connect to a missing model, configs pointing out of the package or at a FIFO or
a device, and a zip bomb. (The WHILE cases, type mismatches and loops that never end, are built
as IR models in tests/tests/limits.rs.) Standard library only.

  python3 tools/hostile_check.py [--bin target/release] [--corpus ../shared/corpus]

Prints one line per case and ends with 'N passed, M failed'.
"""
import argparse, json, os, resource, shutil, struct, subprocess, sys, tempfile, time, zipfile

LIMIT = 2 << 30


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def check(name, cmd, env=None, seconds=5.0):
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds, preexec_fn=limit_memory,
                           env=dict(os.environ, **(env or {})))
    except subprocess.TimeoutExpired:
        return False, f"{name}: no answer in {seconds} s"
    took = time.monotonic() - start
    lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
    ok = p.returncode == 1 and len(lines) == 1 and "error" in lines[0]
    return ok, f"{name}: exit {p.returncode} in {took:.2f} s: {' | '.join(lines)[:300]}"


def main():
    ap = argparse.ArgumentParser()
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap.add_argument("--bin", default=os.path.join(root, "target", "release"))
    ap.add_argument("--corpus", default=os.path.join(root, "..", "shared", "corpus"))
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
        if not cases:
            print(f"skipped: {args.corpus} not found")
            print("0 passed, 0 failed")
            return 0
        passed = failed = 0
        for c in cases:
            ok, line = check(c[0], c[1], c[2] if len(c) > 2 else None)
            print(("PASS  " if ok else "FAIL  ") + line)
            passed, failed = passed + ok, failed + (not ok)
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
