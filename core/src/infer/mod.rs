//! Shape inference: a function of each op kind from its input shapes (and constant inputs) to its
//! output shapes. Run when a graph is prepared and again when the caller changes input shapes.

mod arith;
mod conv;
mod elementwise;
mod generate;
mod lstm;
mod matrix;
mod movement;
mod rnn;
mod scatter;
mod select;
mod shape_ops;

pub use conv::{window_output, Window};
pub use lstm::{lstm_dims, LstmDims};
pub use movement::{strided_slice_plan, SlicePlan};
pub use elementwise::broadcast_shapes;
pub use rnn::{bilstm_inputs, bilstm_params, svdf_dims, SvdfDims};
pub use select::unique_keys;

use std::cell::RefCell;

use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpId, OpKind, Operation, OperandId, Subgraph, TensorArena};

/// Where a rule finds its inputs' shapes, and the values of non-constant inputs.
#[derive(Clone, Copy)]
enum Known<'a> {
    /// At prepare: the shapes inferred so far (`None` where unknown); no values.
    Prepare(&'a [Option<Vec<usize>>]),
    /// At run time: the tensors themselves.
    Run(&'a TensorArena),
}

/// What an inference rule sees: the op, its subgraph and the shapes known so far.
pub(crate) struct Cx<'a> {
    pub g: &'a Subgraph,
    pub id: OpId,
    pub op: &'a Operation,
    known: Known<'a>,
    /// Non-constant operands whose values the rule read (at run time).
    reads: RefCell<Vec<OperandId>>,
}

impl<'a> Cx<'a> {
    fn kind(&self) -> String {
        self.op.kind.name().to_string()
    }

    /// An error about the op as a whole.
    pub fn err(&self, reason: impl Into<String>) -> CompileError {
        CompileError::InvalidOp { op: self.id, kind: self.kind(), reason: reason.into() }
    }

    /// An error about input `i`.
    pub fn input_err(&self, i: usize, reason: impl Into<String>) -> CompileError {
        let operand = self.op.input(i).unwrap_or(OperandId(u32::MAX));
        CompileError::InvalidOperand { op: self.id, kind: self.kind(), operand, reason: reason.into() }
    }

    /// The id of required input `i`.
    pub fn input_id(&self, i: usize) -> Result<OperandId, CompileError> {
        self.op.input(i).ok_or_else(|| self.err(format!("input {i} is required but absent")))
    }

    /// The shape of required input `i`.
    pub fn input(&self, i: usize) -> Result<&'a [usize], CompileError> {
        let id = self.input_id(i)?;
        let shape = match self.known {
            Known::Prepare(shapes) => shapes.get(id.index()).and_then(|s| s.as_deref()),
            Known::Run(arena) => arena.all_dims().get(id.index()).map(Vec::as_slice),
        };
        shape.ok_or_else(|| self.input_err(i, "its shape is not known when this op runs"))
    }

    /// The bytes of input `i` whose values decide the output shape: its constant data, or at run
    /// time the tensor's current contents. At prepare, a non-constant input gives
    /// [`CompileError::ValueDependent`], which makes the outputs dynamic.
    fn value_bytes(&self, i: usize) -> Result<(OperandId, &'a [u8]), CompileError> {
        let id = self.input_id(i)?;
        if let Some(d) = &self.g.operand(id).data {
            return Ok((id, d.bytes()));
        }
        match self.known {
            Known::Prepare(_) => Err(CompileError::ValueDependent { op: self.id, kind: self.kind(), operand: id }),
            Known::Run(arena) => {
                let bytes = arena.bytes(id).ok_or_else(|| self.input_err(i, "its values are not in memory"))?;
                let mut reads = self.reads.borrow_mut();
                if !reads.contains(&id) {
                    reads.push(id);
                }
                Ok((id, bytes))
            }
        }
    }

    /// The shape of input `i` when present.
    pub fn opt_input(&self, i: usize) -> Result<Option<&'a [usize]>, CompileError> {
        match self.op.input(i) {
            Some(_) => self.input(i).map(Some),
            None => Ok(None),
        }
    }

    /// The type of required input `i`.
    pub fn dtype(&self, i: usize) -> Result<DType, CompileError> {
        Ok(self.g.operand(self.input_id(i)?).dtype)
    }

    /// The integer values of input `i`: a constant, or (at run time) a computed tensor.
    pub fn const_ints(&self, i: usize) -> Result<Vec<i64>, CompileError> {
        let (id, bytes) = self.value_bytes(i)?;
        match self.g.operand(id).dtype {
            DType::I32 => Ok(bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
            DType::I64 => Ok(bytes.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()),
            other => Err(self.input_err(i, format!("must hold int32 or int64 values, not {other}"))),
        }
    }

    /// Checks that input `i` has `rank` dims.
    pub fn expect_rank(&self, i: usize, rank: usize) -> Result<&'a [usize], CompileError> {
        let s = self.input(i)?;
        if s.len() != rank {
            return Err(self.input_err(i, format!("expected rank {rank}, got shape {}", fmt_dims(s))));
        }
        Ok(s)
    }

    /// The type of output `k`.
    pub fn out_dtype(&self, k: usize) -> Result<DType, CompileError> {
        let id = self.op.outputs.get(k).ok_or_else(|| self.err(format!("output {k} is missing")))?;
        Ok(self.g.operand(*id).dtype)
    }

    /// An error about output `k`.
    pub fn out_err(&self, k: usize, reason: impl Into<String>) -> CompileError {
        let operand = self.op.outputs.get(k).copied().unwrap_or(OperandId(u32::MAX));
        CompileError::InvalidOperand { op: self.id, kind: self.kind(), operand, reason: reason.into() }
    }

    /// Checks that output `k` has type `want`.
    pub fn expect_out_dtype(&self, k: usize, want: DType) -> Result<(), CompileError> {
        let got = self.out_dtype(k)?;
        if got != want {
            return Err(self.out_err(k, format!("has type {got}; this op produces {want}")));
        }
        Ok(())
    }

    /// Checks that input `i` has one of the types in `allowed`.
    pub fn expect_dtype(&self, i: usize, allowed: &[DType]) -> Result<DType, CompileError> {
        let t = self.dtype(i)?;
        if !allowed.contains(&t) {
            let names: Vec<String> = allowed.iter().map(|d| d.to_string()).collect();
            return Err(self.input_err(i, format!("has type {t}; expected {}", names.join(" or "))));
        }
        Ok(t)
    }

    /// The single integer of constant input `i` (a scalar or a one-element tensor).
    pub fn const_scalar(&self, i: usize) -> Result<i64, CompileError> {
        let v = self.const_ints(i)?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(self.input_err(i, format!("must hold one integer, holds {}", v.len()))),
        }
    }

    /// The values of constant numeric input `i` as f64 (any integer or float type).
    pub fn const_f64s(&self, i: usize) -> Result<Vec<f64>, CompileError> {
        let (id, b) = self.value_bytes(i)?;
        Ok(match self.g.operand(id).dtype {
            DType::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
            DType::I32 => b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
            DType::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f64).collect(),
            other => return Err(self.input_err(i, format!("has type {other}; expected float32, int32 or int64"))),
        })
    }

    /// Checks that the op has `n` outputs.
    pub fn expect_outputs(&self, n: usize) -> Result<(), CompileError> {
        if self.op.outputs.len() != n {
            return Err(self.err(format!("has {} outputs; its options ask for {n}", self.op.outputs.len())));
        }
        Ok(())
    }

    /// Normalizes a possibly negative axis for a tensor of `rank` dims.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize, CompileError> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r.max(1) {
            return Err(self.err(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(a as usize)
    }
}

/// Computes the output shapes of op `id` from the shapes known so far (`shapes[operand]`).
/// Ops whose outputs cannot be derived (custom ops, control flow) return the declared shapes.
/// An op whose output shape depends on the values of a non-constant tensor gives
/// [`CompileError::ValueDependent`].
pub fn infer_op(g: &Subgraph, id: OpId, shapes: &[Option<Vec<usize>>]) -> Result<Vec<Vec<usize>>, CompileError> {
    rule(&Cx { g, id, op: g.op(id), known: Known::Prepare(shapes), reads: RefCell::new(Vec::new()) })
}

/// Run-time shape inference: the output shapes of op `id` from the current dims and contents
/// of the tensors in `arena`, and the non-constant operands whose values decided them.
pub fn infer_op_at_run(g: &Subgraph, id: OpId, arena: &TensorArena) -> Result<(Vec<Vec<usize>>, Vec<OperandId>), CompileError> {
    let cx = Cx { g, id, op: g.op(id), known: Known::Run(arena), reads: RefCell::new(Vec::new()) };
    let outs = rule(&cx)?;
    Ok((outs, cx.reads.into_inner()))
}

fn rule(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    let op = cx.op;
    let one = |s: Vec<usize>| Ok(vec![s]);
    match &op.kind {
        OpKind::Conv2D(p) => one(conv::conv2d(cx, p)?),
        OpKind::Conv3D(p) => one(conv::conv3d(cx, p)?),
        OpKind::Conv3DTranspose(p) => one(conv::conv3d_transpose(cx, p)?),
        OpKind::DepthwiseConv2D(p) => one(conv::depthwise(cx, p)?),
        OpKind::Pool2D(p) => one(conv::pool(cx, p)?),
        OpKind::FullyConnected(p) => one(shape_ops::fully_connected(cx, p)?),
        OpKind::Binary { .. } => one(elementwise::binary(cx)?),
        OpKind::Unary(u) => one(elementwise::unary(cx, *u)?),
        OpKind::Dequantize | OpKind::Quantize => one(cx.input(0)?.to_vec()),
        OpKind::Softmax { .. } => one(elementwise::softmax(cx)?),
        OpKind::Reduce { keep_dims, .. } => one(shape_ops::reduce(cx, *keep_dims)?),
        OpKind::Concatenation { axis, .. } => one(shape_ops::concat(cx, *axis)?),
        OpKind::Reshape { new_shape } => one(shape_ops::reshape(cx, new_shape.as_deref())?),
        OpKind::Transpose => one(shape_ops::transpose(cx)?),
        OpKind::Pad | OpKind::MirrorPad(_) => one(shape_ops::pad(cx)?),
        OpKind::TransposeConv(p) => one(conv::transpose_conv(cx, p)?),
        OpKind::BatchMatMul { adj_x, adj_y } => one(shape_ops::batch_matmul(cx, *adj_x, *adj_y)?),
        OpKind::Compare(_) => one(elementwise::compare(cx)?),
        OpKind::Logical(_) => one(elementwise::logical(cx)?),
        OpKind::Prelu => one(elementwise::prelu(cx)?),
        OpKind::Select { v2 } => one(elementwise::select(cx, *v2)?),
        OpKind::LogSoftmax | OpKind::L2Normalization { .. } => one(elementwise::softmax(cx)?),
        OpKind::Cast => one(cx.input(0)?.to_vec()),
        OpKind::ArgMinMax { .. } => one(shape_ops::arg_min_max(cx)?),
        OpKind::Split { num_splits } => movement::split(cx, *num_splits),
        OpKind::SplitV { num_splits } => movement::split_v(cx, *num_splits),
        OpKind::Pack { axis, count } => one(movement::pack(cx, *axis, *count)?),
        OpKind::Unpack { axis, num } => movement::unpack(cx, *axis, *num),
        OpKind::Squeeze { axes } => one(movement::squeeze(cx, axes)?),
        OpKind::ExpandDims => one(movement::expand_dims(cx)?),
        OpKind::Slice => one(movement::slice(cx)?),
        OpKind::StridedSlice(p) => one(movement::strided_slice(cx, p)?.out_dims),
        OpKind::Gather { axis, batch_dims } => one(movement::gather(cx, *axis, *batch_dims)?),
        OpKind::GatherNd => one(movement::gather_nd(cx)?),
        OpKind::Tile => one(movement::tile(cx)?),
        OpKind::ReverseV2 => one(movement::reverse(cx)?),
        OpKind::Cumsum { .. } => one(movement::cumsum(cx)?),
        OpKind::Resize(_) => one(conv::resize(cx)?),
        OpKind::SpaceToDepth { block } => one(conv::space_to_depth(cx, *block)?),
        OpKind::DepthToSpace { block } => one(conv::depth_to_space(cx, *block)?),
        OpKind::BatchToSpaceNd => one(conv::batch_to_space(cx)?),
        OpKind::SpaceToBatchNd => one(conv::space_to_batch(cx)?),
        OpKind::Fill => one(generate::fill(cx)?),
        OpKind::Range => one(generate::range(cx)?),
        OpKind::Shape => one(generate::shape(cx)?),
        OpKind::Rank => one(generate::rank(cx)?),
        OpKind::ZerosLike | OpKind::OnesLike => one(generate::like(cx)?),
        OpKind::OneHot { axis } => one(generate::one_hot(cx, *axis)?),
        OpKind::TopKV2 => generate::top_k(cx),
        OpKind::UnidirectionalSequenceLstm(p) => one(lstm::sequence_lstm(cx, p)?.out_dims),
        OpKind::AddN => one(arith::add_n(cx)?),
        OpKind::Atan2 => one(arith::atan2(cx)?),
        OpKind::Bitwise(_) => one(arith::bitwise(cx)?),
        OpKind::Bucketize { boundaries } => one(arith::bucketize(cx, boundaries)?),
        OpKind::FakeQuant { min, max, num_bits, narrow_range } => one(arith::fake_quant(cx, *min, *max, *num_bits, *narrow_range)?),
        OpKind::LocalResponseNorm(p) => one(arith::lrn(cx, p)?),
        OpKind::BroadcastTo => one(arith::broadcast_to(cx)?),
        OpKind::BroadcastArgs => one(arith::broadcast_args(cx)?),
        OpKind::ScatterNd => one(scatter::scatter_nd(cx)?),
        OpKind::SparseToDense { .. } => one(scatter::sparse_to_dense(cx)?),
        OpKind::DynamicUpdateSlice => one(scatter::dynamic_update_slice(cx)?),
        OpKind::EmbeddingLookup => one(scatter::embedding_lookup(cx)?),
        OpKind::SegmentSum => one(scatter::segment_sum(cx)?),
        OpKind::UnsortedSegment(_) => one(scatter::unsorted_segment(cx)?),
        OpKind::Where => one(select::where_(cx)?),
        OpKind::Unique => select::unique(cx),
        OpKind::Rfft2d => one(elementwise::rfft2d(cx)?),
        OpKind::ComplexAbs | OpKind::Real | OpKind::Imag => one(elementwise::complex_part(cx)?),
        OpKind::NonMaxSuppression { v5 } => select::nms(cx, *v5),
        OpKind::MatrixDiag => one(matrix::matrix_diag(cx)?),
        OpKind::MatrixSetDiag => one(matrix::matrix_set_diag(cx)?),
        OpKind::ReverseSequence { seq_dim, batch_dim } => one(matrix::reverse_sequence(cx, *seq_dim, *batch_dim)?),
        OpKind::Rnn(p) => one(rnn::rnn(cx, p)?),
        OpKind::SequenceRnn(p) => one(rnn::sequence_rnn(cx, p)?),
        OpKind::Svdf(p) => one(rnn::svdf(cx, p)?),
        OpKind::BidirectionalSequenceLstm(p) => rnn::bidirectional_lstm(cx, p),
        OpKind::Custom { .. } | OpKind::If { .. } | OpKind::While { .. } => declared_outputs(cx),
    }
}

fn declared_outputs(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    cx.op
        .outputs
        .iter()
        .map(|&o| {
            let operand = cx.g.operand(o);
            operand.shape.concrete().ok_or_else(|| {
                cx.err(format!(
                    "output {o} has shape {} whose unknown dims cannot be inferred before running",
                    operand.shape
                ))
            })
        })
        .collect()
}

/// Every operand's dims after prepare-time inference. Dynamic operands (shapes that depend on
/// values computed at run time) have placeholder dims, their declared defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inferred {
    /// Concrete dims of every operand, indexed by id.
    pub dims: Vec<Vec<usize>>,
    /// Whether each operand's shape is known only at run time.
    pub dynamic: Vec<bool>,
}

impl Inferred {
    /// Whether some operand is dynamic.
    pub fn has_dynamic(&self) -> bool {
        self.dynamic.iter().any(|&d| d)
    }
}

/// Infers every operand's concrete shape for the given input dims (one per graph input) and checks
/// each against the shape the model declares. Returns the dims of every operand, indexed by id.
/// Fails with [`CompileError::ValueDependent`] where a shape depends on run-time values.
pub fn infer_graph(g: &Subgraph, input_dims: &[Vec<usize>]) -> Result<Vec<Vec<usize>>, CompileError> {
    infer_graph_impl(g, input_dims, &mut |_, _| None, false).map(|i| i.dims)
}

/// Rule for ops whose shapes depend on other subgraphs (control flow) or on backends (custom
/// ops): given an op and the shapes known so far, returns its output shapes (`None` for one
/// known only at run time), or `None` to use the op's own rule.
pub type ShapeHook<'h> = dyn FnMut(OpId, &[Option<Vec<usize>>]) -> Option<Result<Vec<Option<Vec<usize>>>, CompileError>> + 'h;

/// Infers every operand's shape for the given input dims, consulting `hook` first for every op.
/// An op whose output shapes depend on values computed at run time, or that reads a dynamic
/// operand, makes its outputs dynamic (IF and WHILE reading a dynamic operand are refused).
pub fn infer_graph_with(g: &Subgraph, input_dims: &[Vec<usize>], hook: &mut ShapeHook<'_>) -> Result<Inferred, CompileError> {
    infer_graph_impl(g, input_dims, hook, true)
}

fn infer_graph_impl(g: &Subgraph, input_dims: &[Vec<usize>], hook: &mut ShapeHook<'_>, allow_dynamic: bool) -> Result<Inferred, CompileError> {
    let mut shapes: Vec<Option<Vec<usize>>> = vec![None; g.operands.len()];
    let mut dynamic = vec![false; g.operands.len()];
    for (i, operand) in g.operands.iter().enumerate() {
        if operand.is_const() || operand.is_variable {
            shapes[i] = Some(operand.shape.concrete().unwrap_or_else(|| operand.default_dims.clone()));
        }
    }
    for (k, &id) in g.inputs.iter().enumerate() {
        let dims = input_dims.get(k).cloned().unwrap_or_else(|| g.operand(id).default_dims.clone());
        shapes[id.index()] = Some(dims);
    }
    // Only outputs of a static graph are checked against the file: once an input is resized, the
    // declared shapes of later tensors are stale by design.
    let resized = input_dims.iter().zip(&g.inputs).any(|(d, &i)| *d != g.operand(i).default_dims);
    for (i, op) in g.ops.iter().enumerate() {
        let id = OpId::new(i);
        if op.inputs.iter().flatten().any(|d| dynamic[d.index()]) {
            for &o in &op.outputs {
                dynamic[o.index()] = true;
            }
            continue;
        }
        let outs = match hook(id, &shapes) {
            Some(r) => r,
            None => infer_op(g, id, &shapes).map(|v| v.into_iter().map(Some).collect()),
        };
        let outs = match outs {
            Ok(outs) => outs,
            Err(CompileError::ValueDependent { .. }) if allow_dynamic => vec![None; op.outputs.len()],
            Err(e) => return Err(e),
        };
        for (&o, dims) in op.outputs.iter().zip(outs) {
            let Some(dims) = dims else {
                if !allow_dynamic {
                    return Err(CompileError::InvalidOperand {
                        op: id,
                        kind: op.kind.name().into(),
                        operand: o,
                        reason: "its shape is known only at run time".into(),
                    });
                }
                dynamic[o.index()] = true;
                continue;
            };
            let declared = &g.operand(o).shape;
            if !resized && declared.rank() > 0 && !declared.admits(&dims) {
                return Err(CompileError::ShapeMismatch {
                    op: id,
                    kind: op.kind.name().to_string(),
                    operand: o,
                    got: fmt_dims(&dims),
                    declared: declared.to_string(),
                });
            }
            shapes[o.index()] = Some(dims);
        }
    }
    let dims = shapes.into_iter().zip(&g.operands).map(|(s, o)| s.unwrap_or_else(|| o.default_dims.clone())).collect();
    Ok(Inferred { dims, dynamic })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConstData, Operand};

    /// FILL whose dims are a graph input: dynamic when preparing, an error for strict inference,
    /// and concrete at run time from the tensor's values (which are reported as read).
    #[test]
    fn value_dependent_shapes_are_dynamic_at_prepare_and_concrete_at_run() {
        let mut g = Subgraph::default();
        let dims = g.add_operand(Operand::new("dims", DType::I32, &[2]));
        let mut v = Operand::new("v", DType::F32, &[]);
        v.data = Some(ConstData::owned(1f32.to_le_bytes().to_vec()));
        let v = g.add_operand(v);
        let y = g.add_operand(Operand::new("y", DType::F32, &[1, 1]));
        let z = g.add_operand(Operand::new("z", DType::F32, &[1, 1]));
        g.add_op(Operation { kind: OpKind::Fill, inputs: vec![Some(dims), Some(v)], outputs: vec![y] });
        g.add_op(Operation { kind: OpKind::Unary(crate::UnaryOp::Abs), inputs: vec![Some(y)], outputs: vec![z] });
        g.inputs = vec![dims];
        g.outputs = vec![z];
        let inferred = infer_graph_with(&g, &[vec![2]], &mut |_, _| None).unwrap();
        assert_eq!(inferred.dynamic, vec![false, false, true, true], "FILL's output and what reads it are dynamic");
        assert!(matches!(infer_graph(&g, &[vec![2]]), Err(CompileError::ValueDependent { operand, .. }) if operand == dims));
        let mut arena = TensorArena::new(64, vec![Some(0..8), None, None, None], inferred.dims, vec![DType::I32, DType::F32, DType::F32, DType::F32]);
        arena.bytes_mut(dims).unwrap().copy_from_slice(&[3, 0, 0, 0, 5, 0, 0, 0]);
        let (outs, reads) = infer_op_at_run(&g, OpId(0), &arena).unwrap();
        assert_eq!((outs, reads), (vec![vec![3, 5]], vec![dims]));
    }
}
