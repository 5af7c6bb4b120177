//! Integer-only operators onto nnrt's integer IR ops: RESCALE as `Rescale` (the
//! specification's `apply_scale_32` / `apply_scale_16`, per channel, zero points as operands,
//! unsigned int8/int16 flags) and TABLE as `Table`.

use nnrt_core::{IntBitsOp, LoadError, OpKind, Rescale};

use super::{BlockBuilder, Op};
use crate::generated::tosa;

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    match o.kind {
        tosa::Op::RESCALE => {
            let a = o.attr(b, o.t.attribute_as_rescale_attribute(), "RescaleAttribute")?;
            let (from, to) = (o.input_type(b, 0)?, b.tosa_type(o.outputs.first().copied().unwrap_or_default())?);
            let ints = [tosa::DType::INT8, tosa::DType::INT16, tosa::DType::INT32];
            if !ints.contains(&from) || !ints.contains(&to) {
                return Err(o.unsupported(b, "RESCALE on int48 or other types is not mapped"));
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
        tosa::Op::LOGICAL_LEFT_SHIFT | tosa::Op::ARITHMETIC_RIGHT_SHIFT | tosa::Op::CLZ => {
            if !matches!(o.input_type(b, 0)?, tosa::DType::INT8 | tosa::DType::INT16 | tosa::DType::INT32) || (o.kind == tosa::Op::CLZ && o.input_type(b, 0)? != tosa::DType::INT32) {
                return Err(o.unsupported(b, ""));
            }
            let op = match o.kind {
                tosa::Op::LOGICAL_LEFT_SHIFT => IntBitsOp::LeftShift,
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
            if !matches!(o.input_type(b, 0)?, tosa::DType::INT8 | tosa::DType::INT16) || b.const_bytes(t).is_none() {
                return Err(o.unsupported(b, "TABLE takes int8 or int16 with a constant table"));
            }
            b.emit_all(OpKind::Table, &[x, t], vec![out]);
            Ok(())
        }
        _ => Err(o.unsupported(b, "")),
    }
}
