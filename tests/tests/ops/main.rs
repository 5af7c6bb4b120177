//! The op test suite: one case list per op family (`ops/<family>.rs`), each case a one-op model
//! built with [`nnrt_tests::Graph`] (or, where the TFLite reader's mapping is part of what is
//! tested, [`nnrt_tests::ModelBuilder`]), replayed on `cpu` with 1 and 2 threads (which must agree
//! bit for bit), on `gpu` alone and on `gpu;cpu`: `cargo test -p nnrt-tests --test ops conv::`
//! runs one family, `-- gpu` one target. Cases the `gpu` has no kernel for say so and are
//! skipped there (they still run on `gpu;cpu`, falling back to the cpu); without any GPU adapter
//! the GPU targets print why and pass.
//!
//! Values are worked out by hand, by TFLite's examples, or by the plain reference kernels in
//! [`nnrt_tests::reference`] and the families' own; cases marked `same_as_cpu` compare the GPU
//! with the `cpu` backend. `neg_` cases must fail at prepare (or, where TFLite fails at run
//! time, at run) with the typed error of that phase.
//!
//! Tolerances, and why: data movement, comparisons, casts and single IEEE operations are
//! bit-exact; the others state their reason where they are used (below, or in the family).
//!
//! Adding an op's tests: in its family's file (or a new `ops/<family>.rs`, named below), a
//! function returning its cases, listed in the file's `replay_on_every_target!`; a case is
//! `Case::new(name, &graph)` with `.out(k, values)` / `.out_close(k, values, tol)`, or
//! `.prepare_error(&[...])` / `.run_error(&[...])` for a `neg_` case, and `.no_gpu(why)` while
//! the gpu has no kernel for it.

use nnrt_tests::Tol;

mod activation;
mod cast;
mod conv;
mod conv3d;
mod elementwise;
mod fft;
mod fusion;
mod generate;
mod index;
mod lstm;
mod matmul;
mod movement;
mod pool;
mod reduce;
mod resize;
mod slice;

/// Sums over K ≤ 100 terms of size ~1: a kernel may add in another order or with FMA, so the
/// rounding error stays below ~K·2⁻²⁴·Σ|xᵢwᵢ|.
const SUMS: Tol = Tol::new(1e-5, 1e-5, "a sum of K <= 100 terms may be added in another order or with FMA");
/// Vectorized exp/log/sin/tanh/logistic/gelu against std's.
const ULPS: Tol = Tol::new(2e-6, 2e-6, "vectorized transcendental functions may differ from std's by a few ulp");
/// The GPU sums in another order (and divides through a reciprocal).
const GPU_SUMS: Tol = Tol::new(1e-5, 1e-5, "the gpu sums in another order and may divide through a reciprocal");
/// The GPU's exp/log/tanh/pow come from the driver's math library.
const GPU_MATH: Tol = Tol::new(2e-5, 2e-5, "the gpu's transcendental functions come from the driver's math library");

use nnrt_core::DType;
use nnrt_tests::reference::T;
use nnrt_tests::{f, zeros, Arg, Case, ModelBuilder, TensorIdx, TensorType, XorShift, V};

const F: DType = DType::F32;

/// A graph input of `dtype` and `dims` fed with zeros (for `neg_` cases, which fail before).
fn zero_input(dtype: DType, dims: &[usize]) -> Arg<'_> {
    Arg::In(dims, zeros(dtype, dims.iter().product()))
}

/// A constant int32 argument.
fn ints<'a>(dims: &'a [usize], v: &[i32]) -> Arg<'a> {
    Arg::Const(dims, nnrt_tests::i(v))
}

/// `XorShift` values in [-1, 1) of `dims`' size, seeded per case so failures reproduce.
fn noise(dims: &[usize], seed: u64) -> V {
    f(&XorShift::new(seed).fill(dims.iter().product(), -1.0, 1.0))
}

/// [`noise`] as a reference tensor.
fn random(dims: &[usize], seed: u64) -> T {
    T::new(dims, XorShift::new(seed).fill(dims.iter().product(), -1.0, 1.0))
}

/// Dims as the `i32`s a TFLite shape holds.
fn dims_i32(dims: &[usize]) -> Vec<i32> {
    dims.iter().map(|&d| d as i32).collect()
}

/// A TFLite case `y = op(x, constants…)` with one float32 input fed with `x` and an output of
/// `want`'s dims that must match it within `tol`; `build` adds the op (and its constants).
fn tflite_unary(name: &str, x: &T, want: &T, tol: Tol, build: impl FnOnce(&mut ModelBuilder, TensorIdx, TensorIdx)) -> Case {
    let mut b = ModelBuilder::new();
    let xi = b.input("x", TensorType::FLOAT32, &dims_i32(&x.dims));
    let y = b.tensor("y", TensorType::FLOAT32, &dims_i32(&want.dims));
    build(&mut b, xi, y);
    b.output(y);
    Case::tflite(name, &b, vec![f(&x.data)]).out_tensor(0, want, tol)
}
