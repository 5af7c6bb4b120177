#!/usr/bin/env python3
"""Compiles every model of a corpus with nnrt-compile, builds each artifact (cargo, static library),
links its generated C example, runs it on the corpus inputs and compares its outputs byte for byte with
nnpackage_run's on the same model, method, threads and inputs (the runtime, not the reference outputs:
an artifact must be the runtime, bit for bit). Also times cold start: the example's whole process
(create: map the parameters, build the kernels; one run) against nnpackage_run's (load, prepare, one
run), each the median of --rounds process runs.

  python3 tools/aot_check.py --corpus ../shared/corpus/tflite [--only REGEX] [--threads N] [--rounds 5]

Prints one line per model and method (identical / DIFFERENT / refused: why / failed: why) and a
summary. Standard library only (the .npy inputs are copied as their raw bytes)."""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def npy_shape(path):
    with open(path, "rb") as f:
        head = f.read(512).decode("latin1")
    m = re.search(r"'shape': \(([^)]*)\)", head)
    return [int(x) for x in m.group(1).replace(" ", "").split(",") if x] if m else []


def npy_raw(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = b[6]
    hlen = int.from_bytes(b[8:10], "little") if major == 1 else int.from_bytes(b[8:12], "little")
    start = (10 if major == 1 else 12) + hlen
    header = b[(10 if major == 1 else 12):start].decode("latin1")
    if "'fortran_order': True" in header:
        raise ValueError(f"{path}: Fortran order")
    return b[start:]


def cases(folder):
    """(method or None, [input files]) for each entry point of a corpus folder."""
    files = os.listdir(folder)
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    extra = {c.get("name") for c in meta.get("extra_cases", []) if isinstance(c, dict)}
    plain = sorted((f for f in files if re.fullmatch(r"input_\d+\.npy", f)), key=lambda f: int(f[6:-4]))
    if plain:
        return meta, [(None, plain)]
    methods = {}
    for f in files:
        m = re.fullmatch(r"input_(.+)_(\d+)\.npy", f)
        if m and m.group(1) not in extra:
            methods.setdefault(m.group(1), []).append((int(m.group(2)), f))
    return meta, [(m, [f for _, f in sorted(v)]) for m, v in sorted(methods.items())]


def timed(cmd, rounds):
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--only", default=".")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", help="keep the artifacts under this folder")
    args = ap.parse_args()
    compiler = os.path.join(ROOT, "target/release/nnrt-compile")
    runner = os.path.join(ROOT, "target/release/nnpackage_run")
    target = os.path.join(ROOT, "target/aot-artifacts")
    cc = os.environ.get("CC", "cc")
    work = args.keep or tempfile.mkdtemp(prefix="nnrt-aot-check-")
    counts = {"identical": 0, "DIFFERENT": 0, "refused": 0, "failed": 0}
    ratios = []
    for name in sorted(os.listdir(args.corpus)):
        folder = os.path.join(args.corpus, name)
        if not os.path.isfile(os.path.join(folder, "meta.json")) or not re.search(args.only, name):
            continue
        meta, entries = cases(folder)
        model = os.path.join(folder, meta.get("model_file", "model.tflite"))
        if not os.path.isfile(model):
            for cand in ("program.pte", "graph.tosa", "model.circle"):
                if os.path.isfile(os.path.join(folder, cand)):
                    model = os.path.join(folder, cand)
        for method, inputs in entries:
            label = name + (f" [{method}]" if method else "")
            art = re.sub(r"[^a-z0-9_]", "_", (name + ("_" + method if method else "")).lower())
            art = re.sub(r"_+", "_", art).strip("_")
            if art[0].isdigit():
                art = "m_" + art
            out = os.path.join(work, art)
            shutil.rmtree(out, ignore_errors=True)
            # The inputs' shapes, as nnpackage_run takes them from the .npy files.
            shapes = ",".join(f"{i},[{','.join(map(str, npy_shape(os.path.join(folder, f))))}]" for i, f in enumerate(inputs))
            cmd = [compiler, model, "-o", out, "--name", art, "--threads", str(args.threads), "--shape_prepare", f"[{shapes}]"]
            cmd += ["--method", method] if method else []
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                why = r.stderr.strip().splitlines()
                counts["refused"] += 1
                print(f"{label}: refused: {' '.join(why)[:300]}")
                continue
            r = subprocess.run(["cargo", "build", "--release", "--offline", "--quiet", "--manifest-path", os.path.join(out, "Cargo.toml")],
                               capture_output=True, text=True, env=dict(os.environ, CARGO_TARGET_DIR=target))
            exe = os.path.join(out, f"{art}_example")
            if r.returncode == 0:
                r = subprocess.run([cc, "-O2", "-I", os.path.join(out, "include"), os.path.join(out, "example", "main.c"),
                                    os.path.join(target, "release", f"lib{art}.a"), "-o", exe, "-lpthread", "-ldl", "-lm"], capture_output=True, text=True)
            if r.returncode != 0:
                counts["failed"] += 1
                print(f"{label}: failed: build: {r.stderr.strip()[-400:]}")
                continue
            raws = []
            for i, f in enumerate(inputs):
                p = os.path.join(out, f"in{i}.raw")
                with open(p, "wb") as fh:
                    fh.write(npy_raw(os.path.join(folder, f)))
                shutil.copy(os.path.join(folder, f), os.path.join(out, f"ref_in.{i}.npy"))
                raws.append(p)
            ref = [runner, model, "--backends", "cpu", "--threads", str(args.threads), "--load:npy", os.path.join(out, "ref_in"),
                   "--dump:raw", os.path.join(out, "ref_out")] + (["--method", method] if method else [])
            r = subprocess.run(ref, capture_output=True, text=True)
            if r.returncode != 0:
                counts["failed"] += 1
                print(f"{label}: failed: nnpackage_run: {r.stderr.strip()[-300:]}")
                continue
            n_out = 0
            while os.path.exists(os.path.join(out, f"ref_out.{n_out}")):
                n_out += 1
            outs = [os.path.join(out, f"out{j}.raw") for j in range(n_out)]
            r = subprocess.run([exe, os.path.join(out, f"{art}.params")] + raws + outs, capture_output=True, text=True)
            if r.returncode != 0:
                counts["failed"] += 1
                print(f"{label}: failed: artifact: {r.stderr.strip()[-300:]}")
                continue
            diff = [j for j in range(n_out) if open(outs[j], "rb").read() != open(os.path.join(out, f"ref_out.{j}"), "rb").read()]
            if diff:
                counts["DIFFERENT"] += 1
                print(f"{label}: DIFFERENT outputs {diff}")
                continue
            t_art = timed([exe, os.path.join(out, f"{art}.params")] + raws + outs, args.rounds)
            t_run = timed(ref, args.rounds)
            ratios.append(t_art / t_run)
            counts["identical"] += 1
            print(f"{label}: identical ({n_out} outputs); cold start {t_art * 1e3:.1f} ms vs nnpackage_run {t_run * 1e3:.1f} ms ({t_art / t_run:.2f}x)")
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    geo = statistics.geometric_mean(ratios) if ratios else float("nan")
    print(f"{counts['identical']} identical, {counts['DIFFERENT']} different, {counts['refused']} refused, {counts['failed']} failed; "
          f"cold start artifact/nnpackage_run geomean {geo:.2f}x")
    return 1 if counts["DIFFERENT"] or counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
