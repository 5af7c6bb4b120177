//! Integer-only operators onto nnrt's integer IR ops: RESCALE as `Rescale` (the
//! specification's `apply_scale_32` / `apply_scale_16`, per channel, zero points as operands,
//! unsigned int8/int16 flags).

use nnrt_core::{LoadError, OpKind, Rescale};

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
        _ => Err(o.unsupported(b, "")),
    }
}
