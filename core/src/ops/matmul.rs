//! Matrix products: FULLY_CONNECTED and BATCH_MATMUL.

use super::{fixed, one, spec, Activation, Rules, Spec};
use crate::infer::Cx;
use crate::shape::{fmt_dims, num_elements};
use crate::{CompileError, DType, OpKind};

/// Input slots of FULLY_CONNECTED.
pub mod fully_connected {
    /// The input, flattened to rows of the weights' `K` (or `[.., K]` with `keep_num_dims`).
    pub const INPUT: usize = 0;
    /// The weights `[N, K]`.
    pub const WEIGHTS: usize = 1;
    /// The optional bias `[N]`.
    pub const BIAS: usize = 2;
}

/// Input slots of BATCH_MATMUL.
pub mod batch_matmul {
    /// The left operand `[..., m, k]`.
    pub const X: usize = 0;
    /// The right operand `[..., k, n]`.
    pub const Y: usize = 1;
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

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::FullyConnected(_) => spec("FullyConnected", 2, Some(3), Some(1)),
        OpKind::BatchMatMul { .. } => fixed("BatchMatMul", 2, 1),
        _ => return None,
    })
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    match &cx.op.kind {
        OpKind::FullyConnected(p) => one(fully_connected(cx, p)),
        OpKind::BatchMatMul { adj_x, adj_y } => one(batch_matmul(cx, *adj_x, *adj_y)),
        _ => Err(cx.unlisted()),
    }
}

fn fully_connected(cx: &Cx, p: &FullyConnected) -> Result<Vec<usize>, CompileError> {
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
fn batch_matmul(cx: &Cx, adj_x: bool, adj_y: bool) -> Result<Vec<usize>, CompileError> {
    use batch_matmul::{X, Y};
    let (x, y) = (cx.input(X)?, cx.input(Y)?);
    for (i, s) in [(X, x), (Y, y)] {
        if s.len() < 2 || s.len() > 5 {
            return Err(cx.input_err(i, format!("rank must be 2 to 5, shape is {}", fmt_dims(s))));
        }
    }
    let (tx, ty) = (cx.dtype(X)?, cx.dtype(Y)?);
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
