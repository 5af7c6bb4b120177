//! Single-operator TOSA graphs made by the official conformance generator
//! (`tosa_verif_build_tests` of `tosa-tools`) with the TOSA reference model's outputs, committed
//! under `tests/data/tosa_conformance/` by `tools/make_tosa_conformance.py` (which says how they
//! were selected). Every case runs on the CPU backend with 1 and 2 threads, which must agree.
//!
//! Tolerance: each output's `suggested_tolerance` in `meta.json`, from the compliance mode the
//! generator records: integer and boolean results exactly (TOSA's integer arithmetic is defined
//! bit for bit); float results exactly (EXACT), within n ULP (ULP n) or within 1e-5 of the
//! tensor's largest magnitude plus 1e-4 relative (dot products and reductions, summed in another
//! order than the reference model).
//!
//! Operators nnrt does not map yet are listed in `NOT_YET`: their cases must fail at load with
//! one typed error naming the operator (never a panic or a wrong answer). Single cases nnrt
//! does not pass yet are in `KNOWN` with the reason.

use std::path::{Path, PathBuf};

use nnrt::Session;
use nnrt_tests::{numbered_npys, run_on_cpu, repo_root, RawNpy};
use serde_json::Value;

/// TOSA operators (as `meta.json`'s `op`) whose cases must fail at load naming the operator.
const NOT_YET: &[&str] = &[];

/// Cases nnrt does not pass yet, each with the reason; they must still fail (at load with a
/// typed error, or by a wrong value), never pass unnoticed or panic.
const KNOWN: &[(&str, &str)] = &[];

fn cases() -> Vec<PathBuf> {
    let root = repo_root().join("tests/data/tosa_conformance");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("graph.tosa").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn meta(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("meta.json")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

fn floats(descr: &str, b: &[u8]) -> Option<Vec<f64>> {
    match descr {
        "<f4" => Some(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect()),
        "<f2" => Some(b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect()),
        _ => None,
    }
}

fn ints(descr: &str, b: &[u8]) -> Vec<i64> {
    match descr {
        "|i1" => b.iter().map(|&v| i64::from(v as i8)).collect(),
        "<i2" => b.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
        "<i4" => b.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
        _ => b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
    }
}

/// Why `got` does not match output `j`'s expected values, if it does not.
fn compare(j: usize, got: &[u8], dims: &[usize], want: &RawNpy, tol: &Value) -> Option<String> {
    if dims != want.dims.as_slice() {
        return Some(format!("output {j}: shape {dims:?}, reference {:?}", want.dims));
    }
    let Some(w) = floats(&want.descr, &want.data) else {
        if let Some(step) = tol.get("max_abs_diff").and_then(Value::as_i64) {
            // RESCALE with INEXACT_ROUND: either rounding, one step apart.
            let (g, w) = (ints(&want.descr, got), ints(&want.descr, &want.data));
            let bad = g.len() != w.len() || g.iter().zip(&w).any(|(a, b)| (a - b).abs() > step);
            return bad.then(|| format!("output {j} ({}): differs from the reference by more than {step}", want.descr));
        }
        // Integers and booleans: the same bytes (bool as one byte 0/1, INT48 as int64).
        return (got != want.data.as_slice()).then(|| {
            let k = want.descr.trim_start_matches(['<', '|']).get(1..).and_then(|s| s.parse::<usize>().ok()).unwrap_or(1).max(1);
            let at = got.chunks(k).zip(want.data.chunks(k)).position(|(a, b)| a != b).unwrap_or(0);
            format!("output {j} ({}, {} bytes vs {}): element {at} differs from the reference", want.descr, got.len(), want.data.len())
        });
    };
    let Some(g) = floats(&want.descr, got).filter(|g| g.len() == w.len()) else {
        return Some(format!("output {j}: {} bytes where the reference has {} of {}", got.len(), want.data.len(), want.descr));
    };
    let atol = tol.get("max_abs_error").and_then(Value::as_f64).unwrap_or(0.0);
    let rtol = tol.get("rtol_hint").and_then(Value::as_f64).unwrap_or(0.0);
    let bad = g.iter().zip(&w).position(|(&a, &b)| {
        if b.is_nan() || a.is_nan() || b.is_infinite() || a.is_infinite() {
            return !(a.is_nan() && b.is_nan()) && a != b;
        }
        (a - b).abs() > atol + rtol * b.abs()
    });
    bad.map(|k| format!("output {j}: element {k} is {} where the reference has {} (tolerance {atol:e} + {rtol:e} relative)", g[k], w[k]))
}

/// Runs one case; `Ok` holds the mismatches (empty when it passes).
fn run(dir: &Path, m: &Value, threads: usize) -> Result<Vec<String>, String> {
    let pkg = nnrt_loaders::load(dir.join("graph.tosa")).map_err(|e| e.to_string())?;
    let model = pkg.models.into_iter().next().ok_or("no model")?;
    let mut s = Session::from_model(model).map_err(|e| e.to_string())?;
    let inputs = numbered_npys(dir, "input");
    run_on_cpu(&mut s, &inputs, threads)?;
    let expected = numbered_npys(dir, "expected");
    let mut bad = Vec::new();
    for (j, want) in expected.iter().enumerate() {
        let dims = s.output_info(j).map_err(|e| e.to_string())?.dims;
        let got = s.output(j).map_err(|e| e.to_string())?;
        let tol = &m["outputs"][j]["suggested_tolerance"];
        bad.extend(compare(j, got, &dims, want, tol));
    }
    Ok(bad)
}

#[test]
fn generated_conformance_tests_match_the_reference_model() {
    let all = cases();
    assert!(all.len() >= 300, "expected the committed cases, found {}", all.len());
    let (mut passed, mut known) = (0, 0);
    let mut bad = Vec::new();
    for dir in &all {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let m = meta(dir);
        let op = m["op"].as_str().unwrap_or_default().to_string();
        let missing = NOT_YET.contains(&op.as_str());
        if let Some((_, why)) = KNOWN.iter().find(|(n, _)| *n == name) {
            match run(dir, &m, 1) {
                Ok(diffs) if diffs.is_empty() => bad.push(format!("{name} passes now ({why}): remove it from KNOWN")),
                _ => known += 1,
            }
            continue;
        }
        let mut answers = Vec::new();
        for threads in [1, 2] {
            match (run(dir, &m, threads), missing) {
                (Ok(diffs), false) if diffs.is_empty() => answers.push(threads),
                (Ok(diffs), false) => bad.extend(diffs.into_iter().map(|d| format!("{name} ({threads} threads): {d}"))),
                (Err(e), false) => bad.push(format!("{name} ({threads} threads): {e}")),
                (Err(e), true) if e.contains(&op) && e.contains("not supported") => {}
                (Err(e), true) => bad.push(format!("{name}: expected a load error naming {op}, got: {e}")),
                (Ok(_), true) => bad.push(format!("{name}: {op} runs now: remove it from NOT_YET")),
            }
        }
        if answers.len() == 2 {
            passed += 1;
        } else if missing {
            known += 1;
        }
    }
    println!("{passed} of {} generated TOSA conformance cases pass; {known} fail as NOT_YET and KNOWN say", all.len());
    assert!(bad.is_empty(), "{passed} of {} cases pass ({known} known missing); problems ({}):\n{}", all.len(), bad.len(), bad.join("\n"));
}

/// Graphs wrong in one way each (`tools/make_tosa_bad_graphs.py`: an unknown tensor name, a
/// dangling or recursive region, a shape operand of the wrong length, attribute and type
/// mismatches, two operators nnrt lacks): each fails at load with a typed error naming the
/// block, the operator and the tensor, as `expected_error.txt` says.
#[test]
fn bad_graphs_fail_at_load_naming_block_op_and_tensor() {
    let root = repo_root().join("tests/data/tosa_bad");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())).filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    assert!(dirs.len() >= 8, "expected the committed bad graphs, found {}", dirs.len());
    for dir in &dirs {
        let want = std::fs::read_to_string(dir.join("expected_error.txt")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let got = match nnrt_loaders::load(dir.join("graph.tosa")) {
            Ok(_) => panic!("{}: loaded; expected an error about '{}'", dir.display(), want.trim()),
            Err(e) => e.to_string(),
        };
        assert!(got.contains(want.trim()), "{}: expected an error containing '{}', got: {got}", dir.display(), want.trim());
    }
}

/// Graphs with variables (`tools/make_tosa_variable_cases.py`: serialized by tosa-tools'
/// `tosa-opt`, outputs from the TOSA reference model run after run): one session runs each
/// case `runs` times, and every run's outputs must equal the reference model's exactly — the
/// first run starts from the initial values, later ones from what the run before wrote. A case
/// with an `expected_error` (a variable without an initial value read before any write) must
/// fail its first run with an error containing it.
#[test]
fn variables_keep_their_values_across_runs() {
    let root = repo_root().join("tests/data/tosa_variables");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())).filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    assert!(dirs.len() >= 3, "expected the committed variable cases, found {}", dirs.len());
    for dir in &dirs {
        let m = meta(dir);
        let runs = m["runs"].as_u64().unwrap_or(0) as usize;
        for threads in [1, 2] {
            let pkg = nnrt_loaders::load(dir.join("graph.tosa")).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let mut s = Session::from_model(pkg.models.into_iter().next().expect("one model")).unwrap();
            if let Some(want) = m["expected_error"].as_str() {
                match run_on_cpu(&mut s, &numbered_npys(dir, "run1_input"), threads) {
                    Ok(()) => panic!("{}: ran; expected an error containing '{want}'", dir.display()),
                    Err(e) => assert!(e.contains(want), "{}: expected an error containing '{want}', got: {e}", dir.display()),
                }
                continue;
            }
            assert!(runs >= 2, "{}: meta.json gives {runs} runs", dir.display());
            for k in 1..=runs {
                let inputs = numbered_npys(dir, &format!("run{k}_input"));
                if k == 1 {
                    run_on_cpu(&mut s, &inputs, threads).unwrap_or_else(|e| panic!("{} run 1: {e}", dir.display()));
                } else {
                    for (i, x) in inputs.iter().enumerate() {
                        s.set_input(i, &x.data).unwrap();
                    }
                    s.run().unwrap_or_else(|e| panic!("{} run {k}: {e}", dir.display()));
                }
                for (j, want) in numbered_npys(dir, &format!("run{k}_expected")).iter().enumerate() {
                    assert_eq!(s.output_info(j).unwrap().dims, want.dims, "{} run {k} output {j}: shape", dir.display());
                    assert_eq!(s.output(j).unwrap(), want.data.as_slice(), "{} run {k} output {j} ({threads} threads)", dir.display());
                }
            }
        }
    }
}

/// Float REDUCE_MAX / REDUCE_MIN with NaNs and infinite rows, both NaN modes: two committed
/// generator cases (reduced over 4 values, outer size 1) fed columns of one NaN, all -inf (max)
/// or +inf (min), all NaN, and a NaN among infinities, against the specification's rule — start
/// from -inf (+inf); PROPAGATE: any NaN gives NaN; IGNORE: NaNs are skipped, all NaN gives NaN.
#[test]
fn float_reduce_max_min_follow_the_nan_mode() {
    for (case, inner, max, propagate) in [("reduce_max_1x4x3x4_f32_axis1_modeP", 12, true, true), ("reduce_min_4x5_f32_axis0_modeI", 5, false, false)] {
        let dir = repo_root().join("tests/data/tosa_conformance").join(case);
        let mut x = numbered_npys(&dir, "input");
        let mut v: Vec<f32> = x[0].data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let edge = if max { f32::NEG_INFINITY } else { f32::INFINITY };
        for k in 0..4 {
            v[k * inner + 1] = edge;
            v[k * inner + 2] = f32::NAN;
            v[k * inner + 3] = if k == 2 { f32::NAN } else { edge };
        }
        v[inner] = f32::NAN;
        x[0].data = v.iter().flat_map(|f| f.to_le_bytes()).collect();
        let want: Vec<f32> = (0..inner)
            .map(|c| {
                let col: Vec<f32> = (0..4).map(|k| v[k * inner + c]).collect();
                let nums: Vec<f32> = col.iter().copied().filter(|f| !f.is_nan()).collect();
                if (propagate && nums.len() < 4) || nums.is_empty() {
                    f32::NAN
                } else {
                    nums.iter().fold(edge, |a, &b| if max { a.max(b) } else { a.min(b) })
                }
            })
            .collect();
        let pkg = nnrt_loaders::load(dir.join("graph.tosa")).unwrap();
        let mut s = Session::from_model(pkg.models.into_iter().next().unwrap()).unwrap();
        run_on_cpu(&mut s, &x, 1).unwrap();
        let got: Vec<f32> = s.output(0).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got.len(), want.len(), "{case}");
        for (c, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g.is_nan() && w.is_nan()) || g == w, "{case} column {c}: {g} where the specification gives {w}");
        }
    }
}
