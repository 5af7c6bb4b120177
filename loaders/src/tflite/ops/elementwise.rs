//! Binary element-wise ops (arithmetic, comparison, logical, bitwise), SELECT and ADD_N.

use nnrt_core::{Activation, BinaryOp, BitwiseOp, CompareOp, LoadError, LogicalOp, OpKind, UnaryOp};

use super::{act, OpRef, B};

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let op = m.op;
    let binary = |op: BinaryOp, a: Activation| OpKind::Binary { op, act: a };
    Ok(Some(match B(m.code.code) {
        B::ADD => binary(BinaryOp::Add, op.builtin_options_as_add_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::SUB => binary(BinaryOp::Sub, op.builtin_options_as_sub_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::MUL => binary(BinaryOp::Mul, op.builtin_options_as_mul_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::DIV => binary(BinaryOp::Div, op.builtin_options_as_div_options().map(|o| act(o.fused_activation_function())).unwrap_or_default()),
        B::POW => binary(BinaryOp::Pow, Activation::None),
        B::SQUARED_DIFFERENCE => binary(BinaryOp::SquaredDifference, Activation::None),
        B::MAXIMUM => binary(BinaryOp::Maximum, Activation::None),
        B::MINIMUM => binary(BinaryOp::Minimum, Activation::None),
        B::FLOOR_DIV => binary(BinaryOp::FloorDiv, Activation::None),
        B::FLOOR_MOD => binary(BinaryOp::FloorMod, Activation::None),
        B::EQUAL => OpKind::Compare(CompareOp::Equal),
        B::NOT_EQUAL => OpKind::Compare(CompareOp::NotEqual),
        B::LESS => OpKind::Compare(CompareOp::Less),
        B::LESS_EQUAL => OpKind::Compare(CompareOp::LessEqual),
        B::GREATER => OpKind::Compare(CompareOp::Greater),
        B::GREATER_EQUAL => OpKind::Compare(CompareOp::GreaterEqual),
        B::LOGICAL_AND => OpKind::Logical(LogicalOp::And),
        B::LOGICAL_OR => OpKind::Logical(LogicalOp::Or),
        B::LOGICAL_NOT => OpKind::Unary(UnaryOp::LogicalNot),
        B::SELECT => OpKind::Select { v2: false },
        B::SELECT_V2 => OpKind::Select { v2: true },
        B::ADD_N => OpKind::AddN,
        B::ATAN2 => OpKind::Atan2,
        B::BITWISE_XOR => OpKind::Bitwise(BitwiseOp::Xor),
        B::RIGHT_SHIFT => OpKind::Bitwise(BitwiseOp::RightShift),
        _ => return Ok(None),
    }))
}
