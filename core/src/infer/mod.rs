//! Shape inference: a function of each op kind from its input shapes (and constant inputs) to its
//! output shapes. Run when a graph is prepared and again when the caller changes input shapes.
//! The rules live with their op families in [`crate::ops`]; this module runs them over a graph.

mod cx;
mod values;

pub use crate::ops::conv::{window_output, Window};
pub use crate::ops::elementwise::broadcast_shapes;
pub use crate::ops::lstm::{bilstm_inputs, bilstm_params, lstm_dims, LstmDims};
pub use crate::ops::rnn::{svdf_dims, SvdfDims};
pub use crate::ops::select::unique_keys;
pub use crate::ops::slice::{strided_slice_plan, SlicePlan};

pub(crate) use cx::Cx;

use crate::shape::fmt_dims;
use crate::{CompileError, OpId, OperandId, Subgraph, TensorArena};

/// Computes the output shapes of op `id` from the shapes known so far (`shapes[operand]`).
/// Ops whose outputs cannot be derived (custom ops, control flow) return the declared shapes.
/// An op whose output shape depends on the values of a non-constant tensor gives
/// [`CompileError::ValueDependent`].
pub fn infer_op(g: &Subgraph, id: OpId, shapes: &[Option<Vec<usize>>]) -> Result<Vec<Vec<usize>>, CompileError> {
    rule(&Cx::at_prepare(g, id, shapes, &[]))
}

/// Run-time shape inference: the output shapes of op `id` from the current dims and contents
/// of the tensors in `arena`, and the non-constant operands whose values decided them.
pub fn infer_op_at_run(g: &Subgraph, id: OpId, arena: &TensorArena) -> Result<(Vec<Vec<usize>>, Vec<OperandId>), CompileError> {
    let cx = Cx::at_run(g, id, arena);
    let outs = rule(&cx)?;
    Ok((outs, cx.into_reads()))
}

/// The op's rule, found through its family.
fn rule(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    cx.op.kind.spec().ok_or_else(|| cx.unlisted())?.infer(cx)
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
    // Values of small integer tensors computed from static shapes (reshape targets).
    let mut values: Vec<Option<Vec<u8>>> = vec![None; g.operands.len()];
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
            None => rule(&Cx::at_prepare(g, id, &shapes, &values)).map(|v| v.into_iter().map(Some).collect()),
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
        if let Some(vals) = values::evaluate(g, id, &shapes, &values) {
            for (&o, v) in op.outputs.iter().zip(vals) {
                values[o.index()] = Some(v);
            }
        }
    }
    let dims = shapes.into_iter().zip(&g.operands).map(|(s, o)| s.unwrap_or_else(|| o.default_dims.clone())).collect();
    Ok(Inferred { dims, dynamic })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConstData, DType, OpKind, Operand, Operation};

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
