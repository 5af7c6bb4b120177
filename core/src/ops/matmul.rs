//! Matrix products: FULLY_CONNECTED and BATCH_MATMUL.

use super::Shapes::One;
use super::{spec, Activation, Spec};
use crate::infer::Cx;
use crate::shape::{fmt_dims, num_elements};
use crate::{CompileError, DType, OpKind};

slots! {
    /// Input slots of FULLY_CONNECTED.
    mod fully_connected: INPUT = 0: "The input, flattened to rows of the weights' `K` (or `[.., K]` with `keep_num_dims`).",
        WEIGHTS = 1: "The weights `[N, K]`.", BIAS = 2: "The optional bias `[N]`.";
    /// Input slots of BATCH_MATMUL.
    mod batch_matmul: X = 0: "The left operand `[..., m, k]`.", Y = 1: "The right operand `[..., k, n]`.",
        X_ZP = 2: "The left operand's zero point in the plain-integer form (TOSA MATMUL): one constant of its type.",
        Y_ZP = 3: "The right operand's zero point in the plain-integer form: one constant of its type.";
}

/// Parameters of a fully connected layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FullyConnected {
    /// Fused activation.
    pub act: Activation,
    /// Keep the input's leading dims in the output instead of flattening them to one.
    pub keep_num_dims: bool,
    /// For dynamic-range models: quantize inputs asymmetrically.
    pub asymmetric_quantize_inputs: bool,
}

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::FullyConnected(_) => spec("FullyConnected", 2, Some(3), Some(1), One(fully_connected)),
        OpKind::BatchMatMul { .. } => spec("BatchMatMul", 2, Some(4), Some(1), One(batch_matmul)),
        _ => return None,
    })
}

/// FULLY_CONNECTED: rows of the weights' `K` inputs times `[N, K]` weights.
fn fully_connected(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::FullyConnected(p) = cx.op.kind else { return Err(cx.unlisted()) };
    use fully_connected::{BIAS, INPUT, WEIGHTS};
    let x = cx.input(INPUT)?;
    let w = cx.expect_rank(WEIGHTS, 2)?;
    let (n, k) = (w[0], w[1]);
    let total = num_elements(x).ok_or_else(|| cx.input_err(INPUT, "too many elements"))?;
    if k == 0 || total % k != 0 || x.is_empty() {
        return Err(cx.input_err(INPUT, format!("shape {} cannot be flattened into rows of {k} (the weights' {})", fmt_dims(x), fmt_dims(w))));
    }
    if let Some(b) = cx.opt_input(BIAS)? {
        if num_elements(b) != Some(n) {
            return Err(cx.input_err(BIAS, format!("bias {} must have {n} elements", fmt_dims(b))));
        }
    }
    if p.keep_num_dims {
        if x[x.len() - 1] != k {
            return Err(cx.input_err(INPUT, format!("last dim of {} must equal the weights' {k} with keep_num_dims", fmt_dims(x))));
        }
        let mut out = x.to_vec();
        *out.last_mut().expect("rank >= 1 checked") = n;
        Ok(out)
    } else {
        Ok(vec![total / k, n])
    }
}

/// BATCH_MATMUL: `[..., m, k] @ [..., k, n]` (last two dims swapped by `adj_x` / `adj_y`), the
/// leading dims broadcast NumPy-style.
fn batch_matmul(cx: &Cx) -> Result<Vec<usize>, CompileError> {
    let OpKind::BatchMatMul { adj_x, adj_y } = cx.op.kind else { return Err(cx.unlisted()) };
    use batch_matmul::{X, Y};
    let (x, y) = (cx.input(X)?, cx.input(Y)?);
    for (i, s) in [(X, x), (Y, y)] {
        if s.len() < 2 || s.len() > 5 {
            return Err(cx.input_err(i, format!("rank must be 2 to 5, shape is {}", fmt_dims(s))));
        }
    }
    let (tx, ty) = (cx.dtype(X)?, cx.dtype(Y)?);
    if cx.op.input(batch_matmul::X_ZP).is_some() || cx.op.input(batch_matmul::Y_ZP).is_some() {
        // The plain-integer form: int8 x int8 with zero points to exact int32 sums, int16 x int16
        // to int64 (TOSA's int48).
        use batch_matmul::{X_ZP, Y_ZP};
        if cx.op.input(X_ZP).is_none() || cx.op.input(Y_ZP).is_none() || tx != ty || !matches!(tx, DType::I8 | DType::I16) {
            return Err(cx.err("the plain-integer form takes int8 or int16 operands of one type and both zero points"));
        }
        // int16 products sum into 48 bits, held in int64.
        cx.expect_out_dtype(0, if tx == DType::I8 { DType::I32 } else { DType::I64 })?;
        for slot in [X_ZP, Y_ZP] {
            cx.expect_dtype(slot, &[tx])?;
            if cx.value_bytes(slot)?.1.len() != tx.size() {
                return Err(cx.input_err(slot, format!("a zero point is one {tx} element")));
            }
        }
    }
    // Besides one type, TFLite takes hybrid float x int8 and quantized int16 x int8.
    if tx != ty && !(matches!(tx, DType::F32 | DType::I16) && ty == DType::I8) {
        return Err(cx.input_err(Y, format!("has type {ty} but input 0 has {tx}")));
    }
    let (xr, yr) = (x.len(), y.len());
    let (m, kx) = if adj_x { (x[xr - 1], x[xr - 2]) } else { (x[xr - 2], x[xr - 1]) };
    let (ky, n) = if adj_y { (y[yr - 1], y[yr - 2]) } else { (y[yr - 2], y[yr - 1]) };
    if kx != ky {
        return Err(cx.err(format!(
            "inner dims differ: {} (adj_x {adj_x}) has {kx}, {} (adj_y {adj_y}) has {ky}",
            fmt_dims(x),
            fmt_dims(y)
        )));
    }
    let mut out = super::elementwise::broadcast_shapes(&x[..xr - 2], &y[..yr - 2]).ok_or_else(|| {
        cx.err(format!("batch dims of {} and {} cannot be broadcast together", fmt_dims(x), fmt_dims(y)))
    })?;
    out.extend_from_slice(&[m, n]);
    Ok(out)
}
