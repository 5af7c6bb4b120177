#!/usr/bin/env python3
"""Edge TPU (DarwiNN) models through the CLI tools, checked against each case's info.json.

For every case folder under CORPUS holding info.json and model_edgetpu.tflite:
  1. `nnrt-inspect --json model_edgetpu.tflite` holds every executable of info.json with the same
     type, chip, caching token, parameter and bitstream sizes, scratch, and layers (names, dims,
     data types, zero points, dequantization factors, sizes); the same for the bare package.dwn.
  2. `nnpackage_run model_edgetpu.tflite` without a driver exits 1 with an error naming the
     device, the chip, the runtime version and what to do.
  3. with --driver, `nnpackage_run --device-lib DRIVER` runs the model (exit 0).

  tools/darwinn_check.py --corpus ../shared/corpus/darwinn --bin target/release [--driver LIB]
"""
import argparse
import json
import os
import struct
import subprocess
import sys


def f32(x):
    """x rounded to float32, as the package stores dequantization factors."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def check_layer(ours, want, where, errors):
    for key in ("name", "y_dim", "x_dim", "z_dim", "data_type", "size_bytes"):
        if ours.get(key) != want[key]:
            errors.append(f"{where}: {key} {ours.get(key)!r}, info.json {want[key]!r}")
    if ours.get("zero_point") != want["numerics"]["zero_point"]:
        errors.append(f"{where}: zero_point {ours.get('zero_point')}, info.json {want['numerics']['zero_point']}")
    got = ours.get("dequantization_factor")
    if got is None or f32(got) != f32(want["numerics"]["dequantization_factor"]):
        errors.append(f"{where}: dequantization_factor {got}, info.json {want['numerics']['dequantization_factor']}")


def check_executable(ours, want, where, errors):
    pairs = [
        ("type", "type"), ("chip", "chip"), ("name", "name"), ("batch_size", "batch_size"),
        ("parameter_caching_token", "parameter_caching_token"), ("parameters_bytes", "parameters_bytes"),
        ("scratch_size_bytes", "scratch_size_bytes"),
    ]
    for k_ours, k_want in pairs:
        if ours.get(k_ours) != want[k_want]:
            errors.append(f"{where}: {k_ours} {ours.get(k_ours)!r}, info.json {want[k_want]!r}")
    bits = [b["bitstream_bytes"] for b in want["instruction_bitstreams"]]
    if ours.get("bitstream_bytes") != bits:
        errors.append(f"{where}: bitstream_bytes {ours.get('bitstream_bytes')}, info.json {bits}")
    for key in ("input_layers", "output_layers"):
        got, exp = ours.get(key, []), want[key]
        if len(got) != len(exp):
            errors.append(f"{where}: {len(got)} {key}, info.json {len(exp)}")
            continue
        for i, (g, e) in enumerate(zip(got, exp)):
            check_layer(g, e, f"{where} {key}[{i}]", errors)


def check_packages(packages, want_packages, where, errors):
    if len(packages) != len(want_packages):
        errors.append(f"{where}: {len(packages)} packages, info.json {len(want_packages)}")
        return
    for p, (ours, want) in enumerate(zip(packages, want_packages)):
        for key in ("min_runtime_version", "compiler_version"):
            if ours.get(key) != want[key]:
                errors.append(f"{where} package {p}: {key} {ours.get(key)!r}, info.json {want[key]!r}")
        got, exp = ours.get("executables", []), want["executables"]
        if len(got) != len(exp):
            errors.append(f"{where} package {p}: {len(got)} executables, info.json {len(exp)}")
            continue
        for i, (g, e) in enumerate(zip(got, exp)):
            check_executable(g, e, f"{where} package {p} executable {i}", errors)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--bin", required=True, help="folder with nnrt-inspect and nnpackage_run")
    ap.add_argument("--driver", help="a device driver library for the run check (the test driver)")
    args = ap.parse_args()
    inspect = os.path.join(args.bin, "nnrt-inspect")
    runner = os.path.join(args.bin, "nnpackage_run")
    cases = sorted(d for d in os.listdir(args.corpus) if os.path.isfile(os.path.join(args.corpus, d, "info.json")))
    failed = 0
    for case in cases:
        d = os.path.join(args.corpus, case)
        model = os.path.join(d, "model_edgetpu.tflite")
        if not os.path.isfile(model):
            continue
        info = json.load(open(os.path.join(d, "info.json")))
        errors = []
        r = run([inspect, "--json", model])
        if r.returncode != 0:
            errors.append(f"nnrt-inspect --json exited {r.returncode}: {r.stderr.strip()}")
        else:
            doc = json.loads(r.stdout)
            ops = doc["edgetpu_custom_ops"]
            want_ops = info["edgetpu_custom_ops"]
            if len(ops) != len(want_ops):
                errors.append(f"{len(ops)} Edge TPU ops, info.json {len(want_ops)}")
            for o, (ours, want) in enumerate(zip(ops, want_ops)):
                if ours["op_index"] != want["op_index"]:
                    errors.append(f"op {o}: index {ours['op_index']}, info.json {want['op_index']}")
                check_packages(ours["packages"], want["packages"], f"op {o}", errors)
        package = os.path.join(d, "package.dwn")
        if os.path.isfile(package):
            r = run([inspect, "--json", package])
            if r.returncode != 0:
                errors.append(f"nnrt-inspect --json package.dwn exited {r.returncode}: {r.stderr.strip()}")
            else:
                check_packages(json.loads(r.stdout)["packages"], info["edgetpu_custom_ops"][0]["packages"][:1], "package.dwn", errors)
        # Without a driver: exit 1 and a message that says what is needed and what to do.
        r = run([runner, model])
        chip = info["edgetpu_custom_ops"][0]["packages"][0]["executables"][0]["chip"]
        version = info["edgetpu_custom_ops"][0]["packages"][0]["min_runtime_version"]
        if r.returncode != 1:
            errors.append(f"nnpackage_run without a driver exited {r.returncode}, expected 1")
        for part in ("Edge TPU", f"'{chip}'", f"version {version}", "--device-lib", "CPU version"):
            if part not in r.stderr:
                errors.append(f"nnpackage_run without a driver: {part!r} missing in: {r.stderr.strip()}")
        if args.driver:
            r = run([runner, model, "--device-lib", args.driver])
            if r.returncode != 0:
                errors.append(f"nnpackage_run --device-lib exited {r.returncode}: {r.stderr.strip()}")
        if errors:
            failed += 1
            print(f"FAIL {case}")
            for e in errors:
                print(f"  {e}")
        else:
            print(f"ok   {case}")
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
