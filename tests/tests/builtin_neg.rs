//! `neg_` cases of the builtins added after the first op set: bad options, shapes or types must
//! fail at prepare with a compile error naming the op and the rule; bad index values computed
//! at run time must fail at run with a kernel error naming the op. One-op models in IR.

use nnrt::{DType, Error, Session};
use nnrt_core::{
    Activation, BitwiseOp, ConstData, LocalResponseNorm, Model, OpKind, Operand, OperandId, Operation, Rnn, SegmentOp, Subgraph, Svdf,
};

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

    fn ints(&mut self, dims: &[usize], v: &[i32]) -> OperandId {
        self.konst(DType::I32, dims, v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }

    fn tensor(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        self.g.add_operand(Operand::new("t", dtype, dims))
    }

    /// Adds the op with outputs of the given types and dims; they become graph outputs.
    fn op(mut self, kind: OpKind, inputs: &[Option<OperandId>], outs: &[(DType, &[usize])]) -> Session {
        let outputs: Vec<OperandId> = outs.iter().map(|(t, d)| self.tensor(*t, d)).collect();
        self.g.add_op(Operation { kind, inputs: inputs.to_vec(), outputs: outputs.clone() });
        self.g.outputs = outputs;
        let model = Model { subgraphs: vec![self.g], source: "builtin_neg".into(), ..Model::default() };
        let mut s = Session::from_model(model).expect("model");
        s.set_backends("cpu").unwrap();
        s
    }
}

/// Prepare must fail with a compile error whose message names the op and contains `rule`.
fn expect_prepare_error(mut s: Session, op: &str, rule: &str) {
    match s.prepare() {
        Err(e @ Error::Compile(_)) => {
            let msg = e.to_string();
            assert!(msg.contains(op) && msg.contains(rule), "prepare error should name {op:?} and {rule:?}: {msg}");
        }
        other => panic!("expected a compile error naming {op}, got {other:?}"),
    }
}

const F: DType = DType::F32;

#[test]
fn neg_add_n_inputs_of_different_shapes() {
    let mut g = G::default();
    let (a, b) = (g.input(F, &[2, 3]), g.input(F, &[3, 2]));
    expect_prepare_error(g.op(OpKind::AddN, &[Some(a), Some(b)], &[(F, &[2, 3])]), "AddN", "every input must match");
}

#[test]
fn neg_atan2_does_not_broadcast() {
    let mut g = G::default();
    let (y, x) = (g.input(F, &[2, 3]), g.input(F, &[1, 3]));
    expect_prepare_error(g.op(OpKind::Atan2, &[Some(y), Some(x)], &[(F, &[2, 3])]), "Atan2", "does not broadcast");
}

#[test]
fn neg_bitwise_xor_of_floats() {
    let mut g = G::default();
    let (a, b) = (g.input(F, &[4]), g.input(F, &[4]));
    expect_prepare_error(g.op(OpKind::Bitwise(BitwiseOp::Xor), &[Some(a), Some(b)], &[(F, &[4])]), "BitwiseXor", "expected");
}

#[test]
fn neg_right_shift_shapes_not_broadcastable() {
    let mut g = G::default();
    let (a, b) = (g.input(DType::I32, &[4]), g.input(DType::I32, &[3]));
    expect_prepare_error(g.op(OpKind::Bitwise(BitwiseOp::RightShift), &[Some(a), Some(b)], &[(DType::I32, &[4])]), "RightShift", "cannot be broadcast");
}

#[test]
fn neg_bucketize_unsorted_boundaries() {
    let mut g = G::default();
    let x = g.input(F, &[4]);
    expect_prepare_error(g.op(OpKind::Bucketize { boundaries: vec![1.0, 0.0] }, &[Some(x)], &[(DType::I32, &[4])]), "Bucketize", "sorted");
}

#[test]
fn neg_lrn_negative_radius() {
    let mut g = G::default();
    let x = g.input(F, &[1, 2, 2, 4]);
    let p = LocalResponseNorm { radius: -1, bias: 1.0, alpha: 1.0, beta: 0.5 };
    expect_prepare_error(g.op(OpKind::LocalResponseNorm(p), &[Some(x)], &[(F, &[1, 2, 2, 4])]), "LocalResponseNormalization", "radius");
}

#[test]
fn neg_broadcast_to_incompatible_shape() {
    let mut g = G::default();
    let x = g.input(F, &[3, 2]);
    let s = g.ints(&[2], &[3, 4]);
    expect_prepare_error(g.op(OpKind::BroadcastTo, &[Some(x), Some(s)], &[(F, &[3, 4])]), "BroadcastTo", "does not broadcast");
}

#[test]
fn neg_scatter_nd_updates_do_not_fit() {
    let mut g = G::default();
    let ix = g.input(DType::I32, &[2, 1]);
    let up = g.input(F, &[2, 4]);
    let s = g.ints(&[2], &[5, 3]);
    expect_prepare_error(g.op(OpKind::ScatterNd, &[Some(ix), Some(up), Some(s)], &[(F, &[5, 3])]), "ScatterNd", "do not fit");
}

#[test]
fn neg_segment_sum_ids_not_sorted() {
    let mut g = G::default();
    let x = g.input(F, &[3, 2]);
    let ids = g.ints(&[3], &[0, 2, 1]);
    expect_prepare_error(g.op(OpKind::SegmentSum, &[Some(x), Some(ids)], &[(F, &[3, 2])]), "SegmentSum", "rise by 0 or 1");
}

#[test]
fn neg_unsorted_segment_id_past_num_segments() {
    let mut g = G::default();
    let x = g.input(F, &[3, 2]);
    let ids = g.ints(&[3], &[0, 4, 1]);
    let n = g.ints(&[], &[3]);
    let kind = OpKind::UnsortedSegment(SegmentOp::Max);
    expect_prepare_error(g.op(kind, &[Some(x), Some(ids), Some(n)], &[(F, &[3, 2])]), "UnsortedSegmentMax", "not below num_segments");
}

#[test]
fn neg_reverse_sequence_same_seq_and_batch_dim() {
    let mut g = G::default();
    let x = g.input(F, &[2, 3]);
    let l = g.ints(&[2], &[1, 2]);
    expect_prepare_error(g.op(OpKind::ReverseSequence { seq_dim: 0, batch_dim: 0 }, &[Some(x), Some(l)], &[(F, &[2, 3])]), "ReverseSequence", "distinct");
}

#[test]
fn neg_sparse_to_dense_indices_of_rank_3() {
    let mut g = G::default();
    let ix = g.input(DType::I32, &[1, 1, 2]);
    let s = g.ints(&[2], &[3, 3]);
    let v = g.input(F, &[1]);
    let d = g.input(F, &[]);
    let kind = OpKind::SparseToDense { validate_indices: false };
    expect_prepare_error(g.op(kind, &[Some(ix), Some(s), Some(v), Some(d)], &[(F, &[3, 3])]), "SparseToDense", "rank <= 2");
}

#[test]
fn neg_dynamic_update_slice_update_larger_than_operand() {
    let mut g = G::default();
    let x = g.input(F, &[2, 2]);
    let u = g.input(F, &[3, 1]);
    let s = g.input(DType::I32, &[2]);
    expect_prepare_error(g.op(OpKind::DynamicUpdateSlice, &[Some(x), Some(u), Some(s)], &[(F, &[2, 2])]), "DynamicUpdateSlice", "fit");
}

#[test]
fn neg_matrix_set_diag_wrong_diagonal() {
    let mut g = G::default();
    let x = g.input(F, &[2, 3, 4]);
    let d = g.input(F, &[2, 4]);
    expect_prepare_error(g.op(OpKind::MatrixSetDiag, &[Some(x), Some(d)], &[(F, &[2, 3, 4])]), "MatrixSetDiag", "expected");
}

#[test]
fn neg_nms_boxes_not_four_wide() {
    let mut g = G::default();
    let b = g.input(F, &[5, 3]);
    let sc = g.input(F, &[5]);
    let m = g.ints(&[], &[2]);
    let (iou, thr) = (g.input(F, &[]), g.input(F, &[]));
    let kind = OpKind::NonMaxSuppression { v5: false };
    let s = g.op(kind, &[Some(b), Some(sc), Some(m), Some(iou), Some(thr)], &[(DType::I32, &[2]), (DType::I32, &[])]);
    expect_prepare_error(s, "NonMaxSuppressionV4", "[n, 4]");
}

#[test]
fn neg_unique_of_a_matrix() {
    let mut g = G::default();
    let x = g.input(DType::I32, &[2, 2]);
    expect_prepare_error(g.op(OpKind::Unique, &[Some(x)], &[(DType::I32, &[4]), (DType::I32, &[4])]), "Unique", "rank 1");
}

#[test]
fn neg_embedding_lookup_table_of_rank_1() {
    let mut g = G::default();
    let ix = g.input(DType::I32, &[2]);
    let t = g.input(F, &[5]);
    expect_prepare_error(g.op(OpKind::EmbeddingLookup, &[Some(ix), Some(t)], &[(F, &[2])]), "EmbeddingLookup", "rank >= 2");
}

#[test]
fn neg_svdf_rank_not_dividing_the_filters() {
    let mut g = G::default();
    let x = g.input(F, &[1, 3]);
    let wf = g.input(F, &[5, 3]);
    let wt = g.input(F, &[5, 2]);
    let st = g.input(F, &[1, 10]);
    let kind = OpKind::Svdf(Svdf { rank: 2, act: Activation::None, asymmetric_quantize_inputs: false });
    expect_prepare_error(g.op(kind, &[Some(x), Some(wf), Some(wt), None, Some(st)], &[(F, &[1, 2])]), "Svdf", "divide");
}

#[test]
fn neg_rnn_recurrent_weights_of_the_wrong_size() {
    let mut g = G::default();
    let x = g.input(F, &[2, 3]);
    let w = g.input(F, &[4, 3]);
    let r = g.input(F, &[4, 3]);
    let b = g.input(F, &[4]);
    let h = g.input(F, &[2, 4]);
    let kind = OpKind::Rnn(Rnn { act: Activation::Tanh, time_major: false, asymmetric_quantize_inputs: false });
    expect_prepare_error(g.op(kind, &[Some(x), Some(w), Some(r), Some(b), Some(h)], &[(F, &[2, 4])]), "Rnn", "recurrent weights");
}

#[test]
fn neg_embedding_lookup_index_out_of_range_fails_at_run() {
    let mut g = G::default();
    let ix = g.input(DType::I32, &[2]);
    let t = g.konst(F, &[3, 2], [0f32; 6].iter().flat_map(|x| x.to_le_bytes()).collect());
    let mut s = g.op(OpKind::EmbeddingLookup, &[Some(ix), Some(t)], &[(F, &[2, 2])]);
    s.prepare().unwrap();
    s.set_input(0, &[0, 0, 0, 0, 3, 0, 0, 0]).unwrap();
    match s.run() {
        Err(e @ Error::Run(_)) => {
            let msg = e.to_string();
            assert!(msg.contains("EmbeddingLookup") && msg.contains("out of bounds"), "{msg}");
        }
        other => panic!("expected a run error, got {other:?}"),
    }
    // The session stays usable with valid indices.
    s.set_input(0, &[2, 0, 0, 0, 1, 0, 0, 0]).unwrap();
    s.run().unwrap();
}
