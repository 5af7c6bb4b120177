#!/bin/sh
# Builds libnnfw and the C test programs of api/c/tests/c_api.rs, then runs every C program under
#   valgrind --error-exitcode=1 --leak-check=full --suppressions=api/c/tests/valgrind.supp
# (any memory error or leak fails the test that ran the program; valgrind.supp only excuses the
# thread-local blocks of rayon pool threads still exiting when the program ends). Run from anywhere:
#   api/c/tests/valgrind.sh [extra cargo test args, e.g. a test name]
#   NNFW_FEATURES="--no-default-features --features cpu" api/c/tests/valgrind.sh   (cpu-only library)
# Valgrind 3.19 does not emulate AVX-512, so nnrt's kernels are pinned to AVX2 (NNRT_ISA, default
# avx2; NNRT_ISA=scalar also works).
set -eu
cd "$(dirname "$0")/../../.."
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 1; }
export NNRT_ISA="${NNRT_ISA:-avx2}"
export NNFW_C_TEST_RUNNER="valgrind --error-exitcode=1 --leak-check=full --suppressions=$PWD/api/c/tests/valgrind.supp"
# NNFW_FEATURES picks the library's backends, e.g. "--no-default-features --features cpu".
features="${NNFW_FEATURES:-}"
cargo build --release -p nnfw $features
exec cargo test --release -p nnfw $features --test c_api -- --test-threads=1 --nocapture "$@"
