//! Fused steps of two float ops, one kernel each (MobileNet's expansion + depthwise and
//! depthwise + projection, a convolution + residual ADD, LOGISTIC + MUL as SiLU, a corner SLICE +
//! the convolution that reads it): the op between them is never written.

use nnrt_core::{cast, cast_mut, CompileCtx, OpId, OpKind};

use super::conv::{const_bias, conv_geom, depthwise_geom};
use super::util::{all_f32, const_f32, float_kernel, fused, fusion_off, source};
use crate::kernel::{built, Built};
use crate::kernels::conv::{Conv2d, ConvGeom};
use crate::kernels::gemm::Residual;
use crate::kernels::expand_dw::{DepthwiseProject, ExpandDepthwise};
use crate::kernels::sparse_conv::SparseConv1x1;
use crate::kernels::Act;

/// One step for ops `a` then `b` when the backend has a fused kernel for the pair (see
/// `build_expand_depthwise`, `build_depthwise_project` and `build_conv_add`),
/// `None` otherwise.
pub(crate) fn fuse_pair(ctx: &CompileCtx, a: OpId, b: OpId) -> Option<Built> {
    if fusion_off("pair") {
        return None;
    }
    // The depthwise + projection pair only on one thread: there it saves 3.4 % of MobileNetV2
    // (less memory traffic, and a plan with fewer tensors); on two, its row bands ran each pair
    // 0–6 % slower than the two ops split across threads, and it took the projections from
    // the residual fusion (+3 %). MobileNetV1's pointwise convolutions sit between two
    // depthwise ones; on one thread the first pair (depthwise + projection) is taken: per-op
    // minima of its first blocks, 1 thread, dw1+conv2 0.69 ms (0.83 apart) and dw5+conv6 1.00
    // (1.02), where expansion + depthwise measured conv2+dw3 0.67 (0.58 apart) and conv6+dw7
    // 0.95 (0.94); the whole model 1.8 % faster. The convolution + residual pair runs on any
    // thread count where that pair did not apply (on one thread it once moved MobileNetV2's
    // plan and cost 3 %; since its blocks run whole (`fuse_block`), it measures 0.98–1.0 of
    // the ops apart on BlazeFace, the small ResNet, MobileNetV2 and the selfie model).
    if let Some(silu) = build_silu(ctx, a, b) {
        return Some(silu);
    }
    if let Some(crop) = build_crop_conv(ctx, a, b) {
        return Some(crop);
    }
    build_expand_depthwise(ctx, a, b)
        .or_else(|| if ctx.threads >= 2 { None } else { build_depthwise_project(ctx, a, b) })
        .or_else(|| if fusion_off("conv_add") { None } else { build_conv_add(ctx, a, b) })
}

/// Expanded tensors smaller than this per thread stay in the cores' L2 between the two ops:
/// fusing gains nothing there. (MobileNetV2: the 4.8 MB tensor at 112×112 gains at 1 and 2
/// threads; the 1.8 MB ones at 56×56 gain 2–5 % of the pair at 1 thread, nothing at 2.)
const FUSE_MIN_BYTES: usize = 1 << 20;
/// Smallest depthwise output a depthwise + projection step is used for.
const PROJECT_MIN_BYTES: usize = 1 << 20;
/// Least ratio of the depthwise output's bytes to the projection weights' for that step.
const PROJECT_MIN_RATIO: usize = 16;

/// What a fused step needs from its first op: a float CONV_2D (one group, no tanh) with one
/// output that `next` alone reads, once, and that is not a graph output.
struct Producer {
    /// The convolution's input and output operands.
    input: nnrt_core::OperandId,
    output: nnrt_core::OperandId,
    geom: ConvGeom,
    act: Act,
    /// OHWI weights and the bias.
    weights: Vec<f32>,
    bias: Option<Vec<f32>>,
}

/// Whether `next` is the only op that reads `t`, once, and `t` is neither a graph output nor a
/// variable: a fused step may then skip writing it.
pub(super) fn read_once_by(ctx: &CompileCtx, t: nnrt_core::OperandId, next: OpId) -> bool {
    let g = ctx.graph;
    let reads = g.ops.iter().flat_map(|o| o.inputs.iter().flatten()).filter(|&&i| i == t).count();
    let next_reads = g.op(next).inputs.iter().flatten().filter(|&&i| i == t).count();
    reads == 1 && next_reads == 1 && !g.outputs.contains(&t) && !g.operand(t).is_variable
}

fn producer(ctx: &CompileCtx, conv: OpId, next: OpId) -> Option<Producer> {
    let c = ctx.graph.op(conv);
    let OpKind::Conv2D(p) = &c.kind else { return None };
    all_f32(ctx, conv).ok()?;
    all_f32(ctx, next).ok()?;
    let (input, output, w) = (c.input(0)?, *c.outputs.first()?, c.input(1)?);
    if c.outputs.len() != 1 || !read_once_by(ctx, output, next) {
        return None;
    }
    let (xd, wd, od) = (ctx.dims(input), ctx.dims(w), ctx.dims(output));
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
        return None;
    }
    let geom = conv_geom(xd, wd, od, p).ok()?;
    let (act, tanh) = fused(p.act);
    if geom.groups != 1 || tanh || geom.k_h == 0 || geom.k_w == 0 {
        return None;
    }
    let weights = const_f32(ctx, w)?;
    let bias = const_bias(ctx, c.input(2))?;
    if weights.len() < geom.filter_len() || bias.as_ref().is_some_and(|b| b.len() < geom.out_c) {
        return None;
    }
    Some(Producer { input, output, geom, act, weights: weights.into_owned(), bias })
}

impl Producer {
    /// A 1×1, stride-1 convolution over the whole input: its input is the GEMM's `A` as is.
    fn is_1x1(&self) -> bool {
        let g = &self.geom;
        g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w
    }
}

/// The cheap part of [`build_expand_depthwise`]'s test (no weights copied): `conv` a CONV_2D
/// whose output only `dw`, a DEPTHWISE_CONV_2D, reads, and that output at least `min_bytes`.
fn expand_depthwise_applies(ctx: &CompileCtx, conv: OpId, dw: OpId, min_bytes: usize) -> bool {
    let (c, d) = (ctx.graph.op(conv), ctx.graph.op(dw));
    if !matches!(c.kind, OpKind::Conv2D(_)) || !matches!(d.kind, OpKind::DepthwiseConv2D(_)) || c.outputs.len() != 1 {
        return false;
    }
    let out = c.outputs[0];
    d.input(0) == Some(out) && read_once_by(ctx, out, dw) && ctx.dims(out).iter().product::<usize>() * 4 >= min_bytes
}

/// The fused step for op `conv` followed by op `dw` ([`ExpandDepthwise`]), when `conv` is a
/// 1×1 stride-1 [`producer`] of `dw`, a DEPTHWISE_CONV_2D with multiplier 1 (no tanh), and the
/// expanded tensor is large. `None` when they are not. The step reads the block's input at the
/// depthwise op's turn and never materializes the expanded tensor: the backend tells the memory
/// planner both (`Executable::plan_hints`).
fn build_expand_depthwise(ctx: &CompileCtx, conv: OpId, dw: OpId) -> Option<Built> {
    let (fusedk, x) = expand_depthwise(ctx, conv, dw, FUSE_MIN_BYTES * ctx.threads.max(1))?;
    Some(built(vec![source(ctx, x)], move |ins, outs| {
        fusedk.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// The kernel of [`build_expand_depthwise`] (expanded tensor at least `min_bytes`) and the block
/// input it reads.
fn expand_depthwise(ctx: &CompileCtx, conv: OpId, dw: OpId, min_bytes: usize) -> Option<(ExpandDepthwise, nnrt_core::OperandId)> {
    if !expand_depthwise_applies(ctx, conv, dw, min_bytes) {
        return None;
    }
    let d = ctx.graph.op(dw);
    let OpKind::DepthwiseConv2D(p2) = &d.kind else { return None };
    let pr = producer(ctx, conv, dw).filter(Producer::is_1x1)?;
    if SparseConv1x1::applies(&pr.geom, &pr.weights) {
        // A sparse expansion runs on its own (the fused kernel is dense).
        return None;
    }
    let out_t = *d.outputs.first()?;
    let md = ctx.dims(pr.output);
    let (w2d, od) = (ctx.dims(d.input(1)?), ctx.dims(out_t));
    if d.input(0)? != pr.output || d.outputs.len() != 1 || w2d.len() != 4 || od.len() != 4 {
        return None;
    }
    let dg = depthwise_geom(md, w2d, od, p2).ok()?;
    let (act2, tanh2) = fused(p2.act);
    if dg.multiplier != 1 || tanh2 || dg.batch != pr.geom.batch {
        return None;
    }
    let w2 = const_f32(ctx, d.input(1)?)?;
    let b2 = const_bias(ctx, d.input(2))?;
    Some((ExpandDepthwise::new(pr.geom.in_c, &pr.weights, pr.bias.as_deref(), pr.act, dg, &w2, b2.as_deref(), act2), pr.input))
}

/// A whole inverted-residual block as one step ([`ExpandDepthwise::with_projection`]): `ids`
/// starting with an expansion + depthwise pair that [`build_expand_depthwise`] takes, then a
/// float 1×1 stride-1 CONV_2D (one group, no tanh, dense) that alone reads the depthwise
/// output, and, when an ADD (no tanh) alone reads the projection and adds a tensor of the same
/// shape, that ADD too (MobileNetV2's residual). Returns the step and how many ops it covers (3
/// or 4). Neither the depthwise output nor the projection's is written; the results are the
/// ops' bit for bit (kernel test).
pub(crate) fn fuse_block(ctx: &CompileCtx, ids: &[OpId]) -> Option<(Built, usize)> {
    if fusion_off("block") {
        return None;
    }
    let [conv, dw, proj, rest @ ..] = ids else { return None };
    let mid = *ctx.graph.op(*dw).outputs.first()?;
    // One thread runs the block in one band, and fusing gained at every MobileNetV2 size (kernel
    // A/B, `benches/examples/block_ab.rs`, against the ops apart: 0.65–0.97). With more, each band
    // recomputes the expanded rows at its top edge, which the small maps feel (2 threads: 0.77–0.86
    // at 112 and 56 pixels, 0.86–1.03 at 28, 1.05–1.40 at 14 and 7), and the whole model measured
    // no faster with the blocks at 56 pixels fused: there the block is taken where the expansion
    // + depthwise pair would be.
    let min_bytes = if ctx.threads > 1 { FUSE_MIN_BYTES * ctx.threads } else { 0 };
    if !expand_depthwise_applies(ctx, *conv, *dw, min_bytes) {
        return None;
    }
    let pj = projection(ctx, mid, *proj)?;
    let proj_out = *ctx.graph.op(*proj).outputs.first()?;
    let residual = rest.first().and_then(|&add| residual_add(ctx, proj_out, add));
    let (k, x) = expand_depthwise(ctx, *conv, *dw, min_bytes)?;
    let k = k.with_projection(pj.geom.out_c, &pj.weights, pj.bias.as_deref(), pj.act, residual.map(|(_, act)| act));
    Some(match residual {
        Some((r, _)) => (
            built(vec![source(ctx, x), source(ctx, r)], move |ins, outs| {
                k.run_add(cast::<f32>(ins[0].bytes)?, cast::<f32>(ins[1].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }),
            4,
        ),
        None => (
            built(vec![source(ctx, x)], move |ins, outs| {
                k.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }),
            3,
        ),
    })
}

/// A convolution, a channel PAD of a shortcut and the ADD of the two, as one step: `ids` starts
/// with a float CONV_2D [`producer`] of the ADD and a float PAD (in either order), then the
/// ADD (no tanh) of the convolution's output and the PAD's, both read by it alone. The PAD widens
/// the shortcut `x` along channels only (NHWC; zero, or PADV2's constant): MediaPipe's
/// BlazeFace / BlazePose blocks, `ADD(conv(…), PAD(x, [[0,0],[0,0],[0,0],[0,k]]))`.
/// [`Conv2d::run_add_residual`] adds `x` to the channels it covers and the constant to the
/// others as each band of rows is computed: neither the convolution's output nor the padded
/// shortcut is written, and the values are the three ops' bit for bit (`y + 0` is computed,
/// not skipped; tests/tests/ops/fusion.rs). Returns the step and 3.
pub(crate) fn fuse_padded_residual(ctx: &CompileCtx, ids: &[OpId]) -> Option<(Built, usize)> {
    if fusion_off("padded_residual") {
        return None;
    }
    let [a, b, add, ..] = ids else { return None };
    let (conv, pad) = match (&ctx.graph.op(*a).kind, &ctx.graph.op(*b).kind) {
        (OpKind::Conv2D(_), OpKind::Pad) => (*a, *b),
        (OpKind::Pad, OpKind::Conv2D(_)) => (*b, *a),
        _ => return None,
    };
    let (pd, ad) = (ctx.graph.op(pad), ctx.graph.op(*add));
    let OpKind::Binary { op: nnrt_core::BinaryOp::Add, act } = ad.kind else { return None };
    let (act2, tanh) = fused(act);
    all_f32(ctx, *add).ok()?;
    let (x, p, y) = (pd.input(0)?, *pd.outputs.first()?, *ctx.graph.op(conv).outputs.first()?);
    if ctx.graph.operand(x).dtype != nnrt_core::DType::F32 || ctx.graph.operand(p).dtype != nnrt_core::DType::F32 {
        return None;
    }
    let takes = matches!((ad.input(0)?, ad.input(1)?), (u, v) if (u == y && v == p) || (u == p && v == y));
    if tanh || !takes || ad.inputs.len() != 2 || ad.outputs.len() != 1 || pd.outputs.len() != 1 || !read_once_by(ctx, p, *add) {
        return None;
    }
    let (xd, yd) = (ctx.dims(x), ctx.dims(y));
    if xd.len() != 4 || ctx.dims(p) != yd || ctx.dims(ad.outputs[0]) != yd || xd[..3] != yd[..3] {
        return None;
    }
    let pads = ctx.graph.const_ints(pad, pd.input(1)?).ok()?;
    if pads.len() != 8 || pads[..6].iter().any(|&v| v != 0) || pads[6] < 0 || pads[7] < 0 {
        return None;
    }
    let (first, channels) = (pads[6] as usize, xd[3]);
    if first + channels + pads[7] as usize != yd[3] {
        return None;
    }
    let fill = match pd.input(2) {
        Some(v) => match const_f32(ctx, v)?.as_ref() {
            [v] => *v,
            _ => return None,
        },
        None => 0.0,
    };
    let pr = producer(ctx, conv, *add)?;
    Some((residual_step(ctx, pr, x, (channels, first, fill), act2), 3))
}

/// The projection of a fused step (see [`projection`]).
struct Projection<'c> {
    geom: ConvGeom,
    act: Act,
    weights: std::borrow::Cow<'c, [f32]>,
    bias: Option<Vec<f32>>,
}

/// `conv` when it is a float 1×1 stride-1 CONV_2D (one group, no tanh, dense weights) that alone
/// reads `x` (NHWC, once) and keeps its pixels: the projection a fused step can run on rows of
/// `x` it has just computed. `None` otherwise (a sparse projection runs on its own).
fn projection<'c>(ctx: &CompileCtx<'c>, x: nnrt_core::OperandId, conv: OpId) -> Option<Projection<'c>> {
    let c = ctx.graph.op(conv);
    let OpKind::Conv2D(p) = &c.kind else { return None };
    all_f32(ctx, conv).ok()?;
    if c.input(0)? != x || c.outputs.len() != 1 || !read_once_by(ctx, x, conv) {
        return None;
    }
    let (xd, wd, od) = (ctx.dims(x), ctx.dims(c.input(1)?), ctx.dims(c.outputs[0]));
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
        return None;
    }
    let geom = conv_geom(xd, wd, od, p).ok()?;
    let g = &geom;
    let one_by_one = g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0;
    let (act, tanh) = fused(p.act);
    if !one_by_one || g.groups != 1 || tanh || g.out_h != xd[1] || g.out_w != xd[2] || g.in_c != xd[3] {
        return None;
    }
    let weights = const_f32(ctx, c.input(1)?)?;
    let bias = const_bias(ctx, c.input(2))?;
    if weights.len() < g.out_c * g.in_c || bias.as_ref().is_some_and(|b| b.len() < g.out_c) || SparseConv1x1::applies(g, &weights) {
        return None;
    }
    Some(Projection { geom, act, weights, bias })
}

/// The other input of `add` and its activation when `add` is a float ADD (no tanh) of `y` and
/// a tensor shaped like `y`, `y`'s only reader (once), with an output shaped like `y`: the
/// residual of MobileNetV2's and ResNet's blocks. `None` otherwise.
fn residual_add(ctx: &CompileCtx, y: nnrt_core::OperandId, add: OpId) -> Option<(nnrt_core::OperandId, Act)> {
    let a = ctx.graph.op(add);
    let OpKind::Binary { op: nnrt_core::BinaryOp::Add, act } = a.kind else { return None };
    let (act, tanh) = fused(act);
    all_f32(ctx, add).ok()?;
    // `read_once_by` leaves exactly one input that is `y`.
    let other = if a.input(0)? == y { a.input(1)? } else { a.input(0)? };
    let yd = ctx.dims(y);
    let ok = !tanh && a.inputs.len() == 2 && a.outputs.len() == 1 && read_once_by(ctx, y, add) && ctx.dims(other) == yd && ctx.dims(a.outputs[0]) == yd;
    ok.then_some((other, act))
}

/// The fused step for op `dw` followed by op `conv` ([`DepthwiseProject`]): `dw` a float
/// DEPTHWISE_CONV_2D with multiplier 1 (no tanh) whose output only `conv` reads, `conv` a 1×1
/// stride-1 CONV_2D (one group, no tanh) of it. `None` otherwise. The step runs at the
/// convolution's turn and the depthwise output is never materialized.
fn build_depthwise_project(ctx: &CompileCtx, dw: OpId, conv: OpId) -> Option<Built> {
    let d = ctx.graph.op(dw);
    let OpKind::DepthwiseConv2D(p1) = &d.kind else { return None };
    all_f32(ctx, dw).ok()?;
    let (x, mid) = (d.input(0)?, *d.outputs.first()?);
    if d.outputs.len() != 1 {
        return None;
    }
    let (xd, w1d, md) = (ctx.dims(x), ctx.dims(d.input(1)?), ctx.dims(mid));
    let w2d = ctx.dims(ctx.graph.op(conv).input(1)?);
    if xd.len() != 4 || w1d.len() != 4 || md.len() != 4 {
        return None;
    }
    // Each step of rows runs its own GEMM over the whole projection matrix: worth it while the
    // depthwise output is large next to those weights (MobileNetV2's wide maps, not the deep
    // 14×14 and 7×7 layers).
    let (mid_bytes, w2_bytes) = (md.iter().product::<usize>() * 4, w2d.iter().product::<usize>() * 4);
    if mid_bytes < PROJECT_MIN_BYTES || mid_bytes < PROJECT_MIN_RATIO * w2_bytes {
        return None;
    }
    let dg = depthwise_geom(xd, w1d, md, p1).ok()?;
    let (act1, tanh1) = fused(p1.act);
    if dg.multiplier != 1 || tanh1 {
        return None;
    }
    let pj = projection(ctx, mid, conv)?;
    let w1 = const_f32(ctx, d.input(1)?)?;
    let b1 = const_bias(ctx, d.input(2))?;
    if w1.len() < dg.k_h * dg.k_w * dg.in_c || b1.as_ref().is_some_and(|b| b.len() < dg.in_c) {
        return None;
    }
    let fusedk = DepthwiseProject::new(dg, &w1, b1.as_deref(), act1, pj.geom.out_c, &pj.weights, pj.bias.as_deref(), pj.act);
    Some(built(vec![source(ctx, x)], move |ins, outs| {
        fusedk.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// The fused step for op `conv` followed by op `add` ([`Conv2d::run_add`]): `conv` a
/// [`producer`] of `add`, an ADD (no tanh) of its output and another tensor of the same shape
/// (MobileNetV2's projection and residual, a ResNet block's second 3×3 convolution and its
/// shortcut). `None` otherwise. As with [`build_expand_depthwise`], the step runs at the ADD's
/// turn and the convolution's output is never materialized.
fn build_conv_add(ctx: &CompileCtx, conv: OpId, add: OpId) -> Option<Built> {
    let (x, act2) = residual_add(ctx, *ctx.graph.op(conv).outputs.first()?, add)?;
    let pr = producer(ctx, conv, add)?;
    let channels = pr.geom.out_c;
    Some(residual_step(ctx, pr, x, (channels, 0, 0.0), act2))
}

/// The step of a [`producer`] convolution whose output a residual ADD (activation `add_act`)
/// takes with `x`: `x` rows of `channels` values from column `first`, `fill` at the other
/// columns ([`Residual`]; a plain residual when `channels` is the output's). Sparse 1×1
/// weights run sparse.
fn residual_step(ctx: &CompileCtx, pr: Producer, x: nnrt_core::OperandId, (channels, first, fill): (usize, usize, f32), add_act: Act) -> Built {
    let inputs = vec![source(ctx, pr.input), source(ctx, x)];
    if let Some(sparse) = SparseConv1x1::try_new(pr.geom, &pr.weights, pr.bias.as_deref(), pr.act) {
        log::debug!("{}: 1x1 CONV_2D + ADD runs sparse ({} of {} weights nonzero)", pr.output, sparse.nnz(), pr.geom.filter_len());
        return built(inputs, move |ins, outs| {
            let res = Residual { x: cast::<f32>(ins[1].bytes)?, channels, first, fill };
            sparse.run_add_residual(cast::<f32>(ins[0].bytes)?, res, add_act, cast_mut::<f32>(outs[0].bytes)?);
            Ok(())
        });
    }
    let mut conv = Conv2d::new(pr.geom, &pr.weights, pr.bias.as_deref(), pr.act);
    built(inputs, move |ins, outs| {
        let res = Residual { x: cast::<f32>(ins[1].bytes)?, channels, first, fill };
        conv.run_add_residual(cast::<f32>(ins[0].bytes)?, res, add_act, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    })
}

/// The fused step for op `sig`, a float LOGISTIC of `x`, followed by op `mul`, a MUL (no tanh)
/// of `x` and that logistic, all of one shape: SiLU / swish as the TFLite converter writes it
/// (EfficientNet, after every convolution). One pass ([`silu`](crate::kernels::unary::silu))
/// gives exactly the two ops' values; the logistic is never written. `None` otherwise.
fn build_silu(ctx: &CompileCtx, sig: OpId, mul: OpId) -> Option<Built> {
    let (s, m) = (ctx.graph.op(sig), ctx.graph.op(mul));
    let OpKind::Binary { op: nnrt_core::BinaryOp::Mul, act } = m.kind else { return None };
    if s.kind != OpKind::Unary(nnrt_core::UnaryOp::Logistic) {
        return None;
    }
    all_f32(ctx, sig).ok()?;
    all_f32(ctx, mul).ok()?;
    let (x, mid, out) = (s.input(0)?, *s.outputs.first()?, *m.outputs.first()?);
    let x_first = match (m.input(0)?, m.input(1)?) {
        (a, b) if a == x && b == mid => true,
        (a, b) if a == mid && b == x => false,
        _ => return None,
    };
    let (act, tanh) = fused(act);
    let d = ctx.dims(x);
    if tanh || x == mid || s.outputs.len() != 1 || m.outputs.len() != 1 || m.inputs.len() != 2 || !read_once_by(ctx, mid, mul) || ctx.dims(mid) != d || ctx.dims(out) != d {
        return None;
    }
    Some(built(vec![source(ctx, x)], move |ins, outs| {
        crate::kernels::unary::silu(cast::<f32>(ins[0].bytes)?, x_first, act, cast_mut::<f32>(outs[0].bytes)?);
        Ok(())
    }))
}

/// The fused step for op `slice`, a SLICE that keeps the top-left corner of an NHWC tensor `x`
/// (begin all zero, batch and channels whole), followed by op `conv`, a float CONV_2D that alone
/// reads the slice and whose taps never reach past its last row or column: the convolution then
/// reads `x` in place, and the slice is never written. `None` otherwise.
///
/// TOSA's CONV2D needs `(in - 1 + pads - (k - 1) * dilation)` to be a multiple of the stride, so
/// the TFLite → TOSA converter cuts the last row and column before a stride-2 convolution of an
/// even-sized input (keras small ResNet's 1×1 shortcuts: a SLICE of 32×32 to 31×31, 13 µs of a
/// 0.25 ms run at 2 threads). The taps read are the same, in the same order, so the result is
/// bit-identical (test).
fn build_crop_conv(ctx: &CompileCtx, slice: OpId, conv: OpId) -> Option<Built> {
    let (s, c) = (ctx.graph.op(slice), ctx.graph.op(conv));
    let OpKind::Conv2D(p) = &c.kind else { return None };
    if s.kind != OpKind::Slice || s.outputs.len() != 1 || c.outputs.len() != 1 {
        return None;
    }
    all_f32(ctx, conv).ok()?;
    let (x, t, w) = (s.input(0)?, s.outputs[0], c.input(1)?);
    if c.input(0)? != t || !read_once_by(ctx, t, conv) {
        return None;
    }
    let begin = ctx.graph.const_ints(slice, s.input(1)?).ok()?;
    let (xd, td, wd, od) = (ctx.dims(x), ctx.dims(t), ctx.dims(w), ctx.dims(c.outputs[0]));
    if [xd.len(), td.len(), wd.len(), od.len()] != [4; 4] || begin.len() != 4 || begin.iter().any(|&b| b != 0) || xd[0] != td[0] || xd[3] != td[3] {
        return None;
    }
    let cut = conv_geom(td, wd, od, p).ok()?;
    if cut.out_h == 0 || cut.out_w == 0 || cut.k_h == 0 || cut.k_w == 0 {
        return None;
    }
    // The last tap's row and column, in padded coordinates, must fall before the cut.
    let last_h = (cut.out_h - 1) * cut.stride_h + (cut.k_h - 1) * cut.dil_h;
    let last_w = (cut.out_w - 1) * cut.stride_w + (cut.k_w - 1) * cut.dil_w;
    if last_h >= cut.pad_top + cut.in_h || last_w >= cut.pad_left + cut.in_w {
        return None;
    }
    let whole = ConvGeom { in_h: xd[1], in_w: xd[2], ..cut };
    let weights = const_f32(ctx, w)?;
    let bias = const_bias(ctx, c.input(2))?;
    if weights.len() < whole.filter_len() || bias.as_ref().is_some_and(|b| b.len() < whole.out_c) {
        return None;
    }
    let (act, tanh) = fused(p.act);
    let mut k = Conv2d::new(whole, &weights, bias.as_deref(), act);
    Some(float_kernel(source(ctx, x), tanh, move |x, out| k.run(x, out)))
}

#[cfg(test)]
mod tests {
    use nnrt_core::{Activation, BinaryOp, ConstData, Conv2D, DType, OpKind, Operand, OperandId, Operation, Padding, Subgraph};

    fn konst(g: &mut Subgraph, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> OperandId {
        let mut o = Operand::new("k", dtype, dims);
        o.data = Some(ConstData::owned(bytes));
        g.add_operand(o)
    }

    /// The step kinds the backend compiles for BlazeFace's widening block: x → CONV_2D 1×1
    /// (8 → 12 channels) → y, s → PAD(`pads`) → p, ADD(p, y) → out; `shared` makes the padded
    /// shortcut a graph output too.
    fn step_kinds(pads: [i32; 8], shared: bool) -> Vec<String> {
        let mut g = Subgraph::default();
        let od = [1, 5, 6, 12];
        let x = g.add_operand(Operand::new("x", DType::F32, &[1, 5, 6, 8]));
        let sd = [1, 5 - pads[3] as usize, 6 - pads[5] as usize, 12 - (pads[6] + pads[7]) as usize];
        let s = g.add_operand(Operand::new("s", DType::F32, &sd));
        let w = konst(&mut g, DType::F32, &[12, 1, 1, 8], (0..96).flat_map(|i| (i as f32 * 0.01).to_le_bytes()).collect());
        let p_ = konst(&mut g, DType::I32, &[4, 2], pads.iter().flat_map(|v| v.to_le_bytes()).collect());
        let (y, p, out) = (g.add_operand(Operand::new("y", DType::F32, &od)), g.add_operand(Operand::new("p", DType::F32, &od)), g.add_operand(Operand::new("out", DType::F32, &od)));
        let conv = OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::None });
        g.add_op(Operation { kind: conv, inputs: vec![Some(x), Some(w), None], outputs: vec![y] });
        g.add_op(Operation { kind: OpKind::Pad, inputs: vec![Some(s), Some(p_)], outputs: vec![p] });
        g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::Relu }, inputs: vec![Some(p), Some(y)], outputs: vec![out] });
        g.inputs = vec![x, s];
        g.outputs = if shared { vec![out, p] } else { vec![out] };
        crate::backend::step_kinds_of(&g, 1)
    }

    /// The convolution, the channel PAD and the ADD run as one step; a PAD of rows or columns,
    /// or a padded shortcut something else reads, leaves them apart. (Values against the ops:
    /// `tests/tests/ops/fusion.rs`, `padded_residual_cases`.)
    #[test]
    fn fuses_a_channel_padded_shortcut_only() {
        if crate::ops::fusion_off("padded_residual") {
            eprintln!("skipped: NNRT_NOFUSE is set");
            return;
        }
        assert_eq!(step_kinds([0, 0, 0, 0, 0, 0, 0, 4], false), ["Conv2D+Pad+Add"]);
        assert_eq!(step_kinds([0, 0, 0, 0, 0, 0, 1, 3], false), ["Conv2D+Pad+Add"]);
        assert_eq!(step_kinds([0, 0, 0, 1, 0, 0, 0, 4], false), ["Conv2D", "Pad", "Add"]);
        assert_eq!(step_kinds([0, 0, 0, 0, 0, 0, 0, 4], true), ["Conv2D", "Pad", "Add"]);
    }
}
