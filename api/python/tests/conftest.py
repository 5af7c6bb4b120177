"""Where the tests find models, plugins and the CLI.

- the repository's own data (examples/models, tests/data) is always there;
- the shared corpus is `$NNRT_SHARED/corpus`, else `../shared/corpus` beside the repository:
  tests that need it are skipped, saying so, when it is absent;
- plugins and `nnpackage_run` come from `$NNRT_TARGET_DIR` (default `target/release`), built by
  `cargo build --release --workspace`; tests that need them are skipped when they are missing,
  unless `NNRT_REQUIRE_BUILT=1` (as `.ci/run` sets) makes that a failure.
"""

import os
from pathlib import Path
import sys

import pytest

REPO = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("NNRT_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
TARGET = Path(os.environ.get("NNRT_TARGET_DIR", REPO / "target" / "release"))
FIRST_RUN = REPO / "examples" / "models" / "mobilenet_v1_0.25_128_quant"

if (SHARED / "tools" / "conform.py").is_file():
    sys.path.insert(0, str(SHARED / "tools"))


def corpus_or_skip(rel: str) -> Path:
    """`rel` inside the shared corpus, or the test is skipped (the corpus is absent)."""
    p = CORPUS / rel
    if not p.exists():
        pytest.skip(f"{p} is absent (the shared corpus is not beside this checkout; set NNRT_SHARED)")
    return p


def built_or_skip(name: str) -> Path:
    """A file cargo builds (a plugin, the CLI), or the test is skipped when it is not built."""
    p = TARGET / name
    if not p.exists():
        if os.environ.get("NNRT_REQUIRE_BUILT") == "1":
            pytest.fail(f"{p} is missing: build the workspace first (cargo build --release --workspace)")
        pytest.skip(f"{p} is not built (cargo build --release --workspace)")
    return p
