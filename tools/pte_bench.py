#!/usr/bin/env python3
"""Latency of ExecuTorch's runtime on .pte programs (a portable program and its XNNPACK-lowered
twin, or any others) at given thread counts and, with --nnrt, of nnrt's nnpackage_run on the same
files, side by side.

  /work/etvenv/bin/python tools/pte_bench.py /work/mbv2_pte/mobilenet_v2_portable.pte \\
      /work/mbv2_pte/mobilenet_v2_xnnpack.pte [--threads 1,2] [--runs 20] [--warmup 5] [--rounds 3] \\
      [--nnrt target/release/nnpackage_run] [--method forward] [--inputs PREFIX] [--json out.json]

A PROGRAM is a .pte file or a case folder holding program.pte (tests/data/pte/<case>). Inputs are
input_0.npy, input_1.npy, ... next to it (input_<method>_<i>.npy for another method), or
PREFIX0.npy, PREFIX1.npy, ... with --inputs PREFIX (e.g. --inputs /work/mbv2_pte/input_), else
zeros of the method's declared shapes (ExecuTorch's MethodMeta), written to a temporary folder so
that nnrt gets the same. --method applies to every program given.

Threads. ExecuTorch has one process-wide threadpool (extension/threadpool); the XNNPACK delegate
(xnn_create_runtime with threadpool::get_pthreadpool()) and the optimized kernels' parallel_for run
on it. torch.set_num_threads does not touch it. The pybinding's `_unsafe_reset_threadpool(n)` resizes it, and it must run before a method is
loaded: XNNPACK keeps the pool's pointer when the delegate initializes, and a reset afterwards
frees the pool under it. So each (program, thread count) gets a fresh worker process
(this script with --worker) that resets the pool, checks `_threadpool_get_thread_count()`, loads
the method, then measures once per request from the parent. nnrt gets `--threads N`.

Each round runs nnrt's CLI once (`MODEL --load:npy PREFIX -r RUNS -w WARMUP -m --threads N`; its
"execute: min .. median .." and "peak RSS" lines are read), then one measurement of the ExecuTorch
worker (same runs and warm-ups, timing Method.execute, which includes the pybinding's tensor
wrapping); rounds alternate so machine noise hits both alike. Reported: min over all runs and median of the
rounds' medians, ms. With --nnrt the table mirrors tools/pair_bench.py:

  NAME  t=1 min  nnrt/   ET=ratio  med  nnrt/   ET=ratio  rss KB

(ratio below 1 means nnrt is faster; rss is nnrt's peak RSS); without it: NAME t=N min ET med ET.
Needs executorch 1.5.1 + torch 2.14.1 (see tools/pte_export.py).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np


# ExecuTorch ScalarType numbers (TensorInfo.dtype()) -> numpy.
SCALAR_TYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 5: np.float16, 6: np.float32,
                7: np.float64, 11: np.bool_}


def worker(args):
    """Child process: sets the threadpool, loads, times execute; prints one JSON line."""
    import time
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    from executorch.extension.pybindings import portable_lib as pl
    from executorch.runtime import Runtime
    if args.threads:
        pl._unsafe_reset_threadpool(args.threads)  # before any method exists (see the docstring)
    got = pl._threadpool_get_thread_count()
    files = []
    i = 0
    while os.path.exists(f"{args.inputs}{i}.npy"):
        files.append(f"{args.inputs}{i}.npy")
        i += 1
    inputs = [torch.from_numpy(np.load(f)) for f in files]
    method = Runtime.get().load_program(args.worker).load_method(args.method)
    print(json.dumps({"threadpool": got, "ready": True}), flush=True)
    # One measurement per line read from stdin, so that the parent can interleave them with nnrt's.
    for _ in sys.stdin:
        for _ in range(args.warmup):
            method.execute(inputs)
        ts = []
        for _ in range(args.runs):
            t = time.perf_counter()
            method.execute(inputs)
            ts.append((time.perf_counter() - t) * 1e3)
        print(json.dumps({"times_ms": ts}), flush=True)


class EtWorker:
    """A child process holding one loaded method at one thread count (see the docstring)."""

    def __init__(self, pte, prefix, threads, args):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", pte, "--inputs", prefix, "--method", args.method,
               "--threads", str(threads), "--runs", str(args.runs), "--warmup", str(args.warmup)]
        self.pte, self.p = pte, subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, text=True)
        r = self._line()
        if threads and r["threadpool"] != threads:
            print(f"warning: ExecuTorch threadpool has {r['threadpool']} threads, asked {threads}", file=sys.stderr)

    def _line(self):
        while True:
            ln = self.p.stdout.readline()
            if not ln:
                err = (self.p.stderr.read().strip().splitlines() or [f"exit {self.p.wait()}"])[-1]
                raise RuntimeError(f"ExecuTorch worker failed on {self.pte}: {err[:200]}")
            if ln.startswith("{"):
                return json.loads(ln)

    def measure(self):
        self.p.stdin.write("run\n")
        self.p.stdin.flush()
        return self._line()["times_ms"]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def resolve(path, method, prefix, tmp):
    """Returns (.pte path, input prefix such that PREFIX<i>.npy exist, number of inputs)."""
    pte = os.path.join(path, "program.pte") if os.path.isdir(path) else path
    folder = os.path.dirname(os.path.abspath(pte))
    cands = [prefix] if prefix else [os.path.join(folder, f"input_{method}_"), os.path.join(folder, "input_")]
    for c in cands:
        if c and os.path.exists(f"{c}0.npy"):
            n = 0
            while os.path.exists(f"{c}{n}.npy"):
                n += 1
            return pte, c, n
    # No inputs stored: zeros of the declared shapes.
    from executorch.runtime import Runtime
    meta = Runtime.get().load_program(pte).metadata(method)
    c = os.path.join(tmp, re.sub(r"\W", "_", os.path.basename(pte)) + "_in_")
    n = meta.num_inputs()
    for i in range(n):
        info = meta.input_tensor_meta(i)
        np.save(f"{c}{i}.npy", np.zeros(list(info.sizes()), SCALAR_TYPES[info.dtype()]))
    return pte, c, n


def nnrt_round(cli, pte, prefix, n_inputs, threads, args, tmp):
    # nnpackage_run reads PREFIX.0.npy, PREFIX.1.npy, ...: link the inputs under that naming.
    link = os.path.join(tmp, "nnrt_in")
    for i in range(n_inputs):
        dst = f"{link}.{i}.npy"
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.path.abspath(f"{prefix}{i}.npy"), dst)
    cmd = cli + [pte, "--load:npy", link, "-r", str(args.runs), "-w", str(args.warmup), "-m", "--threads", str(threads)]
    if args.method != "forward":
        cmd += ["--method", args.method]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return f"error: {(p.stderr.strip().splitlines() or ['exit %d' % p.returncode])[-1][:80]}", None
    m = re.search(r"execute: min ([\d.]+) ms, median ([\d.]+) ms", p.stdout)
    if not m:
        return f"error: no 'execute:' line in {p.stdout.strip()[:80]!r}", None
    rss = re.search(r"peak RSS: (\d+) KB", p.stdout)
    return (float(m.group(1)), float(m.group(2))), (int(rss.group(1)) if rss else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("programs", nargs="*", help=".pte files or case folders")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--method", default="forward")
    ap.add_argument("--inputs", help="input prefix: PREFIX0.npy, PREFIX1.npy, ...")
    ap.add_argument("--nnrt", help="path to nnpackage_run (split on spaces)")
    ap.add_argument("--json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)
    if not args.programs:
        ap.error("no programs given")
    cli = args.nnrt.split() if args.nnrt else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="pte_bench-") as tmp:
        for path in args.programs:
            pte, prefix, n = resolve(path, args.method, args.inputs, tmp)
            name = os.path.basename(os.path.dirname(os.path.abspath(pte))) if os.path.isdir(path) \
                else os.path.basename(pte)
            for t in [int(x) for x in args.threads.split(",")]:
                et_all, et_meds, ours, rss = [], [], [], None
                try:
                    et = EtWorker(pte, prefix, t, args)
                except RuntimeError as e:  # say so and go on with the other programs
                    print(f"{name[-40:]:40} t={t} {e}", flush=True)
                    rows.append({"program": pte, "threads": t, "et_error": str(e)})
                    continue
                for _ in range(args.rounds):
                    if cli:
                        r, kb = nnrt_round(cli, pte, prefix, n, t, args, tmp)
                        ours.append(r)
                        rss = kb or rss
                    ts = et.measure()
                    et_all += ts
                    et_meds.append(statistics.median(ts))
                et.close()
                a, c = min(et_all), statistics.median(et_meds)
                row = {"program": pte, "threads": t, "et_min_ms": a, "et_median_ms": c}
                if cli:
                    ok = [o for o in ours if isinstance(o, tuple)]
                    if ok:
                        b, d = min(o[0] for o in ok), statistics.median(o[1] for o in ok)
                        row.update(nnrt_min_ms=b, nnrt_median_ms=d, nnrt_peak_rss_kb=rss)
                        print(f"{name[-40:]:40} t={t} min {b:7.3f}/{a:7.3f}={b / a:5.2f}  "
                              f"med {d:7.3f}/{c:7.3f}={d / c:5.2f}  rss {rss if rss else '-'} KB", flush=True)
                    else:
                        row["nnrt_error"] = ours[0]
                        print(f"{name[-40:]:40} t={t} min       -/{a:7.3f}        med       -/{c:7.3f}  "
                              f"nnrt {ours[0]}", flush=True)
                else:
                    print(f"{name[-40:]:40} t={t} min {a:7.3f}  med {c:7.3f}  (ExecuTorch ms)", flush=True)
                rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
