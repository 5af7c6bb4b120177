//! Data movement: CONCATENATION, RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, PAD, PADV2,
//! MIRROR_PAD, TILE, DILATE, REVERSE_V2, SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND,
//! BATCH_TO_SPACE_ND, and CUMSUM.

use nnrt_core::{Activation, DType, MirrorMode, OpKind, UnaryOp};
use nnrt_tests::reference::{self as r, Fill, T};
use nnrt_tests::{f, i, i64s, seq, Case, Graph, Tol};
use nnrt_tests::{Act, BuiltinOperator as Op, MirrorPadMode, ModelBuilder, Options, TensorType};

use crate::{ints, noise, random, tflite_unary, zero_input as z, F};

nnrt_tests::replay_on_every_target!(shape_cases, pad_cases, tile_reverse_cumsum_cases, dilate_cases, space_cases, tflite_cases, gpu_cases, later_builtin_neg_cases, tflite_neg_cases);

fn one_op(kind: OpKind, x: (&[usize], nnrt_tests::V), consts: &[(&[usize], nnrt_tests::V)], out: (DType, &[usize])) -> Graph {
    let mut g = Graph::new();
    let mut inputs = vec![Some(g.input(x.0, x.1))];
    inputs.extend(consts.iter().map(|(d, v)| Some(g.konst(d, v.clone()))));
    let y = g.out(out.0, out.1);
    g.op(kind, &inputs, &[y]);
    g
}

fn shape_cases() -> Vec<Case> {
    let x = seq(6);
    let x4 = || (&[1usize, 2, 1, 3][..], f(&x));
    let g = one_op(OpKind::Squeeze { axes: vec![] }, x4(), &[], (DType::F32, &[2, 3]));
    let mut cases = vec![Case::new("squeeze every 1", &g).dims(0, &[2, 3]).out(0, f(&x))];
    let g = one_op(OpKind::Squeeze { axes: vec![-2] }, x4(), &[], (DType::F32, &[1, 2, 3]));
    cases.push(Case::new("squeeze axis -2", &g).dims(0, &[1, 2, 3]));
    let g = one_op(OpKind::ExpandDims, (&[2, 3], f(&x)), &[(&[], i64s(&[-1]))], (DType::F32, &[2, 3, 1]));
    cases.push(Case::new("expand_dims -1", &g).dims(0, &[2, 3, 1]).out(0, f(&x)));
    let g = one_op(OpKind::Squeeze { axes: vec![1] }, x4(), &[], (DType::F32, &[1, 1, 3]));
    cases.push(Case::new("neg_squeeze_a_dim_not_1", &g).prepare_error(&["Squeeze", "not 1"]));
    cases
}

fn pad_cases() -> Vec<Case> {
    let g = one_op(OpKind::Pad, (&[2, 2], f(&[1.0, 2.0, 3.0, 4.0])), &[(&[2, 2], i(&[1, 0, 0, 2])), (&[], f(&[-9.0]))], (DType::F32, &[3, 4]));
    let padv2 = Case::new("pad_v2 with a value", &g).out(0, f(&[-9.0, -9.0, -9.0, -9.0, 1.0, 2.0, -9.0, -9.0, 3.0, 4.0, -9.0, -9.0]));
    let g = one_op(OpKind::MirrorPad(MirrorMode::Reflect), (&[3], f(&[1.0, 2.0, 3.0])), &[(&[1, 2], i(&[2, 1]))], (DType::F32, &[6]));
    let mirror = Case::new("mirror_pad reflect", &g).out(0, f(&[3.0, 2.0, 1.0, 2.0, 3.0, 2.0])).no_gpu("no MirrorPad kernel");
    vec![padv2, mirror]
}

fn tile_reverse_cumsum_cases() -> Vec<Case> {
    let g = one_op(OpKind::Tile, (&[2, 2], i(&[1, 2, 3, 4])), &[(&[2], i(&[2, 3]))], (DType::I32, &[4, 6]));
    let (row0, row1) = ([1, 2, 1, 2, 1, 2], [3, 4, 3, 4, 3, 4]);
    let mut cases = vec![Case::new("tile", &g).out(0, i(&[row0, row1, row0, row1].concat())).no_gpu("no Tile kernel")];
    let g = one_op(OpKind::ReverseV2, (&[2, 3], f(&seq(6))), &[(&[2], i(&[-1, 0]))], (DType::F32, &[2, 3]));
    cases.push(Case::new("reverse_v2", &g).out(0, f(&[5.0, 4.0, 3.0, 2.0, 1.0, 0.0])).no_gpu("no ReverseV2 kernel"));
    for (ex, rev, want) in [
        (false, false, [1.0, 3.0, 6.0, 4.0, 9.0, 15.0]),
        (true, false, [0.0, 1.0, 3.0, 0.0, 4.0, 9.0]),
        (false, true, [6.0, 5.0, 3.0, 15.0, 11.0, 6.0]),
        (true, true, [5.0, 3.0, 0.0, 11.0, 6.0, 0.0]),
    ] {
        let g = one_op(OpKind::Cumsum { exclusive: ex, reverse: rev }, (&[2, 3], f(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])), &[(&[], i(&[-1]))], (DType::F32, &[2, 3]));
        cases.push(Case::new(format!("cumsum exclusive {ex} reverse {rev}"), &g).out(0, f(&want)).no_gpu("no Cumsum kernel"));
    }
    let g = one_op(OpKind::Cumsum { exclusive: false, reverse: false }, (&[2, 2], i64s(&[1, 2, 3, 4])), &[(&[], i(&[0]))], (DType::I64, &[2, 2]));
    cases.push(Case::new("cumsum int64", &g).out(0, i64s(&[1, 2, 4, 6])).no_gpu("no Cumsum kernel"));
    cases
}

/// DILATE spreads elements apart (TFLite's kernel comment: B(i) = A(i / d) where every i % d is
/// 0, else the padding value): values worked out by hand, any element type, bit-exact.
fn dilate_cases() -> Vec<Case> {
    let g = one_op(OpKind::Dilate, (&[3, 3], f(&seq(9))), &[(&[2], i(&[2, 3])), (&[], f(&[0.0]))], (DType::F32, &[5, 7]));
    #[rustfmt::skip]
    let want = [
        0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.0,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        3.0, 0.0, 0.0, 4.0, 0.0, 0.0, 5.0,
        0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        6.0, 0.0, 0.0, 7.0, 0.0, 0.0, 8.0,
    ];
    let mut cases = vec![Case::new("dilate 3x3 by [2,3]", &g).out(0, f(&want)).no_gpu("no Dilate kernel")];
    let int8 = |v: &[i8]| nnrt_tests::V::I8(v.to_vec());
    let g = one_op(OpKind::Dilate, (&[2, 2], int8(&[1, 2, 3, 4])), &[(&[2], i(&[1, 2])), (&[1], int8(&[-1]))], (DType::I8, &[2, 3]));
    cases.push(Case::new("dilate int8, padding -1", &g).out(0, int8(&[1, -1, 2, 3, -1, 4])).no_gpu("no Dilate kernel"));
    let g = one_op(OpKind::Dilate, (&[2, 1, 2], f(&seq(4))), &[(&[3], i(&[3, 1, 2])), (&[], f(&[7.5]))], (DType::F32, &[4, 1, 3]));
    let want = [0.0, 7.5, 1.0, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 2.0, 7.5, 3.0];
    cases.push(Case::new("dilate rank 3, a dim of 1", &g).out(0, f(&want)).no_gpu("no Dilate kernel"));
    let g = one_op(OpKind::Dilate, (&[2, 2], f(&seq(4))), &[(&[2], i(&[1, 0])), (&[], f(&[0.0]))], (DType::F32, &[2, 2]));
    cases.push(Case::new("neg_dilate_by_zero", &g).prepare_error(&["Dilate", "dilations [1, 0]"]));
    let g = one_op(OpKind::Dilate, (&[2, 2], f(&seq(4))), &[(&[2], i(&[2, 2])), (&[], i(&[0]))], (DType::F32, &[3, 3]));
    cases.push(Case::new("neg_dilate_padding_of_another_type", &g).prepare_error(&["Dilate", "padding", "float32"]));
    // Through the TFLite reader (operator code 203).
    let x = T::new(&[2, 3], seq(6));
    let want = T::new(&[3, 3], vec![0.0, 1.0, 2.0, -2.0, -2.0, -2.0, 3.0, 4.0, 5.0]);
    cases.push(tflite_unary("DILATE [2,1] padding -2", &x, &want, Tol::EXACT, |b, xi, y| {
        let d = b.constant_i32("dilations", &[2], &[2, 1]);
        let pad = b.constant_f32("padding", &[], &[-2.0]);
        b.op(Op::DILATE, &[xi, d, pad], &[y], Options::None);
    })
    .no_gpu("no Dilate kernel"));
    cases
}

fn space_cases() -> Vec<Case> {
    let x = seq(16); // [1, 4, 4, 1]
    let s2d: Vec<f32> = [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15].iter().map(|&v| v as f32).collect();
    let g = one_op(OpKind::SpaceToDepth { block: 2 }, (&[1, 4, 4, 1], f(&x)), &[], (DType::F32, &[1, 2, 2, 4]));
    // TFLite: output channel (by·b + bx)·C + c of block (y, x).
    let mut cases = vec![Case::new("space_to_depth", &g).out_part(0, 0..8, f(&s2d[..8]), Tol::EXACT).no_gpu("no SpaceToDepth kernel")];
    let g = one_op(OpKind::DepthToSpace { block: 2 }, (&[1, 2, 2, 4], f(&s2d)), &[], (DType::F32, &[1, 4, 4, 1]));
    cases.push(Case::new("depth_to_space back", &g).out(0, f(&x)).no_gpu("no DepthToSpace kernel"));
    let g = one_op(OpKind::SpaceToDepth { block: 2 }, (&[1, 3, 4, 1], f(&seq(12))), &[], (DType::F32, &[1, 1, 2, 4]));
    cases.push(Case::new("neg_space_to_depth_not_a_multiple", &g).prepare_error(&["SpaceToDepth", "multiples of block_size 2"]));
    // [1, 3, 3, 1] padded to 4x4 (1 before on both spatial dims), block 2x2 -> [4, 2, 2, 1].
    let x: Vec<f32> = seq(9).iter().map(|v| v + 1.0).collect();
    let g = one_op(OpKind::SpaceToBatchNd, (&[1, 3, 3, 1], f(&x)), &[(&[2], i(&[2, 2])), (&[2, 2], i(&[1, 0, 1, 0]))], (DType::F32, &[4, 2, 2, 1]));
    // Padded grid rows: [0 0 0 0], [0 1 2 3], [0 4 5 6], [0 7 8 9]; batch k takes offset (k/2, k%2).
    let sb = [0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 4.0, 6.0, 0.0, 2.0, 0.0, 8.0, 1.0, 3.0, 7.0, 9.0];
    cases.push(Case::new("space_to_batch_nd with padding", &g).out(0, f(&sb)).no_gpu("no SpaceToBatchNd kernel"));
    let g = one_op(OpKind::BatchToSpaceNd, (&[4, 2, 2, 1], f(&sb)), &[(&[2], i(&[2, 2])), (&[2, 2], i(&[1, 0, 1, 0]))], (DType::F32, &[1, 3, 3, 1]));
    cases.push(Case::new("batch_to_space_nd with crops", &g).out(0, f(&x)).no_gpu("no BatchToSpaceNd kernel"));
    // 3-D input (one spatial dim).
    let g = one_op(OpKind::SpaceToBatchNd, (&[1, 4, 2], i(&[1, 2, 3, 4, 5, 6, 7, 8])), &[(&[1], i(&[2])), (&[1, 2], i(&[0, 0]))], (DType::I32, &[2, 2, 2]));
    cases.push(Case::new("space_to_batch_nd 3-D", &g).out(0, i(&[1, 2, 5, 6, 3, 4, 7, 8])).no_gpu("no SpaceToBatchNd kernel"));
    cases
}

const PADS: [[usize; 2]; 4] = [[0, 0], [1, 2], [2, 1], [0, 1]];

/// CONCATENATION, RESHAPE, TRANSPOSE and the PAD family through the TFLite reader.
fn tflite_cases() -> Vec<Case> {
    let (a, c) = (random(&[1, 2, 3, 4], 210), random(&[1, 2, 3, 2], 211));
    let mut b = ModelBuilder::new();
    let ai = b.input("a", TensorType::FLOAT32, &[1, 2, 3, 4]);
    let ci = b.input("c", TensorType::FLOAT32, &[1, 2, 3, 2]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 2, 3, 6]);
    b.op(Op::CONCATENATION, &[ai, ci], &[y], Options::Concatenation { axis: -1, act: Act::NONE });
    b.output(y);
    let mut cases = vec![Case::tflite("CONCATENATION axis -1", &b, vec![f(&a.data), f(&c.data)]).out_tensor(0, &r::concat(&[&a, &c], 3), Tol::EXACT)];
    let x = random(&[1, 2, 3, 4], 220);
    let want = T::new(&[2, 12], x.data.clone());
    cases.push(tflite_unary("RESHAPE to [2,-1] (shape input)", &x, &want, Tol::EXACT, |b, xi, y| {
        let shape = b.constant_i32("shape", &[2], &[2, -1]);
        b.op(Op::RESHAPE, &[xi, shape], &[y], Options::Reshape { new_shape: Some(vec![2, -1]) });
    }));
    cases.push(tflite_unary("RESHAPE to [-1,12] (options only)", &x, &want, Tol::EXACT, |b, xi, y| {
        b.op(Op::RESHAPE, &[xi], &[y], Options::Reshape { new_shape: Some(vec![-1, 12]) });
    }));
    let x = random(&[2, 3, 4, 5], 230);
    cases.push(tflite_unary("TRANSPOSE [0,3,1,2]", &x, &r::transpose(&x, &[0, 3, 1, 2]), Tol::EXACT, |b, xi, y| {
        let perm = b.constant_i32("perm", &[4], &[0, 3, 1, 2]);
        b.op(Op::TRANSPOSE, &[xi, perm], &[y], Options::None);
    }));
    let pads: Vec<i32> = PADS.iter().flat_map(|p| [p[0] as i32, p[1] as i32]).collect();
    let x = random(&[1, 3, 4, 2], 240);
    let rows = [
        ("PAD", Op::PAD, Fill::Value(0.0), Options::None),
        ("PADV2 -3.5", Op::PADV2, Fill::Value(-3.5), Options::None),
        ("MIRROR_PAD REFLECT", Op::MIRROR_PAD, Fill::Reflect, Options::MirrorPad { mode: MirrorPadMode::REFLECT }),
        ("MIRROR_PAD SYMMETRIC", Op::MIRROR_PAD, Fill::Symmetric, Options::MirrorPad { mode: MirrorPadMode::SYMMETRIC }),
    ];
    for (name, code, fill, options) in rows {
        let case = tflite_unary(name, &x, &r::pad(&x, &PADS, fill), Tol::EXACT, |b, xi, y| {
            let p = b.constant_i32("paddings", &[4, 2], &pads);
            let mut inputs = vec![xi, p];
            if let (Op::PADV2, Fill::Value(v)) = (code, fill) {
                inputs.push(b.constant_f32("value", &[], &[v]));
            }
            b.op(code, &inputs, &[y], options);
        });
        cases.push(if code == Op::MIRROR_PAD { case.no_gpu("no MirrorPad kernel") } else { case });
    }
    cases
}

/// The GPU's data movement against the cpu, bit for bit.
fn gpu_cases() -> Vec<Case> {
    // Three inputs, one constant, with a fused relu (the cpu has none: relu after concat there).
    let concat3 = |act: Activation, then_relu: bool| {
        let mut g = Graph::new();
        let a = g.input(&[2, 3, 4], noise(&[2, 3, 4], 130));
        let b = g.konst(&[2, 1, 4], noise(&[2, 1, 4], 131));
        let c = g.input(&[2, 2, 4], noise(&[2, 2, 4], 132));
        let t = if then_relu { g.tensor(DType::F32, &[2, 6, 4]) } else { g.out(DType::F32, &[2, 6, 4]) };
        g.op(OpKind::Concatenation { axis: 1, act }, &[Some(a), Some(b), Some(c)], &[t]);
        if then_relu {
            let o = g.out(DType::F32, &[2, 6, 4]);
            g.op(OpKind::Unary(UnaryOp::Relu), &[Some(t)], &[o]);
        }
        g
    };
    let cpu_has_no_fused_concat = "cpu: no fused activation on Concatenation";
    let mut cases = vec![Case::new("gpu concat axis 1 relu", &concat3(Activation::Relu, false))
        .same_as_cpu_of(&concat3(Activation::None, true), Tol::EXACT)
        .skip(&[nnrt_tests::Target::Cpu1, nnrt_tests::Target::Cpu2], cpu_has_no_fused_concat)];
    let mut g = Graph::new();
    let a = g.input(&[3, 2], noise(&[3, 2], 133));
    let b = g.input(&[3, 5], noise(&[3, 5], 134));
    let o = g.out(DType::F32, &[3, 7]);
    g.op(OpKind::Concatenation { axis: -1, act: Activation::None }, &[Some(a), Some(b)], &[o]);
    cases.push(Case::new("gpu concat axis -1", &g).same_as_cpu(Tol::EXACT));
    // int32 data moves as 4-byte words.
    let mut g = Graph::new();
    let a = g.input(&[2, 2], i(&[1, -2, 3, i32::MIN]));
    let b = g.input(&[2, 1], i(&[i32::MAX, 7]));
    let o = g.out(DType::I32, &[2, 3]);
    g.op(OpKind::Concatenation { axis: 1, act: Activation::None }, &[Some(a), Some(b)], &[o]);
    cases.push(Case::new("gpu concat int32", &g).same_as_cpu(Tol::EXACT));
    let g = one_op(OpKind::Pad, (&[1, 3, 3, 2], noise(&[1, 3, 3, 2], 135)), &[(&[4, 2], i(&[0, 0, 1, 2, 2, 0, 0, 1]))], (DType::F32, &[1, 6, 5, 3]));
    cases.push(Case::new("gpu pad zeros", &g).same_as_cpu(Tol::EXACT));
    let g = one_op(OpKind::Pad, (&[2, 3], noise(&[2, 3], 136)), &[(&[2, 2], i(&[1, 0, 2, 1])), (&[], f(&[-7.5]))], (DType::F32, &[3, 6]));
    cases.push(Case::new("gpu pad with a value", &g).same_as_cpu(Tol::EXACT));
    // NHWC -> NCHW and back: the layout permutes partitions would need.
    let mut g = Graph::new();
    let x = g.input(&[2, 3, 4, 5], noise(&[2, 3, 4, 5], 137));
    let perm = g.ints(&[0, 3, 1, 2]);
    let t = g.tensor(DType::F32, &[2, 5, 3, 4]);
    g.op(OpKind::Transpose, &[Some(x), Some(perm)], &[t]);
    let back = g.ints(&[0, 2, 3, 1]);
    let o = g.out(DType::F32, &[2, 3, 4, 5]);
    g.op(OpKind::Transpose, &[Some(t), Some(back)], &[o]);
    let o2 = g.out(DType::F32, &[2, 5, 3, 4]);
    g.op(OpKind::Unary(UnaryOp::Relu), &[Some(t)], &[o2]);
    cases.push(Case::new("gpu transpose there and back", &g).same_as_cpu(Tol::EXACT));
    // Reshape and squeeze alias their input's buffer; the aliased tensor is also read back.
    let mut g = Graph::new();
    let x = g.input(&[1, 4, 6], noise(&[1, 4, 6], 138));
    let r = g.out(DType::F32, &[4, 6]);
    g.op(OpKind::Reshape { new_shape: Some(vec![4, 6]) }, &[Some(x)], &[r]);
    let s = g.out(DType::F32, &[4, 6]);
    g.op(OpKind::Unary(UnaryOp::Neg), &[Some(r)], &[s]);
    cases.push(Case::new("gpu reshape alias", &g).same_as_cpu(Tol::EXACT));
    cases
}

/// `neg_` cases of the builtins added after the first op set (their values are checked against
/// LiteRT by `tests/builtin_oneop.rs`): bad options, shapes or types fail at prepare naming the
/// op and the rule.
fn later_builtin_neg_cases() -> Vec<Case> {
    let rows = [
        ("neg_broadcast_to_incompatible_shape", OpKind::BroadcastTo, vec![z(F, &[3, 2]), ints(&[2], &[3, 4])], (F, &[3, 4][..]), ["BroadcastTo", "does not broadcast"]),
        ("neg_reverse_sequence_same_seq_and_batch_dim", OpKind::ReverseSequence { seq_dim: 0, batch_dim: 0 }, vec![z(F, &[2, 3]), ints(&[2], &[1, 2])], (F, &[2, 3]), ["ReverseSequence", "distinct"]),
        ("neg_matrix_set_diag_wrong_diagonal", OpKind::MatrixSetDiag, vec![z(F, &[2, 3, 4]), z(F, &[2, 4])], (F, &[2, 3, 4]), ["MatrixSetDiag", "expected"]),
    ];
    rows.into_iter().map(|(name, kind, args, out, needles)| Case::new(name, &Graph::one_op(kind, &args, &[out])).prepare_error(&needles)).collect()
}

/// `neg_` cases through the TFLite reader (which must load them): a permutation that is not
/// one, an axis out of range, a reshape to another element count.
fn tflite_neg_cases() -> Vec<Case> {
    let mut b = ModelBuilder::new();
    let a = b.input("a", TensorType::FLOAT32, &[1, 2, 3, 4]);
    let c = b.input("c", TensorType::FLOAT32, &[1, 2, 3, 4]);
    let y = b.tensor("y", TensorType::FLOAT32, &[1, 2, 3, 8]);
    b.op(Op::CONCATENATION, &[a, c], &[y], Options::Concatenation { axis: 4, act: Act::NONE });
    b.output(y);
    let concat = Case::tflite("neg_prepare_concat_bad_axis", &b, vec![]).prepare_error(&["Concatenation", "axis 4 is out of range"]);
    let x = T::new(&[1, 4, 5, 3], vec![0.0; 60]);
    let transpose = tflite_unary("neg_prepare_transpose_bad_perm", &x, &T::new(&[1, 4, 4, 3], vec![0.0; 48]), Tol::EXACT, |b, xi, y| {
        let perm = b.constant_i32("perm", &[4], &[0, 1, 1, 3]);
        b.op(Op::TRANSPOSE, &[xi, perm], &[y], Options::None);
    });
    let reshape = tflite_unary("neg_prepare_reshape_wrong_count", &x, &T::new(&[7, 9], vec![0.0; 63]), Tol::EXACT, |b, xi, y| {
        let shape = b.constant_i32("shape", &[2], &[7, 9]);
        b.op(Op::RESHAPE, &[xi, shape], &[y], Options::None);
    });
    vec![concat, transpose.prepare_error(&["Transpose", "not a permutation"]), reshape.prepare_error(&["Reshape", "cannot reshape", "60 elements"])]
}
