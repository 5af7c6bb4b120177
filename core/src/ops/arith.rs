//! Element-wise and broadcasting builtins added after the first op set: ADD_N, ATAN2,
//! BITWISE_XOR / RIGHT_SHIFT, BUCKETIZE, BROADCAST_TO, BROADCAST_ARGS, and TOSA's integer MUL
//! with a shift (`IntMul`) and TABLE.

use super::Shapes::One;
use super::{fixed, spec, Spec};
use crate::infer::Cx;
use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpKind};

slots!(
    INPUT = 0: "Input slot of the values (ADD_N's first addend, BUCKETIZE's values, BROADCAST_TO's input).",
    SHAPE = 1: "Input slot of BROADCAST_TO's 1-D target shape.",
    LHS = 0: "Input slot of a bitwise op's left operand, or BROADCAST_ARGS's first shape.",
    RHS = 1: "Input slot of a bitwise op's right operand, or BROADCAST_ARGS's second shape."
);

slots! {
    /// Input slots of ATAN2.
    mod atan2: Y = 0: "The ordinate.", X = 1: "The abscissa.";
}

/// Bitwise binary ops on integers (NumPy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BitwiseOp {
    /// a ^ b
    Xor,
    /// a & b (ExecuTorch's `bitwise_and`).
    And,
    /// a | b (ExecuTorch's `bitwise_or`).
    Or,
    /// a >> b, arithmetic for signed types; the shift is clamped to `[0, bits - 1]`.
    RightShift,
}

/// TOSA's integer bit ops ([`OpKind::IntBits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntBitsOp {
    /// a << b (b in 0..bits), the low bits kept.
    LeftShift,
    /// a >> b, arithmetic; with `round`, plus the last bit shifted out.
    RightShift {
        /// Round to nearest (half up) instead of flooring.
        round: bool,
    },
    /// Leading zero bits of an int32 (32 for 0).
    Clz,
    /// a >> b on the bits as unsigned (b in 0..bits).
    LogicalRightShift,
    /// a / b truncated toward zero (TOSA INTDIV); b = 0 fails the run.
    Div,
    /// -(a - input_zp) + output_zp, saturated (TOSA NEGATE on integers); inputs 1 and 2 are the
    /// zero points, constants of the input's type.
    Negate,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::AddN => spec("AddN", 2, None, Some(1), One(add_n)),
        OpKind::Atan2 => fixed("Atan2", 2, 1, One(atan2)),
        OpKind::IntMul => fixed("IntMul", 3, 1, One(int_mul)),
        OpKind::Table => fixed("Table", 2, 1, One(table)),
        OpKind::IntBits(IntBitsOp::LeftShift) => fixed("IntLeftShift", 2, 1, One(int_bits)),
        OpKind::IntBits(IntBitsOp::RightShift { .. }) => fixed("IntRightShift", 2, 1, One(int_bits)),
        OpKind::IntBits(IntBitsOp::Clz) => fixed("Clz", 1, 1, One(int_bits)),
        OpKind::IntBits(IntBitsOp::LogicalRightShift) => fixed("IntLogicalRightShift", 2, 1, One(int_bits)),
        OpKind::IntBits(IntBitsOp::Div) => fixed("IntDiv", 2, 1, One(int_bits)),
        OpKind::IntBits(IntBitsOp::Negate) => fixed("IntNegate", 3, 1, One(int_bits)),
        OpKind::Bitwise(BitwiseOp::Xor) => fixed("BitwiseXor", 2, 1, One(bitwise)),
        OpKind::Bitwise(BitwiseOp::RightShift) => fixed("RightShift", 2, 1, One(bitwise)),
        OpKind::Bitwise(BitwiseOp::And) => fixed("BitwiseAnd", 2, 1, One(bitwise)),
        OpKind::Bitwise(BitwiseOp::Or) => fixed("BitwiseOr", 2, 1, One(bitwise)),
        OpKind::Bucketize { .. } => fixed("Bucketize", 1, 1, One(bucketize)),
        OpKind::BroadcastTo => fixed("BroadcastTo", 2, 1, One(broadcast_to)),
        OpKind::BroadcastArgs => fixed("BroadcastArgs", 2, 1, One(broadcast_args)),
        _ => return None,
    })
}

/// Checks that output 0 has the type of input `i`.
pub(super) fn out_like(cx: &Cx, i: usize) -> Result<DType, CompileError> {
    let t = cx.dtype(i)?;
    if cx.out_dtype(0)? != t {
        return Err(cx.out_err(0, format!("has type {} but input {i} has {t}", cx.out_dtype(0)?)));
    }
    Ok(t)
}

/// IntMul: int8 / int16 / int32 operands of one type without quantization, an int32 output
/// and a constant int8 shift in 0..=63 (0 unless the operands are int32).
fn int_mul(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(LHS, &[DType::I8, DType::I16, DType::I32])?;
    if cx.dtype(RHS)? != t {
        return Err(cx.input_err(RHS, format!("has type {} but input 0 has {t}; both must match", cx.dtype(RHS)?)));
    }
    for i in [LHS, RHS] {
        if cx.g.operand(cx.input_id(i)?).quant.is_quantized() {
            return Err(cx.input_err(i, "is quantized; IntMul takes plain integers"));
        }
    }
    cx.expect_out_dtype(0, DType::I32)?;
    cx.expect_dtype(2, &[DType::I8])?;
    let (_, shift) = cx.value_bytes(2)?;
    let [s] = shift else { return Err(cx.input_err(2, "the shift is one int8 element")) };
    let s = *s as i8;
    if !(0..=63).contains(&s) || (t != DType::I32 && s != 0) {
        return Err(cx.input_err(2, format!("shift {s} must be in 0..=63, and 0 unless the operands are int32")));
    }
    cx.broadcast(cx.input(LHS)?, cx.input(RHS)?)
}

/// IntBits: plain int8 / int16 / int32 of one type (CLZ and IntDiv: int32; IntNegate's zero
/// points: one constant each), binary forms broadcast.
fn int_bits(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let clz = cx.op.kind == OpKind::IntBits(IntBitsOp::Clz);
    let t = cx.expect_dtype(LHS, if clz { &[DType::I32] } else { &[DType::I8, DType::I16, DType::I32] })?;
    for i in 0..cx.op.inputs.len() {
        if cx.dtype(i)? != t || cx.g.operand(cx.input_id(i)?).quant.is_quantized() {
            return Err(cx.input_err(i, format!("must be plain {t} like input 0")));
        }
    }
    out_like(cx, LHS)?;
    if cx.op.kind == OpKind::IntBits(IntBitsOp::Div) && t != DType::I32 {
        return Err(cx.input_err(LHS, format!("IntDiv takes int32, not {t}")));
    }
    if cx.op.kind == OpKind::IntBits(IntBitsOp::Negate) {
        for i in 1..3 {
            let (_, zp) = cx.value_bytes(i)?;
            if zp.len() != t.size() {
                return Err(cx.input_err(i, format!("the zero point is one constant {t}")));
            }
        }
        return Ok(cx.input(LHS)?.to_vec());
    }
    if clz {
        return Ok(cx.input(LHS)?.to_vec());
    }
    cx.broadcast(cx.input(LHS)?, cx.input(RHS)?)
}

/// TABLE: int8 x with 256 int8 entries to int8, or int16 x with 513 int16 entries to int32;
/// the table is a constant.
fn table(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(INPUT, &[DType::I8, DType::I16])?;
    cx.expect_dtype(1, &[t])?;
    let (want_len, out) = if t == DType::I8 { (256, DType::I8) } else { (513, DType::I16) };
    cx.expect_out_dtype(0, if out == DType::I8 { DType::I8 } else { DType::I32 })?;
    // The table may be computed at run time (TOSA's TABLE takes any tensor): its shape decides.
    if crate::shape::num_elements(cx.input(1)?) != Some(want_len) {
        return Err(cx.input_err(1, format!("shape {} does not hold the {want_len} entries of a {t} table", crate::shape::fmt_dims(cx.input(1)?))));
    }
    Ok(cx.input(INPUT)?.to_vec())
}

/// ADD_N: two or more float32 / int32 tensors of one shape (no broadcasting, as TFLite).
fn add_n(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let first = cx.input(INPUT)?;
    let t = cx.expect_dtype(INPUT, &[DType::F32, DType::I32])?;
    for i in 1..cx.op.inputs.len() {
        if cx.input(i)? != first || cx.dtype(i)? != t {
            return Err(cx.input_err(i, format!("is {} {}; every input must match input 0 ({t} {})", cx.dtype(i)?, fmt_dims(cx.input(i)?), fmt_dims(first))));
        }
    }
    out_like(cx, INPUT)?;
    Ok(first.to_vec())
}

/// ATAN2(y, x): float32 tensors of one shape (TFLite does not broadcast).
fn atan2(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    use atan2::{X, Y};
    let (y, x) = (cx.input(Y)?, cx.input(X)?);
    cx.expect_dtype(Y, &[DType::F32])?;
    cx.expect_dtype(X, &[DType::F32])?;
    if y != x {
        return Err(cx.input_err(X, format!("x has shape {} but y has {}; ATAN2 does not broadcast", fmt_dims(x), fmt_dims(y))));
    }
    out_like(cx, Y)?;
    Ok(y.to_vec())
}

/// BITWISE_XOR / RIGHT_SHIFT: two integer tensors of one type, broadcast.
fn bitwise(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(LHS, &[DType::U8, DType::I8, DType::I16, DType::I32, DType::I64])?;
    if cx.dtype(RHS)? != t {
        return Err(cx.input_err(RHS, format!("has type {} but input 0 has {t}; both must match", cx.dtype(RHS)?)));
    }
    for i in [LHS, RHS] {
        if cx.g.operand(cx.input_id(i)?).quant.is_quantized() {
            return Err(cx.input_err(i, "is quantized; bitwise ops take plain integers"));
        }
    }
    out_like(cx, LHS)?;
    cx.broadcast(cx.input(LHS)?, cx.input(RHS)?)
}

/// BUCKETIZE: int32 bucket indices of float32 / int32 / int64 values; boundaries sorted.
fn bucketize(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::Bucketize { boundaries } = &cx.op.kind else { return Err(cx.unlisted()) };
    cx.expect_dtype(INPUT, &[DType::F32, DType::I32, DType::I64])?;
    cx.expect_out_dtype(0, DType::I32)?;
    if let Some(w) = boundaries.windows(2).find(|w| w[1] < w[0]) {
        return Err(cx.err(format!("boundaries must be sorted ascending; {} comes before {}", w[0], w[1])));
    }
    Ok(cx.input(INPUT)?.to_vec())
}

/// TFLite's limit on BROADCAST_TO's output rank.
const MAX_BROADCAST_RANK: usize = 8;

/// BROADCAST_TO: input 0 stretched to the dims in input 1 (a constant, or read at run time).
fn broadcast_to(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let x = cx.input(INPUT)?;
    out_like(cx, INPUT)?;
    cx.expect_dtype(SHAPE, &[DType::I32, DType::I64])?;
    if cx.input(SHAPE)?.len() != 1 {
        return Err(cx.input_err(SHAPE, format!("the shape must be 1-D, is {}", fmt_dims(cx.input(SHAPE)?))));
    }
    let dims = cx.const_ints(SHAPE)?;
    if dims.len() > MAX_BROADCAST_RANK || dims.len() < x.len() {
        return Err(cx.input_err(SHAPE, format!("a shape of rank {} cannot hold input {} (rank at most {MAX_BROADCAST_RANK})", dims.len(), fmt_dims(x))));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(cx.input_err(SHAPE, format!("dim {d} of shape {dims:?} must be >= 0")));
    }
    let out: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let off = out.len() - x.len();
    for (k, &d) in x.iter().enumerate() {
        if d != 1 && d != out[off + k] {
            return Err(cx.input_err(SHAPE, format!("input {} does not broadcast to {}", fmt_dims(x), fmt_dims(&out))));
        }
    }
    Ok(out)
}

/// BROADCAST_ARGS: the broadcast of two 1-D shapes (int32 or int64, one type for all three).
/// The length is known from the inputs' lengths; whether they broadcast is checked on the values.
fn broadcast_args(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let t = cx.expect_dtype(LHS, &[DType::I32, DType::I64])?;
    if cx.dtype(RHS)? != t {
        return Err(cx.input_err(RHS, format!("has type {} but input 0 has {t}", cx.dtype(RHS)?)));
    }
    out_like(cx, LHS)?;
    let (a, b) = (cx.expect_rank(LHS, 1)?, cx.expect_rank(RHS, 1)?);
    Ok(vec![a[0].max(b[0])])
}
