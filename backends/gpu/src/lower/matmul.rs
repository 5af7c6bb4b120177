//! Matrix products: FULLY_CONNECTED and BATCH_MATMUL (and 1x1 convolutions, through [`matmul`]).

use nnrt_core::OpKind;

use super::cx::{act_code, no_kernel, numel, pad6, u, Cx, R};
use super::{Buf, Dispatch, Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["FullyConnected"], fully_connected);
    r.ops(&["BatchMatMul"], batch_matmul);
}

/// The matmul dispatch for C[b, m, n] over batches `batch` ([outer, inner]) with the given strides.
#[allow(clippy::too_many_arguments)]
pub(super) fn matmul(cx: &Cx, shader: &'static str, a: Buf, b: Buf, bias: Buf, out: Buf, m: usize, n: usize, k: usize, batch: [usize; 2], a_str: [usize; 4], b_str: [usize; 4], act: u32) -> R<Dispatch> {
    let p = vec![u(m)?, u(n)?, u(k)?, u(batch[0])?, u(batch[1])?, u(a_str[0])?, u(a_str[1])?, u(a_str[2])?, u(a_str[3])?, u(b_str[0])?, u(b_str[1])?, u(b_str[2])?, u(b_str[3])?];
    let groups = [u(n.div_ceil(4).div_ceil(8))?, u(m.div_ceil(4).div_ceil(8))?, u(batch[0] * batch[1])?];
    cx.dispatch(shader, vec![("ACT", act)], p, vec![a, b, bias, out], groups)
}

fn fully_connected(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::FullyConnected(p) = kind else { return no_kernel(kind) };
    let (x, w, o) = cx.f32_pair(["the input", "the weights"])?;
    let wd = cx.dims(w).to_vec();
    if wd.len() != 2 || wd[1] == 0 {
        return Err("the weights must be [units, depth]".into());
    }
    let (n, k) = (wd[0], wd[1]);
    let total = numel(cx.dims(x));
    if !total.is_multiple_of(k) {
        return Err(format!("{total} input elements are not a multiple of the weights' depth {k}"));
    }
    let m = total / k;
    let act = act_code(p.act)?;
    let (xb, bias, ob) = (cx.buf(x)?, cx.bias(2, n)?, cx.buf(o)?);
    let (wb, shader) = cx.weights(w, "matmul", "matmul_f16")?;
    // B[k, n] is W[n, k]: the weights are read in place (no packing, non-constant weights work).
    let d = matmul(cx, shader, xb, wb, bias, ob, m, n, k, [1, 1], [0, 0, k, 1], [0, 0, 1, k], act)?;
    Ok(Lowered::Dispatches(vec![d]))
}

fn batch_matmul(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let &OpKind::BatchMatMul { adj_x, adj_y } = kind else { return no_kernel(kind) };
    let (x, y, o) = cx.f32_pair(["x", "y"])?;
    let (xd, yd, od) = (cx.dims(x).to_vec(), cx.dims(y).to_vec(), cx.dims(o).to_vec());
    if xd.len() < 2 || yd.len() < 2 || od.len() < 2 || od.len() > 4 {
        return Err("batch matmul needs inputs of rank 2 or more and an output of rank 4 or less".into());
    }
    let (m, k) = if adj_x { (xd[xd.len() - 1], xd[xd.len() - 2]) } else { (xd[xd.len() - 2], xd[xd.len() - 1]) };
    let n = if adj_y { yd[yd.len() - 2] } else { yd[yd.len() - 1] };
    // Batch strides of each input against the output's two (left-padded) batch dims.
    let ob = pad6(&od[..od.len() - 2])?;
    let batch = [ob[4], ob[5]];
    let bstr = |d: &[usize]| -> R<[usize; 2]> {
        let bd = pad6(&d[..d.len() - 2])?;
        if bd[..4].iter().any(|&v| v != 1) {
            return Err("more than two batch dims".to_string());
        }
        let inner = d[d.len() - 2] * d[d.len() - 1];
        let s1 = if bd[5] == 1 { 0 } else { inner };
        let s0 = if bd[4] == 1 { 0 } else { inner * bd[5] };
        Ok([s0, s1])
    };
    let (xs, ys) = (bstr(&xd)?, bstr(&yd)?);
    let xc = xd[xd.len() - 1];
    let yc = yd[yd.len() - 1];
    let a_str = if adj_x { [xs[0], xs[1], 1, xc] } else { [xs[0], xs[1], xc, 1] };
    let b_str = if adj_y { [ys[0], ys[1], 1, yc] } else { [ys[0], ys[1], yc, 1] };
    let (xb, yb, bias, obuf) = (cx.buf(x)?, cx.buf(y)?, cx.bias(usize::MAX, n)?, cx.buf(o)?);
    let d = matmul(cx, "matmul", xb, yb, bias, obuf, m, n, k, batch, a_str, b_str, 0)?;
    Ok(Lowered::Dispatches(vec![d]))
}
