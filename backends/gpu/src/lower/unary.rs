//! Element-wise unary ops and activations.

use nnrt_core::{OpKind, UnaryOp};

use super::cx::{no_kernel, numel, u, Cx, R};
use super::{Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Relu", "Relu6", "ReluN1To1", "Tanh", "Logistic", "HardSwish", "LeakyRelu", "Relu0To1", "Elu", "Gelu", "Abs", "Neg", "Exp", "Log", "Sqrt", "Rsqrt", "Square", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "LogicalNot"], unary);
}

fn unary(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let &OpKind::Unary(op) = kind else { return no_kernel(kind) };
    let (x, o) = cx.f32_in_out()?;
    let mut alpha = 0.0f32;
    let code = match op {
        UnaryOp::Relu => 0,
        UnaryOp::Relu6 => 1,
        UnaryOp::ReluN1To1 => 2,
        UnaryOp::Tanh => 3,
        UnaryOp::Logistic => 4,
        UnaryOp::HardSwish => 5,
        UnaryOp::LeakyRelu(a) => {
            alpha = a;
            6
        }
        UnaryOp::Relu0To1 => 7,
        UnaryOp::Elu => 8,
        UnaryOp::Gelu { approximate: false } => 9,
        UnaryOp::Gelu { approximate: true } => 10,
        UnaryOp::Abs => 11,
        UnaryOp::Neg => 12,
        UnaryOp::Exp => 13,
        UnaryOp::Log => 14,
        UnaryOp::Sqrt => 15,
        UnaryOp::Rsqrt => 16,
        UnaryOp::Square => 17,
        UnaryOp::Sin => 18,
        UnaryOp::Cos => 19,
        UnaryOp::Floor => 20,
        UnaryOp::Ceil => 21,
        UnaryOp::Round => 22,
        UnaryOp::Sign => 23,
        UnaryOp::LogicalNot => return Err("LogicalNot works on bools; gpu kernels compute in float32".into()),
        UnaryOp::Erf => return Err("Erf has no gpu kernel yet".into()),
    };
    let n = numel(cx.dims(o));
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("unary", vec![("OP", code)], vec![u(n)?, alpha.to_bits()], vec![xb, ob], groups)?]))
}
