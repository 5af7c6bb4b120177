//! The run's forms against the ops one by one through their own kernels.

use nnrt_core::{Activation, BinaryOp, CompileCtx, ConstData, Config, DType, InputSource, IntBitsOp, OpId, OpKind, Operand, OperandId, Operation, Rescale, Subgraph, TensorMut, TensorRef};
use super::Form;

use crate::testdata::xorshift;

const N: usize = 6;

fn bytes_of(t: DType, v: &[i64]) -> Vec<u8> {
    let mut b = vec![0u8; v.len() * t.size()];
    super::store(v.iter().copied(), t, &mut b).expect("stores");
    b
}

fn constant(g: &mut Subgraph, t: DType, dims: &[usize], v: &[i64]) -> OperandId {
    let mut o = Operand::new("k", t, dims);
    o.data = Some(ConstData::owned(bytes_of(t, v)));
    g.add_operand(o)
}

/// A run over every lane form: per-channel RESCALEs, int16 TABLE, shifts by a broadcast
/// one-element amount, wrapping ADD / SUB, CLZ, IntMul with and without a shift, the CLAMP
/// pair, and a one-element value computed inside the run; three values read after it.
fn graph(seed: u64) -> (Subgraph, Vec<OpId>, [OperandId; 3], Vec<OperandId>) {
    let mut rng = xorshift(seed);
    let mut next = move || rng.next().unwrap_or(1);
    let mut g = Subgraph::default();
    let row = [1, N];
    let one = [1, 1];
    let x = g.add_operand(Operand::new("x", DType::I32, &row));
    let s = g.add_operand(Operand::new("s", DType::I32, &one));
    g.inputs = vec![x, s];
    let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType, dims: &[usize]| {
        let y = g.add_operand(Operand::new("v", t, dims));
        g.add_op(Operation { kind, inputs: ins.into_iter().map(Some).collect(), outputs: vec![y] });
        y
    };
    let rescale = |double_round| OpKind::Rescale(Rescale { scale32: true, double_round, per_channel: true, input_unsigned: false, output_unsigned: false });
    let bin = |op| OpKind::Binary { op, act: Activation::None };
    let mults: Vec<i64> = (0..N).map(|_| (1 << 30) + (next() % (1 << 30)) as i64).collect();
    let shifts: Vec<i64> = (0..N).map(|_| 36 + (next() % 8) as i64).collect();
    let (m, sh) = (constant(&mut g, DType::I32, &[N], &mults), constant(&mut g, DType::I8, &[N], &shifts));
    let (z32, z16) = (constant(&mut g, DType::I32, &[1], &[0]), constant(&mut g, DType::I16, &[1], &[0]));
    let r0 = op(&mut g, rescale(true), vec![x, m, sh, z32, z16], DType::I16, &row);
    let table: Vec<i64> = (0..513).map(|_| (next() % 65536) as i64 - 32768).collect();
    let tk = constant(&mut g, DType::I16, &[513], &table);
    let t = op(&mut g, OpKind::Table, vec![r0, tk], DType::I32, &row);
    let l = op(&mut g, OpKind::IntBits(IntBitsOp::LeftShift), vec![t, s], DType::I32, &row);
    let amounts: Vec<i64> = (0..N).map(|_| (next() % 40) as i64).collect();
    let ak = constant(&mut g, DType::I32, &row, &amounts);
    let rr = op(&mut g, OpKind::IntBits(IntBitsOp::RightShift { round: true }), vec![l, ak], DType::I32, &row);
    let a = op(&mut g, bin(BinaryOp::Add), vec![rr, x], DType::I32, &row);
    let b = op(&mut g, bin(BinaryOp::Sub), vec![a, s], DType::I32, &row);
    let z = op(&mut g, OpKind::IntBits(IntBitsOp::Clz), vec![b], DType::I32, &row);
    let mshift = constant(&mut g, DType::I8, &[1], &[(next() % 40) as i64]);
    let p = op(&mut g, OpKind::IntMul, vec![b, x, mshift], DType::I32, &row);
    let (lo, hi) = (constant(&mut g, DType::I32, &one, &[-(1 << 20)]), constant(&mut g, DType::I32, &one, &[1 << 20]));
    let mx = op(&mut g, bin(BinaryOp::Maximum), vec![p, lo], DType::I32, &row);
    let mn = op(&mut g, bin(BinaryOp::Minimum), vec![mx, hi], DType::I32, &row);
    let oz = constant(&mut g, DType::I8, &[1], &[(next() % 256) as i64 - 128]);
    let m2 = constant(&mut g, DType::I32, &[1], &[(1 << 30) + (next() % (1 << 30)) as i64]);
    let s2 = constant(&mut g, DType::I8, &[1], &[44]);
    let o8 = op(&mut g, rescale(false), vec![mn, m2, s2, z32, oz], DType::I8, &row);
    // int8 in: RESCALE by table (unsigned out), then an int8 TABLE.
    let (m3, s3) = (constant(&mut g, DType::I32, &[1], &[(1 << 30) + (next() % (1 << 30)) as i64]), constant(&mut g, DType::I8, &[1], &[30]));
    let uzp = constant(&mut g, DType::I8, &[1], &[(next() % 256) as i64 - 128]);
    let unsigned_out = OpKind::Rescale(Rescale { scale32: true, double_round: false, per_channel: false, input_unsigned: false, output_unsigned: true });
    let u8v = op(&mut g, unsigned_out, vec![o8, m3, s3, oz, uzp], DType::I8, &row);
    let t8: Vec<i64> = (0..256).map(|_| (next() % 256) as i64 - 128).collect();
    let t8k = constant(&mut g, DType::I8, &[256], &t8);
    let tv = op(&mut g, OpKind::Table, vec![u8v, t8k], DType::I8, &row);
    let zero_shift = constant(&mut g, DType::I8, &[1], &[0]);
    let w = op(&mut g, OpKind::IntMul, vec![s, s, zero_shift], DType::I32, &one);
    let out2 = op(&mut g, bin(BinaryOp::Add), vec![z, w], DType::I32, &row);
    g.outputs = vec![tv, out2, a];
    let ops = (0..g.ops.len()).map(OpId::new).collect();
    (g, ops, [a, tv, out2], vec![x, s])
}

/// A graph whose one input `x` has type `t` and dims `dims`.
fn one_input(t: DType, dims: &[usize]) -> (Subgraph, OperandId) {
    let mut g = Subgraph::default();
    let x = g.add_operand(Operand::new("x", t, dims));
    g.inputs = vec![x];
    (g, x)
}

/// Adds an op of `kind` reading `ins`, writing a new value of type `t` and dims `dims`.
fn add_op(g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType, dims: &[usize]) -> OperandId {
    let v = g.add_operand(Operand::new("v", t, dims));
    g.add_op(Operation { kind, inputs: ins.into_iter().map(Some).collect(), outputs: vec![v] });
    v
}

fn view<'a>(g: &Subgraph, dims: &'a [Vec<usize>], id: OperandId, b: &'a [u8]) -> TensorRef<'a> {
    TensorRef { dtype: g.operand(id).dtype, dims: &dims[id.index()], bytes: b }
}

/// Time per run of the test graph's 15-op run on 6 elements in each form (ignored: a
/// timing, run with `--ignored --nocapture`).
#[test]
#[ignore]
fn form_speed() {
    let (g, ops, _, ins) = graph(3);
    let shapes: Vec<Vec<usize>> = g.operands.iter().map(|o| o.shape.concrete().unwrap_or_default()).collect();
    let (config, origin) = (Config::default(), ops.clone());
    let ctx = CompileCtx { graph: &g, shapes: &shapes, threads: 1, config: &config, origin: &origin };
    for best in [Form::Narrow, Form::Lanes] {
        let mut chain = super::fuse(&ctx, &ops, best).expect("the run fuses");
        let srcs: Vec<Vec<u8>> = ins.iter().map(|i| vec![1u8; shapes[i.index()].iter().product::<usize>() * 4]).collect();
        let refs: Vec<TensorRef> = ins.iter().zip(&srcs).map(|(i, b)| view(&g, &shapes, *i, b)).collect();
        let mut got: Vec<Vec<u8>> = chain.outputs.iter().map(|o| vec![0u8; shapes[o.index()].iter().product::<usize>() * g.operand(*o).dtype.size()]).collect();
        let outs = chain.outputs.clone();
        let mut best_ns = f64::MAX;
        for _ in 0..20 {
            let mut views: Vec<TensorMut> = got.iter_mut().zip(&outs).map(|(b, o)| TensorMut { dtype: g.operand(*o).dtype, dims: &shapes[o.index()], bytes: b }).collect();
            let t = std::time::Instant::now();
            for _ in 0..10_000 {
                chain.kernel.run(&refs, &mut views).expect("runs");
            }
            best_ns = best_ns.min(t.elapsed().as_nanos() as f64 / 10_000.0);
        }
        println!("{:?}: {} ops, {best_ns:.0} ns a run", chain.form, chain.ops.len());
    }
}

/// An input of the wrong length is an error in every form, and leaves the run's values as
/// they were: the next run of the right length computes the same as before.
#[test]
fn a_wrong_input_length_is_an_error_and_changes_nothing() {
    let (g, ops, _, ins) = graph(5);
    let shapes: Vec<Vec<usize>> = g.operands.iter().map(|o| o.shape.concrete().unwrap_or_default()).collect();
    let (config, origin) = (Config::default(), ops.clone());
    let ctx = CompileCtx { graph: &g, shapes: &shapes, threads: 1, config: &config, origin: &origin };
    for best in [Form::Narrow, Form::Lanes] {
        let mut chain = super::fuse(&ctx, &ops, best).expect("the run fuses");
        let good: Vec<Vec<u8>> = ins.iter().map(|i| (0..shapes[i.index()].iter().product::<usize>() * 4).map(|b| b as u8).collect()).collect();
        let mut run = |srcs: &[Vec<u8>]| {
            let refs: Vec<TensorRef> = ins.iter().zip(srcs).map(|(i, b)| view(&g, &shapes, *i, b)).collect();
            let mut got: Vec<Vec<u8>> = chain.outputs.iter().map(|o| vec![0u8; shapes[o.index()].iter().product::<usize>() * g.operand(*o).dtype.size()]).collect();
            let mut views: Vec<TensorMut> = got.iter_mut().zip(&chain.outputs).map(|(b, o)| TensorMut { dtype: g.operand(*o).dtype, dims: &shapes[o.index()], bytes: b }).collect();
            let r = chain.kernel.run(&refs, &mut views);
            drop(views);
            r.map(|_| got)
        };
        let before = run(&good).expect("runs");
        let mut short = good.clone();
        short[0].truncate(4);
        assert!(run(&short).is_err(), "{best:?}: a short input is refused");
        assert_eq!(run(&good).expect("runs"), before, "{best:?}: the next run is as before");
    }
}

#[test]
fn a_run_computes_the_ops_integers() {
    for seed in 1..40u64 {
        let (g, ops, outs, ins) = graph(seed);
        check(seed, &g, &ops, &outs, &ins, ops.len() - 3, Form::Narrow);
    }
}

/// A RESCALE repeated on the same input (as the TOSA lowering of a quantized SUB after an
/// ADD of the same operands makes) is computed once: the run's results stay the ops'.
#[test]
fn a_repeated_op_reads_the_first_ones_result() {
    for seed in 1..20u64 {
        let (mut g, mut ops, outs, ins) = graph(seed);
        // Op 10 is the int32 -> int8 RESCALE; its twin and a MAXIMUM of the twin and the TABLE.
        let first = g.op(OpId::new(10)).clone();
        let y = g.add_operand(Operand::new("twin", DType::I8, &[1, N]));
        g.add_op(Operation { kind: first.kind, inputs: first.inputs, outputs: vec![y] });
        let m = g.add_operand(Operand::new("m", DType::I8, &[1, N]));
        g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Maximum, act: Activation::None }, inputs: vec![Some(y), Some(outs[1])], outputs: vec![m] });
        g.outputs.push(m);
        ops.extend([OpId::new(g.ops.len() - 2), OpId::new(g.ops.len() - 1)]);
        let outs = [outs[0], outs[1], outs[2], m];
        check(seed, &g, &ops, &outs, &ins, ops.len() - 4, Form::Narrow);
    }
}

/// A RESCALE of a constant and a RESHAPE of its one value inside a run (TOSA's quantized
/// MUL by a constant: RESCALE, RESCALE of the constant, RESHAPE, MUL, RESCALE).
#[test]
fn a_reshape_is_a_step_of_the_run() {
    for seed in 1..20u64 {
        let mut g = Subgraph::default();
        let x = g.add_operand(Operand::new("x", DType::I32, &[1, N]));
        let s = g.add_operand(Operand::new("s", DType::I32, &[1, 1]));
        g.inputs = vec![x, s];
        let rescale = OpKind::Rescale(Rescale { scale32: true, double_round: false, per_channel: false, input_unsigned: false, output_unsigned: false });
        let k8 = constant(&mut g, DType::I8, &[1], &[(seed as i64 * 37) % 256 - 128]);
        let (m, sh) = (constant(&mut g, DType::I32, &[1], &[(1 << 30) + seed as i64 * 12345]), constant(&mut g, DType::I8, &[1], &[31]));
        let (z8, z32) = (constant(&mut g, DType::I8, &[1], &[0]), constant(&mut g, DType::I32, &[1], &[0]));
        let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType, dims: &[usize]| {
            let y = g.add_operand(Operand::new("v", t, dims));
            g.add_op(Operation { kind, inputs: ins.into_iter().map(Some).collect(), outputs: vec![y] });
            y
        };
        let c = op(&mut g, rescale.clone(), vec![k8, m, sh, z8, z32], DType::I32, &[1]);
        let c4 = op(&mut g, OpKind::Reshape { new_shape: Some(vec![1, 1]) }, vec![c], DType::I32, &[1, 1]);
        let shift = constant(&mut g, DType::I8, &[1], &[(seed % 20) as i64]);
        let p = op(&mut g, OpKind::IntMul, vec![x, c4, shift], DType::I32, &[1, N]);
        let flat = op(&mut g, OpKind::Reshape { new_shape: Some(vec![N as i32]) }, vec![p], DType::I32, &[N]);
        let o8 = op(&mut g, rescale, vec![flat, m, sh, z32, z8], DType::I8, &[N]);
        g.outputs = vec![o8];
        let ops: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        check(seed, &g, &ops, &[o8], &[x, s], ops.len() - 1, Form::Narrow);
    }
}

/// Runs `ops` one by one and as one step (as tables, when `tabled` says the run is built as
/// tables, and over lanes), and compares the values read after the run.
/// `form` is the kernel's form when every form may be chosen.
fn check(seed: u64, g: &Subgraph, ops: &[OpId], outs: &[OperandId], ins: &[OperandId], elided: usize, form: Form) {
    // Narrow when every value has at most 8 elements (a lane operand has its op's count or
    // one; tables and multipliers are not values).
    let narrow = ops.iter().all(|&id| g.op(id).outputs.iter().all(|&v| g.operand(v).shape.concrete().is_some_and(|d| d.iter().product::<usize>() <= super::NARROW)));
    let g = g.clone();
    let ops = ops.to_vec();
    {
        let shapes: Vec<Vec<usize>> = g.operands.iter().map(|o| o.shape.concrete().unwrap_or_default()).collect();
        let (config, origin) = (Config::default(), ops.clone());
        let ctx = CompileCtx { graph: &g, shapes: &shapes, threads: 1, config: &config, origin: &origin };
        let mut rng = xorshift(seed * 7919);
        let mut values: Vec<Option<Vec<u8>>> = g.operands.iter().map(|o| o.data.as_ref().map(|d| d.bytes().to_vec())).collect();
        for (k, &i) in ins.iter().enumerate() {
            let count: usize = shapes[i.index()].iter().product();
            let v: Vec<i64> = match (g.operand(i).dtype, k) {
                // The edges of float conversions and roundings, then random bits (NaNs and
                // infinities among them) and random values around the int8 range.
                (DType::F32, _) => {
                    let edges = [0.0f32, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 127.5, -128.5, 126.49, 1e-40, -1e-40, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2_147_483_520.0, 2_147_483_648.0, -2_147_483_648.0, -2_147_483_904.0, 32767.5, -32768.5, 8_388_607.5, f32::MAX, f32::MIN_POSITIVE];
                    (0..count).map(|j| match edges.get(j) {
                        Some(&e) => super::lane(e),
                        None if j % 2 == 0 => rng.next().unwrap_or(0) as u32 as i64,
                        None => super::lane((rng.next().unwrap_or(0) % 100_000) as f32 / 97.0 - 515.0),
                    }).collect()
                }
                // Every byte at least once, then random ones.
                (DType::I8, _) => (0..count).map(|j| if j < 256 { ((j as u64 * (2 * k as u64 + 1) * 97) % 256) as i64 - 128 } else { (rng.next().unwrap_or(0) % 256) as i64 - 128 }).collect(),
                (_, 0) => (0..count).map(|_| rng.next().unwrap_or(0) as i32 as i64 >> (seed % 9)).collect(),
                _ => (0..count).map(|_| (rng.next().unwrap_or(0) % 34) as i64 - 1).collect(),
            };
            values[i.index()] = Some(bytes_of(g.operand(i).dtype, &v));
        }

        // The ops one by one, through their own kernels.
        let mut want = values.clone();
        for &id in &ops {
            let mut b = super::super::build(&ctx, id).expect("builds");
            let srcs: Vec<Vec<u8>> = b.inputs.iter().map(|s| match s {
                InputSource::Arena(i) => want[i.index()].clone().expect("computed"),
                InputSource::Const(c) => c.view().bytes.to_vec(),
            }).collect();
            let ids: Vec<OperandId> = b.inputs.iter().map(|s| match s {
                InputSource::Arena(i) => *i,
                InputSource::Const(_) => OperandId::new(0),
            }).collect();
            let refs: Vec<TensorRef> = b.inputs.iter().zip(&srcs).zip(&ids).map(|((s, bytes), &i)| match s {
                InputSource::Arena(_) => view(&g, &shapes, i, bytes),
                InputSource::Const(c) => TensorRef { bytes, ..c.view() },
            }).collect();
            let y = g.op(id).outputs[0];
            let mut out = vec![0u8; shapes[y.index()].iter().product::<usize>() * g.operand(y).dtype.size()];
            b.kernel.run(&refs, &mut [TensorMut { dtype: g.operand(y).dtype, dims: &shapes[y.index()], bytes: &mut out }]).expect("runs");
            want[y.index()] = Some(out);
        }

        // The run as one step, as tables where it can be and over lanes.
        for best in [Form::Tables, Form::Narrow, Form::Lanes] {
        let want_form = match best {
            Form::Lanes => Form::Lanes,
            Form::Tables => form,
            _ if form != Form::Tables => form,
            _ if narrow => Form::Narrow,
            _ => Form::Lanes,
        };
        if want_form != Form::Tables && ops.len() < super::MIN_OPS {
            assert!(super::fuse(&ctx, &ops, best).is_none(), "seed {seed}: two ops fuse only as tables");
            continue;
        }
        let mut chain = super::fuse(&ctx, &ops, best).expect("the run fuses");
        assert_eq!(chain.form, want_form, "seed {seed}: the kernel's form");
        assert_eq!(chain.ops, ops);
        assert_eq!(chain.outputs, outs.to_vec(), "the values read after the run are stored");
        assert_eq!(chain.elided.len(), elided);
        let srcs: Vec<(OperandId, Vec<u8>)> = chain.inputs.iter().map(|s| match s {
            InputSource::Arena(i) => (*i, values[i.index()].clone().expect("an input")),
            InputSource::Const(_) => panic!("constants are folded into the run"),
        }).collect();
        let refs: Vec<TensorRef> = srcs.iter().map(|(i, b)| view(&g, &shapes, *i, b)).collect();
        let mut got: Vec<Vec<u8>> = outs.iter().map(|o| vec![0u8; want[o.index()].as_ref().map_or(0, |v| v.len())]).collect();
        let mut views: Vec<TensorMut> = got.iter_mut().zip(outs).map(|(b, o)| TensorMut { dtype: g.operand(*o).dtype, dims: &shapes[o.index()], bytes: b }).collect();
        chain.kernel.run(&refs, &mut views).expect("runs");
        drop(views);
        for (o, b) in outs.iter().zip(&got) {
            assert_eq!(Some(b), want[o.index()].as_ref(), "seed {seed}, value {o}, form {best:?}");
        }
        }
    }
}

/// TOSA's lowerings of QUANTIZE (MUL by the reciprocal scale, ROUND, CAST to int32, ADD of the
/// zero point, CAST to int8) and of float CAST to int8 (ROUND, the clip as MAXIMUM / MINIMUM,
/// CAST), with the other float lanes (DIV, SUB by a per-element constant, FLOOR, CEIL, ABS,
/// NEG, CASTs to int16 and back to float): the run's float32 and integer values are the
/// ops' own bits, NaNs, infinities, halves and out-of-range values included.
#[test]
fn float_ops_and_casts_join_a_run() {
    // 700 elements run as lanes, 7 as narrow lanes.
    for (seed, len) in (1..8u64).flat_map(|s| [(s, 700usize), (s, 7)]) {
        let row = [1, len];
        let (mut g, x) = one_input(DType::F32, &row);
        let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType| add_op(g, kind, ins, t, &row);
        let fk = |g: &mut Subgraph, v: f32| constant(g, DType::F32, &[1, 1], &[super::lane(v)]);
        let bin = |op| OpKind::Binary { op, act: Activation::None };
        let inv_scale = fk(&mut g, 1.0 / (0.013 * seed as f32));
        let m = op(&mut g, bin(BinaryOp::Mul), vec![x, inv_scale], DType::F32);
        let r = op(&mut g, OpKind::Unary(nnrt_core::UnaryOp::Round), vec![m], DType::F32);
        let c32 = op(&mut g, OpKind::Cast, vec![r], DType::I32);
        let zp = constant(&mut g, DType::I32, &[1, 1], &[seed as i64 * 9 - 30]);
        let a = op(&mut g, bin(BinaryOp::Add), vec![c32, zp], DType::I32);
        let q = op(&mut g, OpKind::Cast, vec![a], DType::I8);
        let (lo, hi) = (fk(&mut g, -128.0), fk(&mut g, 127.0));
        let mx = op(&mut g, bin(BinaryOp::Maximum), vec![r, lo], DType::F32);
        let mn = op(&mut g, bin(BinaryOp::Minimum), vec![mx, hi], DType::F32);
        let q2 = op(&mut g, OpKind::Cast, vec![mn], DType::I8);
        let per: Vec<i64> = (0..len).map(|j| super::lane((j as f32 - 350.0) * 0.37 * seed as f32)).collect();
        let pk = constant(&mut g, DType::F32, &row, &per);
        let d = op(&mut g, bin(BinaryOp::Div), vec![pk, x], DType::F32);
        let s = op(&mut g, bin(BinaryOp::Sub), vec![d, pk], DType::F32);
        let fl = op(&mut g, OpKind::Unary(nnrt_core::UnaryOp::Floor), vec![s], DType::F32);
        let ce = op(&mut g, OpKind::Unary(nnrt_core::UnaryOp::Ceil), vec![d], DType::F32);
        let ab = op(&mut g, OpKind::Unary(nnrt_core::UnaryOp::Abs), vec![fl], DType::F32);
        let ng = op(&mut g, OpKind::Unary(nnrt_core::UnaryOp::Neg), vec![ce], DType::F32);
        let h = op(&mut g, OpKind::Cast, vec![ng], DType::I16);
        let back = op(&mut g, OpKind::Cast, vec![h], DType::F32);
        let sum = op(&mut g, bin(BinaryOp::Add), vec![back, ab], DType::F32);
        g.outputs = vec![q, q2, sum];
        let ops: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        check(seed, &g, &ops, &[q, q2, sum], &[x], ops.len() - 3, if len <= super::NARROW { Form::Narrow } else { Form::Lanes });
    }
}

/// TOSA's lowering of QUANTIZE alone (MUL by the reciprocal scale, ROUND, CAST to int32, ADD
/// of the zero point, CAST to int8 or int16), either operand order, is one loop: the ops'
/// bits over the float edges (NaNs, infinities, halves, 2^31) and random bits.
#[test]
fn a_lowered_quantize_is_one_loop() {
    for (seed, len, to) in (1..6u64).flat_map(|s| [(s, 700usize, DType::I8), (s, 5, DType::I8), (s, 300, DType::I16)]) {
        let row = [1, len];
        let (mut g, x) = one_input(DType::F32, &row);
        let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType| add_op(g, kind, ins, t, &row);
        let bin = |op| OpKind::Binary { op, act: Activation::None };
        let inv = constant(&mut g, DType::F32, &[1, 1], &[super::lane(1.0 / (0.0071 * seed as f32))]);
        let m = op(&mut g, bin(BinaryOp::Mul), if seed % 2 == 0 { vec![x, inv] } else { vec![inv, x] }, DType::F32);
        let r = op(&mut g, OpKind::Unary(nnrt_core::UnaryOp::Round), vec![m], DType::F32);
        let c32 = op(&mut g, OpKind::Cast, vec![r], DType::I32);
        let zp = constant(&mut g, DType::I32, &[1, 1], &[seed as i64 * 23 - 60]);
        let a = op(&mut g, bin(BinaryOp::Add), if seed % 3 == 0 { vec![zp, c32] } else { vec![c32, zp] }, DType::I32);
        let q = op(&mut g, OpKind::Cast, vec![a], to);
        g.outputs = vec![q];
        let ops: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        check(seed, &g, &ops, &[q], &[x], 4, Form::Quantize);
    }
}

/// TOSA's lowering of DEQUANTIZE (RESCALE of int8 to int32 with the zero point, CAST to
/// float, SUB, MUL) reads one int8 input: it runs as a float32 table of every byte.
#[test]
fn a_dequantize_runs_as_a_float_table() {
    const M: usize = 300;
    for seed in 1..8u64 {
        let mut g = Subgraph::default();
        let row = [1, M];
        let x = g.add_operand(Operand::new("x", DType::I8, &row));
        g.inputs = vec![x];
        let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType| {
            let v = g.add_operand(Operand::new("v", t, &row));
            g.add_op(Operation { kind, inputs: ins.into_iter().map(Some).collect(), outputs: vec![v] });
            v
        };
        let rescale = OpKind::Rescale(Rescale { scale32: true, double_round: false, per_channel: false, input_unsigned: false, output_unsigned: false });
        let (mk, sk) = (constant(&mut g, DType::I32, &[1], &[1 << 30]), constant(&mut g, DType::I8, &[1], &[30]));
        let (zi, z32) = (constant(&mut g, DType::I8, &[1], &[seed as i64 * 11 - 40]), constant(&mut g, DType::I32, &[1], &[0]));
        let r = op(&mut g, rescale, vec![x, mk, sk, zi, z32], DType::I32);
        let f = op(&mut g, OpKind::Cast, vec![r], DType::F32);
        let zf = constant(&mut g, DType::F32, &[1, 1], &[super::lane(seed as f32 * 0.5 - 2.0)]);
        let s = op(&mut g, OpKind::Binary { op: BinaryOp::Sub, act: Activation::None }, vec![f, zf], DType::F32);
        let sc = constant(&mut g, DType::F32, &[1, 1], &[super::lane(0.0037 * seed as f32)]);
        let y = op(&mut g, OpKind::Binary { op: BinaryOp::Mul, act: Activation::None }, vec![s, sc], DType::F32);
        g.outputs = vec![y];
        let ops: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        check(seed, &g, &ops, &[y], &[x], ops.len() - 1, Form::Tables);
    }
}

/// Two RESCALEs of an int8 value (TOSA's requantization of a uint8 graph output: to int8,
/// then to unsigned) are one table; as lanes two ops stay apart.
#[test]
fn two_rescales_run_as_a_table() {
    for seed in 1..8u64 {
        let mut g = Subgraph::default();
        let row = [1, 192];
        let x = g.add_operand(Operand::new("x", DType::I8, &row));
        g.inputs = vec![x];
        let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>| {
            let v = g.add_operand(Operand::new("v", DType::I8, &row));
            g.add_op(Operation { kind, inputs: ins.into_iter().map(Some).collect(), outputs: vec![v] });
            v
        };
        let rescale = |output_unsigned| OpKind::Rescale(Rescale { scale32: true, double_round: seed % 2 == 0, per_channel: false, input_unsigned: false, output_unsigned });
        let (mk, sk) = (constant(&mut g, DType::I32, &[1], &[(1 << 30) + seed as i64 * 98_765]), constant(&mut g, DType::I8, &[1], &[30]));
        let (zi, zo) = (constant(&mut g, DType::I8, &[1], &[seed as i64 * 11 - 40]), constant(&mut g, DType::I8, &[1], &[seed as i64 * 7 - 20]));
        let r = op(&mut g, rescale(false), vec![x, mk, sk, zi, zo]);
        let u = op(&mut g, rescale(true), vec![r, mk, sk, zo, zi]);
        g.outputs = vec![u];
        let ops: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        check(seed, &g, &ops, &[u], &[x], 1, Form::Tables);
    }
}

/// TOSA's lowering of quantized element-wise ops on two int8 inputs (RESCALEs to int32 with
/// zero points, ADD, RESCALE to int8, the CLAMP pair; IntMul of a RESCALEd pair; SUB then an
/// int8 TABLE; a one-input RESCALE with unsigned output): every value read after the run is a
/// function of one or two input bytes, so the run is built as tables — the same bytes as the
/// ops one by one, over every byte of each input.
#[test]
fn two_int8_inputs_run_as_tables() {
    const M: usize = 1000;
    for seed in 1..12u64 {
        let mut rng = xorshift(seed);
        let mut next = move || rng.next().unwrap_or(1);
        let mut g = Subgraph::default();
        let row = [1, M];
        let x = g.add_operand(Operand::new("x", DType::I8, &row));
        let y = g.add_operand(Operand::new("y", DType::I8, &row));
        g.inputs = vec![x, y];
        let op = |g: &mut Subgraph, kind: OpKind, ins: Vec<OperandId>, t: DType| {
            let v = g.add_operand(Operand::new("v", t, &row));
            g.add_op(Operation { kind, inputs: ins.into_iter().map(Some).collect(), outputs: vec![v] });
            v
        };
        let rescale = |output_unsigned| OpKind::Rescale(Rescale { scale32: true, double_round: seed % 2 == 0, per_channel: false, input_unsigned: false, output_unsigned });
        let bin = |op| OpKind::Binary { op, act: Activation::None };
        let mut scale = |g: &mut Subgraph, shift: i64| {
            let m = constant(g, DType::I32, &[1], &[(1 << 30) + (next() % (1 << 30)) as i64]);
            let s = constant(g, DType::I8, &[1], &[shift]);
            let (zi, zo) = (constant(g, DType::I8, &[1], &[(next() % 256) as i64 - 128]), constant(g, DType::I8, &[1], &[(next() % 256) as i64 - 128]));
            (m, s, zi, zo)
        };
        let z32 = constant(&mut g, DType::I32, &[1], &[0]);
        let (m, s, zi, _) = scale(&mut g, 10);
        let xa = op(&mut g, rescale(false), vec![x, m, s, zi, z32], DType::I32);
        let (m, s, zi, _) = scale(&mut g, 11);
        let ya = op(&mut g, rescale(false), vec![y, m, s, zi, z32], DType::I32);
        let sum = op(&mut g, bin(BinaryOp::Add), vec![xa, ya], DType::I32);
        let (m, s, _, zo) = scale(&mut g, 40);
        let s8 = op(&mut g, rescale(false), vec![sum, m, s, z32, zo], DType::I8);
        let (lo, hi) = (constant(&mut g, DType::I8, &[1], &[-100]), constant(&mut g, DType::I8, &[1], &[90]));
        let c = op(&mut g, bin(BinaryOp::Maximum), vec![s8, lo], DType::I8);
        let c = op(&mut g, bin(BinaryOp::Minimum), vec![c, hi], DType::I8);
        let (m, s, zi, _) = scale(&mut g, 30);
        let ca = op(&mut g, rescale(false), vec![c, m, s, zi, z32], DType::I32);
        let shift = constant(&mut g, DType::I8, &[1], &[0]);
        let p = op(&mut g, OpKind::IntMul, vec![ca, ya, shift], DType::I32);
        let (m, s, _, zo) = scale(&mut g, 45);
        let p8 = op(&mut g, rescale(false), vec![p, m, s, z32, zo], DType::I8);
        let d = op(&mut g, bin(BinaryOp::Sub), vec![ya, xa], DType::I32);
        let (m, s, _, zo) = scale(&mut g, 38);
        let d8 = op(&mut g, rescale(false), vec![d, m, s, z32, zo], DType::I8);
        let t8: Vec<i64> = xorshift(seed + 1000).take(256).map(|v| (v % 256) as i64 - 128).collect();
        let tk = constant(&mut g, DType::I8, &[256], &t8);
        let tv = op(&mut g, OpKind::Table, vec![d8, tk], DType::I8);
        let (m, s, zi, zo) = scale(&mut g, 31);
        let u = op(&mut g, rescale(true), vec![x, m, s, zi, zo], DType::I8);
        g.outputs = vec![p8, tv, u, xa];
        let ops: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        check(seed, &g, &ops, &[xa, p8, tv, u], &[x, y], ops.len() - 4, Form::Tables);
    }
}
