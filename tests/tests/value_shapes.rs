//! Ops whose output shape depends on the *values* of a tensor computed at run time (onert's
//! dynamic tensors): FILL dims, RANGE limit, TILE multiples, TOP_K k, RESHAPE to a computed
//! shape, SLICE size, and IF branches of different shapes. Each is a one-op model (in IR) whose
//! shape-deciding tensor is a graph input, run several times with different values: outputs must
//! have the shape those values give, output infos must follow the last run, and ops after a
//! dynamic tensor must run on its actual shape. `neg_` cases must fail at run time with a typed
//! error naming the op.
//!
//! All comparisons are exact: these ops move or generate values without arithmetic (ADD of
//! small integers-valued floats is exact too).

use nnrt::{DType, Error, RunError, Session};
use nnrt_core::{Activation, BinaryOp, CompareOp, ConstData, Dim, Model, OpKind, Operand, OperandId, Operation, Shape, StridedSlice, Subgraph, SubgraphId};

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// A subgraph under construction.
#[derive(Default)]
struct G {
    g: Subgraph,
}

impl G {
    fn input(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        let id = self.g.add_operand(Operand::new(format!("in{}", self.g.inputs.len()), dtype, dims));
        self.g.inputs.push(id);
        id
    }

    fn konst(&mut self, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> OperandId {
        let mut o = Operand::new("const", dtype, dims);
        o.data = Some(ConstData::owned(bytes));
        self.g.add_operand(o)
    }

    /// A tensor whose declared shape has `rank` unknown dims (`-1` in a TFLite signature).
    fn unknown(&mut self, dtype: DType, rank: usize) -> OperandId {
        let mut o = Operand::new("t", dtype, &vec![1; rank]);
        o.shape = Shape(vec![Dim::Unknown; rank]);
        self.g.add_operand(o)
    }

    fn op(&mut self, kind: OpKind, inputs: &[OperandId], outputs: &[OperandId]) {
        self.g.add_op(Operation { kind, inputs: inputs.iter().copied().map(Some).collect(), outputs: outputs.to_vec() });
    }

    fn session(self, threads: usize) -> Session {
        session(vec![self.g], threads)
    }
}

fn session(subgraphs: Vec<Subgraph>, threads: usize) -> Session {
    let model = Model { subgraphs, source: "value_shapes".into(), ..Model::default() };
    let mut s = Session::from_model(model).expect("model");
    s.set_backends("cpu").unwrap();
    s.set_threads(threads).unwrap();
    s.prepare().unwrap_or_else(|e| panic!("prepare: {e}"));
    s
}

/// Sets the inputs, runs, and returns output `k`'s dims and bytes.
fn run(s: &mut Session, inputs: &[Vec<u8>], k: usize) -> Result<(Vec<usize>, Vec<u8>), Error> {
    for (i, b) in inputs.iter().enumerate() {
        s.set_input(i, b)?;
    }
    s.run()?;
    Ok((s.output_info(k)?.dims, s.output(k)?.to_vec()))
}

/// FILL(dims, 2.5) with dims a graph input.
fn fill_model() -> G {
    let mut g = G::default();
    let dims = g.input(DType::I32, &[2]);
    let v = g.konst(DType::F32, &[], f32_bytes(&[2.5]));
    let y = g.unknown(DType::F32, 2);
    g.op(OpKind::Fill, &[dims, v], &[y]);
    g.g.outputs.push(y);
    g
}

#[test]
fn fill_takes_its_dims_from_a_computed_tensor() {
    for threads in [1, 2] {
        let mut s = fill_model().session(threads);
        for dims in [[2, 3], [4, 1], [0, 5], [3, 3]] {
            let (got_dims, bytes) = run(&mut s, &[i32_bytes(&dims)], 0).unwrap();
            let want: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
            assert_eq!(got_dims, want, "output info follows the last run");
            assert_eq!(f32s(&bytes), vec![2.5; want.iter().product()], "dims {dims:?}");
        }
    }
}

#[test]
fn neg_fill_with_a_negative_dim_fails_at_run_naming_the_op() {
    let mut s = fill_model().session(1);
    assert!(run(&mut s, &[i32_bytes(&[2, 2])], 0).is_ok());
    match run(&mut s, &[i32_bytes(&[2, -1])], 0) {
        Err(Error::Run(e @ RunError::Kernel { .. })) => {
            let msg = e.to_string();
            assert!(msg.contains("Fill") && msg.contains(">= 0"), "error should name the op and the rule: {msg}");
        }
        other => panic!("expected a run error, got {other:?}"),
    }
    // The session stays usable.
    let (dims, _) = run(&mut s, &[i32_bytes(&[1, 2])], 0).unwrap();
    assert_eq!(dims, vec![1, 2]);
}

#[test]
fn range_takes_its_limit_from_a_computed_tensor() {
    let mut g = G::default();
    let start = g.konst(DType::I32, &[], i32_bytes(&[1]));
    let limit = g.input(DType::I32, &[]);
    let delta = g.konst(DType::I32, &[], i32_bytes(&[2]));
    let y = g.unknown(DType::I32, 1);
    g.op(OpKind::Range, &[start, limit, delta], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(1);
    for (limit, want) in [(8, vec![1, 3, 5, 7]), (2, vec![1]), (1, vec![]), (10, vec![1, 3, 5, 7, 9])] {
        let (dims, bytes) = run(&mut s, &[i32_bytes(&[limit])], 0).unwrap();
        assert_eq!(dims, vec![want.len()], "limit {limit}");
        assert_eq!(i32s(&bytes), want, "limit {limit}");
    }
}

#[test]
fn tile_takes_its_multiples_from_a_computed_tensor() {
    let mut g = G::default();
    let x = g.konst(DType::I32, &[1, 2], i32_bytes(&[7, 8]));
    let m = g.input(DType::I32, &[2]);
    let y = g.unknown(DType::I32, 2);
    g.op(OpKind::Tile, &[x, m], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(2);
    let (dims, bytes) = run(&mut s, &[i32_bytes(&[2, 1])], 0).unwrap();
    assert_eq!((dims, i32s(&bytes)), (vec![2, 2], vec![7, 8, 7, 8]));
    let (dims, bytes) = run(&mut s, &[i32_bytes(&[1, 3])], 0).unwrap();
    assert_eq!((dims, i32s(&bytes)), (vec![1, 6], vec![7, 8, 7, 8, 7, 8]));
}

#[test]
fn top_k_takes_k_from_a_computed_tensor() {
    let mut g = G::default();
    let x = g.input(DType::F32, &[2, 4]);
    let k = g.input(DType::I32, &[]);
    let (v, ix) = (g.unknown(DType::F32, 2), g.unknown(DType::I32, 2));
    g.op(OpKind::TopKV2, &[x, k], &[v, ix]);
    g.g.outputs.extend([v, ix]);
    let mut s = g.session(1);
    let x = f32_bytes(&[1.0, 5.0, 3.0, 4.0, -1.0, -2.0, 0.0, 9.0]);
    for (k, values, indices) in [(1, vec![5.0, 9.0], vec![1, 3]), (3, vec![5.0, 4.0, 3.0, 9.0, 0.0, -1.0], vec![1, 3, 2, 3, 2, 0])] {
        let (dims, bytes) = run(&mut s, &[x.clone(), i32_bytes(&[k])], 0).unwrap();
        assert_eq!(dims, vec![2, k as usize]);
        assert_eq!(f32s(&bytes), values, "values for k = {k}");
        assert_eq!(s.output_info(1).unwrap().dims, vec![2, k as usize]);
        assert_eq!(i32s(s.output(1).unwrap()), indices, "indices for k = {k}");
    }
}

/// RESHAPE(x, shape) with shape a graph input, then x + x on the reshaped tensor: the ADD's
/// shape is dynamic too and its kernel is compiled for each shape it meets.
#[test]
fn reshape_to_a_computed_shape_then_an_op_on_the_result() {
    let mut g = G::default();
    let x = g.input(DType::F32, &[2, 6]);
    let shape = g.input(DType::I32, &[3]);
    let r = g.unknown(DType::F32, 3);
    g.op(OpKind::Reshape { new_shape: None }, &[x, shape], &[r]);
    let bias = g.konst(DType::F32, &[1], f32_bytes(&[100.0]));
    let y = g.unknown(DType::F32, 3);
    g.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[r, bias], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(1);
    let xs: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let want: Vec<f32> = xs.iter().map(|v| v + 100.0).collect();
    for (shape, dims) in [([3, 2, 2], vec![3, 2, 2]), ([-1, 1, 4], vec![3, 1, 4]), ([12, 1, 1], vec![12, 1, 1]), ([3, 2, 2], vec![3, 2, 2])] {
        let (got, bytes) = run(&mut s, &[f32_bytes(&xs), i32_bytes(&shape)], 0).unwrap();
        assert_eq!(got, dims, "shape {shape:?}");
        assert_eq!(f32s(&bytes), want);
    }
    match run(&mut s, &[f32_bytes(&xs), i32_bytes(&[5, 1, 1])], 0) {
        Err(Error::Run(e)) => assert!(e.to_string().contains("Reshape"), "the error names the op: {e}"),
        other => panic!("reshaping 12 elements to [5,1,1] must fail at run time, got {other:?}"),
    }
}

/// Keras' LSTM-in-a-WHILE pattern without the loop: SLICE x[0:n] and x[n:] by a computed n and
/// CONCATENATE them around a new row, so intermediate shapes change while the output's does not.
#[test]
fn slices_sized_by_a_computed_tensor_and_their_concatenation() {
    let mut g = G::default();
    let x = g.input(DType::F32, &[4, 2]);
    let size = g.input(DType::I32, &[2]);
    let begin = g.input(DType::I32, &[2]);
    let zero = g.konst(DType::I32, &[2], i32_bytes(&[0, 0]));
    let rest = g.konst(DType::I32, &[2], i32_bytes(&[-1, -1]));
    let head = g.unknown(DType::F32, 2);
    g.op(OpKind::Slice, &[x, zero, size], &[head]);
    let tail = g.unknown(DType::F32, 2);
    g.op(OpKind::Slice, &[x, begin, rest], &[tail]);
    let row = g.konst(DType::F32, &[1, 2], f32_bytes(&[-1.0, -2.0]));
    let y = g.unknown(DType::F32, 2);
    g.op(OpKind::Concatenation { axis: 0, act: Activation::None }, &[head, row, tail], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(1);
    let xs = f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    for n in 0..4 {
        let (dims, bytes) = run(&mut s, &[xs.clone(), i32_bytes(&[n, 2]), i32_bytes(&[n + 1, 0])], 0).unwrap();
        let mut want: Vec<f32> = (0..2 * n).map(|v| v as f32).collect();
        want.extend([-1.0, -2.0]);
        want.extend((2 * (n + 1)..8).map(|v| v as f32));
        assert_eq!(dims, vec![4, 2], "row {n} replaced");
        assert_eq!(f32s(&bytes), want, "row {n} replaced");
    }
}

/// PAD, TRANSPOSE and STRIDED_SLICE whose paddings / permutation / end are computed: their
/// kernels read those values at compile, so they are compiled at run time for each set of values.
#[test]
fn pad_transpose_strided_slice_with_computed_parameters() {
    let x = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // PAD [2,3] by computed paddings.
    let mut g = G::default();
    let xi = g.input(DType::F32, &[2, 3]);
    let pads = g.input(DType::I32, &[2, 2]);
    let y = g.unknown(DType::F32, 2);
    g.op(OpKind::Pad, &[xi, pads], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(1);
    let (dims, bytes) = run(&mut s, &[x.clone(), i32_bytes(&[1, 0, 0, 1])], 0).unwrap();
    assert_eq!((dims, f32s(&bytes)), (vec![3, 4], vec![0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0, 0.0]));
    let (dims, bytes) = run(&mut s, &[x.clone(), i32_bytes(&[0, 0, 0, 0])], 0).unwrap();
    assert_eq!((dims, f32s(&bytes)), (vec![2, 3], f32s(&x)));
    // TRANSPOSE [2,3] by a computed permutation.
    let mut g = G::default();
    let xi = g.input(DType::F32, &[2, 3]);
    let perm = g.input(DType::I32, &[2]);
    let y = g.unknown(DType::F32, 2);
    g.op(OpKind::Transpose, &[xi, perm], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(1);
    let (dims, bytes) = run(&mut s, &[x.clone(), i32_bytes(&[1, 0])], 0).unwrap();
    assert_eq!((dims, f32s(&bytes)), (vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]));
    let (dims, bytes) = run(&mut s, &[x.clone(), i32_bytes(&[0, 1])], 0).unwrap();
    assert_eq!((dims, f32s(&bytes)), (vec![2, 3], f32s(&x)));
    // STRIDED_SLICE x[:, 0:end:2] with end computed.
    let mut g = G::default();
    let xi = g.input(DType::F32, &[2, 3]);
    let begin = g.konst(DType::I32, &[2], i32_bytes(&[0, 0]));
    let end = g.input(DType::I32, &[2]);
    let strides = g.konst(DType::I32, &[2], i32_bytes(&[1, 2]));
    let y = g.unknown(DType::F32, 2);
    g.op(OpKind::StridedSlice(StridedSlice::default()), &[xi, begin, end, strides], &[y]);
    g.g.outputs.push(y);
    let mut s = g.session(1);
    let (dims, bytes) = run(&mut s, &[x.clone(), i32_bytes(&[2, 3])], 0).unwrap();
    assert_eq!((dims, f32s(&bytes)), (vec![2, 2], vec![1.0, 3.0, 4.0, 6.0]));
    let (dims, bytes) = run(&mut s, &[x, i32_bytes(&[1, 1])], 0).unwrap();
    assert_eq!((dims, f32s(&bytes)), (vec![1, 1], vec![1.0]));
}

/// IF whose branches give different shapes: `then` tiles x twice, `else` adds x to itself.
#[test]
fn if_branches_of_different_shapes_give_a_dynamic_output() {
    let branch = |tile: bool| {
        let mut g = G::default();
        let x = g.input(DType::F32, &[3]);
        let y = g.unknown(DType::F32, 1);
        if tile {
            let m = g.konst(DType::I32, &[1], i32_bytes(&[2]));
            g.op(OpKind::Tile, &[x, m], &[y]);
        } else {
            g.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[x, x], &[y]);
        }
        g.g.outputs.push(y);
        g.g
    };
    let mut main = G::default();
    let c = main.input(DType::Bool, &[]);
    let x = main.input(DType::F32, &[3]);
    let y = main.unknown(DType::F32, 1);
    main.op(OpKind::If { then_branch: SubgraphId(1), else_branch: SubgraphId(2) }, &[c, x], &[y]);
    main.g.outputs.push(y);
    let mut s = session(vec![main.g, branch(true), branch(false)], 1);
    let xs = f32_bytes(&[1.0, 2.0, 3.0]);
    for cond in [true, false, true] {
        let (dims, bytes) = run(&mut s, &[vec![cond as u8], xs.clone()], 0).unwrap();
        if cond {
            assert_eq!((dims, f32s(&bytes)), (vec![6], vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]));
        } else {
            assert_eq!((dims, f32s(&bytes)), (vec![3], vec![2.0, 4.0, 6.0]));
        }
    }
}

/// Keras' LSTM loop in miniature: a WHILE whose body replaces row `i` of a [4,2] accumulator by
/// slicing around it with sizes computed from the loop counter, as `op_lstm_keras3_while` does.
/// The body's intermediate shapes change every iteration; the carried shapes do not.
#[test]
fn while_body_slicing_by_the_loop_counter() {
    let mut cond = G::default();
    let ci = cond.input(DType::I32, &[]);
    cond.input(DType::F32, &[4, 2]);
    let four = cond.konst(DType::I32, &[], i32_bytes(&[4]));
    let go = cond.g.add_operand(Operand::new("go", DType::Bool, &[]));
    cond.op(OpKind::Compare(CompareOp::Less), &[ci, four], &[go]);
    cond.g.outputs.push(go);

    let mut body = G::default();
    let i = body.input(DType::I32, &[]);
    let acc = body.input(DType::F32, &[4, 2]);
    let one = body.konst(DType::I32, &[], i32_bytes(&[1]));
    let next = body.g.add_operand(Operand::new("next", DType::I32, &[]));
    body.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[i, one], &[next]);
    let as_vec = |g: &mut G, s: OperandId, tail: i32| {
        let shape = g.konst(DType::I32, &[1], i32_bytes(&[1]));
        let v = g.g.add_operand(Operand::new("v", DType::I32, &[1]));
        g.op(OpKind::Reshape { new_shape: None }, &[s, shape], &[v]);
        let t = g.konst(DType::I32, &[1], i32_bytes(&[tail]));
        let out = g.g.add_operand(Operand::new("v2", DType::I32, &[2]));
        g.op(OpKind::Concatenation { axis: 0, act: Activation::None }, &[v, t], &[out]);
        out
    };
    let size = as_vec(&mut body, i, -1);
    let begin = as_vec(&mut body, next, 0);
    let zero = body.konst(DType::I32, &[2], i32_bytes(&[0, 0]));
    let rest = body.konst(DType::I32, &[2], i32_bytes(&[-1, -1]));
    let head = body.unknown(DType::F32, 2);
    body.op(OpKind::Slice, &[acc, zero, size], &[head]);
    let tail = body.unknown(DType::F32, 2);
    body.op(OpKind::Slice, &[acc, begin, rest], &[tail]);
    let row = body.konst(DType::F32, &[1, 2], f32_bytes(&[-1.0, -2.0]));
    let acc2 = body.unknown(DType::F32, 2);
    body.op(OpKind::Concatenation { axis: 0, act: Activation::None }, &[head, row, tail], &[acc2]);
    body.g.outputs.extend([next, acc2]);

    let mut main = G::default();
    let i0 = main.input(DType::I32, &[]);
    let x = main.input(DType::F32, &[4, 2]);
    let (i_out, y) = (main.g.add_operand(Operand::new("i", DType::I32, &[])), main.g.add_operand(Operand::new("y", DType::F32, &[4, 2])));
    main.op(OpKind::While { cond: SubgraphId(1), body: SubgraphId(2) }, &[i0, x], &[i_out, y]);
    main.g.outputs.extend([i_out, y]);
    let mut s = session(vec![main.g, cond.g, body.g], 1);
    let xs: Vec<f32> = (0..8).map(|v| v as f32).collect();
    for start in [1, 3, 0, 4] {
        let (dims, bytes) = run(&mut s, &[i32_bytes(&[start]), f32_bytes(&xs)], 1).unwrap();
        let mut want = xs.clone();
        for r in start as usize..4 {
            want[2 * r..2 * r + 2].copy_from_slice(&[-1.0, -2.0]);
        }
        assert_eq!(dims, vec![4, 2]);
        assert_eq!(f32s(&bytes), want, "loop from {start}");
        assert_eq!(i32s(s.output(0).unwrap()), vec![start.max(4)]);
    }
}

/// A WHILE with static shapes whose condition reads only the counter and whose body passes one
/// loop variable on unchanged (`xs`, Keras' input sequence) and swaps two others: `(i, xs, a, b)
/// -> (i + 1, xs, b, a + xs)`. The loop copies the pass-through variable into the body once per
/// run and nothing the condition does not read: each run must still see that run's inputs,
/// including runs of zero iterations and runs after a longer one.
#[test]
fn while_passes_loop_invariants_through_and_swaps_others() {
    let mut cond = G::default();
    let ci = cond.input(DType::I32, &[]);
    for _ in 0..3 {
        cond.input(DType::F32, &[2, 3]);
    }
    let three = cond.konst(DType::I32, &[], i32_bytes(&[3]));
    let go = cond.g.add_operand(Operand::new("go", DType::Bool, &[]));
    cond.op(OpKind::Compare(CompareOp::Less), &[ci, three], &[go]);
    cond.g.outputs.push(go);

    let mut body = G::default();
    let i = body.input(DType::I32, &[]);
    let xs = body.input(DType::F32, &[2, 3]);
    let a = body.input(DType::F32, &[2, 3]);
    let b = body.input(DType::F32, &[2, 3]);
    let one = body.konst(DType::I32, &[], i32_bytes(&[1]));
    let next = body.g.add_operand(Operand::new("next", DType::I32, &[]));
    body.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[i, one], &[next]);
    let sum = body.g.add_operand(Operand::new("sum", DType::F32, &[2, 3]));
    body.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[a, xs], &[sum]);
    body.g.outputs.extend([next, xs, b, sum]);

    let mut main = G::default();
    let ins: Vec<OperandId> = [main.input(DType::I32, &[])].into_iter().chain((0..3).map(|_| main.input(DType::F32, &[2, 3]))).collect();
    let outs: Vec<OperandId> = [main.g.add_operand(Operand::new("i", DType::I32, &[]))]
        .into_iter()
        .chain((0..3).map(|_| main.g.add_operand(Operand::new("v", DType::F32, &[2, 3]))))
        .collect();
    main.op(OpKind::While { cond: SubgraphId(1), body: SubgraphId(2) }, &ins, &outs);
    main.g.outputs.extend(outs);
    let mut s = session(vec![main.g, cond.g, body.g], 1);
    for (start, seed) in [(0, 1.0f32), (3, 2.0), (1, 3.0), (0, -4.0), (2, 0.5)] {
        let xs: Vec<f32> = (0..6).map(|k| seed * (k as f32 + 1.0)).collect();
        let (mut a, mut b): (Vec<f32>, Vec<f32>) = ((0..6).map(|k| 10.0 * k as f32).collect(), vec![-1.0; 6]);
        let inputs = [i32_bytes(&[start]), f32_bytes(&xs), f32_bytes(&a), f32_bytes(&b)];
        for _ in start..3 {
            let sum: Vec<f32> = a.iter().zip(&xs).map(|(a, x)| a + x).collect();
            (a, b) = (b, sum);
        }
        assert_eq!(i32s(&run(&mut s, &inputs, 0).unwrap().1), vec![start.max(3)]);
        assert_eq!(f32s(s.output(1).unwrap()), xs, "xs, loop from {start}");
        assert_eq!(f32s(s.output(2).unwrap()), a, "a, loop from {start}");
        assert_eq!(f32s(s.output(3).unwrap()), b, "b, loop from {start}");
    }
}

/// Cond `i < 3`, body `(i + 1, concat(acc, [[7, 8]]))` growing the carried [?, 2] tensor, and IF
/// branches `t + t` and `t + 0`: subgraphs 1 to 4 of the models below.
fn growing_loop_subgraphs() -> Vec<Subgraph> {
    let rows_unknown = |g: &mut G, id: OperandId| g.g.operands[id.index()].shape = Shape(vec![Dim::Unknown, Dim::Known(2)]);
    let mut cond = G::default();
    let ci = cond.input(DType::I32, &[]);
    let ca = cond.input(DType::F32, &[1, 2]);
    rows_unknown(&mut cond, ca);
    let n = cond.konst(DType::I32, &[], i32_bytes(&[3]));
    let go = cond.g.add_operand(Operand::new("go", DType::Bool, &[]));
    cond.op(OpKind::Compare(CompareOp::Less), &[ci, n], &[go]);
    cond.g.outputs.push(go);

    let mut body = G::default();
    let i = body.input(DType::I32, &[]);
    let acc = body.input(DType::F32, &[1, 2]);
    rows_unknown(&mut body, acc);
    let one = body.konst(DType::I32, &[], i32_bytes(&[1]));
    let next = body.g.add_operand(Operand::new("next", DType::I32, &[]));
    body.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[i, one], &[next]);
    let row = body.konst(DType::F32, &[1, 2], f32_bytes(&[7.0, 8.0]));
    let grown = body.unknown(DType::F32, 2);
    body.op(OpKind::Concatenation { axis: 0, act: Activation::None }, &[acc, row], &[grown]);
    body.g.outputs.extend([next, grown]);

    let branch = |addend: Option<f32>| {
        let mut g = G::default();
        let t = g.input(DType::F32, &[1, 2]);
        rows_unknown(&mut g, t);
        let other = match addend {
            Some(v) => g.konst(DType::F32, &[], f32_bytes(&[v])),
            None => t,
        };
        let out = g.unknown(DType::F32, 2);
        g.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[t, other], &[out]);
        g.g.outputs.push(out);
        g.g
    };
    vec![cond.g, body.g, branch(None), branch(Some(0.0))]
}

/// `rows` rows of `fill` followed by the rows the loop appends when it counts from `from`.
fn grown(rows: usize, fill: f32, from: i32) -> Vec<f32> {
    let mut want = vec![fill; 2 * rows];
    for _ in from..3 {
        want.extend([7.0, 8.0]);
    }
    want
}

/// A WHILE whose body grows the carried tensor, fed by a FILL of computed dims: cond and body
/// are prepared for each carried shape, and the loop's output is dynamic. An IF on the grown
/// tensor then runs a branch prepared for that shape.
#[test]
fn while_growing_its_carried_tensor_from_a_computed_start() {
    let mut main = G::default();
    let i0 = main.input(DType::I32, &[]);
    let dims = main.input(DType::I32, &[2]);
    let flag = main.input(DType::Bool, &[]);
    let v = main.konst(DType::F32, &[], f32_bytes(&[1.0]));
    let start = main.unknown(DType::F32, 2);
    main.op(OpKind::Fill, &[dims, v], &[start]);
    let (i_out, y) = (main.g.add_operand(Operand::new("i", DType::I32, &[])), main.unknown(DType::F32, 2));
    main.op(OpKind::While { cond: SubgraphId(1), body: SubgraphId(2) }, &[i0, start], &[i_out, y]);
    let z = main.unknown(DType::F32, 2);
    main.op(OpKind::If { then_branch: SubgraphId(3), else_branch: SubgraphId(4) }, &[flag, y], &[z]);
    main.g.outputs.extend([y, z]);
    let mut subgraphs = vec![main.g];
    subgraphs.extend(growing_loop_subgraphs());
    let mut s = session(subgraphs, 1);
    for (from, rows, flag) in [(0, 1, true), (1, 2, false), (3, 1, true), (0, 1, false), (2, 0, true)] {
        let inputs = [i32_bytes(&[from]), i32_bytes(&[rows, 2]), vec![flag as u8]];
        let (dims, bytes) = run(&mut s, &inputs, 0).unwrap();
        let want = grown(rows as usize, 1.0, from);
        assert_eq!(dims, vec![want.len() / 2, 2], "start {from}, {rows} rows");
        assert_eq!(f32s(&bytes), want, "start {from}, {rows} rows");
        let scale = if flag { 2.0 } else { 1.0 };
        assert_eq!(s.output_info(1).unwrap().dims, dims);
        assert_eq!(f32s(s.output(1).unwrap()), want.iter().map(|v| v * scale).collect::<Vec<_>>());
    }
}

/// The same loop on a graph input of static shape: the body changes the carried shape, so the
/// loop's output is dynamic although its inputs are not.
#[test]
fn while_growing_a_static_input() {
    let mut main = G::default();
    let i0 = main.input(DType::I32, &[]);
    let x = main.input(DType::F32, &[2, 2]);
    let (i_out, y) = (main.g.add_operand(Operand::new("i", DType::I32, &[])), main.unknown(DType::F32, 2));
    main.op(OpKind::While { cond: SubgraphId(1), body: SubgraphId(2) }, &[i0, x], &[i_out, y]);
    main.g.outputs.push(y);
    let mut subgraphs = vec![main.g];
    subgraphs.extend(growing_loop_subgraphs());
    let mut s = session(subgraphs, 2);
    for from in [0, 3, 1, 0] {
        let (dims, bytes) = run(&mut s, &[i32_bytes(&[from]), f32_bytes(&[5.0; 4])], 0).unwrap();
        let want = grown(2, 5.0, from);
        assert_eq!((dims, f32s(&bytes)), (vec![want.len() / 2, 2], want), "counting from {from}");
    }
}

/// A body whose output shape is known only at run time is trusted to keep the carried shape
/// (as Keras' loops do); one that does not fails at run time with an error naming the WHILE.
#[test]
fn neg_while_body_changing_a_shape_it_was_trusted_to_keep() {
    let mut cond = G::default();
    let ci = cond.input(DType::I32, &[]);
    cond.input(DType::F32, &[3, 2]);
    let n = cond.konst(DType::I32, &[], i32_bytes(&[3]));
    let go = cond.g.add_operand(Operand::new("go", DType::Bool, &[]));
    cond.op(OpKind::Compare(CompareOp::Less), &[ci, n], &[go]);
    cond.g.outputs.push(go);
    // Body: (i + 1, acc[0:size]) with size an input of the body computed from i: [3 - i, 2].
    let mut body = G::default();
    let i = body.input(DType::I32, &[]);
    let acc = body.input(DType::F32, &[3, 2]);
    let one = body.konst(DType::I32, &[], i32_bytes(&[1]));
    let next = body.g.add_operand(Operand::new("next", DType::I32, &[]));
    body.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[i, one], &[next]);
    let three = body.konst(DType::I32, &[], i32_bytes(&[3]));
    let rows = body.g.add_operand(Operand::new("rows", DType::I32, &[]));
    body.op(OpKind::Binary { op: BinaryOp::Sub, act: Activation::None }, &[three, i], &[rows]);
    let shape1 = body.konst(DType::I32, &[1], i32_bytes(&[1]));
    let rows1 = body.g.add_operand(Operand::new("rows1", DType::I32, &[1]));
    body.op(OpKind::Reshape { new_shape: None }, &[rows, shape1], &[rows1]);
    let two = body.konst(DType::I32, &[1], i32_bytes(&[2]));
    let size = body.g.add_operand(Operand::new("size", DType::I32, &[2]));
    body.op(OpKind::Concatenation { axis: 0, act: Activation::None }, &[rows1, two], &[size]);
    let zero = body.konst(DType::I32, &[2], i32_bytes(&[0, 0]));
    let cut = body.unknown(DType::F32, 2);
    body.op(OpKind::Slice, &[acc, zero, size], &[cut]);
    body.g.outputs.extend([next, cut]);
    let mut main = G::default();
    let i0 = main.input(DType::I32, &[]);
    let x = main.input(DType::F32, &[3, 2]);
    let (i_out, y) = (main.g.add_operand(Operand::new("i", DType::I32, &[])), main.g.add_operand(Operand::new("y", DType::F32, &[3, 2])));
    main.op(OpKind::While { cond: SubgraphId(1), body: SubgraphId(2) }, &[i0, x], &[i_out, y]);
    main.g.outputs.push(y);
    let mut s = session(vec![main.g, cond.g, body.g], 1);
    // Counting from 3 the body never runs; from 0 its first iteration keeps [3,2], its second
    // cuts a row.
    assert_eq!(run(&mut s, &[i32_bytes(&[3]), f32_bytes(&[1.0; 6])], 0).unwrap().0, vec![3, 2]);
    match run(&mut s, &[i32_bytes(&[0]), f32_bytes(&[1.0; 6])], 0) {
        Err(Error::Run(e @ RunError::Kernel { .. })) => {
            let msg = e.to_string();
            assert!(msg.contains("While") && msg.contains("[2,2]"), "the error names the op and the new shape: {msg}");
        }
        other => panic!("expected a run error, got {other:?}"),
    }
}
