//! Element-wise ops: broadcasting binary ops (ADD, MUL, …), unary ops and parameterless
//! activations (RELU, EXP, …), PRELU.

use super::Shapes::One;
use super::{fixed, Spec};
use crate::infer::Cx;
use crate::{CompileError, DType, OpKind};

slots!(INPUT = 0: "Input slot of a unary op's operand and of PRELU's input.");
slots!(LHS = 0: "Input slot of a binary op's left operand.", RHS = 1: "Input slot of a binary op's right operand.");
slots!(ALPHA = 1: "Input slot of PRELU's slopes, broadcast against the input.");

/// Element-wise binary operations (NumPy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Sub,
    /// a * b
    Mul,
    /// a / b
    Div,
    /// a ^ b
    Pow,
    /// (a - b)²
    SquaredDifference,
    /// max(a, b)
    Maximum,
    /// min(a, b)
    Minimum,
    /// floor(a / b)
    FloorDiv,
    /// a - floor(a / b) * b (the remainder takes the divisor's sign)
    FloorMod,
}

/// Element-wise unary operations and parameterless activations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// max(x, 0)
    Relu,
    /// clamp(x, 0, 6)
    Relu6,
    /// clamp(x, -1, 1)
    ReluN1To1,
    /// tanh(x)
    Tanh,
    /// 1 / (1 + exp(-x))
    Logistic,
    /// x * relu6(x + 3) / 6
    HardSwish,
    /// x if x >= 0 else alpha * x
    LeakyRelu(f32),
    /// clamp(x, 0, 1)
    Relu0To1,
    /// x if x >= 0 else exp(x) - 1
    Elu,
    /// x * Φ(x); with `approximate`, the tanh form.
    Gelu {
        /// Use the tanh approximation.
        approximate: bool,
    },
    /// |x|
    Abs,
    /// -x
    Neg,
    /// e^x
    Exp,
    /// ln x
    Log,
    /// √x
    Sqrt,
    /// 1 / √x
    Rsqrt,
    /// x²
    Square,
    /// sin x
    Sin,
    /// cos x
    Cos,
    /// Round toward -∞.
    Floor,
    /// Round toward +∞.
    Ceil,
    /// Round half to even.
    Round,
    /// -1, 0 or 1.
    Sign,
    /// !x on bools.
    LogicalNot,
    /// The error function, `2/√π ∫₀ˣ e^(-t²) dt` (ExecuTorch's `aten::erf`).
    Erf,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::Binary { op, .. } => fixed(binary_name(*op), 2, 1, One(binary)),
        OpKind::Unary(u) => fixed(unary_name(*u), 1, 1, One(unary)),
        OpKind::Prelu => fixed("Prelu", 2, 1, One(prelu)),
        _ => return None,
    })
}

fn binary_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "Add",
        BinaryOp::Sub => "Sub",
        BinaryOp::Mul => "Mul",
        BinaryOp::Div => "Div",
        BinaryOp::Pow => "Pow",
        BinaryOp::SquaredDifference => "SquaredDifference",
        BinaryOp::Maximum => "Maximum",
        BinaryOp::Minimum => "Minimum",
        BinaryOp::FloorDiv => "FloorDiv",
        BinaryOp::FloorMod => "FloorMod",
    }
}

fn unary_name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Relu => "Relu",
        UnaryOp::Relu6 => "Relu6",
        UnaryOp::ReluN1To1 => "ReluN1To1",
        UnaryOp::Tanh => "Tanh",
        UnaryOp::Logistic => "Logistic",
        UnaryOp::HardSwish => "HardSwish",
        UnaryOp::LeakyRelu(_) => "LeakyRelu",
        UnaryOp::Relu0To1 => "Relu0To1",
        UnaryOp::Elu => "Elu",
        UnaryOp::Gelu { .. } => "Gelu",
        UnaryOp::Abs => "Abs",
        UnaryOp::Neg => "Neg",
        UnaryOp::Exp => "Exp",
        UnaryOp::Log => "Log",
        UnaryOp::Sqrt => "Sqrt",
        UnaryOp::Rsqrt => "Rsqrt",
        UnaryOp::Square => "Square",
        UnaryOp::Sin => "Sin",
        UnaryOp::Cos => "Cos",
        UnaryOp::Floor => "Floor",
        UnaryOp::Ceil => "Ceil",
        UnaryOp::Round => "Round",
        UnaryOp::Sign => "Sign",
        UnaryOp::LogicalNot => "LogicalNot",
        UnaryOp::Erf => "Erf",
    }
}

/// NumPy broadcasting of two shapes (right-aligned; a dim of 1 stretches). `None` if incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// Binary ops broadcast two operands of one type.
fn binary(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (a, b) = (cx.input(LHS)?, cx.input(RHS)?);
    let (ta, tb) = (cx.dtype(LHS)?, cx.dtype(RHS)?);
    if ta != tb {
        return Err(cx.input_err(RHS, format!("has type {tb} but input 0 has {ta}; both must match")));
    }
    cx.broadcast(a, b)
}

/// PRELU broadcasts its slopes against the input.
fn prelu(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let (ta, tb) = (cx.dtype(INPUT)?, cx.dtype(ALPHA)?);
    // Quantized int16 inputs take an int8 alpha, as in TFLite.
    if ta != tb && !(ta == DType::I16 && tb == DType::I8) {
        return Err(cx.input_err(ALPHA, format!("alpha has type {tb} but the input has {ta}; both must match")));
    }
    cx.broadcast(cx.input(INPUT)?, cx.input(ALPHA)?)
}

/// Unary ops keep the shape; the output type must be the input's (bool for LOGICAL_NOT).
fn unary(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Unary(op) = cx.op.kind else { return Err(cx.unlisted()) };
    let t = cx.dtype(INPUT)?;
    if op == UnaryOp::LogicalNot {
        cx.expect_dtype(INPUT, &[DType::Bool])?;
    } else if t == DType::Bool {
        return Err(cx.input_err(INPUT, format!("has type bool; {} takes numbers", cx.op.kind.name())));
    }
    if cx.out_dtype(0)? != t && !cx.g.operand(cx.input_id(INPUT)?).quant.is_quantized() {
        return Err(cx.out_err(0, format!("has type {} but the input has {t}", cx.out_dtype(0)?)));
    }
    Ok(cx.input(INPUT)?.to_vec())
}

#[cfg(test)]
mod tests {
    use super::broadcast_shapes;

    #[test]
    fn broadcasting_is_numpy_like() {
        assert_eq!(broadcast_shapes(&[1, 4, 5, 3], &[3]), Some(vec![1, 4, 5, 3]));
        assert_eq!(broadcast_shapes(&[1, 4, 5, 3], &[1, 1, 5, 1]), Some(vec![1, 4, 5, 3]));
        assert_eq!(broadcast_shapes(&[], &[2, 2]), Some(vec![2, 2]));
        assert_eq!(broadcast_shapes(&[2, 3], &[3, 2]), None);
    }
}
