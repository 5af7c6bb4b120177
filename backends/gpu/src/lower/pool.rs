//! NHWC resampling of one input: AVERAGE/MAX/L2 pooling and RESIZE_BILINEAR/NEAREST_NEIGHBOR.

use nnrt_core::infer::window_output;
use nnrt_core::{OpKind, PoolKind, ResizeMode};

use super::cx::{act_code, no_kernel, numel, u, words, Cx, R};
use super::{Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["AveragePool2D", "MaxPool2D", "L2Pool2D"], pool);
    r.ops(&["ResizeBilinear", "ResizeNearestNeighbor"], resize);
}

fn pool(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::Pool2D(p) = kind else { return no_kernel(kind) };
    let (x, o, xd, od) = cx.nhwc_f32("pooling")?;
    let act = act_code(p.act)?;
    let wh = window_output(xd[1], p.filter[0], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], p.filter[1], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
    let code = match p.kind {
        PoolKind::Average => 0,
        PoolKind::Max => 1,
        PoolKind::L2 => 2,
    };
    // A pool over the whole image (a squeeze-and-excitation block's) is a reduction over H and
    // W, one workgroup per channel (`reduce_wide`) when the image is large.
    let whole = od[1] == 1 && od[2] == 1 && wh.pad_before == 0 && ww.pad_before == 0 && p.filter[0] >= xd[1] && p.filter[1] >= xd[2];
    // (`reduction`'s op codes: 0 mean, 2 max; L2 keeps the pool kernel.)
    let reduce_op = match p.kind {
        PoolKind::Average => Some(0),
        PoolKind::Max => Some(2),
        PoolKind::L2 => None,
    };
    if let (true, Some(op)) = (whole && xd[1] * xd[2] >= super::reduce::WIDE_MIN, reduce_op) {
        let d6 = [1, 1, xd[0], xd[1], xd[2], xd[3]];
        return Ok(Lowered::Dispatches(vec![super::reduce::reduction(cx, (x, o), d6, [0, 0, 0, 1, 1, 0], op, act)?]));
    }
    let threads = numel(&od);
    let params = words(&[threads, xd[0], xd[1], xd[2], xd[3], od[1], od[2], p.filter[0], p.filter[1], p.stride[0], p.stride[1], wh.pad_before, ww.pad_before])?;
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(threads)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("pool", vec![("ACT", act), ("KIND", code)], params, vec![xb, ob], groups)?]))
}

fn resize(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let OpKind::Resize(r) = kind else { return no_kernel(kind) };
    let (x, o, xd, od) = cx.nhwc_f32("resize")?;
    let scale = |i: usize, o: usize| -> f32 {
        if r.align_corners && o > 1 {
            (i - 1) as f32 / (o - 1) as f32
        } else {
            i as f32 / o as f32
        }
    };
    let mode = match r.mode {
        ResizeMode::Bilinear => 0,
        ResizeMode::Nearest => 1,
    };
    let n = numel(&od);
    let params = vec![u(n)?, u(xd[0])?, u(xd[1])?, u(xd[2])?, u(xd[3])?, u(od[1])?, u(od[2])?, scale(xd[1], od[1]).to_bits(), scale(xd[2], od[2]).to_bits()];
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    let constants = vec![("MODE", mode), ("HALF", u32::from(r.half_pixel_centers)), ("ALIGN", u32::from(r.align_corners))];
    Ok(Lowered::Dispatches(vec![cx.dispatch("resize", constants, params, vec![xb, ob], groups)?]))
}
