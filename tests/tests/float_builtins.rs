//! One-op tests of the float (and plain integer / bool) TFLite builtins on the `cpu` backend:
//! models built in memory as nnrt IR, run through `Session` with 1 and 2 threads, compared with
//! values worked out by hand or by the small reference functions below; `neg_` cases must fail
//! at prepare (or, where TFLite fails at run time, at run) with the typed error of that phase.
//!
//! The TFLite loader's mapping of these ops and their options is exercised by the conformance
//! corpus (`../shared/tools/conform.py`); these tests pin the IR semantics and the kernels.
//!
//! Tolerances, and why: data movement, comparisons, casts and single IEEE operations are
//! bit-exact; transcendental functions (exp, log, sin, tanh, logistic, gelu) may differ from
//! std's by a few ulp in the vectorized kernels: 2e-6 absolute + 2e-6 relative; sums over
//! K ≤ 100 terms (matmul, transpose conv, LSTM gates) may be reordered: 1e-5.

use nnrt::{DType, Error, Session};
use nnrt_core::{
    Activation, BinaryOp, CompareOp, ConstData, FullyConnected, LogicalOp, Model, OpKind, Operand, OperandId, Operation, Padding, ReduceOp,
    Resize, ResizeMode, SequenceLstm, StridedSlice, Subgraph, TransposeConv, UnaryOp,
};

// ---- values of any element type ------------------------------------------------------------

/// A tensor's values.
#[derive(Clone, Debug, PartialEq)]
enum V {
    F32(Vec<f32>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    F16(Vec<f32>),
}

impl V {
    fn dtype(&self) -> DType {
        match self {
            V::F32(_) => DType::F32,
            V::I32(_) => DType::I32,
            V::I64(_) => DType::I64,
            V::Bool(_) => DType::Bool,
            V::U8(_) => DType::U8,
            V::I8(_) => DType::I8,
            V::I16(_) => DType::I16,
            V::F16(_) => DType::F16,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            V::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::Bool(v) => v.iter().map(|&x| x as u8).collect(),
            V::U8(v) => v.clone(),
            V::I8(v) => v.iter().map(|&x| x as u8).collect(),
            V::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            V::F16(v) => v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect(),
        }
    }

    fn from_bytes(dtype: DType, b: &[u8]) -> V {
        match dtype {
            DType::F32 => V::F32(b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I32 => V::I32(b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::I64 => V::I64(b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::Bool => V::Bool(b.iter().map(|&x| x != 0).collect()),
            DType::U8 => V::U8(b.to_vec()),
            DType::I8 => V::I8(b.iter().map(|&x| x as i8).collect()),
            DType::I16 => V::I16(b.chunks_exact(2).map(|c| i16::from_le_bytes(c.try_into().unwrap())).collect()),
            DType::F16 => V::F16(b.chunks_exact(2).map(|c| half::f16::from_le_bytes(c.try_into().unwrap()).to_f32()).collect()),
            DType::C64 => panic!("complex64 outputs are checked in tests/fft.rs"),
        }
    }

    fn f32(&self) -> &[f32] {
        match self {
            V::F32(v) => v,
            other => panic!("expected float32 values, got {other:?}"),
        }
    }
}

fn f(v: &[f32]) -> V {
    V::F32(v.to_vec())
}

fn i(v: &[i32]) -> V {
    V::I32(v.to_vec())
}

fn b(v: &[bool]) -> V {
    V::Bool(v.to_vec())
}

/// Seeded values in [lo, hi).
fn rand(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

// ---- one-op models in IR -------------------------------------------------------------------

/// A one-subgraph model under construction.
#[derive(Default)]
struct G {
    g: Subgraph,
    feeds: Vec<V>,
}

impl G {
    /// A graph input fed with `v`.
    fn input(&mut self, dims: &[usize], v: V) -> OperandId {
        let id = self.g.add_operand(Operand::new(format!("in{}", self.feeds.len()), v.dtype(), dims));
        self.g.inputs.push(id);
        self.feeds.push(v);
        id
    }

    /// A constant.
    fn konst(&mut self, dims: &[usize], v: V) -> OperandId {
        let mut o = Operand::new("const", v.dtype(), dims);
        o.data = Some(ConstData::owned(v.bytes()));
        self.g.add_operand(o)
    }

    /// An int32 constant, 1-D.
    fn ints(&mut self, v: &[i32]) -> OperandId {
        self.konst(&[v.len()], i(v))
    }

    /// An int32 scalar constant.
    fn scalar(&mut self, v: i32) -> OperandId {
        self.konst(&[], i(&[v]))
    }

    /// An op output, also a graph output.
    fn out(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        let id = self.g.add_operand(Operand::new(format!("out{}", self.g.outputs.len()), dtype, dims));
        self.g.outputs.push(id);
        id
    }

    fn op(&mut self, kind: OpKind, inputs: &[Option<OperandId>], outputs: &[OperandId]) {
        self.g.add_op(Operation { kind, inputs: inputs.to_vec(), outputs: outputs.to_vec() });
    }

    fn session(&self, threads: usize) -> Result<Session, Error> {
        let model = Model { subgraphs: vec![self.g.clone()], source: "float_builtins".into(), ..Model::default() };
        let mut s = Session::from_model(model)?;
        s.set_backends("cpu")?;
        s.set_threads(threads)?;
        Ok(s)
    }

    /// Prepares and runs with `threads` threads; every output as (dims, values).
    fn try_run(&self, threads: usize) -> Result<Vec<(Vec<usize>, V)>, Error> {
        let mut s = self.session(threads)?;
        s.prepare()?;
        for (k, v) in self.feeds.iter().enumerate() {
            s.set_input(k, &v.bytes())?;
        }
        s.run()?;
        (0..s.output_count())
            .map(|k| {
                let info = s.output_info(k)?;
                Ok((info.dims.clone(), V::from_bytes(info.dtype, s.output(k)?)))
            })
            .collect()
    }

    /// Runs with 1 and 2 threads (which must agree) and returns the outputs.
    fn run(&self) -> Vec<(Vec<usize>, V)> {
        let one = self.try_run(1).unwrap_or_else(|e| panic!("run failed: {e}"));
        let two = self.try_run(2).unwrap_or_else(|e| panic!("run (2 threads) failed: {e}"));
        assert_eq!(one, two, "1 and 2 threads disagree");
        one
    }

    /// Output 0 after a run.
    fn run0(&self) -> (Vec<usize>, V) {
        self.run().swap_remove(0)
    }

    /// Prepare must fail with a compile error mentioning every needle.
    fn expect_prepare_error(&self, needles: &[&str]) {
        let mut s = self.session(1).unwrap_or_else(|e| panic!("session: {e}"));
        match s.prepare() {
            Err(e @ Error::Compile(_)) => {
                let msg = e.to_string();
                for n in needles {
                    assert!(msg.contains(n), "prepare error should mention {n:?}: {msg}");
                }
            }
            Err(e) => panic!("expected a prepare error, got {e:?}"),
            Ok(()) => panic!("prepare succeeded; expected an error mentioning {needles:?}"),
        }
    }

    /// Prepare succeeds and run must fail with a run error mentioning `needle`.
    fn expect_run_error(&self, needle: &str) {
        match self.try_run(1) {
            Err(e @ Error::Run(_)) => assert!(e.to_string().contains(needle), "run error should mention {needle:?}: {e}"),
            Err(e) => panic!("expected a run error, got {e:?}"),
            Ok(_) => panic!("run succeeded; expected an error mentioning {needle:?}"),
        }
    }
}

/// `y = kind(x)` with one input and one output of the given types.
fn unary_model(kind: OpKind, dims: &[usize], x: V, out: DType) -> G {
    let mut g = G::default();
    let xi = g.input(dims, x);
    let y = g.out(out, dims);
    g.op(kind, &[Some(xi)], &[y]);
    g
}

/// `y = kind(a, b)` with both operands as graph inputs.
fn binary_model(kind: OpKind, a: (&[usize], V), bb: (&[usize], V), out: (DType, &[usize])) -> G {
    let mut g = G::default();
    let ai = g.input(a.0, a.1);
    let bi = g.input(bb.0, bb.1);
    let y = g.out(out.0, out.1);
    g.op(kind, &[Some(ai), Some(bi)], &[y]);
    g
}

fn assert_close(what: &str, got: &[f32], want: &[f32], abs: f32, rel: f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (k, (&x, &y)) in got.iter().zip(want).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || (x - y).abs() <= abs + rel * y.abs();
        assert!(ok, "{what}: element {k}: got {x}, want {y} (tolerance {abs} + {rel}·|want|)");
    }
}

const ULPS: (f32, f32) = (2e-6, 2e-6);

// ---- TRANSPOSE_CONV --------------------------------------------------------------------------

/// TFLite's reference loop, written out for the tests.
#[allow(clippy::too_many_arguments)]
fn transpose_conv_ref(x: &[f32], xd: [usize; 4], w: &[f32], wd: [usize; 4], od: [usize; 4], stride: [usize; 2], pad: [usize; 2], bias: &[f32]) -> Vec<f32> {
    let mut o = vec![0.0; od.iter().product()];
    for n in 0..xd[0] {
        for iy in 0..xd[1] {
            for ix in 0..xd[2] {
                for ic in 0..xd[3] {
                    for fy in 0..wd[1] {
                        for fx in 0..wd[2] {
                            let oy = (iy * stride[0] + fy) as isize - pad[0] as isize;
                            let ox = (ix * stride[1] + fx) as isize - pad[1] as isize;
                            if oy < 0 || ox < 0 || oy as usize >= od[1] || ox as usize >= od[2] {
                                continue;
                            }
                            for oc in 0..wd[0] {
                                o[((n * od[1] + oy as usize) * od[2] + ox as usize) * od[3] + oc] +=
                                    x[((n * xd[1] + iy) * xd[2] + ix) * xd[3] + ic] * w[((oc * wd[1] + fy) * wd[2] + fx) * wd[3] + ic];
                            }
                        }
                    }
                }
            }
        }
    }
    for (k, v) in o.iter_mut().enumerate() {
        *v += bias.get(k % od[3]).copied().unwrap_or(0.0);
    }
    o
}

fn transpose_conv_model(xd: [usize; 4], wd: [usize; 4], od: [usize; 4], p: TransposeConv, bias: bool, seed: u64) -> (G, Vec<f32>, Vec<f32>, Vec<f32>) {
    let x = rand(xd.iter().product(), seed, -1.0, 1.0);
    let w = rand(wd.iter().product(), seed + 1, -1.0, 1.0);
    let bv = rand(wd[0], seed + 2, -0.5, 0.5);
    let mut g = G::default();
    let shape = g.ints(&od.map(|d| d as i32));
    let wi = g.konst(&wd, f(&w));
    let xi = g.input(&xd, f(&x));
    let bi = bias.then(|| g.konst(&[wd[0]], f(&bv)));
    let y = g.out(DType::F32, &od);
    g.op(OpKind::TransposeConv(p), &[Some(shape), Some(wi), Some(xi), bi], &[y]);
    (g, x, w, if bias { bv } else { vec![] })
}

#[test]
fn transpose_conv_tflite_example_same_stride1() {
    // TFLite transpose_conv_test SimpleTest: 4x4 input 1..16, 3x3 filter 1..9, SAME, stride 1.
    let mut g = G::default();
    let shape = g.ints(&[1, 4, 4, 1]);
    let w = g.konst(&[1, 3, 3, 1], f(&(1..=9).map(|v| v as f32).collect::<Vec<_>>()));
    let x = g.input(&[1, 4, 4, 1], f(&(1..=16).map(|v| v as f32).collect::<Vec<_>>()));
    let y = g.out(DType::F32, &[1, 4, 4, 1]);
    let p = TransposeConv { padding: Padding::Same, stride: [1, 1], act: Activation::None };
    g.op(OpKind::TransposeConv(p), &[Some(shape), Some(w), Some(x), None], &[y]);
    let want = [29.0, 62.0, 83.0, 75.0, 99.0, 192.0, 237.0, 198.0, 207.0, 372.0, 417.0, 330.0, 263.0, 446.0, 485.0, 365.0];
    assert_eq!(g.run0().1, f(&want));
}

#[test]
fn transpose_conv_stride2_valid_and_same_with_bias_and_relu() {
    for (padding, od, pad) in [(Padding::Valid, [2, 9, 11, 3], [0, 0]), (Padding::Same, [2, 8, 10, 3], [0, 0])] {
        let p = TransposeConv { padding, stride: [2, 2], act: Activation::Relu };
        let (g, x, w, bias) = transpose_conv_model([2, 4, 5, 6], [3, 3, 3, 6], od, p, true, 7);
        let want: Vec<f32> = transpose_conv_ref(&x, [2, 4, 5, 6], &w, [3, 3, 3, 6], od, [2, 2], pad, &bias).iter().map(|v| v.max(0.0)).collect();
        let (dims, got) = g.run0();
        assert_eq!(dims, od.to_vec());
        assert_close("transpose_conv", got.f32(), &want, 1e-5, 1e-5);
    }
    // SAME with odd total padding: out 7 from in 4, k 3, stride 2 -> pad (1, 1) on top.
    let p = TransposeConv { padding: Padding::Same, stride: [2, 2], act: Activation::None };
    let (g, x, w, _) = transpose_conv_model([1, 4, 4, 2], [2, 3, 3, 2], [1, 7, 7, 2], p, false, 9);
    let want = transpose_conv_ref(&x, [1, 4, 4, 2], &w, [2, 3, 3, 2], [1, 7, 7, 2], [2, 2], [1, 1], &[]);
    assert_close("transpose_conv same odd", g.run0().1.f32(), &want, 1e-5, 1e-5);
}

#[test]
fn neg_transpose_conv_channel_mismatch() {
    let p = TransposeConv { padding: Padding::Same, stride: [1, 1], act: Activation::None };
    let mut g = G::default();
    let shape = g.ints(&[1, 4, 4, 2]);
    let w = g.konst(&[2, 3, 3, 5], f(&[0.0; 90]));
    let x = g.input(&[1, 4, 4, 3], f(&[0.0; 48]));
    let y = g.out(DType::F32, &[1, 4, 4, 2]);
    g.op(OpKind::TransposeConv(p), &[Some(shape), Some(w), Some(x), None], &[y]);
    g.expect_prepare_error(&["TransposeConv", "channels"]);
}

// ---- BATCH_MATMUL, FULLY_CONNECTED ------------------------------------------------------------

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
        for r in 0..m {
            for c in 0..n {
                let mut acc = 0.0;
                for kk in 0..k {
                    let a = if adj_x { x[xo * m * k + kk * m + r] } else { x[xo * m * k + r * k + kk] };
                    let bv = if adj_y { y[yo * k * n + c * k + kk] } else { y[yo * k * n + kk * n + c] };
                    acc += a * bv;
                }
                out[(t * m + r) * n + c] = acc;
            }
        }
    }
    let mut dims = batch;
    dims.extend([m, n]);
    (dims, out)
}

#[test]
fn batch_matmul_adjoints_and_broadcast_batches() {
    // (x dims, y dims, adj_x, adj_y, y constant)
    type Case<'a> = (&'a [usize], &'a [usize], bool, bool, bool);
    let cases: [Case; 5] = [
        (&[2, 3, 4], &[2, 4, 5], false, false, false),
        (&[2, 4, 3], &[1, 5, 4], true, true, false),
        (&[3, 1, 2, 6], &[4, 6, 3], false, false, true),
        (&[5, 7], &[2, 3, 7, 4], false, false, true),
        (&[1, 6, 2], &[3, 6, 4], true, false, false),
    ];
    for (seed, (xd, yd, adj_x, adj_y, const_y)) in cases.into_iter().enumerate() {
        let x = rand(xd.iter().product(), seed as u64, -1.0, 1.0);
        let y = rand(yd.iter().product(), seed as u64 + 50, -1.0, 1.0);
        let (od, want) = matmul_ref(&x, xd, &y, yd, adj_x, adj_y);
        let mut g = G::default();
        let xi = g.input(xd, f(&x));
        let yi = if const_y { g.konst(yd, f(&y)) } else { g.input(yd, f(&y)) };
        let o = g.out(DType::F32, &od);
        g.op(OpKind::BatchMatMul { adj_x, adj_y }, &[Some(xi), Some(yi)], &[o]);
        let (dims, got) = g.run0();
        assert_eq!(dims, od);
        assert_close(&format!("batch_matmul {xd:?} {yd:?}"), got.f32(), &want, 1e-5, 1e-5);
    }
}

#[test]
fn neg_batch_matmul_inner_dims_differ() {
    let g = binary_model(OpKind::BatchMatMul { adj_x: false, adj_y: false }, (&[2, 3, 4], f(&[0.0; 24])), (&[2, 5, 4], f(&[0.0; 40])), (DType::F32, &[2, 3, 4]));
    g.expect_prepare_error(&["BatchMatMul", "inner dims"]);
}

#[test]
fn fully_connected_keep_num_dims_without_bias() {
    let x = rand(24, 3, -1.0, 1.0);
    let w = rand(20, 4, -1.0, 1.0);
    for keep in [true, false] {
        let od: &[usize] = if keep { &[2, 3, 5] } else { &[6, 5] };
        let mut g = G::default();
        let xi = g.input(&[2, 3, 4], f(&x));
        let wi = g.konst(&[5, 4], f(&w));
        let y = g.out(DType::F32, od);
        let p = FullyConnected { act: Activation::Relu6, keep_num_dims: keep, asymmetric_quantize_inputs: false };
        g.op(OpKind::FullyConnected(p), &[Some(xi), Some(wi), None], &[y]);
        let want: Vec<f32> = (0..6).flat_map(|r| (0..5).map(move |c| (r, c))).map(|(r, c)| (0..4).map(|k| x[r * 4 + k] * w[c * 4 + k]).sum::<f32>().clamp(0.0, 6.0)).collect();
        let (dims, got) = g.run0();
        assert_eq!(dims, od.to_vec());
        assert_close("fully_connected", got.f32(), &want, 1e-5, 1e-5);
    }
}

// ---- element-wise unary ----------------------------------------------------------------------

#[test]
fn unary_math_matches_std() {
    let x = rand(40, 11, -3.0, 3.0);
    let pos = rand(40, 12, 0.05, 9.0);
    type Fn1 = fn(f32) -> f32;
    let cases: [(UnaryOp, &[f32], Fn1); 13] = [
        (UnaryOp::Abs, &x, f32::abs),
        (UnaryOp::Neg, &x, |v| -v),
        (UnaryOp::Exp, &x, f32::exp),
        (UnaryOp::Log, &pos, f32::ln),
        (UnaryOp::Sqrt, &pos, f32::sqrt),
        (UnaryOp::Rsqrt, &pos, |v| 1.0 / v.sqrt()),
        (UnaryOp::Square, &x, |v| v * v),
        (UnaryOp::Sin, &x, f32::sin),
        (UnaryOp::Cos, &x, f32::cos),
        (UnaryOp::Floor, &x, f32::floor),
        (UnaryOp::Ceil, &x, f32::ceil),
        (UnaryOp::Round, &x, f32::round_ties_even),
        (UnaryOp::Sign, &x, f32::signum),
    ];
    for (op, input, want) in cases {
        let g = unary_model(OpKind::Unary(op), &[4, 10], f(input), DType::F32);
        let expect: Vec<f32> = input.iter().map(|&v| want(v)).collect();
        assert_close(&format!("{op:?}"), g.run0().1.f32(), &expect, ULPS.0, ULPS.1);
    }
}

#[test]
fn round_is_half_to_even_and_sign_of_zero_is_zero() {
    let g = unary_model(OpKind::Unary(UnaryOp::Round), &[7], f(&[0.5, 1.5, 2.5, -0.5, -2.5, 3.4999998, -7.5]), DType::F32);
    // (-0.0 == 0.0: the sign of a zero result is not asserted.)
    assert_eq!(g.run0().1, f(&[0.0, 2.0, 2.0, 0.0, -2.0, 3.0, -8.0]));
    let g = unary_model(OpKind::Unary(UnaryOp::Sign), &[4], f(&[-0.0, 0.0, -3.0, 1e-30]), DType::F32);
    assert_eq!(g.run0().1, f(&[0.0, 0.0, -1.0, 1.0]));
}

#[test]
fn integer_unary_and_logical_not() {
    let g = unary_model(OpKind::Unary(UnaryOp::Abs), &[4], i(&[-3, 0, 7, i32::MIN]), DType::I32);
    assert_eq!(g.run0().1, i(&[3, 0, 7, i32::MIN]));
    let g = unary_model(OpKind::Unary(UnaryOp::Neg), &[3], V::I64(vec![5, -6, 0]), DType::I64);
    assert_eq!(g.run0().1, V::I64(vec![-5, 6, 0]));
    let g = unary_model(OpKind::Unary(UnaryOp::Sign), &[3], i(&[-9, 0, 4]), DType::I32);
    assert_eq!(g.run0().1, i(&[-1, 0, 1]));
    let g = unary_model(OpKind::Unary(UnaryOp::LogicalNot), &[3], b(&[true, false, true]), DType::Bool);
    assert_eq!(g.run0().1, b(&[false, true, false]));
}

#[test]
fn neg_unary_wrong_dtype() {
    unary_model(OpKind::Unary(UnaryOp::LogicalNot), &[2], f(&[1.0, 0.0]), DType::F32).expect_prepare_error(&["LogicalNot", "bool"]);
    unary_model(OpKind::Unary(UnaryOp::Exp), &[2], b(&[true, false]), DType::Bool).expect_prepare_error(&["Exp", "bool"]);
    unary_model(OpKind::Unary(UnaryOp::Sqrt), &[2], f(&[1.0, 4.0]), DType::I32).expect_prepare_error(&["Sqrt", "int32"]);
}

// ---- activations -----------------------------------------------------------------------------

fn erf(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 is not precise enough; use the series / continued fraction.
    let z = x.abs();
    let r = if z < 3.0 {
        let (mut term, mut sum, mut k) = (z, z, 0.0);
        loop {
            k += 1.0;
            term *= -z * z / k;
            let t = term / (2.0 * k + 1.0);
            sum += t;
            if t.abs() < 1e-17 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let mut fr = z;
        for k in (1..200).rev() {
            fr = z + (k as f64 * 0.5) / fr;
        }
        1.0 - (-z * z).exp() / std::f64::consts::PI.sqrt() / fr
    };
    r.copysign(x)
}

#[test]
fn activations_match_their_formulas() {
    let x = rand(60, 21, -8.0, 8.0);
    type Fn1 = fn(f32) -> f32;
    let cases: [(UnaryOp, Fn1); 11] = [
        (UnaryOp::Relu, |v| v.max(0.0)),
        (UnaryOp::Relu6, |v| v.clamp(0.0, 6.0)),
        (UnaryOp::ReluN1To1, |v| v.clamp(-1.0, 1.0)),
        (UnaryOp::Relu0To1, |v| v.clamp(0.0, 1.0)),
        (UnaryOp::LeakyRelu(0.3), |v| if v > 0.0 { v } else { 0.3 * v }),
        (UnaryOp::Elu, |v| if v < 0.0 { v.exp_m1() } else { v }),
        (UnaryOp::HardSwish, |v| v * (v + 3.0).clamp(0.0, 6.0) / 6.0),
        (UnaryOp::Logistic, |v| 1.0 / (1.0 + (-v).exp())),
        (UnaryOp::Tanh, f32::tanh),
        (UnaryOp::Gelu { approximate: false }, |v| (0.5 * v as f64 * (1.0 + erf(v as f64 / std::f64::consts::SQRT_2))) as f32),
        (UnaryOp::Gelu { approximate: true }, |v| 0.5 * v * (1.0 + ((2.0 / std::f32::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())),
    ];
    for (op, want) in cases {
        let g = unary_model(OpKind::Unary(op), &[3, 20], f(&x), DType::F32);
        let expect: Vec<f32> = x.iter().map(|&v| want(v)).collect();
        assert_close(&format!("{op:?}"), g.run0().1.f32(), &expect, 4e-6, 4e-6);
    }
}

#[test]
fn prelu_broadcasts_alpha() {
    let x = rand(2 * 3 * 4 * 5, 31, -2.0, 2.0);
    for ad in [vec![5], vec![1, 1, 5], vec![3, 1, 5], vec![1]] {
        let alpha = rand(ad.iter().product(), 32, -0.5, 1.5);
        let mut g = G::default();
        let xi = g.input(&[2, 3, 4, 5], f(&x));
        let ai = g.konst(&ad, f(&alpha));
        let y = g.out(DType::F32, &[2, 3, 4, 5]);
        g.op(OpKind::Prelu, &[Some(xi), Some(ai)], &[y]);
        let want: Vec<f32> = (0..x.len())
            .map(|k| {
                let (c, h) = (k % 5, (k / 20) % 3);
                let a = match ad.len() {
                    1 if ad[0] == 1 => alpha[0],
                    1 | 3 if ad[0] != 3 => alpha[c],
                    _ => alpha[h * 5 + c],
                };
                if x[k] >= 0.0 {
                    x[k]
                } else {
                    x[k] * a
                }
            })
            .collect();
        assert_eq!(g.run0().1, f(&want), "alpha {ad:?}");
    }
}

// ---- element-wise binary, comparisons, logical ---------------------------------------------

#[test]
fn binary_float_ops_with_broadcast() {
    let a = rand(24, 41, -4.0, 4.0);
    let bv = rand(4, 42, 0.5, 3.0);
    type Fn2 = fn(f32, f32) -> f32;
    let cases: [(BinaryOp, Fn2); 6] = [
        (BinaryOp::Pow, |x, y| x.abs().powf(y)),
        (BinaryOp::SquaredDifference, |x, y| (x - y) * (x - y)),
        (BinaryOp::Maximum, f32::max),
        (BinaryOp::Minimum, f32::min),
        (BinaryOp::FloorDiv, |x, y| (x / y).floor()),
        (BinaryOp::FloorMod, |x, y| x - (x / y).floor() * y),
    ];
    for (op, want) in cases {
        let a_in: Vec<f32> = if op == BinaryOp::Pow { a.iter().map(|v| v.abs()).collect() } else { a.clone() };
        let g = binary_model(OpKind::Binary { op, act: Activation::None }, (&[2, 3, 4], f(&a_in)), (&[4], f(&bv)), (DType::F32, &[2, 3, 4]));
        let expect: Vec<f32> = (0..24).map(|k| want(a_in[k], bv[k % 4])).collect();
        assert_close(&format!("{op:?}"), g.run0().1.f32(), &expect, 2e-6, 2e-6);
    }
    // FLOOR_MOD takes the divisor's sign; the fused activation clamps.
    let g = binary_model(OpKind::Binary { op: BinaryOp::FloorMod, act: Activation::None }, (&[4], f(&[-7.0, 7.0, 6.0, -1.5])), (&[4], f(&[3.0, -3.0, -3.0, 1.0])), (DType::F32, &[4]));
    assert_eq!(g.run0().1, f(&[2.0, -2.0, 0.0, 0.5]));
    let g = binary_model(OpKind::Binary { op: BinaryOp::Maximum, act: Activation::Relu6 }, (&[3], f(&[-9.0, 4.0, 8.0])), (&[], f(&[-1.0])), (DType::F32, &[3]));
    assert_eq!(g.run0().1, f(&[0.0, 4.0, 6.0]));
}

#[test]
fn binary_integer_ops() {
    let a = i(&[-7, 7, 9, -9, 100]);
    let bb = i(&[2, -2, 3, 4, 7]);
    type Fn2 = fn(i32, i32) -> i32;
    let cases: [(BinaryOp, Fn2); 8] = [
        (BinaryOp::Add, |x, y| x + y),
        (BinaryOp::Sub, |x, y| x - y),
        (BinaryOp::Mul, |x, y| x * y),
        (BinaryOp::Div, |x, y| x / y),
        (BinaryOp::FloorDiv, |x, y| x.div_euclid(y) - if x.rem_euclid(y) != 0 && y < 0 { 1 } else { 0 }),
        (BinaryOp::FloorMod, |x, y| ((x % y) + y) % y),
        (BinaryOp::Maximum, i32::max),
        (BinaryOp::Minimum, i32::min),
    ];
    let (V::I32(av), V::I32(bvv)) = (&a, &bb) else { unreachable!() };
    for (op, want) in cases {
        let g = binary_model(OpKind::Binary { op, act: Activation::None }, (&[5], a.clone()), (&[5], bb.clone()), (DType::I32, &[5]));
        let expect: Vec<i32> = av.iter().zip(bvv).map(|(&x, &y)| want(x, y)).collect();
        assert_eq!(g.run0().1, V::I32(expect), "{op:?}");
    }
    // int64 with broadcasting and a fused RELU.
    let g = binary_model(
        OpKind::Binary { op: BinaryOp::Mul, act: Activation::Relu },
        (&[2, 2], V::I64(vec![3, -4, 5_000_000_000, 1])),
        (&[2], V::I64(vec![2, 3])),
        (DType::I64, &[2, 2]),
    );
    assert_eq!(g.run0().1, V::I64(vec![6, 0, 10_000_000_000, 3]));
}

#[test]
fn neg_integer_pow_with_negative_exponent_fails_at_run() {
    let g = binary_model(OpKind::Binary { op: BinaryOp::Pow, act: Activation::None }, (&[2], i(&[2, 3])), (&[2], i(&[3, -1])), (DType::I32, &[2]));
    g.expect_run_error("negative exponent");
    let g = binary_model(OpKind::Binary { op: BinaryOp::Pow, act: Activation::None }, (&[2], i(&[2, -3])), (&[], i(&[3])), (DType::I32, &[2]));
    assert_eq!(g.run0().1, i(&[8, -27]));
}

#[test]
fn neg_integer_division_by_zero_fails_at_run() {
    for op in [BinaryOp::Div, BinaryOp::FloorDiv, BinaryOp::FloorMod] {
        let g = binary_model(OpKind::Binary { op, act: Activation::None }, (&[2], i(&[4, 5])), (&[2], i(&[1, 0])), (DType::I32, &[2]));
        g.expect_run_error("division by zero");
    }
}

#[test]
fn neg_binary_mismatched_dtypes_and_shapes() {
    binary_model(OpKind::Binary { op: BinaryOp::Pow, act: Activation::None }, (&[2], f(&[1.0, 2.0])), (&[2], i(&[1, 2])), (DType::F32, &[2]))
        .expect_prepare_error(&["Pow", "type int32"]);
    binary_model(OpKind::Binary { op: BinaryOp::Minimum, act: Activation::None }, (&[2, 3], f(&[0.0; 6])), (&[2], f(&[0.0; 2])), (DType::F32, &[2, 3]))
        .expect_prepare_error(&["Minimum", "cannot be broadcast"]);
}

#[test]
fn comparisons_on_floats_and_ints_broadcast() {
    let a = [1.0, 2.0, f32::NAN, -1.0, 3.0, 2.0];
    let bv = [2.0, 2.0, 0.0];
    type Fn2 = fn(f32, f32) -> bool;
    let cases: [(CompareOp, Fn2); 6] = [
        (CompareOp::Equal, |x, y| x == y),
        (CompareOp::NotEqual, |x, y| x != y),
        (CompareOp::Less, |x, y| x < y),
        (CompareOp::LessEqual, |x, y| x <= y),
        (CompareOp::Greater, |x, y| x > y),
        (CompareOp::GreaterEqual, |x, y| x >= y),
    ];
    for (op, want) in cases {
        let g = binary_model(OpKind::Compare(op), (&[2, 3], f(&a)), (&[3], f(&bv)), (DType::Bool, &[2, 3]));
        let expect: Vec<bool> = (0..6).map(|k| want(a[k], bv[k % 3])).collect();
        assert_eq!(g.run0().1, V::Bool(expect), "{op:?} float");
        let ai: Vec<i64> = vec![1, 2, 0, -1, 3, 2];
        let g = binary_model(OpKind::Compare(op), (&[2, 3], V::I64(ai.clone())), (&[1], V::I64(vec![2])), (DType::Bool, &[2, 3]));
        let expect: Vec<bool> = ai.iter().map(|&x| want(x as f32, 2.0)).collect();
        assert_eq!(g.run0().1, V::Bool(expect), "{op:?} int64");
    }
    let g = binary_model(OpKind::Compare(CompareOp::Greater), (&[3], i(&[5, -5, 0])), (&[], i(&[0])), (DType::Bool, &[3]));
    assert_eq!(g.run0().1, b(&[true, false, false]));
}

#[test]
fn neg_comparison_output_must_be_bool() {
    binary_model(OpKind::Compare(CompareOp::Less), (&[2], f(&[0.0; 2])), (&[2], f(&[0.0; 2])), (DType::F32, &[2])).expect_prepare_error(&["Less", "bool"]);
}

#[test]
fn logical_and_or_broadcast() {
    let a = b(&[true, false, true, false]);
    let g = binary_model(OpKind::Logical(LogicalOp::And), (&[2, 2], a.clone()), (&[2], b(&[true, false])), (DType::Bool, &[2, 2]));
    assert_eq!(g.run0().1, b(&[true, false, true, false]));
    let g = binary_model(OpKind::Logical(LogicalOp::Or), (&[2, 2], a), (&[2, 1], b(&[false, true])), (DType::Bool, &[2, 2]));
    assert_eq!(g.run0().1, b(&[true, false, true, true]));
    binary_model(OpKind::Logical(LogicalOp::Or), (&[1], f(&[1.0])), (&[1], b(&[true])), (DType::Bool, &[1])).expect_prepare_error(&["LogicalOr", "bool"]);
}

// ---- reductions, arg min/max -------------------------------------------------------------------

fn reduce_model(op: ReduceOp, x: (&[usize], V), axes: &[i32], keep: bool, out: (DType, &[usize])) -> G {
    let mut g = G::default();
    let xi = g.input(x.0, x.1);
    let ax = g.ints(axes);
    let y = g.out(out.0, out.1);
    g.op(OpKind::Reduce { op, keep_dims: keep }, &[Some(xi), Some(ax)], &[y]);
    g
}

#[test]
fn reductions_keep_dims_and_negative_axes() {
    let x: Vec<f32> = (1..=24).map(|v| v as f32 * 0.25).collect();
    // [2, 3, 4] reduced over axes (0, -1): 3 results.
    let over = |k: usize| -> Vec<f32> { (0..2).flat_map(|a| (0..4).map(move |c| (a, c))).map(|(a, c)| x[(a * 3 + k) * 4 + c]).collect() };
    type Fold = fn(&[f32]) -> f32;
    let cases: [(ReduceOp, Fold); 5] = [
        (ReduceOp::Sum, |v| v.iter().sum()),
        (ReduceOp::Prod, |v| v.iter().product()),
        (ReduceOp::Max, |v| v.iter().copied().fold(f32::MIN, f32::max)),
        (ReduceOp::Min, |v| v.iter().copied().fold(f32::MAX, f32::min)),
        (ReduceOp::Mean, |v| v.iter().sum::<f32>() / v.len() as f32),
    ];
    for (op, fold) in cases {
        for keep in [false, true] {
            let od: &[usize] = if keep { &[1, 3, 1] } else { &[3] };
            let g = reduce_model(op, (&[2, 3, 4], f(&x)), &[0, -1, 0], keep, (DType::F32, od));
            let want: Vec<f32> = (0..3).map(|k| fold(&over(k))).collect();
            let (dims, got) = g.run0();
            assert_eq!(dims, od.to_vec());
            assert_close(&format!("{op:?}"), got.f32(), &want, 1e-6, 1e-6);
        }
    }
    let g = reduce_model(ReduceOp::Sum, (&[2, 3], i(&[1, 2, 3, 4, 5, 6])), &[1], false, (DType::I32, &[2]));
    assert_eq!(g.run0().1, i(&[6, 15]));
    let g = reduce_model(ReduceOp::Mean, (&[2, 2], V::I64(vec![1, 2, -3, -4])), &[1], true, (DType::I64, &[2, 1]));
    assert_eq!(g.run0().1, V::I64(vec![1, -3]));
}

#[test]
fn reduce_any_all_on_bools() {
    let x = b(&[true, false, false, false, true, true]);
    let g = reduce_model(ReduceOp::Any, (&[2, 3], x.clone()), &[1], false, (DType::Bool, &[2]));
    assert_eq!(g.run0().1, b(&[true, true]));
    let g = reduce_model(ReduceOp::All, (&[2, 3], x), &[-1], false, (DType::Bool, &[2]));
    assert_eq!(g.run0().1, b(&[false, false]));
}

#[test]
fn neg_reduce_bad_axis_and_wrong_dtype() {
    reduce_model(ReduceOp::Sum, (&[2, 3], f(&[0.0; 6])), &[2], false, (DType::F32, &[2])).expect_prepare_error(&["Sum", "axis 2 is out of range"]);
    reduce_model(ReduceOp::Any, (&[2, 3], f(&[0.0; 6])), &[1], false, (DType::F32, &[2])).expect_prepare_error(&["ReduceAny", "bool"]);
}

fn arg_model(max: bool, x: (&[usize], V), axis: i32, out: (DType, &[usize])) -> G {
    let mut g = G::default();
    let xi = g.input(x.0, x.1);
    let a = g.ints(&[axis]);
    let y = g.out(out.0, out.1);
    g.op(OpKind::ArgMinMax { max }, &[Some(xi), Some(a)], &[y]);
    g
}

#[test]
fn arg_min_max_first_index_wins() {
    let x = f(&[1.0, 5.0, 5.0, -2.0, 0.0, 0.0]);
    assert_eq!(arg_model(true, (&[2, 3], x.clone()), -1, (DType::I32, &[2])).run0().1, i(&[1, 1]));
    assert_eq!(arg_model(false, (&[2, 3], x.clone()), 1, (DType::I64, &[2])).run0().1, V::I64(vec![0, 0]));
    assert_eq!(arg_model(true, (&[2, 3], x), 0, (DType::I32, &[3])).run0().1, i(&[0, 0, 0]));
    assert_eq!(arg_model(false, (&[4], i(&[3, -7, 2, -7])), 0, (DType::I32, &[])).run0().1, i(&[1]));
    assert_eq!(arg_model(true, (&[3], b(&[false, true, true])), 0, (DType::I32, &[])).run0().1, i(&[1]));
    arg_model(true, (&[2, 3], f(&[0.0; 6])), 1, (DType::F32, &[2])).expect_prepare_error(&["ArgMax", "int32 or int64"]);
    arg_model(true, (&[2, 3], f(&[0.0; 6])), -3, (DType::I32, &[2])).expect_prepare_error(&["ArgMax", "out of range"]);
}

// ---- softmax family ------------------------------------------------------------------------------

#[test]
fn softmax_beta_log_softmax_l2_normalization() {
    let x = rand(12, 51, -3.0, 3.0);
    let rows = |fun: &dyn Fn(&[f32]) -> Vec<f32>| -> Vec<f32> { x.chunks(4).flat_map(fun).collect() };
    let g = unary_model(OpKind::Softmax { beta: 0.5 }, &[3, 4], f(&x), DType::F32);
    let want = rows(&|r| {
        let m = r.iter().copied().fold(f32::MIN, f32::max);
        let e: Vec<f32> = r.iter().map(|v| ((v - m) * 0.5).exp()).collect();
        let s: f32 = e.iter().sum();
        e.iter().map(|v| v / s).collect()
    });
    assert_close("softmax beta", g.run0().1.f32(), &want, ULPS.0, ULPS.1);
    let g = unary_model(OpKind::LogSoftmax, &[3, 4], f(&x), DType::F32);
    let want = rows(&|r| {
        let m = r.iter().copied().fold(f32::MIN, f32::max);
        let ls = r.iter().map(|v| (v - m).exp()).sum::<f32>().ln();
        r.iter().map(|v| v - m - ls).collect()
    });
    assert_close("log_softmax", g.run0().1.f32(), &want, 4e-6, 2e-6);
    let g = unary_model(OpKind::L2Normalization { act: Activation::None }, &[3, 4], f(&x), DType::F32);
    let want = rows(&|r| {
        let n = r.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-6);
        r.iter().map(|v| v / n).collect()
    });
    assert_close("l2_normalization", g.run0().1.f32(), &want, 1e-6, 1e-6);
    // A zero row is divided by the 1e-6 floor, not by zero.
    let g = unary_model(OpKind::L2Normalization { act: Activation::None }, &[1, 2], f(&[0.0, 0.0]), DType::F32);
    assert_eq!(g.run0().1, f(&[0.0, 0.0]));
}

// ---- split, pack, squeeze, slices ----------------------------------------------------------------

fn seq(n: usize) -> Vec<f32> {
    (0..n).map(|v| v as f32).collect()
}

#[test]
fn split_split_v_pack_unpack() {
    let x = seq(24); // [2, 3, 4]
    // SPLIT along -1 into 2: inputs are (axis, value).
    let mut g = G::default();
    let ax = g.scalar(-1);
    let xi = g.input(&[2, 3, 4], f(&x));
    let (o0, o1) = (g.out(DType::F32, &[2, 3, 2]), g.out(DType::F32, &[2, 3, 2]));
    g.op(OpKind::Split { num_splits: 2 }, &[Some(ax), Some(xi)], &[o0, o1]);
    let outs = g.run();
    let halves = |h: usize| -> Vec<f32> { x.chunks(4).flat_map(|r| r[h * 2..h * 2 + 2].to_vec()).collect() };
    assert_eq!(outs[0].1, f(&halves(0)));
    assert_eq!(outs[1].1, f(&halves(1)));
    // SPLIT_V with a -1 size along axis 1.
    let mut g = G::default();
    let xi = g.input(&[2, 3, 4], f(&x));
    let sizes = g.ints(&[-1, 2]);
    let ax = g.scalar(1);
    let (o0, o1) = (g.out(DType::F32, &[2, 1, 4]), g.out(DType::F32, &[2, 2, 4]));
    g.op(OpKind::SplitV { num_splits: 2 }, &[Some(xi), Some(sizes), Some(ax)], &[o0, o1]);
    let outs = g.run();
    assert_eq!(outs[0].1, f(&[x[0..4].to_vec(), x[12..16].to_vec()].concat()));
    assert_eq!(outs[1].1, f(&[x[4..12].to_vec(), x[16..24].to_vec()].concat()));
    // PACK two [2, 3] along axis -1 -> [2, 3, 2]; UNPACK it back along axis 2.
    let (a, bv) = (seq(6), seq(6).iter().map(|v| v + 100.0).collect::<Vec<_>>());
    let mut g = G::default();
    let ai = g.input(&[2, 3], f(&a));
    let bi = g.input(&[2, 3], f(&bv));
    let y = g.out(DType::F32, &[2, 3, 2]);
    g.op(OpKind::Pack { axis: -1, count: 2 }, &[Some(ai), Some(bi)], &[y]);
    let packed: Vec<f32> = (0..6).flat_map(|k| [a[k], bv[k]]).collect();
    assert_eq!(g.run0().1, f(&packed));
    let mut g = G::default();
    let pi = g.input(&[2, 3, 2], f(&packed));
    let (u0, u1) = (g.out(DType::F32, &[2, 3]), g.out(DType::F32, &[2, 3]));
    g.op(OpKind::Unpack { axis: 2, num: 2 }, &[Some(pi)], &[u0, u1]);
    let outs = g.run();
    assert_eq!((outs[0].1.clone(), outs[1].1.clone()), (f(&a), f(&bv)));
}

#[test]
fn neg_split_and_unpack_sizes() {
    let mut g = G::default();
    let ax = g.scalar(1);
    let xi = g.input(&[2, 3], f(&[0.0; 6]));
    let (o0, o1) = (g.out(DType::F32, &[2, 1]), g.out(DType::F32, &[2, 1]));
    g.op(OpKind::Split { num_splits: 2 }, &[Some(ax), Some(xi)], &[o0, o1]);
    g.expect_prepare_error(&["Split", "2 equal parts"]);
    let mut g = G::default();
    let xi = g.input(&[2, 3], f(&[0.0; 6]));
    let o0 = g.out(DType::F32, &[3]);
    g.op(OpKind::Unpack { axis: 0, num: 1 }, &[Some(xi)], &[o0]);
    g.expect_prepare_error(&["Unpack", "num = 1"]);
}

#[test]
fn squeeze_and_expand_dims() {
    let x = seq(6);
    let mut g = G::default();
    let xi = g.input(&[1, 2, 1, 3], f(&x));
    let y = g.out(DType::F32, &[2, 3]);
    g.op(OpKind::Squeeze { axes: vec![] }, &[Some(xi)], &[y]);
    assert_eq!(g.run0(), (vec![2, 3], f(&x)));
    let mut g = G::default();
    let xi = g.input(&[1, 2, 1, 3], f(&x));
    let y = g.out(DType::F32, &[1, 2, 3]);
    g.op(OpKind::Squeeze { axes: vec![-2] }, &[Some(xi)], &[y]);
    assert_eq!(g.run0().0, vec![1, 2, 3]);
    let mut g = G::default();
    let xi = g.input(&[2, 3], f(&x));
    let a = g.konst(&[], V::I64(vec![-1]));
    let y = g.out(DType::F32, &[2, 3, 1]);
    g.op(OpKind::ExpandDims, &[Some(xi), Some(a)], &[y]);
    assert_eq!(g.run0(), (vec![2, 3, 1], f(&x)));
    let mut g = G::default();
    let xi = g.input(&[1, 2, 1, 3], f(&x));
    let y = g.out(DType::F32, &[1, 1, 3]);
    g.op(OpKind::Squeeze { axes: vec![1] }, &[Some(xi)], &[y]);
    g.expect_prepare_error(&["Squeeze", "not 1"]);
}

#[test]
fn slice_with_size_minus_one() {
    let x = seq(24);
    let mut g = G::default();
    let xi = g.input(&[2, 3, 4], f(&x));
    let (bg, sz) = (g.ints(&[1, 0, 1]), g.ints(&[1, -1, 2]));
    let y = g.out(DType::F32, &[1, 3, 2]);
    g.op(OpKind::Slice, &[Some(xi), Some(bg), Some(sz)], &[y]);
    assert_eq!(g.run0().1, f(&[13.0, 14.0, 17.0, 18.0, 21.0, 22.0]));
    let mut g = G::default();
    let xi = g.input(&[4], i(&[1, 2, 3, 4]));
    let (bg, sz) = (g.ints(&[3]), g.ints(&[2]));
    let y = g.out(DType::I32, &[2]);
    g.op(OpKind::Slice, &[Some(xi), Some(bg), Some(sz)], &[y]);
    g.expect_prepare_error(&["Slice", "outside dim 0"]);
}

fn strided(x: (&[usize], V), bg: &[i32], end: &[i32], st: &[i32], p: StridedSlice, od: &[usize]) -> G {
    let mut g = G::default();
    let dtype = x.1.dtype();
    let xi = g.input(x.0, x.1);
    let (b1, e1, s1) = (g.ints(bg), g.ints(end), g.ints(st));
    let y = g.out(dtype, od);
    g.op(OpKind::StridedSlice(p), &[Some(xi), Some(b1), Some(e1), Some(s1)], &[y]);
    g
}

#[test]
fn strided_slice_every_mask() {
    let x = seq(24); // [2, 3, 4]
    let at = |a: usize, bb: usize, c: usize| x[(a * 3 + bb) * 4 + c];
    let d = StridedSlice::default();
    // x[:, 1:, ::2]
    let g = strided((&[2, 3, 4], f(&x)), &[0, 1, 0], &[0, 3, 4], &[1, 1, 2], StridedSlice { begin_mask: 1, end_mask: 1, ..d }, &[2, 2, 2]);
    assert_eq!(g.run0().1, f(&[at(0, 1, 0), at(0, 1, 2), at(0, 2, 0), at(0, 2, 2), at(1, 1, 0), at(1, 1, 2), at(1, 2, 0), at(1, 2, 2)]));
    // x[::-1, -1, 3:0:-2] (shrink dim 1, negative strides)
    let g = strided((&[2, 3, 4], f(&x)), &[0, -1, 3], &[0, 0, 0], &[-1, 1, -2], StridedSlice { begin_mask: 1, end_mask: 1, shrink_axis_mask: 2, ..d }, &[2, 2]);
    assert_eq!(g.run0().1, f(&[at(1, 2, 3), at(1, 2, 1), at(0, 2, 3), at(0, 2, 1)]));
    // x[..., 1] : ellipsis then shrink
    let g = strided((&[2, 3, 4], f(&x)), &[0, 1], &[0, 2], &[1, 1], StridedSlice { ellipsis_mask: 1, shrink_axis_mask: 2, ..d }, &[2, 3]);
    assert_eq!(g.run0().1, f(&(0..6).map(|k| at(k / 3, k % 3, 1)).collect::<Vec<_>>()));
    // x[1, None, :2] : shrink, new axis, trailing dim taken whole
    let g = strided((&[2, 3, 4], f(&x)), &[1, 0, 0], &[2, 0, 2], &[1, 1, 1], StridedSlice { shrink_axis_mask: 1, new_axis_mask: 2, ..d }, &[1, 2, 4]);
    assert_eq!(g.run0().1, f(&(0..8).map(|k| at(1, k / 4, k % 4)).collect::<Vec<_>>()));
    // offset: end is a size relative to begin
    let g = strided((&[6], i(&[0, 1, 2, 3, 4, 5])), &[1], &[3], &[1], StridedSlice { offset: true, ..d }, &[3]);
    assert_eq!(g.run0().1, i(&[1, 2, 3]));
    // begin past end: an empty result
    let g = strided((&[6], i(&[0, 1, 2, 3, 4, 5])), &[4], &[2], &[1], d, &[0]);
    assert_eq!(g.run0(), (vec![0], i(&[])));
}

#[test]
fn neg_strided_slice_zero_stride_and_bad_shrink() {
    let d = StridedSlice::default();
    strided((&[4], f(&[0.0; 4])), &[0], &[4], &[0], d, &[4]).expect_prepare_error(&["StridedSlice", "stride 0 is 0"]);
    strided((&[4], f(&[0.0; 4])), &[7], &[8], &[1], StridedSlice { shrink_axis_mask: 1, ..d }, &[]).expect_prepare_error(&["StridedSlice", "out of range"]);
}

#[test]
fn pad_v2_and_mirror_pad() {
    let mut g = G::default();
    let xi = g.input(&[2, 2], f(&[1.0, 2.0, 3.0, 4.0]));
    let pads = g.konst(&[2, 2], i(&[1, 0, 0, 2]));
    let v = g.konst(&[], f(&[-9.0]));
    let y = g.out(DType::F32, &[3, 4]);
    g.op(OpKind::Pad, &[Some(xi), Some(pads), Some(v)], &[y]);
    assert_eq!(g.run0().1, f(&[-9.0, -9.0, -9.0, -9.0, 1.0, 2.0, -9.0, -9.0, 3.0, 4.0, -9.0, -9.0]));
    let mut g = G::default();
    let xi = g.input(&[3], f(&[1.0, 2.0, 3.0]));
    let pads = g.konst(&[1, 2], i(&[2, 1]));
    let y = g.out(DType::F32, &[6]);
    g.op(OpKind::MirrorPad(nnrt_core::MirrorMode::Reflect), &[Some(xi), Some(pads)], &[y]);
    assert_eq!(g.run0().1, f(&[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]));
}

// ---- gather ---------------------------------------------------------------------------------------

#[test]
fn gather_axis_batch_dims_and_dtypes() {
    let x = seq(24); // [2, 3, 4]
    let mut g = G::default();
    let xi = g.input(&[2, 3, 4], f(&x));
    let idx = g.input(&[2], V::I64(vec![2, 0]));
    let y = g.out(DType::F32, &[2, 2, 4]);
    g.op(OpKind::Gather { axis: -2, batch_dims: 0 }, &[Some(xi), Some(idx)], &[y]);
    assert_eq!(g.run0().1, f(&[&x[8..12], &x[0..4], &x[20..24], &x[12..16]].concat()));
    // batch_dims 1: each batch picks its own rows.
    let mut g = G::default();
    let xi = g.input(&[2, 3, 4], f(&x));
    let idx = g.input(&[2, 1], i(&[1, 2]));
    let y = g.out(DType::F32, &[2, 1, 4]);
    g.op(OpKind::Gather { axis: 1, batch_dims: 1 }, &[Some(xi), Some(idx)], &[y]);
    assert_eq!(g.run0().1, f(&[&x[4..8], &x[20..24]].concat()));
    // Any element type: bools and int64 params.
    let mut g = G::default();
    let xi = g.input(&[3], b(&[true, false, true]));
    let idx = g.konst(&[2, 2], i(&[1, 1, 0, 2]));
    let y = g.out(DType::Bool, &[2, 2]);
    g.op(OpKind::Gather { axis: 0, batch_dims: 0 }, &[Some(xi), Some(idx)], &[y]);
    assert_eq!(g.run0().1, b(&[false, false, true, true]));
}

#[test]
fn neg_gather_index_out_of_range_fails_at_run() {
    let mut g = G::default();
    let xi = g.input(&[3, 2], f(&[0.0; 6]));
    let idx = g.input(&[1], i(&[3]));
    let y = g.out(DType::F32, &[1, 2]);
    g.op(OpKind::Gather { axis: 0, batch_dims: 0 }, &[Some(xi), Some(idx)], &[y]);
    g.expect_run_error("out of range");
    let mut g = G::default();
    let xi = g.input(&[3, 2], f(&[0.0; 6]));
    let idx = g.input(&[1], f(&[0.0]));
    let y = g.out(DType::F32, &[1, 2]);
    g.op(OpKind::Gather { axis: 0, batch_dims: 0 }, &[Some(xi), Some(idx)], &[y]);
    g.expect_prepare_error(&["Gather", "float32"]);
}

#[test]
fn gather_nd_tuples_and_slices() {
    let x = seq(24); // [2, 3, 4]
    let mut g = G::default();
    let xi = g.input(&[2, 3, 4], f(&x));
    let idx = g.input(&[2, 2], i(&[1, 2, 0, 1]));
    let y = g.out(DType::F32, &[2, 4]);
    g.op(OpKind::GatherNd, &[Some(xi), Some(idx)], &[y]);
    assert_eq!(g.run0().1, f(&[&x[20..24], &x[4..8]].concat()));
    let mut g = G::default();
    let xi = g.input(&[2, 3, 4], f(&x));
    let idx = g.input(&[1, 3], i(&[1, 0, 3]));
    let y = g.out(DType::F32, &[1]);
    g.op(OpKind::GatherNd, &[Some(xi), Some(idx)], &[y]);
    assert_eq!(g.run0().1, f(&[15.0]));
}

// ---- resize ---------------------------------------------------------------------------------------

fn resize_model(mode: ResizeMode, align_corners: bool, half_pixel_centers: bool, x: (&[usize], V), size: [i32; 2]) -> G {
    let mut g = G::default();
    let dtype = x.1.dtype();
    let od = [x.0[0], size[0] as usize, size[1] as usize, *x.0.last().unwrap()];
    let xi = g.input(x.0, x.1);
    let s = g.ints(&size);
    let y = g.out(dtype, &od);
    g.op(OpKind::Resize(Resize { mode, align_corners, half_pixel_centers }), &[Some(xi), Some(s)], &[y]);
    g
}

#[test]
fn resize_bilinear_coordinate_modes() {
    let x = f(&[3.0, 6.0, 9.0, 12.0]); // [1, 2, 2, 1]
    // TFLite resize_bilinear_test: 2x2 -> 3x3.
    let g = resize_model(ResizeMode::Bilinear, false, false, (&[1, 2, 2, 1], x.clone()), [3, 3]);
    assert_close("bilinear", g.run0().1.f32(), &[3.0, 5.0, 6.0, 7.0, 9.0, 10.0, 9.0, 11.0, 12.0], 1e-6, 0.0);
    let g = resize_model(ResizeMode::Bilinear, true, false, (&[1, 2, 2, 1], x.clone()), [3, 3]);
    assert_close("bilinear align_corners", g.run0().1.f32(), &[3.0, 4.5, 6.0, 6.0, 7.5, 9.0, 9.0, 10.5, 12.0], 1e-6, 0.0);
    let g = resize_model(ResizeMode::Bilinear, false, true, (&[1, 2, 2, 1], x.clone()), [4, 4]);
    let got = g.run0().1;
    assert_close("bilinear half_pixel row 0", &got.f32()[..4], &[3.0, 3.75, 5.25, 6.0], 1e-6, 0.0);
    assert_close("bilinear half_pixel row 1", &got.f32()[4..8], &[4.5, 5.25, 6.75, 7.5], 1e-6, 0.0);
    resize_model(ResizeMode::Bilinear, true, true, (&[1, 2, 2, 1], x), [4, 4]).expect_prepare_error(&["ResizeBilinear", "align_corners and half_pixel_centers"]);
}

#[test]
fn resize_nearest_any_dtype() {
    let x = i(&[1, 2, 3, 4]); // [1, 1, 4, 1]
    for (ac, hp, want) in [(false, false, [1, 1, 2, 3, 3, 4]), (true, false, [1, 2, 2, 3, 3, 4]), (false, true, [1, 2, 2, 3, 4, 4])] {
        let g = resize_model(ResizeMode::Nearest, ac, hp, (&[1, 1, 4, 1], x.clone()), [1, 6]);
        assert_eq!(g.run0().1, i(&want), "align_corners {ac} half_pixel {hp}");
    }
    resize_model(ResizeMode::Nearest, false, false, (&[1, 4, 1], x), [1, 6]).expect_prepare_error(&["ResizeNearestNeighbor", "rank 4"]);
}

// ---- tile, space/depth/batch, cumsum, reverse --------------------------------------------------

#[test]
fn tile_and_reverse() {
    let mut g = G::default();
    let xi = g.input(&[2, 2], i(&[1, 2, 3, 4]));
    let m = g.ints(&[2, 3]);
    let y = g.out(DType::I32, &[4, 6]);
    g.op(OpKind::Tile, &[Some(xi), Some(m)], &[y]);
    let row0 = [1, 2, 1, 2, 1, 2];
    let row1 = [3, 4, 3, 4, 3, 4];
    assert_eq!(g.run0().1, i(&[row0, row1, row0, row1].concat()));
    let mut g = G::default();
    let xi = g.input(&[2, 3], f(&seq(6)));
    let ax = g.ints(&[-1, 0]);
    let y = g.out(DType::F32, &[2, 3]);
    g.op(OpKind::ReverseV2, &[Some(xi), Some(ax)], &[y]);
    assert_eq!(g.run0().1, f(&[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]));
}

#[test]
fn space_to_depth_and_back() {
    let x = seq(16); // [1, 4, 4, 1]
    let mut g = G::default();
    let xi = g.input(&[1, 4, 4, 1], f(&x));
    let y = g.out(DType::F32, &[1, 2, 2, 4]);
    g.op(OpKind::SpaceToDepth { block: 2 }, &[Some(xi)], &[y]);
    let s2d = g.run0().1;
    // TFLite: output channel (by·b + bx)·C + c of block (y, x).
    assert_eq!(s2d.f32()[..8], [0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]);
    let mut g = G::default();
    let xi = g.input(&[1, 2, 2, 4], s2d);
    let y = g.out(DType::F32, &[1, 4, 4, 1]);
    g.op(OpKind::DepthToSpace { block: 2 }, &[Some(xi)], &[y]);
    assert_eq!(g.run0().1, f(&x));
    let mut g = G::default();
    let xi = g.input(&[1, 3, 4, 1], f(&seq(12)));
    let y = g.out(DType::F32, &[1, 1, 2, 4]);
    g.op(OpKind::SpaceToDepth { block: 2 }, &[Some(xi)], &[y]);
    g.expect_prepare_error(&["SpaceToDepth", "multiples of block_size 2"]);
}

#[test]
fn space_to_batch_and_batch_to_space_with_padding_and_crops() {
    // [1, 3, 3, 1] padded to 4x4 (1 before on both spatial dims), block 2x2 -> [4, 2, 2, 1].
    let x = seq(9).iter().map(|v| v + 1.0).collect::<Vec<_>>();
    let mut g = G::default();
    let xi = g.input(&[1, 3, 3, 1], f(&x));
    let bs = g.ints(&[2, 2]);
    let pads = g.konst(&[2, 2], i(&[1, 0, 1, 0]));
    let y = g.out(DType::F32, &[4, 2, 2, 1]);
    g.op(OpKind::SpaceToBatchNd, &[Some(xi), Some(bs), Some(pads)], &[y]);
    let sb = g.run0().1;
    // Padded grid rows: [0 0 0 0], [0 1 2 3], [0 4 5 6], [0 7 8 9]; batch k takes offset (k/2, k%2).
    assert_eq!(sb, f(&[0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 4.0, 6.0, 0.0, 2.0, 0.0, 8.0, 1.0, 3.0, 7.0, 9.0]));
    let mut g = G::default();
    let xi = g.input(&[4, 2, 2, 1], sb);
    let bs = g.ints(&[2, 2]);
    let crops = g.konst(&[2, 2], i(&[1, 0, 1, 0]));
    let y = g.out(DType::F32, &[1, 3, 3, 1]);
    g.op(OpKind::BatchToSpaceNd, &[Some(xi), Some(bs), Some(crops)], &[y]);
    assert_eq!(g.run0().1, f(&x));
    // 3-D input (one spatial dim).
    let mut g = G::default();
    let xi = g.input(&[1, 4, 2], i(&[1, 2, 3, 4, 5, 6, 7, 8]));
    let bs = g.ints(&[2]);
    let pads = g.konst(&[1, 2], i(&[0, 0]));
    let y = g.out(DType::I32, &[2, 2, 2]);
    g.op(OpKind::SpaceToBatchNd, &[Some(xi), Some(bs), Some(pads)], &[y]);
    assert_eq!(g.run0().1, i(&[1, 2, 5, 6, 3, 4, 7, 8]));
}

#[test]
fn cumsum_exclusive_reverse() {
    for (ex, rev, want) in [
        (false, false, [1.0, 3.0, 6.0, 4.0, 9.0, 15.0]),
        (true, false, [0.0, 1.0, 3.0, 0.0, 4.0, 9.0]),
        (false, true, [6.0, 5.0, 3.0, 15.0, 11.0, 6.0]),
        (true, true, [5.0, 3.0, 0.0, 11.0, 6.0, 0.0]),
    ] {
        let mut g = G::default();
        let xi = g.input(&[2, 3], f(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        let ax = g.scalar(-1);
        let y = g.out(DType::F32, &[2, 3]);
        g.op(OpKind::Cumsum { exclusive: ex, reverse: rev }, &[Some(xi), Some(ax)], &[y]);
        assert_eq!(g.run0().1, f(&want), "exclusive {ex} reverse {rev}");
    }
    let mut g = G::default();
    let xi = g.input(&[2, 2], V::I64(vec![1, 2, 3, 4]));
    let ax = g.scalar(0);
    let y = g.out(DType::I64, &[2, 2]);
    g.op(OpKind::Cumsum { exclusive: false, reverse: false }, &[Some(xi), Some(ax)], &[y]);
    assert_eq!(g.run0().1, V::I64(vec![1, 2, 4, 6]));
}

// ---- cast, select ---------------------------------------------------------------------------------

#[test]
fn cast_between_every_supported_dtype() {
    let cast = |x: V, to: DType| unary_model(OpKind::Cast, &[x_len(&x)], x, to).run0().1;
    fn x_len(v: &V) -> usize {
        v.bytes().len() / v.dtype().size()
    }
    let xf = f(&[-3.7, -0.5, 0.0, 2.5, 300.0, f32::NAN]);
    assert_eq!(cast(xf.clone(), DType::I32), i(&[-3, 0, 0, 2, 300, i32::MAX]));
    assert_eq!(cast(xf.clone(), DType::U8), V::U8(vec![0, 0, 0, 2, 255, 0]));
    assert_eq!(cast(xf.clone(), DType::I16), V::I16(vec![-3, 0, 0, 2, 300, 0]));
    assert_eq!(cast(xf.clone(), DType::I8), V::I8(vec![-3, 0, 0, 2, 44, 0]));
    assert_eq!(cast(xf.clone(), DType::Bool), b(&[true, true, false, true, true, true]));
    assert_eq!(cast(f(&[-3.7, 1e12]), DType::I64), V::I64(vec![-3, 999_999_995_904]));
    assert_eq!(cast(f(&[1.0, 65520.0, 0.1]), DType::F16), V::F16(vec![1.0, f32::INFINITY, 0.099975586]));
    assert_eq!(cast(V::F16(vec![1.5, -2.0]), DType::F32), f(&[1.5, -2.0]));
    assert_eq!(cast(i(&[300, -1, 7]), DType::U8), V::U8(vec![44, 255, 7]));
    assert_eq!(cast(i(&[300, -1, 0]), DType::Bool), b(&[true, true, false]));
    assert_eq!(cast(V::I64(vec![16_777_217, -5]), DType::F32), f(&[16_777_216.0, -5.0]));
    assert_eq!(cast(V::I64(vec![1 << 40, -5]), DType::I32), i(&[0, -5]));
    assert_eq!(cast(b(&[true, false]), DType::F32), f(&[1.0, 0.0]));
    assert_eq!(cast(V::U8(vec![255, 1]), DType::I8), V::I8(vec![-1, 1]));
    assert_eq!(cast(V::I8(vec![-1, 5]), DType::I64), V::I64(vec![-1, 5]));
    assert_eq!(cast(V::I16(vec![-300]), DType::F32), f(&[-300.0]));
    // Empty tensors convert to empty tensors.
    assert_eq!(cast(f(&[]), DType::I32), i(&[]));
    let mut g = G::default();
    let xi = g.input(&[2], f(&[1.0, 2.0]));
    let y = g.out(DType::I32, &[3]);
    g.op(OpKind::Cast, &[Some(xi)], &[y]);
    g.expect_prepare_error(&["Cast", "[2]"]);
}

#[test]
fn select_v1_rank_one_and_v2_broadcast() {
    let x = seq(6);
    let y: Vec<f32> = x.iter().map(|v| -v).collect();
    // SELECT with a rank-1 condition picks rows.
    let mut g = G::default();
    let c = g.input(&[2], b(&[false, true]));
    let xi = g.input(&[2, 3], f(&x));
    let yi = g.input(&[2, 3], f(&y));
    let o = g.out(DType::F32, &[2, 3]);
    g.op(OpKind::Select { v2: false }, &[Some(c), Some(xi), Some(yi)], &[o]);
    assert_eq!(g.run0().1, f(&[-0.0, -1.0, -2.0, 3.0, 4.0, 5.0]));
    // SELECT_V2 broadcasts all three: condition [3], x [2, 3], y scalar.
    let mut g = G::default();
    let c = g.input(&[3], b(&[true, false, true]));
    let xi = g.input(&[2, 3], i(&[1, 2, 3, 4, 5, 6]));
    let yi = g.input(&[], i(&[0]));
    let o = g.out(DType::I32, &[2, 3]);
    g.op(OpKind::Select { v2: true }, &[Some(c), Some(xi), Some(yi)], &[o]);
    assert_eq!(g.run0().1, i(&[1, 0, 3, 4, 0, 6]));
    // SELECT (v1) does not broadcast x and y.
    let mut g = G::default();
    let c = g.input(&[2, 3], b(&[true; 6]));
    let xi = g.input(&[2, 3], f(&x));
    let yi = g.input(&[3], f(&y[..3]));
    let o = g.out(DType::F32, &[2, 3]);
    g.op(OpKind::Select { v2: false }, &[Some(c), Some(xi), Some(yi)], &[o]);
    g.expect_prepare_error(&["Select", "does not broadcast"]);
}

// ---- fill, range, shape, rank, zeros/ones like, one hot, top k -----------------------------------

#[test]
fn fill_range_shape_rank_like() {
    let mut g = G::default();
    let dims = g.ints(&[2, 3]);
    let v = g.input(&[], V::I64(vec![7]));
    let y = g.out(DType::I64, &[2, 3]);
    g.op(OpKind::Fill, &[Some(dims), Some(v)], &[y]);
    assert_eq!(g.run0().1, V::I64(vec![7; 6]));
    let range = |s: V, l: V, d: V, n: usize| {
        let mut g = G::default();
        let dtype = s.dtype();
        let (si, li, di) = (g.konst(&[], s), g.konst(&[], l), g.konst(&[], d));
        let y = g.out(dtype, &[n]);
        g.op(OpKind::Range, &[Some(si), Some(li), Some(di)], &[y]);
        g
    };
    assert_eq!(range(i(&[2]), i(&[-6]), i(&[-3]), 3).run0().1, i(&[2, -1, -4]));
    assert_eq!(range(f(&[0.0]), f(&[1.0]), f(&[0.3]), 4).run0().1, f(&[0.0, 0.3, 0.6, 0.90000004]));
    range(i(&[0]), i(&[5]), i(&[-1]), 5).expect_prepare_error(&["Range", "delta"]);
    for (kind, dtype, want) in [(OpKind::Shape, DType::I32, i(&[2, 1, 3])), (OpKind::Shape, DType::I64, V::I64(vec![2, 1, 3])), (OpKind::Rank, DType::I32, i(&[3]))] {
        let mut g = G::default();
        let xi = g.input(&[2, 1, 3], f(&[0.0; 6]));
        let od: &[usize] = if kind == OpKind::Rank { &[] } else { &[3] };
        let y = g.out(dtype, od);
        g.op(kind, &[Some(xi)], &[y]);
        assert_eq!(g.run0().1, want);
    }
    assert_eq!(unary_model(OpKind::ZerosLike, &[3], i(&[4, 5, 6]), DType::I32).run0().1, i(&[0, 0, 0]));
    assert_eq!(unary_model(OpKind::OnesLike, &[2], f(&[4.0, 5.0]), DType::F32).run0().1, f(&[1.0, 1.0]));
    let mut g = G::default();
    let xi = g.input(&[2], f(&[0.0; 2]));
    let y = g.out(DType::F32, &[1]);
    g.op(OpKind::Shape, &[Some(xi)], &[y]);
    g.expect_prepare_error(&["Shape", "int32 or int64"]);
}

#[test]
fn one_hot_axes() {
    let one_hot = |axis: i32, od: &[usize]| {
        let mut g = G::default();
        let idx = g.input(&[3], i(&[0, 2, 5]));
        let depth = g.scalar(3);
        let on = g.konst(&[], f(&[1.0]));
        let off = g.konst(&[], f(&[-1.0]));
        let y = g.out(DType::F32, od);
        g.op(OpKind::OneHot { axis }, &[Some(idx), Some(depth), Some(on), Some(off)], &[y]);
        g
    };
    assert_eq!(one_hot(-1, &[3, 3]).run0().1, f(&[1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0]));
    assert_eq!(one_hot(0, &[3, 3]).run0().1, f(&[1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0, -1.0]));
    one_hot(2, &[3, 3]).expect_prepare_error(&["OneHot", "axis 2"]);
}

#[test]
fn top_k_values_and_indices() {
    let mut g = G::default();
    let xi = g.input(&[2, 4], f(&[1.0, 5.0, 3.0, 5.0, -1.0, -2.0, 0.0, 9.0]));
    let k = g.scalar(3);
    let (v, ix) = (g.out(DType::F32, &[2, 3]), g.out(DType::I32, &[2, 3]));
    g.op(OpKind::TopKV2, &[Some(xi), Some(k)], &[v, ix]);
    let outs = g.run();
    assert_eq!(outs[0].1, f(&[5.0, 5.0, 3.0, 9.0, 0.0, -1.0]));
    assert_eq!(outs[1].1, i(&[1, 3, 2, 3, 2, 0]));
    let mut g = G::default();
    let xi = g.input(&[2, 4], f(&[0.0; 8]));
    let k = g.scalar(5);
    let (v, ix) = (g.out(DType::F32, &[2, 5]), g.out(DType::I32, &[2, 5]));
    g.op(OpKind::TopKV2, &[Some(xi), Some(k)], &[v, ix]);
    g.expect_prepare_error(&["TopKV2", "k = 5"]);
}

// ---- UNIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------------

/// Which optional parts an LSTM case has.
#[derive(Clone, Copy, Debug)]
struct LstmCase {
    batch: usize,
    time: usize,
    input: usize,
    cell: usize,
    proj: Option<usize>,
    cifg: bool,
    peephole: bool,
    layer_norm: bool,
    time_major: bool,
    cell_clip: f32,
    proj_clip: f32,
}

/// The parameter tensors of a case, by TFLite input index.
fn lstm_params(c: &LstmCase, seed: u64) -> Vec<Option<(Vec<usize>, Vec<f32>)>> {
    let out = c.proj.unwrap_or(c.cell);
    let mut p: Vec<Option<(Vec<usize>, Vec<f32>)>> = vec![None; 24];
    let mut k = seed;
    let mut t = |dims: Vec<usize>| {
        k += 1;
        let n = dims.iter().product();
        Some((dims, rand(n, k, -0.6, 0.6)))
    };
    for g in 0..4 {
        if g == 0 && c.cifg {
            continue;
        }
        p[1 + g] = t(vec![c.cell, c.input]);
        p[5 + g] = t(vec![c.cell, out]);
        p[12 + g] = t(vec![c.cell]);
        if c.layer_norm {
            p[20 + g] = t(vec![c.cell]);
        }
    }
    if c.peephole {
        for g in 0..3 {
            if g == 0 && c.cifg {
                continue;
            }
            p[9 + g] = t(vec![c.cell]);
        }
    }
    if let Some(o) = c.proj {
        p[16] = t(vec![o, c.cell]);
        p[17] = t(vec![o]);
    }
    p
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

/// A plain LSTM over the sequence (batch-major input); returns the outputs and final states.
fn lstm_ref(c: &LstmCase, p: &[Option<(Vec<usize>, Vec<f32>)>], x: &[f32], h0: &[f32], c0: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let out = c.proj.unwrap_or(c.cell);
    let w = |i: usize| p[i].as_ref().map(|t| t.1.as_slice());
    let (mut h, mut cs) = (h0.to_vec(), c0.to_vec());
    let mut y = vec![0.0; c.batch * c.time * out];
    for bi in 0..c.batch {
        for t in 0..c.time {
            let xt = &x[(bi * c.time + t) * c.input..][..c.input];
            let hb = h[bi * out..(bi + 1) * out].to_vec();
            let mut gates = vec![vec![0.0f32; c.cell]; 4];
            for (g, gate) in gates.iter_mut().enumerate() {
                let Some(wx) = w(1 + g) else { continue };
                let wh = w(5 + g).unwrap();
                for r in 0..c.cell {
                    let mut v: f32 = (0..c.input).map(|k| wx[r * c.input + k] * xt[k]).sum::<f32>();
                    v += (0..out).map(|k| wh[r * out + k] * hb[k]).sum::<f32>();
                    if !c.layer_norm {
                        v += w(12 + g).unwrap()[r];
                    }
                    gate[r] = v;
                }
            }
            let cell_prev: Vec<f32> = cs[bi * c.cell..(bi + 1) * c.cell].to_vec();
            let norm = |g: usize, v: &mut Vec<f32>| {
                if c.layer_norm {
                    let mean = v.iter().sum::<f32>() / c.cell as f32;
                    let var = v.iter().map(|a| (a - mean) * (a - mean)).sum::<f32>() / c.cell as f32;
                    for (r, a) in v.iter_mut().enumerate() {
                        *a = (*a - mean) / (var + 1e-8).sqrt() * w(20 + g).unwrap()[r] + w(12 + g).unwrap()[r];
                    }
                }
            };
            for (g, peep) in [(0usize, 9usize), (1, 10)] {
                if g == 0 && c.cifg {
                    continue;
                }
                if let Some(pw) = w(peep) {
                    for r in 0..c.cell {
                        gates[g][r] += pw[r] * cell_prev[r];
                    }
                }
                norm(g, &mut gates[g]);
                gates[g].iter_mut().for_each(|a| *a = sigmoid(*a));
            }
            norm(2, &mut gates[2]);
            for r in 0..c.cell {
                let fg = gates[1][r];
                let ig = if c.cifg { 1.0 - fg } else { gates[0][r] };
                let mut v = fg * cell_prev[r] + ig * gates[2][r].tanh();
                if c.cell_clip > 0.0 {
                    v = v.clamp(-c.cell_clip, c.cell_clip);
                }
                cs[bi * c.cell + r] = v;
            }
            if let Some(pw) = w(11) {
                for r in 0..c.cell {
                    gates[3][r] += pw[r] * cs[bi * c.cell + r];
                }
            }
            norm(3, &mut gates[3]);
            let hidden: Vec<f32> = (0..c.cell).map(|r| sigmoid(gates[3][r]) * cs[bi * c.cell + r].tanh()).collect();
            let yt: Vec<f32> = match c.proj {
                Some(o) => (0..o)
                    .map(|r| {
                        let v = w(17).unwrap()[r] + (0..c.cell).map(|k| w(16).unwrap()[r * c.cell + k] * hidden[k]).sum::<f32>();
                        if c.proj_clip > 0.0 {
                            v.clamp(-c.proj_clip, c.proj_clip)
                        } else {
                            v
                        }
                    })
                    .collect(),
                None => hidden,
            };
            h[bi * out..(bi + 1) * out].copy_from_slice(&yt);
            y[(bi * c.time + t) * out..][..out].copy_from_slice(&yt);
        }
    }
    (y, h, cs)
}

/// The case as a model: constants for the parameters, variable tensors for the states.
fn lstm_model(c: &LstmCase, p: &[Option<(Vec<usize>, Vec<f32>)>], x: &[f32]) -> G {
    let out = c.proj.unwrap_or(c.cell);
    let mut g = G::default();
    let xd = if c.time_major { vec![c.time, c.batch, c.input] } else { vec![c.batch, c.time, c.input] };
    let x_fed: Vec<f32> = if c.time_major {
        (0..c.time).flat_map(|t| (0..c.batch).flat_map(move |bi| (0..c.input).map(move |k| (bi, t, k)))).map(|(bi, t, k)| x[(bi * c.time + t) * c.input + k]).collect()
    } else {
        x.to_vec()
    };
    let mut inputs: Vec<Option<OperandId>> = vec![None; 24];
    inputs[0] = Some(g.input(&xd, f(&x_fed)));
    for (k, t) in p.iter().enumerate() {
        if let Some((dims, v)) = t {
            inputs[k] = Some(g.konst(dims, f(v)));
        }
    }
    for (k, n) in [(18, out), (19, c.cell)] {
        let mut o = Operand::new(format!("state{k}"), DType::F32, &[c.batch, n]);
        o.is_variable = true;
        inputs[k] = Some(g.g.add_operand(o));
    }
    let od = if c.time_major { vec![c.time, c.batch, out] } else { vec![c.batch, c.time, out] };
    let y = g.out(DType::F32, &od);
    let p = SequenceLstm { act: Activation::Tanh, cell_clip: c.cell_clip, proj_clip: c.proj_clip, time_major: c.time_major, diagonal_recurrent: false, asymmetric_quantize_inputs: false };
    g.op(OpKind::UnidirectionalSequenceLstm(p), &inputs, &[y]);
    g
}

fn to_time_major(c: &LstmCase, y: &[f32], out: usize) -> Vec<f32> {
    (0..c.time).flat_map(|t| (0..c.batch).flat_map(move |bi| (0..out).map(move |k| (bi, t, k)))).map(|(bi, t, k)| y[(bi * c.time + t) * out + k]).collect()
}

#[test]
fn lstm_variants_match_the_reference() {
    let base = LstmCase { batch: 2, time: 5, input: 3, cell: 4, proj: None, cifg: false, peephole: false, layer_norm: false, time_major: false, cell_clip: 0.0, proj_clip: 0.0 };
    let cases = [
        base,
        LstmCase { time_major: true, ..base },
        LstmCase { cifg: true, peephole: true, ..base },
        LstmCase { peephole: true, proj: Some(3), proj_clip: 0.3, cell_clip: 0.5, ..base },
        LstmCase { layer_norm: true, ..base },
        LstmCase { layer_norm: true, cifg: true, peephole: true, proj: Some(2), time_major: true, batch: 1, ..base },
    ];
    for (seed, c) in cases.iter().enumerate() {
        let out = c.proj.unwrap_or(c.cell);
        let p = lstm_params(c, 100 * seed as u64);
        let x = rand(c.batch * c.time * c.input, seed as u64 + 7, -1.0, 1.0);
        let (y, h, cs) = lstm_ref(c, &p, &x, &vec![0.0; c.batch * out], &vec![0.0; c.batch * c.cell]);
        let g = lstm_model(c, &p, &x);
        let want = if c.time_major { to_time_major(c, &y, out) } else { y };
        assert_close(&format!("lstm {c:?}"), g.run0().1.f32(), &want, 1e-5, 1e-5);
        // The state is kept between runs: a second run continues from the final state.
        let mut s = g.session(1).unwrap();
        s.prepare().unwrap();
        s.set_input(0, &g.feeds[0].bytes()).unwrap();
        s.run().unwrap();
        s.run().unwrap();
        let (y2, _, _) = lstm_ref(c, &p, &x, &h, &cs);
        let want2 = if c.time_major { to_time_major(c, &y2, out) } else { y2 };
        let got2 = V::from_bytes(DType::F32, s.output(0).unwrap());
        assert_close(&format!("lstm second run {c:?}"), got2.f32(), &want2, 1e-5, 1e-5);
    }
}

#[test]
fn neg_lstm_missing_and_inconsistent_inputs() {
    let c = LstmCase { batch: 1, time: 2, input: 3, cell: 4, proj: None, cifg: false, peephole: false, layer_norm: false, time_major: false, cell_clip: 0.0, proj_clip: 0.0 };
    let mut p = lstm_params(&c, 1);
    p[14] = None; // cell gate bias is required
    lstm_model(&c, &p, &rand(6, 1, -1.0, 1.0)).expect_prepare_error(&["UnidirectionalSequenceLstm", "input 14"]);
    let mut p = lstm_params(&c, 1);
    p[3] = Some((vec![4, 5], vec![0.0; 20])); // input weights of the wrong width
    lstm_model(&c, &p, &rand(6, 1, -1.0, 1.0)).expect_prepare_error(&["UnidirectionalSequenceLstm", "[4, 3]"]);
    let mut p = lstm_params(&c, 1);
    p[5] = None; // recurrent-to-input without input-to-input
    lstm_model(&c, &p, &rand(6, 1, -1.0, 1.0)).expect_prepare_error(&["both present or both absent"]);
}

// ---- empty tensors ------------------------------------------------------------------------------

#[test]
fn empty_tensors_pass_through() {
    // Gather with no indices, a comparison and a cast of empty tensors, a zero-length split part.
    let mut g = G::default();
    let xi = g.input(&[3, 2], f(&[0.0; 6]));
    let idx = g.input(&[0], i(&[]));
    let y = g.out(DType::F32, &[0, 2]);
    g.op(OpKind::Gather { axis: 0, batch_dims: 0 }, &[Some(xi), Some(idx)], &[y]);
    assert_eq!(g.run0(), (vec![0, 2], f(&[])));
    let g = binary_model(OpKind::Compare(CompareOp::Less), (&[0, 3], f(&[])), (&[3], f(&[1.0, 2.0, 3.0])), (DType::Bool, &[0, 3]));
    assert_eq!(g.run0(), (vec![0, 3], b(&[])));
    let mut g = G::default();
    let xi = g.input(&[2, 3], f(&seq(6)));
    let sizes = g.ints(&[0, 3]);
    let ax = g.scalar(1);
    let (o0, o1) = (g.out(DType::F32, &[2, 0]), g.out(DType::F32, &[2, 3]));
    g.op(OpKind::SplitV { num_splits: 2 }, &[Some(xi), Some(sizes), Some(ax)], &[o0, o1]);
    let outs = g.run();
    assert_eq!(outs[0], (vec![2, 0], f(&[])));
    assert_eq!(outs[1].1, f(&seq(6)));
}
