#!/usr/bin/env bash
# Runs one fuzz target for SECONDS (default 60) with libFuzzer, seeded from ../shared/corpus
# ($NNRT_SHARED/corpus when set) when it exists, and fails on any crash, hang (10 s per input) or
# allocation over 2 GiB.
#
#   fuzz/run.sh TARGET [SECONDS] [extra libFuzzer flags]     targets: fuzz/run.sh --list
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); runs on the stable toolchain with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz passes nightly-only sanitizer flags). Findings land in
# fuzz/artifacts/TARGET/; add each as a regression test before fixing it.
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "--list" ] || [ -z "${1:-}" ]; then
  sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v nnrt-fuzz
  exit 0
fi
target=$1
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
corpus=corpus/$target
mkdir -p "$corpus"
# ../shared beside the checkout, or $NNRT_SHARED (as the tests read it).
shared=${NNRT_SHARED:-../../shared}/corpus
if [ -d "$shared" ] && [ -z "$(ls -A "$corpus")" ]; then
  case $target in
    tflite|prepare)
      for f in "$shared"/tflite/*/model.tflite; do
        # Small models only: the fuzzer mutates whole inputs.
        if [ "$(stat -c %s "$f")" -le 65536 ]; then cp "$f" "$corpus/$(basename "$(dirname "$f")").tflite"; fi
      done ;;
    nnpackage)
      cp "$shared"/tflite/_nnpkg_variants/op_*.zip "$corpus"/ ;;
    pte)
      # The shared programs and the repository's (operators, state, torch.cond, container variants).
      for f in "$shared"/pte/*/program.pte ../tests/data/pte*/*/program.pte; do
        d=$(dirname "$f")
        if [ -f "$f" ]; then cp "$f" "$corpus/$(basename "$(dirname "$d")")_$(basename "$d").pte"; fi
      done ;;
    tosa)
      # Small graphs only: the fuzzer mutates whole inputs.
      for f in "$shared"/tosa/*/graph.tosa; do
        if [ "$(stat -c %s "$f")" -le 65536 ]; then cp "$f" "$corpus/$(basename "$(dirname "$f")").tosa"; fi
      done ;;
    darwinn)
      # Bare packages and the op's options, small ones only (split_concat's).
      for d in "$shared"/darwinn/*/; do
        for f in package.dwn custom_options.flexbuf; do
          if [ -f "$d$f" ] && [ "$(stat -c %s "$d$f")" -le 65536 ]; then cp "$d$f" "$corpus/$(basename "$d")_$f"; fi
        done
      done ;;
    npy)
      # The corpus's small inputs and expected outputs (every dtype and rank it has).
      find "$shared" -name '*.npy' -size -65k | while read -r f; do
        rel=${f#"$shared"/}
        cp "$f" "$corpus/${rel//\//_}"
      done ;;
    manifest)
      i=0
      for f in "$shared"/nnpackage/*/metadata/MANIFEST; do cp "$f" "$corpus/manifest$i"; i=$((i + 1)); done ;;
  esac
fi
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run --release "$target" "$corpus" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 "$@"
