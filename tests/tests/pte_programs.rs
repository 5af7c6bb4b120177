//! ExecuTorch programs made by the real exporter (`tools/pte_export.py`: executorch 1.5.1, torch
//! 2.14.1), committed under `tests/data/pte/`, each a portable program and its XNNPACK-lowered
//! twin, with ExecuTorch's own runtime outputs. Every method runs on the CPU backend with 1 and 2
//! threads. Tolerance: conform.py's, float32 within 1e-4 + 1e-4 relative (kernels differ from
//! ExecuTorch's in summation order and transcendental functions); integers and bools exactly.
//!
//! The programs nnrt cannot run yet are listed in `NOT_YET` with the reason; they must still fail
//! at load with one typed error (never a panic or a wrong answer). Remove a name when it passes.

use std::path::{Path, PathBuf};

use nnrt::Session;
use nnrt_tests::{numbered_npys, run_on_cpu, repo_root, RawNpy};

/// Programs that use what nnrt lacks today, and the word their load error must contain
/// (none today: every program the exporter made runs).
const NOT_YET: &[(&str, &str)] = &[];

/// Programs whose answers differ from ExecuTorch's by a known, bounded amount, with the bound
/// and why (none today: ExecuTorch's quantized arithmetic, XNNPACK's included, is followed
/// exactly — `nnrt_core::Numerics::ExecuTorch`).
const WITHIN: &[(&str, f32)] = &[];

/// Cases whose float outputs must be ExecuTorch's bits, not only within the tolerance: the
/// order of a reduction's additions (ExecuTorch's optimized sum adds a row in eight lanes, its
/// mean in order).
const BIT_EXACT: &[&str] = &["long_rows"];

fn cases() -> Vec<PathBuf> {
    cases_in("tests/data/pte")
}

fn cases_in(dir: &str) -> Vec<PathBuf> {
    let root = repo_root().join(dir);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("program.pte").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The input sets of a case: `input_0.npy`... (tag "") and `input_<tag>_0.npy`..., where a tag
/// is a method name (several methods) or the name of another input set for the same method.
fn input_sets(dir: &Path) -> Vec<String> {
    let mut m: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_prefix("input_")?.strip_suffix("_0.npy").map(str::to_string))
        .collect();
    m.sort();
    if dir.join("input_0.npy").is_file() {
        m.insert(0, String::new());
    }
    m
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn compare(name: &str, j: usize, got: &[u8], dims: &[usize], want: &RawNpy) -> Option<String> {
    // `name` is the case, then `_<input set>` when it has several.
    let is_case = |n: &str| name == n || name.strip_prefix(n).is_some_and(|r| r.starts_with('_') && !r.starts_with("_xnnpack"));
    let abs = WITHIN.iter().find(|(n, _)| is_case(n)).map_or(1e-4, |(_, t)| *t);
    if dims != want.dims.as_slice() {
        return Some(format!("{name} output {j}: shape {dims:?}, ExecuTorch {:?}", want.dims));
    }
    if want.descr == "<f4" && !BIT_EXACT.iter().any(|n| is_case(n)) {
        let (g, w) = (f32s(got), f32s(&want.data));
        let bad = g.iter().zip(&w).position(|(a, b)| !((a - b).abs() <= abs + 1e-4 * b.abs() || (a.is_nan() && b.is_nan())));
        return bad.map(|k| format!("{name} output {j}: element {k} is {} where ExecuTorch has {}", g[k], w[k]));
    }
    (got != want.data.as_slice()).then(|| format!("{name} output {j} ({}): differs from ExecuTorch's", want.descr))
}

fn run(dir: &Path, threads: usize) -> Result<Vec<String>, String> {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let pkg = nnrt_loaders::load(dir.join("program.pte")).map_err(|e| e.to_string())?;
    let model = pkg.models.into_iter().next().ok_or("no model")?;
    let mut bad = Vec::new();
    for set in input_sets(dir) {
        let tag = if set.is_empty() { String::new() } else { format!("_{set}") };
        let mut s = Session::from_model(model.clone()).map_err(|e| e.to_string())?;
        if s.signatures().len() > 1 && s.signatures().contains(&set) {
            s.select_signature(&set).map_err(|e| e.to_string())?;
        }
        let inputs = numbered_npys(dir, &format!("input{tag}"));
        run_on_cpu(&mut s, &inputs, threads)?;
        let expected = numbered_npys(dir, &format!("expected{tag}"));
        assert!(!expected.is_empty(), "{name}: no expected outputs");
        for (j, want) in expected.iter().enumerate() {
            let dims = s.output_info(j).map_err(|e| e.to_string())?.dims;
            let got = s.output(j).map_err(|e| e.to_string())?;
            bad.extend(compare(&format!("{name}{tag}"), j, got, &dims, want));
        }
    }
    Ok(bad)
}

#[test]
fn exporter_made_programs_match_executorch() {
    let all = cases();
    assert!(all.len() >= 38, "expected the committed programs, found {}", all.len());
    let mut bad = Vec::new();
    let mut passed = 0;
    for dir in &all {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let known = NOT_YET.iter().find(|(n, _)| *n == name);
        for threads in [1, 2] {
            match (run(dir, threads), known) {
                (Ok(diffs), None) if diffs.is_empty() => passed += 1,
                (Ok(diffs), None) => bad.extend(diffs.into_iter().map(|d| format!("{d} ({threads} threads)"))),
                (Err(e), None) => bad.push(format!("{name}: {e}")),
                (Err(e), Some((_, why))) if e.contains(why) => {}
                (Err(e), Some((_, why))) => bad.push(format!("{name}: expected an error about '{why}', got: {e}")),
                (Ok(_), Some(_)) => bad.push(format!("{name} runs now: remove it from NOT_YET")),
            }
        }
    }
    assert!(bad.is_empty(), "{} runs passed; problems:\n{}", passed, bad.join("\n"));
}

/// Forms of a program the format allows but today's exporter does not write
/// (`tools/make_pte_variants.py`): constants inline in the flatbuffer without an extended header,
/// MoveCall and FreeCall, a JumpFalseCall on a constant; and a jump back, which must be refused.
#[test]
fn format_variants_run_or_fail_as_the_format_says() {
    let all = cases_in("tests/data/pte_variants");
    assert!(all.len() >= 4, "expected the committed variants, found {}", all.len());
    for dir in &all {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match std::fs::read_to_string(dir.join("expected_error.txt")) {
            Ok(word) => {
                let e = run(dir, 1).expect_err(&name);
                assert!(e.contains(word.trim()), "{name}: expected an error about '{}', got: {e}", word.trim());
            }
            Err(_) => {
                let bad = run(dir, 1).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(bad.is_empty(), "{name}: {bad:?}");
            }
        }
    }
}
