//! FFT2D (`Fft2d`: real and imaginary parts in and out) against TOSA's pseudo-code summed
//! directly, and the variable ops (`VariableRead` / `VariableWrite`) within one run (runs after
//! runs: `tests/tosa_conformance.rs`'s variable cases).

use nnrt_core::{DType, OpKind};
use nnrt_tests::{f, i, Case, Graph, Tol};

use crate::F;

nnrt_tests::replay_on_every_target!(fft2d_cases, variable_cases);

/// TOSA's FFT2D pseudo-code for one `h × w` matrix, in f64 (angles from the index products
/// modulo H and W).
fn dft(re: &[f32], im: &[f32], h: usize, w: usize, inverse: bool) -> (Vec<f32>, Vec<f32>) {
    let sign = if inverse { -1.0 } else { 1.0 };
    let (mut or, mut oi) = (Vec::new(), Vec::new());
    for oy in 0..h {
        for ox in 0..w {
            let (mut sr, mut si) = (0f64, 0f64);
            for iy in 0..h {
                for ix in 0..w {
                    let a = sign * 2.0 * std::f64::consts::PI * (((iy * oy) % h) as f64 / h as f64 + ((ix * ox) % w) as f64 / w as f64);
                    let (vr, vi) = (re[iy * w + ix] as f64, im[iy * w + ix] as f64);
                    sr += vr * a.cos() + vi * a.sin();
                    si += -vr * a.sin() + vi * a.cos();
                }
            }
            or.push(sr as f32);
            oi.push(si as f32);
        }
    }
    (or, oi)
}

/// Both ways compute in f64 and round once; the FFT's rounding differs by a few ulp of the
/// largest term.
const FFT: Tol = Tol::new(1e-5, 1e-5, "an FFT and the direct sum round differently in f64");

fn fft2d_cases() -> Vec<Case> {
    let (n, h, w) = (2usize, 4usize, 8usize);
    let re: Vec<f32> = (0..n * h * w).map(|k| ((k * 37 % 23) as f32 - 11.0) / 7.0).collect();
    let im: Vec<f32> = (0..n * h * w).map(|k| ((k * 11 % 17) as f32 - 8.0) / 5.0).collect();
    let mut cases = Vec::new();
    for inverse in [false, true] {
        let mut g = Graph::new();
        let (x, y) = (g.input(&[n, h, w], f(&re)), g.input(&[n, h, w], f(&im)));
        let (a, b) = (g.out(F, &[n, h, w]), g.out(F, &[n, h, w]));
        g.op(OpKind::Fft2d { inverse }, &[Some(x), Some(y)], &[a, b]);
        let (mut wr, mut wi) = (Vec::new(), Vec::new());
        for m in 0..n {
            let s = m * h * w..(m + 1) * h * w;
            let (r, j) = dft(&re[s.clone()], &im[s], h, w, inverse);
            wr.extend(r);
            wi.extend(j);
        }
        cases.push(Case::new(format!("fft2d 2x4x8 inverse {inverse}"), &g).out_close(0, f(&wr), FFT).out_close(1, f(&wi), FFT).no_gpu("no Fft2d kernel"));
    }
    let mut g = Graph::new();
    let (x, y) = (g.input(&[1, 3, 4], f(&[0.0; 12])), g.input(&[1, 3, 4], f(&[0.0; 12])));
    let (a, b) = (g.out(F, &[1, 3, 4]), g.out(F, &[1, 3, 4]));
    g.op(OpKind::Fft2d { inverse: false }, &[Some(x), Some(y)], &[a, b]);
    cases.push(Case::new("neg_fft2d_height_not_a_power_of_two", &g).prepare_error(&["Fft2d", "powers of two"]));
    let mut g = Graph::new();
    let (x, y) = (g.input(&[1, 2, 4], f(&[0.0; 8])), g.input(&[1, 4, 2], f(&[0.0; 8])));
    let (a, b) = (g.out(F, &[1, 2, 4]), g.out(F, &[1, 2, 4]));
    g.op(OpKind::Fft2d { inverse: false }, &[Some(x), Some(y)], &[a, b]);
    cases.push(Case::new("neg_fft2d_parts_of_two_shapes", &g).prepare_error(&["Fft2d", "differs from the real parts'"]));
    cases
}

fn variable_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // Never written: a read gives the initial value.
    let mut g = Graph::new();
    let x = g.input(&[3], i(&[7, 8, 9]));
    let (var, flag) = (g.variable(DType::I32, &[3]), g.variable(DType::Bool, &[1]));
    let init = g.konst(&[3], i(&[1, -2, 3]));
    let (y, z) = (g.out(DType::I32, &[3]), g.out(DType::I32, &[3]));
    g.op(OpKind::VariableRead, &[Some(var), Some(flag), Some(init)], &[y]);
    // Written, then read: the value written.
    g.op(OpKind::VariableWrite, &[Some(x), Some(var), Some(flag)], &[]);
    g.op(OpKind::VariableRead, &[Some(var), Some(flag), Some(init)], &[z]);
    cases.push(Case::new("variable read, write, read", &g).out(0, i(&[1, -2, 3])).out(1, i(&[7, 8, 9])).no_gpu("no variable kernels"));
    // No initial value and not written yet: the run fails naming the variable.
    let mut g = Graph::new();
    let (var, flag) = (g.variable(F, &[2]), g.variable(DType::Bool, &[1]));
    let y = g.out(F, &[2]);
    let x = g.input(&[2], f(&[1.0, 2.0]));
    g.op(OpKind::VariableRead, &[Some(var), Some(flag), None], &[y]);
    g.op(OpKind::VariableWrite, &[Some(x), Some(var), Some(flag)], &[]);
    cases.push(Case::new("neg_variable_read_before_any_write", &g).run_error(&["variable 'state'", "read before anything is written"]).no_gpu("no variable kernels"));
    // A value of another shape: refused at prepare.
    let mut g = Graph::new();
    let (var, flag) = (g.variable(F, &[2]), g.variable(DType::Bool, &[1]));
    let x = g.input(&[3], f(&[1.0, 2.0, 3.0]));
    let y = g.out(F, &[2]);
    g.op(OpKind::VariableWrite, &[Some(x), Some(var), Some(flag)], &[]);
    g.op(OpKind::VariableRead, &[Some(var), Some(flag), None], &[y]);
    cases.push(Case::new("neg_variable_write_of_another_shape", &g).prepare_error(&["VariableWrite", "the variable is float32"]));
    cases
}
