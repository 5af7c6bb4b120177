//! Integer-only operators onto nnrt's integer IR ops: RESCALE as `Rescale` (the
//! specification's `apply_scale_32` / `apply_scale_16`, per channel, zero points as operands,
//! unsigned int8/int16 flags), TABLE as `Table`, shifts, CLZ, INTDIV and integer NEGATE as
//! `IntBits`, BITWISE_* as `Bitwise`.

use nnrt_core::{BitwiseOp, IntBitsOp, LoadError, OpKind, Rescale};

use super::{BlockBuilder, Op};
use crate::generated::tosa;

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    match o.kind {
        tosa::Op::RESCALE => {
            let a = o.attr(b, o.t.attribute_as_rescale_attribute(), "RescaleAttribute")?;
            let (from, to) = (o.input_type(b, 0)?, b.tosa_type(o.outputs.first().copied().unwrap_or_default())?);
            let ints = [tosa::DType::INT8, tosa::DType::INT16, tosa::DType::INT32];
            if !(ints.contains(&from) || from == tosa::DType::INT48) || !ints.contains(&to) {
                return Err(o.unsupported(b, "RESCALE takes int8, int16, int32 or int48 to int8, int16 or int32"));
            }
            let rounding = a.rounding_mode();
            if !matches!(rounding, tosa::RoundingMode::SINGLE_ROUND | tosa::RoundingMode::DOUBLE_ROUND | tosa::RoundingMode::INEXACT_ROUND) {
                return Err(b.err(format!("RESCALE rounding mode {} is unknown", rounding.0)));
            }
            let kind = OpKind::Rescale(Rescale {
                scale32: a.scale32(),
                // INEXACT_ROUND lets an implementation round either way; single rounding is exact.
                double_round: rounding == tosa::RoundingMode::DOUBLE_ROUND,
                per_channel: a.per_channel(),
                input_unsigned: a.input_unsigned(),
                output_unsigned: a.output_unsigned(),
            });
            let ins = (0..5).map(|i| o.input(b, i)).collect::<Result<Vec<_>, _>>()?;
            let out = o.output(b, 0)?;
            b.emit_all(kind, &ins, vec![out]);
            Ok(())
        }
        tosa::Op::LOGICAL_LEFT_SHIFT | tosa::Op::LOGICAL_RIGHT_SHIFT | tosa::Op::ARITHMETIC_RIGHT_SHIFT | tosa::Op::CLZ | tosa::Op::INTDIV => {
            let int32_only = matches!(o.kind, tosa::Op::CLZ | tosa::Op::INTDIV);
            if !matches!(o.input_type(b, 0)?, tosa::DType::INT8 | tosa::DType::INT16 | tosa::DType::INT32) || (int32_only && o.input_type(b, 0)? != tosa::DType::INT32) {
                return Err(o.unsupported(b, ""));
            }
            let op = match o.kind {
                tosa::Op::LOGICAL_LEFT_SHIFT => IntBitsOp::LeftShift,
                tosa::Op::LOGICAL_RIGHT_SHIFT => IntBitsOp::LogicalRightShift,
                tosa::Op::INTDIV => IntBitsOp::Div,
                tosa::Op::CLZ => IntBitsOp::Clz,
                _ => IntBitsOp::RightShift { round: o.attr(b, o.t.attribute_as_arithmetic_right_shift_attribute(), "ArithmeticRightShiftAttribute")?.round() },
            };
            let n = if op == IntBitsOp::Clz { 1 } else { 2 };
            let ins = (0..n).map(|i| o.input(b, i)).collect::<Result<Vec<_>, _>>()?;
            let out = o.output(b, 0)?;
            b.emit_all(OpKind::IntBits(op), &ins, vec![out]);
            Ok(())
        }
        tosa::Op::TABLE => {
            let (x, t, out) = (o.input(b, 0)?, o.input(b, 1)?, o.output(b, 0)?);
            if !matches!(o.input_type(b, 0)?, tosa::DType::INT8 | tosa::DType::INT16) {
                return Err(o.unsupported(b, "TABLE takes int8 or int16"));
            }
            b.emit_all(OpKind::Table, &[x, t], vec![out]);
            Ok(())
        }
        _ => Err(o.unsupported(b, "")),
    }
}

/// BITWISE_AND / OR / XOR on int8, int16 or int32; BITWISE_NOT as XOR with all ones.
pub(super) fn bitwise(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    if !matches!(o.input_type(b, 0)?, tosa::DType::INT8 | tosa::DType::INT16 | tosa::DType::INT32) {
        return Err(o.unsupported(b, "bitwise ops take int8, int16 or int32"));
    }
    let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
    let (op, y) = match o.kind {
        tosa::Op::BITWISE_AND => (BitwiseOp::And, o.input(b, 1)?),
        tosa::Op::BITWISE_OR => (BitwiseOp::Or, o.input(b, 1)?),
        tosa::Op::BITWISE_XOR => (BitwiseOp::Xor, o.input(b, 1)?),
        _ => {
            let (t, rank) = (b.dtype(x), b.dims(x).len());
            (BitwiseOp::Xor, b.constant(t, &vec![1; rank], vec![0xff; t.size()]))
        }
    };
    b.emit_all(OpKind::Bitwise(op), &[x, y], vec![out]);
    Ok(())
}

/// NEGATE on int8 / int16 / int32: `IntBits(Negate)` with its zero points (inputs 1 and 2).
pub(super) fn negate(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let (x, out) = (o.input(b, 0)?, o.output(b, 0)?);
    let (zi, zo) = (o.input(b, 1)?, o.input(b, 2)?);
    for z in [zi, zo] {
        if b.const_bytes(z).is_none() {
            return Err(o.unsupported(b, "NEGATE with zero points computed at run time is not mapped"));
        }
    }
    b.emit_all(OpKind::IntBits(IntBitsOp::Negate), &[x, zi, zo], vec![out]);
    Ok(())
}
