//! One-input element-wise ops: activations, math functions, casts and (de)quantization.

use nnrt_core::{LoadError, OpKind, UnaryOp};

use super::{OpRef, B};

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let op = m.op;
    Ok(Some(match B(m.code.code) {
        B::RELU => OpKind::Unary(UnaryOp::Relu),
        B::RELU6 => OpKind::Unary(UnaryOp::Relu6),
        B::RELU_N1_TO_1 => OpKind::Unary(UnaryOp::ReluN1To1),
        B::TANH => OpKind::Unary(UnaryOp::Tanh),
        B::LOGISTIC => OpKind::Unary(UnaryOp::Logistic),
        B::HARD_SWISH => OpKind::Unary(UnaryOp::HardSwish),
        B::LEAKY_RELU => OpKind::Unary(UnaryOp::LeakyRelu(op.builtin_options_as_leaky_relu_options().map_or(0.2, |o| o.alpha()))),
        B::RELU_0_TO_1 => OpKind::Unary(UnaryOp::Relu0To1),
        B::ELU => OpKind::Unary(UnaryOp::Elu),
        B::GELU => OpKind::Unary(UnaryOp::Gelu { approximate: op.builtin_options_as_gelu_options().is_some_and(|o| o.approximate()) }),
        B::ABS => OpKind::Unary(UnaryOp::Abs),
        B::NEG => OpKind::Unary(UnaryOp::Neg),
        B::EXP => OpKind::Unary(UnaryOp::Exp),
        B::LOG => OpKind::Unary(UnaryOp::Log),
        B::SQRT => OpKind::Unary(UnaryOp::Sqrt),
        B::RSQRT => OpKind::Unary(UnaryOp::Rsqrt),
        B::SQUARE => OpKind::Unary(UnaryOp::Square),
        B::SIN => OpKind::Unary(UnaryOp::Sin),
        B::COS => OpKind::Unary(UnaryOp::Cos),
        B::FLOOR => OpKind::Unary(UnaryOp::Floor),
        B::CEIL => OpKind::Unary(UnaryOp::Ceil),
        B::ROUND => OpKind::Unary(UnaryOp::Round),
        B::SIGN => OpKind::Unary(UnaryOp::Sign),
        B::PRELU => OpKind::Prelu,
        B::FAKE_QUANT => {
            let o = op.builtin_options_as_fake_quant_options();
            OpKind::FakeQuant {
                min: o.map_or(0.0, |o| o.min()),
                max: o.map_or(0.0, |o| o.max()),
                num_bits: o.map_or(0, |o| o.num_bits()).max(0) as u32,
                narrow_range: o.is_some_and(|o| o.narrow_range()),
            }
        }
        B::COMPLEX_ABS => OpKind::ComplexAbs,
        B::REAL => OpKind::Real,
        B::IMAG => OpKind::Imag,
        // CastOptions, ArgMaxOptions.output_type and ShapeOptions.out_type repeat the output
        // tensor's type, which is what the IR and the kernels use.
        B::CAST => OpKind::Cast,
        B::DEQUANTIZE => OpKind::Dequantize,
        B::QUANTIZE => OpKind::Quantize,
        _ => return Ok(None),
    }))
}
