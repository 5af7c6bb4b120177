#!/usr/bin/env python3
"""nnrt on each `tfl_*` TOSA graph of a corpus against nnrt on the TFLite model it came from
(issue 22's speed table): same machine, same threads, the two runs alternated for a few rounds so
that the machine's slow and fast phases hit both alike (which side runs first swaps each round).
Prints the median of each side's per-round medians and the ratio TOSA / TFLite (target: at most
1.1), then the ratio of the two sides' fastest per-round medians: a process here runs in a fast
or a slow phase as a whole (a 10 us convolution at 2 threads: 8 or 15 us, whether the pool's
second thread has a core), which the median of a few rounds can give one side and not the other.

  python3 tools/tosa_bench.py [--cli target/release/nnpackage_run] [--corpus ../shared/corpus/tosa]
        [--threads 1,2] [--rounds 5] [--runs 20] [--only REGEX]

The TOSA side reads the graph's `input_K.npy`; the TFLite side the source model's own inputs in
the TFLite corpus (`meta.json`'s `source_tflite`), since the TOSA graph may take int8 where the
model takes uint8.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_median(cli, model, prefix, threads, runs):
    with tempfile.NamedTemporaryFile(suffix=".json") as rep:
        cmd = [cli, model, "--load:npy", prefix, "-r", str(runs), "-w", "3", "--threads", str(threads), "-p", rep.name]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
        return json.load(open(rep.name))["execute_ms"]["median"]


def stage_inputs(src_dir, dst_prefix):
    """Copies `input_K.npy` of `src_dir` to `dst_prefix.K.npy` (nnpackage_run's naming)."""
    k = 0
    while os.path.exists(os.path.join(src_dir, f"input_{k}.npy")):
        shutil.copy(os.path.join(src_dir, f"input_{k}.npy"), f"{dst_prefix}.{k}.npy")
        k += 1
    return k


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(HERE, "..", "target", "release", "nnpackage_run"))
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus", "tosa"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    corpus = os.path.realpath(a.corpus)
    tflite_root = os.path.dirname(corpus)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(corpus)):
            d = os.path.join(corpus, name)
            if not name.startswith("tfl_") or not re.search(a.only, name) or not os.path.isdir(d):
                continue
            meta = json.load(open(os.path.join(d, "meta.json")))
            src = os.path.dirname(os.path.join(tflite_root, meta["source_tflite"]))
            tp, fp = os.path.join(tmp, name + "_tosa"), os.path.join(tmp, name + "_tfl")
            if stage_inputs(d, tp) == 0 or stage_inputs(src, fp) == 0:
                print(f"{name}: no inputs", file=sys.stderr)
                continue
            for th in [int(t) for t in a.threads.split(",")]:
                ts, fs = [], []
                for r in range(a.rounds):
                    sides = [(ts, os.path.join(d, "graph.tosa"), tp), (fs, os.path.join(d, "source.tflite"), fp)]
                    for acc, model, prefix in sides if r % 2 == 0 else sides[::-1]:
                        acc.append(run_median(a.cli, model, prefix, th, a.runs))
                t, f = statistics.median(ts), statistics.median(fs)
                rows.append((name, th, t / f, min(ts) / min(fs)))
                print(f"{name:42s} threads={th}  tosa {t * 1000:9.2f} us  tflite {f * 1000:9.2f} us  ratio {t / f:5.2f}  (fastest rounds {min(ts) * 1000:.2f} / {min(fs) * 1000:.2f} us = {min(ts) / min(fs):.2f})", flush=True)
    worst = max((r[2] for r in rows), default=0.0)
    worst_min = max((r[3] for r in rows), default=0.0)
    print(f"{len(rows)} rows, worst ratio {worst:.2f} (of the fastest rounds {worst_min:.2f})")


if __name__ == "__main__":
    main()
