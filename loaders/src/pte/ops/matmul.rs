//! Matrix products and lookups: `addmm`, `mm`, `bmm`, `linear`, `embedding`.
//!
//! `addmm(bias, x, permute(W))`, what `nn.Linear` exports to, becomes FULLY_CONNECTED on `W`
//! itself: the importer keeps the weights as the file stores them (`[out, in]`).

use nnrt_core::{Activation, BinaryOp, DType, FullyConnected, LoadError, OpKind, OperandId};

use super::{binary, broadcast, copy_into, transpose, Convert};
use crate::pte::method::{MethodBuilder, Scalar};

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::addmm.out" => addmm,
        "aten::mm.out" => |b, a| matmul(b, a, 2),
        "aten::bmm.out" => |b, a| matmul(b, a, 2),
        "aten::linear.out" => linear,
        "aten::embedding.out" => embedding,
        _ => return None,
    })
}

/// `[out, in]` weights for FULLY_CONNECTED from the `[in, out]` right operand `m`: a constant
/// is transposed once here.
fn fc_weights(b: &mut MethodBuilder<'_, '_>, m: OperandId) -> OperandId {
    transpose(b, m, &[1, 0])
}

fn fully_connected(b: &mut MethodBuilder<'_, '_>, x: OperandId, w: OperandId, bias: Option<OperandId>) -> OperandId {
    let xd = b.dims(x);
    let n = b.dims(w).first().copied().unwrap_or(0);
    let mut dims = xd.clone();
    if let Some(l) = dims.last_mut() {
        *l = n;
    }
    let out = b.temp(b.dtype(x), &dims);
    b.emit(OpKind::FullyConnected(FullyConnected { act: Activation::None, keep_num_dims: true, asymmetric_quantize_inputs: false }), vec![Some(x), Some(w), bias], vec![out]);
    out
}

/// `addmm(self, mat1, mat2, beta=1, alpha=1)` = `beta * self + alpha * (mat1 @ mat2)`.
fn addmm(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let bias = b.tensor(a, 0)?;
    let x = b.tensor(a, 1)?;
    let m = b.tensor(a, 2)?;
    let beta = b.opt_scalar(a, 3)?.map_or(1.0, Scalar::as_f64);
    let alpha = b.opt_scalar(a, 4)?.map_or(1.0, Scalar::as_f64);
    let dt = b.dtype(x);
    let md = b.dims(m);
    if md.len() != 2 || b.dims(x).len() != 2 {
        return Err(b.err(format!("addmm takes matrices; got {:?} and {md:?}", b.dims(x))));
    }
    let w = fc_weights(b, m);
    let bd = b.dims(bias);
    let bias_fits = beta == 1.0 && alpha == 1.0 && bd.len() == 1 && bd[0] == md[1] && b.dtype(bias) == dt;
    let y = if bias_fits {
        fully_connected(b, x, w, Some(bias))
    } else {
        let mut p = fully_connected(b, x, w, None);
        if alpha != 1.0 {
            let k = b.const_scalar(dt, Scalar::Double(alpha))?;
            p = binary(b, BinaryOp::Mul, p, k);
        }
        let mut c = b.cast(bias, dt);
        if beta != 1.0 {
            let k = b.const_scalar(dt, Scalar::Double(beta))?;
            c = binary(b, BinaryOp::Mul, c, k);
        }
        let dims = broadcast(&b.dims(p), &b.dims(c)).ok_or_else(|| b.err("the bias does not broadcast to the product"))?;
        let r = b.temp(dt, &dims);
        b.emit_all(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[p, c], vec![r]);
        r
    };
    let out = b.out(a, 5)?;
    copy_into(b, y, out);
    Ok(())
}

/// `mm(self, mat2)` / `bmm(self, mat2)`: BATCH_MATMUL.
fn matmul(b: &mut MethodBuilder<'_, '_>, a: &[i64], out_k: usize) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let y = b.tensor(a, 1)?;
    let dt = b.dtype(x);
    let y = b.cast(y, dt);
    let out = b.out(a, out_k)?;
    if b.dims(x).len() == 2 && b.g.operand(y).data.is_some() && dt == DType::F32 {
        let w = fc_weights(b, y);
        let r = fully_connected(b, x, w, None);
        copy_into(b, r, out);
        return Ok(());
    }
    b.emit_all(OpKind::BatchMatMul { adj_x: false, adj_y: false }, &[x, y], vec![out]);
    Ok(())
}

/// `linear(input, weight, bias?)` = `input @ weight^T + bias`.
fn linear(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let w = b.tensor(a, 1)?;
    let bias = b.opt_tensor(a, 2)?;
    let y = fully_connected(b, x, w, bias);
    let out = b.out(a, 3)?;
    copy_into(b, y, out);
    Ok(())
}

/// `embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)`: rows of `weight`.
fn embedding(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let w = b.tensor(a, 0)?;
    let i = b.tensor(a, 1)?;
    let out = b.out(a, 5)?;
    b.emit_all(OpKind::Gather { axis: 0, batch_dims: 0 }, &[w, i], vec![out]);
    Ok(())
}
