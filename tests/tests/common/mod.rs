//! Helpers shared by the integration tests: running a built model through `Session`, float
//! comparisons with stated tolerances, and the plain reference kernels in [`reference`].
#![allow(dead_code)] // each test file uses a different part

pub mod exercise;
pub mod reference;

use nnrt::Session;
use nnrt_tests::ModelBuilder;
pub use reference::T;

/// Little-endian bytes of f32 values.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// f32 values of little-endian bytes.
pub fn f32_values(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Loads the built model, prepares it on the `cpu` backend with `threads` threads, runs it on
/// float32 `inputs` and returns every output. Each phase's error is returned as it is.
pub fn run_with_threads(b: &ModelBuilder, inputs: &[&[f32]], threads: usize) -> Result<Vec<T>, nnrt::Error> {
    let model = nnrt_loaders::tflite::load_bytes("one_op.tflite", b.finish())?;
    let mut s = Session::from_model(model)?;
    s.set_backends("cpu")?;
    s.set_threads(threads)?;
    s.prepare()?;
    for (i, x) in inputs.iter().enumerate() {
        s.set_input(i, &f32_bytes(x))?;
    }
    s.run()?;
    (0..s.output_count()).map(|i| Ok(T { dims: s.output_info(i)?.dims, data: f32_values(s.output(i)?) })).collect()
}

/// With `NNRT_TESTS_DUMP_DIR` set, writes the case as the corpus lays models out
/// (`<dir>/<case>/model.tflite`, `input_<i>.npy`, `expected_0.npy`) so the references can be
/// checked against LiteRT (e.g. with `../shared/tools/conform.py`'s reader).
fn dump_case(what: &str, b: &ModelBuilder, inputs: &[&[f32]], input_dims: &[Vec<usize>], want: &T) {
    let Some(root) = std::env::var_os("NNRT_TESTS_DUMP_DIR") else { return };
    let name: String = what.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    let dir = std::path::Path::new(&root).join(name);
    let write = |file: &str, bytes: Vec<u8>| {
        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(dir.join(file), bytes)).unwrap_or_else(|e| panic!("dump {what}: {e}"));
    };
    write("model.tflite", b.finish());
    for (i, (x, dims)) in inputs.iter().zip(input_dims).enumerate() {
        write(&format!("input_{i}.npy"), nnrt_tests::npy_f32(dims, x));
    }
    write("expected_0.npy", nnrt_tests::npy_f32(&want.dims, &want.data));
}

/// Runs with 1 and with 2 threads (a kernel that splits work must give the same answer) and
/// checks output 0 of both against `want` with `tol`.
pub fn run_and_compare(what: &str, b: &ModelBuilder, inputs: &[&[f32]], want: &T, tol: Tol) {
    if std::env::var_os("NNRT_TESTS_DUMP_DIR").is_some() {
        let model = nnrt_loaders::tflite::load_bytes(what, b.finish()).unwrap_or_else(|e| panic!("{what}: {e}"));
        let s = Session::from_model(model).unwrap_or_else(|e| panic!("{what}: {e}"));
        let dims: Vec<Vec<usize>> = (0..inputs.len()).map(|i| s.input_info(i).map(|t| t.dims).unwrap_or_default()).collect();
        dump_case(what, b, inputs, &dims, want);
    }
    for threads in [1, 2] {
        let got = run_with_threads(b, inputs, threads).unwrap_or_else(|e| panic!("{what} ({threads} threads): {e}"));
        assert_close(&format!("{what} ({threads} threads)"), &got[0], want, tol);
    }
}

/// An element passes when |got - want| <= abs + rel * |want|.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    pub abs: f32,
    pub rel: f32,
}

impl Tol {
    /// Bit-exact: data movement and single IEEE operations.
    pub const EXACT: Tol = Tol { abs: 0.0, rel: 0.0 };
}

/// Asserts same dims and every element within `tol`, naming the first bad element.
pub fn assert_close(what: &str, got: &T, want: &T, tol: Tol) {
    assert_eq!(got.dims, want.dims, "{what}: output dims");
    assert_eq!(got.data.len(), want.data.len(), "{what}: output length");
    for (i, (&g, &w)) in got.data.iter().zip(&want.data).enumerate() {
        let err = (g - w).abs();
        let ok = err <= tol.abs + tol.rel * w.abs() || (g.is_nan() && w.is_nan());
        assert!(ok, "{what}: element {i} (index {:?}) is {g}, expected {w} (error {err:e}, tolerance {tol:?})", unravel(i, &want.dims));
    }
}

/// The multi-dim index of flat index `i`.
pub fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        idx[d] = i % dims[d].max(1);
        i /= dims[d].max(1);
    }
    idx
}

/// Dims as the `i32`s a TFLite shape holds.
pub fn dims_i32(dims: &[usize]) -> Vec<i32> {
    dims.iter().map(|&d| d as i32).collect()
}
