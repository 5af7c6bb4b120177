//! RFFT2D, COMPLEX_ABS, REAL and IMAG through the TFLite reader (complex64 tensors), against the
//! discrete Fourier transform's definition.

use nnrt::{DType, Session};
use nnrt_tests::{BuiltinOperator, ModelBuilder, Options, TempDir, TensorType};

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// `X[k1, k2] = Σ x[n1, n2] e^(−2πi (k1 n1 / fh + k2 n2 / fw))` over the cells inside both the
/// input and the fft lengths, for k2 ≤ fw / 2; (re, im) pairs.
fn dft(x: &[f32], rows: usize, cols: usize, fh: usize, fw: usize) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for k1 in 0..fh {
        for k2 in 0..=fw / 2 {
            let (mut re, mut im) = (0.0, 0.0);
            for n1 in 0..rows.min(fh) {
                for n2 in 0..cols.min(fw) {
                    let a = -2.0 * std::f64::consts::PI * ((k1 * n1) as f64 / fh as f64 + (k2 * n2) as f64 / fw as f64);
                    re += x[n1 * cols + n2] as f64 * a.cos();
                    im += x[n1 * cols + n2] as f64 * a.sin();
                }
            }
            out.push((re, im));
        }
    }
    out
}

#[test]
fn spectrum_parts_match_the_definition() {
    // Two matrices of 6 × 10, cropped to 4 rows and zero-padded to 16 columns.
    let (batch, rows, cols, fh, fw) = (2usize, 6usize, 10usize, 4usize, 16usize);
    let half = fw / 2 + 1;
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[batch as i32, rows as i32, cols as i32]);
    let len = b.constant_i32("fft_length", &[2], &[fh as i32, fw as i32]);
    let spec = [batch as i32, fh as i32, half as i32];
    let z = b.tensor("z", TensorType::COMPLEX64, &spec);
    let (abs, re, im) = (b.tensor("abs", TensorType::FLOAT32, &spec), b.tensor("re", TensorType::FLOAT32, &spec), b.tensor("im", TensorType::FLOAT32, &spec));
    b.op(BuiltinOperator::RFFT2D, &[x, len], &[z], Options::None);
    b.op(BuiltinOperator::COMPLEX_ABS, &[z], &[abs], Options::None);
    b.op(BuiltinOperator::REAL, &[z], &[re], Options::None);
    b.op(BuiltinOperator::IMAG, &[z], &[im], Options::None);
    b.output(z).output(abs).output(re).output(im);
    let dir = TempDir::new("fft").unwrap();
    let p = dir.path().join("fft.tflite");
    std::fs::write(&p, b.finish()).unwrap();

    let mut s = Session::load(&p).unwrap();
    s.prepare().unwrap();
    assert_eq!(s.output_info(0).unwrap().dtype, DType::C64);
    let xv: Vec<f32> = (0..batch * rows * cols).map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0).collect();
    s.set_input(0, &f32_bytes(&xv)).unwrap();
    s.run().unwrap();
    let (zs, abs, re, im) = (floats(s.output(0).unwrap()), floats(s.output(1).unwrap()), floats(s.output(2).unwrap()), floats(s.output(3).unwrap()));
    for m in 0..batch {
        let want = dft(&xv[m * rows * cols..][..rows * cols], rows, cols, fh, fw);
        for (i, &(wr, wi)) in want.iter().enumerate() {
            let k = m * fh * half + i;
            // Computed in f64 and rounded once to f32: within a float ulp or two.
            let close = |a: f32, b: f64| (a as f64 - b).abs() <= 1e-5 * (1.0 + b.abs());
            assert!(close(zs[2 * k], wr) && close(zs[2 * k + 1], wi), "matrix {m}, bin {i}: ({}, {}) vs ({wr}, {wi})", zs[2 * k], zs[2 * k + 1]);
            assert!(close(re[k], wr) && close(im[k], wi), "parts of bin {i}");
            assert!(close(abs[k], wr.hypot(wi)), "magnitude of bin {i}: {} vs {}", abs[k], wr.hypot(wi));
        }
    }
}

#[test]
fn fft_lengths_must_be_powers_of_two() {
    let mut b = ModelBuilder::new();
    let x = b.input("x", TensorType::FLOAT32, &[4, 12]);
    let len = b.constant_i32("fft_length", &[2], &[4, 12]);
    let z = b.tensor("z", TensorType::COMPLEX64, &[4, 7]);
    b.op(BuiltinOperator::RFFT2D, &[x, len], &[z], Options::None);
    b.output(z);
    let dir = TempDir::new("fft-bad").unwrap();
    let p = dir.path().join("bad.tflite");
    std::fs::write(&p, b.finish()).unwrap();
    let e = Session::load(&p).unwrap().prepare().unwrap_err().to_string();
    assert!(e.contains("Rfft2d") && e.contains("powers of two"), "{e}");
}
