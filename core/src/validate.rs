//! Structural validation of a subgraph: indices in range, constants of the right size, op arity,
//! every operand written before it is read. Shape consistency is checked by [`crate::infer_graph`].

use crate::shape::num_elements;
use crate::{CompileError, Model, OpId, OperandId, Subgraph};

/// Validates every subgraph of `model`, including the subgraph ids control-flow ops name.
pub fn validate_model(model: &Model) -> Result<(), CompileError> {
    // Every subgraph's own indices first: the signature checks read the subgraphs an op calls.
    for g in &model.subgraphs {
        validate(g)?;
    }
    for g in &model.subgraphs {
        for (i, op) in g.ops.iter().enumerate() {
            for s in crate::ops::control::called_subgraphs(&op.kind).into_iter().flatten() {
                if model.subgraph(s).is_none() {
                    return Err(CompileError::InvalidOp {
                        op: OpId::new(i),
                        kind: op.kind.name().to_string(),
                        reason: format!("names subgraph {s}, but the model has {}", model.subgraphs.len()),
                    });
                }
            }
            crate::control::check_signature(model, g, OpId::new(i), op)?;
        }
    }
    Ok(())
}

/// Rejects quantization parameters no kernel can honour: scales that are negative, NaN or
/// infinite, zero points outside the integer type, per-axis lists of the wrong length.
fn check_quant(id: OperandId, o: &crate::Operand) -> Result<(), CompileError> {
    let bad = |reason: String| CompileError::InvalidQuantization { operand: id, name: o.name.clone(), reason };
    let range = match o.dtype {
        crate::DType::U8 => Some((0i64, 255i64)),
        crate::DType::I8 => Some((-128, 127)),
        crate::DType::I16 => Some((-32768, 32767)),
        _ => None,
    };
    let check = |scale: f32, zp: i64| -> Result<(), CompileError> {
        if !scale.is_finite() || scale < 0.0 {
            return Err(bad(format!("scale {scale} must be a finite, non-negative number")));
        }
        if let Some((lo, hi)) = range {
            if zp < lo || zp > hi {
                return Err(bad(format!("zero point {zp} is outside {} ({lo}..={hi})", o.dtype)));
            }
        }
        Ok(())
    };
    match &o.quant {
        crate::Quantization::None => Ok(()),
        crate::Quantization::PerTensor { scale, zero_point } => check(*scale, *zero_point),
        crate::Quantization::PerAxis { scales, zero_points, axis } => {
            let dims = o.shape.concrete().unwrap_or_else(|| o.default_dims.clone());
            if dims.get(*axis).is_some_and(|&n| n != scales.len()) || zero_points.len() != scales.len() {
                return Err(bad(format!("{} scales and {} zero points for dim {axis} of {}", scales.len(), zero_points.len(), o.shape)));
            }
            scales.iter().zip(zero_points).try_for_each(|(s, z)| check(*s, *z))
        }
    }
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
        check_quant(OperandId::new(i), operand)?;
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
        let Some(spec) = op.kind.spec() else {
            return Err(CompileError::InvalidOp { op: id, kind: kind(), reason: format!("internal error: the {:?} family does not list this op", op.kind.family()) });
        };
        let (min, max, outs) = (spec.min_inputs, spec.max_inputs, spec.outputs);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, BinaryOp, ConstData, DType, OpKind, Operand, Operation};

    fn add_graph() -> Subgraph {
        let mut g = Subgraph::default();
        let a = g.add_operand(Operand::new("a", DType::F32, &[2, 3]));
        let b = g.add_operand(Operand::new("b", DType::F32, &[3]));
        let y = g.add_operand(Operand::new("y", DType::F32, &[2, 3]));
        g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, inputs: vec![Some(a), Some(b)], outputs: vec![y] });
        g.inputs = vec![a, b];
        g.outputs = vec![y];
        g
    }

    #[test]
    fn a_good_graph_passes() {
        validate(&add_graph()).unwrap();
    }

    #[test]
    fn bad_indices_are_named() {
        let mut g = add_graph();
        g.ops[0].inputs[1] = Some(OperandId(9));
        let e = validate(&g).unwrap_err();
        assert!(matches!(e, CompileError::BadOperandIndex { operand: OperandId(9), .. }), "{e}");
        let mut g = add_graph();
        g.outputs = vec![OperandId(7)];
        assert!(matches!(validate(&g).unwrap_err(), CompileError::BadGraphIo { what: "output", .. }));
    }

    #[test]
    fn constants_must_fill_their_shape() {
        let mut g = add_graph();
        g.inputs = vec![OperandId(0)];
        g.operands[1].data = Some(ConstData::owned(vec![0; 8])); // 2 floats for a [3]
        let e = validate(&g).unwrap_err();
        assert!(matches!(e, CompileError::BadConstant { got: 8, expected: 12, .. }), "{e}");
    }

    #[test]
    fn missing_buffers_and_wrong_arity_are_caught() {
        let mut g = add_graph();
        g.inputs = vec![OperandId(0)]; // b is neither input, constant nor produced
        assert!(matches!(validate(&g).unwrap_err(), CompileError::Unwritten { operand: OperandId(1), .. }));
        let mut g = add_graph();
        g.ops[0].inputs.pop();
        assert!(validate(&g).unwrap_err().to_string().contains("expected 2 inputs"));
    }

    #[test]
    fn shape_mismatch_is_found_by_inference() {
        let mut g = add_graph();
        g.operands[2] = Operand::new("y", DType::F32, &[3, 2]);
        let dims = vec![vec![2, 3], vec![3]];
        let e = crate::infer_graph(&g, &dims).unwrap_err();
        assert!(matches!(e, CompileError::ShapeMismatch { .. }), "{e}");
        g.operands[1] = Operand::new("b", DType::F32, &[4]);
        let e = crate::infer_graph(&g, &[vec![2, 3], vec![4]]).unwrap_err();
        assert!(e.to_string().contains("cannot be broadcast"), "{e}");
    }
}
