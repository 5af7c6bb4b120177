//! BATCH_MATMUL and FULLY_CONNECTED.

use nnrt_core::{Activation, DType, FullyConnected, OpKind};
use nnrt_tests::reference as r;
use nnrt_tests::{f, rand, Act, BuiltinOperator as Op, Case, Graph, Options, TensorIdx, XorShift};

use crate::{dims_i32, noise, random, tflite_unary, GPU_SUMS, SUMS};

nnrt_tests::replay_on_every_target!(batch_matmul_cases, fully_connected_cases, gpu_cases);

/// BATCH_MATMUL by the definition, with broadcast batch dims: (output dims, values).
fn matmul_ref(x: &[f32], xd: &[usize], y: &[f32], yd: &[usize], adj_x: bool, adj_y: bool) -> (Vec<usize>, Vec<f32>) {
    let (xr, yr) = (xd.len(), yd.len());
    let (m, k) = if adj_x { (xd[xr - 1], xd[xr - 2]) } else { (xd[xr - 2], xd[xr - 1]) };
    let n = if adj_y { yd[yr - 2] } else { yd[yr - 1] };
    let rank = (xr - 2).max(yr - 2);
    let pad = |d: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, rank - (d.len() - 2)).chain(d[..d.len() - 2].iter().copied()).collect() };
    let (xb, yb) = (pad(xd), pad(yd));
    let batch: Vec<usize> = xb.iter().zip(&yb).map(|(&a, &b)| a.max(b)).collect();
    let total: usize = batch.iter().product();
    let mut out = vec![0.0; total * m * n];
    for t in 0..total {
        // Index of t in the batch dims, then the broadcast offsets.
        let (mut rem, mut xo, mut yo, mut xs, mut ys) = (t, 0, 0, 1, 1);
        for d in (0..rank).rev() {
            let id = rem % batch[d];
            rem /= batch[d];
            xo += if xb[d] == 1 { 0 } else { id * xs };
            yo += if yb[d] == 1 { 0 } else { id * ys };
            xs *= xb[d];
            ys *= yb[d];
        }
        for row in 0..m {
            for c in 0..n {
                let mut acc = 0.0;
                for kk in 0..k {
                    let a = if adj_x { x[xo * m * k + kk * m + row] } else { x[xo * m * k + row * k + kk] };
                    let bv = if adj_y { y[yo * k * n + c * k + kk] } else { y[yo * k * n + kk * n + c] };
                    acc += a * bv;
                }
                out[(t * m + row) * n + c] = acc;
            }
        }
    }
    let mut dims = batch;
    dims.extend([m, n]);
    (dims, out)
}

fn batch_matmul_cases() -> Vec<Case> {
    // (x dims, y dims, adj_x, adj_y, y constant)
    type Row<'a> = (&'a [usize], &'a [usize], bool, bool, bool);
    let rows: [Row; 5] = [
        (&[2, 3, 4], &[2, 4, 5], false, false, false),
        (&[2, 4, 3], &[1, 5, 4], true, true, false),
        (&[3, 1, 2, 6], &[4, 6, 3], false, false, true),
        (&[5, 7], &[2, 3, 7, 4], false, false, true),
        (&[1, 6, 2], &[3, 6, 4], true, false, false),
    ];
    let mut cases = Vec::new();
    for (seed, (xd, yd, adj_x, adj_y, const_y)) in rows.into_iter().enumerate() {
        let x = rand(xd.iter().product(), seed as u64, -1.0, 1.0);
        let y = rand(yd.iter().product(), seed as u64 + 50, -1.0, 1.0);
        let (od, want) = matmul_ref(&x, xd, &y, yd, adj_x, adj_y);
        let mut g = Graph::new();
        let xi = g.input(xd, f(&x));
        let yi = if const_y { g.konst(yd, f(&y)) } else { g.input(yd, f(&y)) };
        let o = g.out(DType::F32, &od);
        g.op(OpKind::BatchMatMul { adj_x, adj_y }, &[Some(xi), Some(yi)], &[o]);
        cases.push(Case::new(format!("batch_matmul {xd:?} {yd:?}"), &g).dims(0, &od).out_close(0, f(&want), SUMS).gpu_tol(GPU_SUMS));
    }
    let g = Graph::binary(OpKind::BatchMatMul { adj_x: false, adj_y: false }, (&[2, 3, 4], f(&[0.0; 24])), (&[2, 5, 4], f(&[0.0; 40])), (DType::F32, &[2, 3, 4]));
    cases.push(Case::new("neg_batch_matmul_inner_dims_differ", &g).prepare_error(&["BatchMatMul", "inner dims"]));
    cases
}

/// FULLY_CONNECTED through the TFLite reader against `reference::fully_connected`.
fn tflite_fc(name: &str, input: &[usize], n: usize, bias: bool, keep_num_dims: bool, seed: u64) -> Case {
    let k = *input.last().expect("rank >= 1");
    let x = random(input, seed);
    let w = random(&[n, k], seed + 1);
    let bv = XorShift::new(seed + 2).fill(n, -0.5, 0.5);
    let want = r::fully_connected(&x, &w, bias.then_some(bv.as_slice()), keep_num_dims);
    tflite_unary(name, &x, &want, SUMS, |b, xi, y| {
        let wi = b.constant_f32("w", &dims_i32(&w.dims), &w.data);
        let bi = if bias { b.constant_f32("b", &[n as i32], &bv) } else { TensorIdx::ABSENT };
        b.op(Op::FULLY_CONNECTED, &[xi, wi, bi], &[y], Options::FullyConnected { act: Act::NONE, keep_num_dims });
    })
    .gpu_tol(GPU_SUMS)
}

fn fully_connected_cases() -> Vec<Case> {
    let mut cases = vec![
        tflite_fc("FULLY_CONNECTED keep_num_dims=false", &[2, 3, 8], 5, true, false, 80),
        tflite_fc("FULLY_CONNECTED keep_num_dims=true", &[2, 3, 8], 5, true, true, 90),
        tflite_fc("FULLY_CONNECTED no bias", &[4, 20], 7, false, false, 100),
    ];
    let x = rand(24, 3, -1.0, 1.0);
    let w = rand(20, 4, -1.0, 1.0);
    for keep in [true, false] {
        let od: &[usize] = if keep { &[2, 3, 5] } else { &[6, 5] };
        let mut g = Graph::new();
        let xi = g.input(&[2, 3, 4], f(&x));
        let wi = g.konst(&[5, 4], f(&w));
        let y = g.out(DType::F32, od);
        let p = FullyConnected { act: Activation::Relu6, keep_num_dims: keep, asymmetric_quantize_inputs: false };
        g.op(OpKind::FullyConnected(p), &[Some(xi), Some(wi), None], &[y]);
        let want: Vec<f32> = (0..6).flat_map(|row| (0..5).map(move |c| (row, c))).map(|(row, c)| (0..4).map(|k| x[row * 4 + k] * w[c * 4 + k]).sum::<f32>().clamp(0.0, 6.0)).collect();
        cases.push(Case::new(format!("fully_connected keep_num_dims {keep} without bias relu6"), &g).dims(0, od).out_close(0, f(&want), SUMS).gpu_tol(GPU_SUMS));
    }
    // A bias computed at run time (a graph input here; SwinV2's relative position bias in
    // ExecuTorch programs) and runtime weights.
    let bias = rand(5, 5, -1.0, 1.0);
    for const_w in [true, false] {
        let mut g = Graph::new();
        let xi = g.input(&[2, 3, 4], f(&x));
        let wi = if const_w { g.konst(&[5, 4], f(&w)) } else { g.input(&[5, 4], f(&w)) };
        let bi = g.input(&[5], f(&bias));
        let y = g.out(DType::F32, &[6, 5]);
        let p = FullyConnected { act: Activation::Relu, keep_num_dims: false, asymmetric_quantize_inputs: false };
        g.op(OpKind::FullyConnected(p), &[Some(xi), Some(wi), Some(bi)], &[y]);
        let want: Vec<f32> = (0..6).flat_map(|row| (0..5).map(move |c| (row, c))).map(|(row, c)| ((0..4).map(|k| x[row * 4 + k] * w[c * 4 + k]).sum::<f32>() + bias[c]).max(0.0)).collect();
        cases.push(Case::new(format!("fully_connected runtime bias, constant weights {const_w}"), &g).dims(0, &[6, 5]).out_close(0, f(&want), SUMS).gpu_tol(GPU_SUMS));
    }
    cases
}

/// The GPU's matrix products against the cpu: bias and activation, 3-D input flattened,
/// weights fed as an input (not constant), batch broadcasts and adjoints.
fn gpu_cases() -> Vec<Case> {
    let fc = |act, keep_num_dims| OpKind::FullyConnected(FullyConnected { act, keep_num_dims, asymmetric_quantize_inputs: false });
    let mut g = Graph::new();
    let x = g.input(&[3, 10], noise(&[3, 10], 40));
    let w = g.konst(&[7, 10], noise(&[7, 10], 41));
    let b = g.konst(&[7], noise(&[7], 42));
    let o = g.out(DType::F32, &[3, 7]);
    g.op(fc(Activation::Relu, false), &[Some(x), Some(w), Some(b)], &[o]);
    let mut cases = vec![Case::new("fc relu", &g).same_as_cpu(GPU_SUMS)];
    let mut g = Graph::new();
    let x = g.input(&[2, 3, 10], noise(&[2, 3, 10], 43));
    let w = g.input(&[5, 10], noise(&[5, 10], 44));
    let o = g.out(DType::F32, &[2, 3, 5]);
    g.op(fc(Activation::None, true), &[Some(x), Some(w), None], &[o]);
    cases.push(Case::new("fc keep_num_dims, runtime weights", &g).same_as_cpu(GPU_SUMS));
    let rows = [
        (vec![2, 3, 4], vec![2, 4, 5], false, false, vec![2, 3, 5]),
        (vec![2, 4, 3], vec![2, 4, 5], true, false, vec![2, 3, 5]),
        (vec![1, 3, 4], vec![2, 5, 4], false, true, vec![2, 3, 5]),
        (vec![2, 2, 3, 4], vec![2, 1, 4, 6], false, false, vec![2, 2, 3, 6]),
        (vec![9, 17], vec![17, 13], false, false, vec![9, 13]),
    ];
    for (k, (xd, yd, adj_x, adj_y, od)) in rows.into_iter().enumerate() {
        let mut g = Graph::new();
        let x = g.input(&xd, noise(&xd, 50 + k as u64));
        let y = g.input(&yd, noise(&yd, 60 + k as u64));
        let o = g.out(DType::F32, &od);
        g.op(OpKind::BatchMatMul { adj_x, adj_y }, &[Some(x), Some(y)], &[o]);
        cases.push(Case::new(format!("batch matmul case {k}"), &g).same_as_cpu(GPU_SUMS));
    }
    cases
}
