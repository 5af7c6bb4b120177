//! Structural validation of a subgraph: indices in range, constants of the right size, op arity,
//! every operand written before it is read. Shape consistency is checked by [`crate::infer_graph`].

use crate::shape::num_elements;
use crate::{CompileError, Model, OpId, OpKind, OperandId, Subgraph, SubgraphId};

/// Inclusive range of input counts and exact output count an op kind accepts (`None` = any).
fn arity(kind: &OpKind) -> (usize, Option<usize>, Option<usize>) {
    match kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => (2, Some(3), Some(1)),
        OpKind::Pool2D(_) | OpKind::Unary(_) | OpKind::Softmax { .. } => (1, Some(1), Some(1)),
        OpKind::Dequantize | OpKind::Quantize => (1, Some(1), Some(1)),
        OpKind::Binary { .. } | OpKind::Reduce { .. } | OpKind::Transpose | OpKind::MirrorPad(_) => (2, Some(2), Some(1)),
        OpKind::Concatenation { .. } => (1, None, Some(1)),
        OpKind::Reshape { .. } => (1, Some(2), Some(1)),
        OpKind::Pad => (2, Some(3), Some(1)),
        OpKind::If { .. } => (1, None, None),
        OpKind::Custom { .. } | OpKind::While { .. } => (0, None, None),
    }
}

/// Validates every subgraph of `model`, including the subgraph ids control-flow ops name.
pub fn validate_model(model: &Model) -> Result<(), CompileError> {
    for g in &model.subgraphs {
        validate(g)?;
        for (i, op) in g.ops.iter().enumerate() {
            let named: &[SubgraphId] = match &op.kind {
                OpKind::If { then_branch, else_branch } => &[*then_branch, *else_branch],
                OpKind::While { cond, body } => &[*cond, *body],
                _ => &[],
            };
            for &s in named {
                if model.subgraph(s).is_none() {
                    return Err(CompileError::InvalidOp {
                        op: OpId::new(i),
                        kind: op.kind.name().to_string(),
                        reason: format!("names subgraph {s}, but the model has {}", model.subgraphs.len()),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Validates one subgraph's structure.
pub fn validate(g: &Subgraph) -> Result<(), CompileError> {
    let count = g.operands.len();
    for (what, list) in [("input", &g.inputs), ("output", &g.outputs)] {
        if let Some(&operand) = list.iter().find(|o| o.index() >= count) {
            return Err(CompileError::BadGraphIo { what, operand, count });
        }
    }
    for (i, operand) in g.operands.iter().enumerate() {
        if let Some(data) = &operand.data {
            let dims = operand.shape.concrete().unwrap_or_default();
            let expected = num_elements(&dims).and_then(|n| n.checked_mul(operand.dtype.size()));
            if expected != Some(data.len()) {
                return Err(CompileError::BadConstant {
                    operand: OperandId::new(i),
                    name: operand.name.clone(),
                    got: data.len(),
                    expected: expected.unwrap_or(usize::MAX),
                    dtype: operand.dtype.to_string(),
                    shape: operand.shape.to_string(),
                });
            }
        }
    }
    let mut written: Vec<bool> = g.operands.iter().map(|o| o.is_const() || o.is_variable).collect();
    for &i in &g.inputs {
        written[i.index()] = true;
    }
    for (i, op) in g.ops.iter().enumerate() {
        let id = OpId::new(i);
        let kind = || op.kind.name().to_string();
        for &operand in op.inputs.iter().flatten().chain(&op.outputs) {
            if operand.index() >= count {
                return Err(CompileError::BadOperandIndex { op: id, kind: kind(), operand, count });
            }
        }
        let (min, max, outs) = arity(&op.kind);
        let n = op.inputs.len();
        if n < min || max.is_some_and(|m| n > m) || outs.is_some_and(|o| op.outputs.len() != o) {
            let inputs = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            let outputs = outs.map_or("any number of".to_string(), |o| o.to_string());
            return Err(CompileError::InvalidOp {
                op: id,
                kind: kind(),
                reason: format!("has {n} inputs and {} outputs; expected {inputs} inputs and {outputs} outputs", op.outputs.len()),
            });
        }
        for (k, operand) in op.inputs.iter().enumerate() {
            if let Some(operand) = operand {
                if !written[operand.index()] {
                    return Err(CompileError::Unwritten {
                        operand: *operand,
                        name: g.operand(*operand).name.clone(),
                        op: id,
                    });
                }
            } else if k < min {
                return Err(CompileError::InvalidOp { op: id, kind: kind(), reason: format!("required input {k} is absent") });
            }
        }
        for &o in &op.outputs {
            if g.operand(o).is_const() {
                return Err(CompileError::InvalidOperand {
                    op: id,
                    kind: kind(),
                    operand: o,
                    reason: "an op output cannot be a constant tensor".into(),
                });
            }
            written[o.index()] = true;
        }
    }
    for &o in &g.outputs {
        if !written[o.index()] {
            return Err(CompileError::Unwritten { operand: o, name: g.operand(o).name.clone(), op: OpId::new(g.ops.len()) });
        }
    }
    Ok(())
}
