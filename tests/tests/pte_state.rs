//! ExecuTorch programs with mutable buffers (tests/data/pte_state, made by
//! tools/make_pte_state_cases.py): one session runs each method three times on the same input, and
//! every run's outputs must be ExecuTorch's for that run — the buffers' contents persist from one
//! run to the next (zero at first when the exporter did not serialize them, their mutable data
//! when it did), portable and XNNPACK-lowered alike.

use std::path::Path;

use nnrt::{DType, Session};

fn npy(path: &Path) -> nnrt_npy::Array {
    nnrt_npy::parse(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("npy")
}

fn close(case: &str, run: usize, j: usize, got: &[u8], want: &nnrt_npy::Array) {
    match want.dtype {
        DType::F32 => {
            let g: Vec<f32> = got.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            let w: Vec<f32> = want.data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
            assert_eq!(g.len(), w.len(), "{case} run {run} output {j}: length");
            for (k, (a, b)) in g.iter().zip(&w).enumerate() {
                assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{case} run {run} output {j}[{k}]: {a} vs ExecuTorch's {b}");
            }
        }
        _ => assert_eq!(got, &want.data[..], "{case} run {run} output {j}"),
    }
}

#[test]
fn mutable_buffers_persist_across_runs_as_in_executorch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pte_state");
    let mut cases = 0;
    for entry in std::fs::read_dir(&root).expect("tests/data/pte_state") {
        let dir = entry.expect("entry").path();
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("meta.json")).expect("meta")).expect("json");
        let runs = meta["runs"].as_u64().expect("runs") as usize;
        let mut s = Session::load(dir.join("program.pte")).expect("load");
        s.set_backends("cpu").expect("backends");
        s.prepare().expect("prepare");
        let input = npy(&dir.join("input_0.npy"));
        for run in 0..runs {
            s.set_input(0, &input.data).expect("input");
            s.run().expect("run");
            for j in 0..s.output_count() {
                close(&case, run, j, s.output(j).expect("output"), &npy(&dir.join(format!("expected_run{run}_{j}.npy"))));
            }
        }
        cases += 1;
    }
    assert_eq!(cases, 4, "the four cases of tools/make_pte_state_cases.py");
}

/// `torch.cond` (tests/data/pte_cond, made by tools/make_pte_cond_cases.py): a JumpFalse on a
/// bool tensor computed at run time; each input takes one branch, with ExecuTorch's outputs.
#[test]
fn torch_cond_takes_the_branch_the_condition_picks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pte_cond");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).expect("tests/data/pte_cond") {
        let dir = entry.expect("entry").path();
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut s = Session::load(dir.join("program.pte")).expect("load");
        s.set_backends("cpu").expect("backends");
        s.prepare().expect("prepare");
        for k in ["then", "else"] {
            s.set_input(0, &npy(&dir.join(format!("input_{k}_0.npy"))).data).expect("input");
            s.run().expect("run");
            for j in 0..s.output_count() {
                close(&format!("{case} ({k})"), 0, j, s.output(j).expect("output"), &npy(&dir.join(format!("expected_{k}_{j}.npy"))));
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "two programs, each input set");
}

/// Loops and arithmetic on sizes (tests/data/pte_loop, made by tools/make_pte_loop_cases.py):
/// `torch.map` (rows with an extra argument; a Linear and a Conv2d inside the body) and
/// `torch.scan` (a carry through `aten::copy_`), which ExecuTorch's emitter writes as a loop with
/// a JumpFalse back and `executorch_prim` counters, unrolled by nnrt at load; and a dynamic batch
/// whose view takes `x.shape[0] * 2` (`executorch_prim::mul` on a run-time size), computed at run
/// time, portable and XNNPACK-lowered. One session runs both input sets of each (the second with
/// another batch for the dynamic one), outputs equal to ExecuTorch's.
#[test]
fn loops_and_run_time_sizes_run_as_in_executorch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/pte_loop");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).expect("tests/data/pte_loop") {
        let dir = entry.expect("entry").path();
        let case = dir.file_name().unwrap().to_string_lossy().into_owned();
        let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("meta.json")).expect("meta.json")).expect("json");
        let n_in = meta["inputs"].as_u64().expect("inputs") as usize;
        let mut s = Session::load(dir.join("program.pte")).expect("load");
        s.set_backends("cpu").expect("backends");
        for k in ["a", "b"] {
            let inputs: Vec<nnrt_npy::Array> = (0..n_in).map(|i| npy(&dir.join(format!("input_{k}_{i}.npy")))).collect();
            for (i, x) in inputs.iter().enumerate() {
                s.set_input_shape(i, &x.dims).expect("input shape");
            }
            if k == "a" {
                s.prepare().expect("prepare");
            }
            for (i, x) in inputs.iter().enumerate() {
                s.set_input(i, &x.data).expect("input");
            }
            s.run().unwrap_or_else(|e| panic!("{case} ({k}): {e}"));
            for j in 0..s.output_count() {
                let want = npy(&dir.join(format!("expected_{k}_{j}.npy")));
                assert_eq!(s.output_info(j).expect("info").dims, want.dims, "{case} ({k}) output {j}: shape");
                close(&format!("{case} ({k})"), 0, j, s.output(j).expect("output"), &want);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 12, "six programs, two input sets each");
}
