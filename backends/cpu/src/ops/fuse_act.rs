//! A float CONV_2D or DEPTHWISE_CONV_2D followed by SiLU (LOGISTIC, then MUL of the
//! convolution's output by it: EfficientNet after nearly every convolution) or by HARD_SWISH
//! (MobileNetV3) as one step: the activation runs in the convolution's epilogue on each band of
//! output rows while the band is in cache ([`PostAct`]), and neither the convolution's output nor
//! the logistic is written to the arena. The values are exactly the unfused ops'.

use nnrt_core::{cast, cast_mut, BinaryOp, CompileCtx, OpId, OpKind, OperandId, UnaryOp};

use super::conv::{const_bias, conv_geom, depthwise_geom};
use super::int_forms::is_int_form;
use super::util::{all_f32, check_act, const_f32, fused, nhwc, source};
use crate::kernel::{built, Built};
use crate::kernels::conv::Conv2d;
use crate::kernels::sparse_conv::SparseConv1x1;
use crate::kernels::depthwise::depthwise_conv2d_post;
use crate::kernels::unary::PostAct;

/// The fused step starting at `ids[0]` and how many ops of `ids` it covers (3 for a convolution,
/// LOGISTIC and MUL; 2 for a convolution and HARD_SWISH); `None` when `ids` does not start with
/// such a run, when the convolution's output or the logistic is read by any other op (or is a
/// graph output or a variable), or under `NNRT_NOFUSE`.
pub(crate) fn fuse_conv_act(ctx: &CompileCtx, ids: &[OpId]) -> Option<(Built, usize)> {
    if super::util::fusion_off("act") {
        return None;
    }
    let (&conv, &next) = (ids.first()?, ids.get(1)?);
    let y = conv_output(ctx, conv)?;
    let (post, len, last) = match ctx.graph.op(next).kind {
        OpKind::Unary(UnaryOp::HardSwish) => {
            let h = ctx.graph.op(next);
            (h.inputs.as_slice() == [Some(y)] && h.outputs.len() == 1 && reads(ctx, y) == 1).then_some((PostAct::HardSwish, 2, next))?
        }
        OpKind::Unary(UnaryOp::Logistic) => {
            let mul = *ids.get(2)?;
            (silu_of(ctx, y, next, mul)?, 3, mul)
        }
        _ => return None,
    };
    all_f32(ctx, next).ok()?;
    all_f32(ctx, last).ok()?;
    let out = *ctx.graph.op(last).outputs.first()?;
    if ctx.dims(out) != ctx.dims(y) {
        return None;
    }
    build(ctx, conv, post).map(|b| (b, len))
}

/// The one output of `conv`, a float CONV_2D or DEPTHWISE_CONV_2D in NHWC that is not a
/// plain-integer form, when that output is neither a graph output nor a variable.
fn conv_output(ctx: &CompileCtx, conv: OpId) -> Option<OperandId> {
    let c = ctx.graph.op(conv);
    if !matches!(c.kind, OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_)) || is_int_form(ctx, conv) || c.outputs.len() != 1 {
        return None;
    }
    all_f32(ctx, conv).ok()?;
    nhwc(ctx, conv).ok()?;
    let y = c.outputs[0];
    let g = ctx.graph;
    (!g.outputs.contains(&y) && !g.operand(y).is_variable).then_some(y)
}

/// How many times the ops of the graph read `t`.
fn reads(ctx: &CompileCtx, t: OperandId) -> usize {
    ctx.graph.ops.iter().flat_map(|o| o.inputs.iter().flatten()).filter(|&&i| i == t).count()
}

/// SiLU of `y` when op `sig` is LOGISTIC(y) and op `mul` a MUL (no tanh) of `y` and that
/// logistic, in either order, and nothing else reads `y` or the logistic.
fn silu_of(ctx: &CompileCtx, y: OperandId, sig: OpId, mul: OpId) -> Option<PostAct> {
    let (s, m) = (ctx.graph.op(sig), ctx.graph.op(mul));
    let OpKind::Binary { op: BinaryOp::Mul, act } = m.kind else { return None };
    if s.inputs.as_slice() != [Some(y)] || s.outputs.len() != 1 || m.outputs.len() != 1 || m.inputs.len() != 2 {
        return None;
    }
    let l = s.outputs[0];
    let x_first = match (m.input(0)?, m.input(1)?) {
        (a, b) if a == y && b == l => true,
        (a, b) if a == l && b == y => false,
        _ => return None,
    };
    check_act(act).ok()?;
    let (act, tanh) = fused(act);
    let g = ctx.graph;
    let private = |t: OperandId| !g.outputs.contains(&t) && !g.operand(t).is_variable;
    if tanh || reads(ctx, y) != 2 || reads(ctx, l) != 1 || !private(l) || ctx.dims(l) != ctx.dims(y) {
        return None;
    }
    Some(PostAct::Silu { x_first, act })
}

/// The step of `conv` with `post` in its epilogue: the same kernel as the convolution's own
/// build (same geometry, packing and fused clamp). `None` for a shape that build would refuse,
/// a grouped CONV_2D or a fused TANH.
fn build(ctx: &CompileCtx, conv: OpId, post: PostAct) -> Option<Built> {
    let c = ctx.graph.op(conv);
    let (x, w) = (c.input(0)?, c.input(1)?);
    let (xd, wd, od) = (ctx.dims(x), ctx.dims(w), ctx.dims(c.outputs[0]));
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
        return None;
    }
    let filter = const_f32(ctx, w)?;
    let bias = const_bias(ctx, c.input(2))?;
    match &c.kind {
        OpKind::Conv2D(p) => {
            check_act(p.act).ok()?;
            let geom = conv_geom(xd, wd, od, p).ok()?;
            let (act, tanh) = fused(p.act);
            if tanh || geom.groups != 1 || wd[3] != xd[3] || filter.len() < geom.filter_len() || bias.as_ref().is_some_and(|b| b.len() < geom.out_c) {
                return None;
            }
            if let Some(sparse) = SparseConv1x1::try_new(geom, &filter, bias.as_deref(), act) {
                log::debug!("{conv}: 1x1 CONV_2D + activation runs sparse ({} of {} weights nonzero)", sparse.nnz(), geom.filter_len());
                // The whole output, then the activation over it: the same values as the dense
                // kernel's bands.
                return Some(built(vec![source(ctx, x)], move |ins, outs| {
                    let out = cast_mut::<f32>(outs[0].bytes)?;
                    sparse.run(cast::<f32>(ins[0].bytes)?, out);
                    post.apply(out);
                    Ok(())
                }));
            }
            let mut conv = Conv2d::new(geom, &filter, bias.as_deref(), act);
            Some(built(vec![source(ctx, x)], move |ins, outs| {
                conv.run_post(cast::<f32>(ins[0].bytes)?, post, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
        OpKind::DepthwiseConv2D(p) => {
            check_act(p.act).ok()?;
            let geom = depthwise_geom(xd, wd, od, p).ok()?;
            let (act, tanh) = fused(p.act);
            if tanh || filter.len() < geom.filter_len() || bias.as_ref().is_some_and(|b| b.len() < geom.out_c()) {
                return None;
            }
            let filter = filter.into_owned();
            Some(built(vec![source(ctx, x)], move |ins, outs| {
                depthwise_conv2d_post(&geom, cast::<f32>(ins[0].bytes)?, &filter, bias.as_deref(), act, post, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use nnrt_core::{Activation, BinaryOp, ConstData, Conv2D, DType, DepthwiseConv2D, OpKind, Operand, OperandId, Operation, Padding, Subgraph, UnaryOp};

    /// How the test graph's activation is wired.
    #[derive(Clone, Copy, PartialEq)]
    enum Tail {
        /// LOGISTIC + MUL(conv, logistic).
        Silu,
        /// As `Silu`, with the convolution's output also a graph output.
        SiluConvOut,
        /// As `Silu`, with the logistic also read by an ADD.
        SiluLogisticShared,
        HardSwish,
        /// HARD_SWISH, with the convolution's output also read by an ADD.
        HardSwishShared,
    }

    fn f32s(g: &mut Subgraph, dims: &[usize], v: f32) -> OperandId {
        let mut o = Operand::new("k", DType::F32, dims);
        o.data = Some(ConstData::owned((0..dims.iter().product::<usize>()).flat_map(|_| v.to_le_bytes()).collect()));
        g.add_operand(o)
    }

    /// The step kinds the backend compiles for x → conv (3×3, 5 → 7 channels, or depthwise) →
    /// `tail`.
    fn step_kinds(depthwise: bool, tail: Tail) -> Vec<String> {
        let mut g = Subgraph::default();
        let d = [1, 6, 5, 7];
        let x = g.add_operand(Operand::new("x", DType::F32, &[1, 6, 5, if depthwise { 7 } else { 5 }]));
        let w = if depthwise { f32s(&mut g, &[1, 3, 3, 7], 0.1) } else { f32s(&mut g, &[7, 3, 3, 5], 0.1) };
        let b = f32s(&mut g, &[7], 0.5);
        let y = g.add_operand(Operand::new("y", DType::F32, &d));
        let kind = match depthwise {
            true => OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Activation::None }),
            false => OpKind::Conv2D(Conv2D { padding: Padding::Same, stride: [1, 1], dilation: [1, 1], act: Activation::None }),
        };
        g.add_op(Operation { kind, inputs: vec![Some(x), Some(w), Some(b)], outputs: vec![y] });
        let out = g.add_operand(Operand::new("out", DType::F32, &d));
        g.inputs = vec![x];
        g.outputs = vec![out];
        let add = |g: &mut Subgraph, a: OperandId| {
            let z = g.add_operand(Operand::new("z", DType::F32, &d));
            g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, inputs: vec![Some(a), Some(a)], outputs: vec![z] });
            g.outputs.push(z);
        };
        match tail {
            Tail::HardSwish | Tail::HardSwishShared => {
                g.add_op(Operation { kind: OpKind::Unary(UnaryOp::HardSwish), inputs: vec![Some(y)], outputs: vec![out] });
                if tail == Tail::HardSwishShared {
                    add(&mut g, y);
                }
            }
            _ => {
                let s = g.add_operand(Operand::new("s", DType::F32, &d));
                g.add_op(Operation { kind: OpKind::Unary(UnaryOp::Logistic), inputs: vec![Some(y)], outputs: vec![s] });
                g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Mul, act: Activation::None }, inputs: vec![Some(s), Some(y)], outputs: vec![out] });
                match tail {
                    Tail::SiluConvOut => g.outputs.push(y),
                    Tail::SiluLogisticShared => add(&mut g, s),
                    _ => {}
                }
            }
        }
        crate::backend::step_kinds_of(&g, 1)
    }

    /// The fusion is taken where it applies (unless `NNRT_NOFUSE` is set for the run) and left
    /// alone where an intermediate tensor is read by another op or is a graph output. (Its
    /// values against the unfused ops: `tests/tests/ops/fusion.rs`, `conv_act_cases`.)
    #[test]
    fn fuses_only_private_activations() {
        if crate::ops::fusion_off("act") {
            eprintln!("skipped: NNRT_NOFUSE is set");
            return;
        }
        assert_eq!(step_kinds(false, Tail::Silu), ["Conv2D+Logistic+Mul"]);
        assert_eq!(step_kinds(true, Tail::Silu), ["DepthwiseConv2D+Logistic+Mul"]);
        assert_eq!(step_kinds(false, Tail::HardSwish), ["Conv2D+HardSwish"]);
        assert_eq!(step_kinds(true, Tail::HardSwish), ["DepthwiseConv2D+HardSwish"]);
        // Unfused convolution; the LOGISTIC + MUL pair still runs as one pass.
        assert_eq!(step_kinds(false, Tail::SiluConvOut), ["Conv2D", "Logistic+Mul"]);
        assert_eq!(step_kinds(true, Tail::SiluLogisticShared), ["DepthwiseConv2D", "Logistic", "Mul", "Add"]);
        assert_eq!(step_kinds(false, Tail::HardSwishShared), ["Conv2D", "HardSwish", "Add"]);
    }
}

#[cfg(test)]
mod speed {
    use crate::kernels::conv::{Conv2d, ConvGeom};
    use crate::kernels::depthwise::{depthwise_conv2d, depthwise_conv2d_post, DepthwiseGeom};
    use crate::kernels::unary::{silu, unary_in_place, PostAct, UnaryOp};
    use crate::kernels::Act;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2654435761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// Best times in µs of `f(true)` and `f(false)`, run alternately (so that the machine's load
    /// hits both alike).
    fn race(mut f: impl FnMut(bool)) -> (f64, f64) {
        let mut best = [f64::MAX; 2];
        for _ in 0..40 {
            for (k, fused) in [true, false].into_iter().enumerate() {
                let t = std::time::Instant::now();
                f(fused);
                best[k] = best[k].min(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        (best[0], best[1])
    }

    /// The fused epilogue against the convolution and then the activation op's kernel, on
    /// EfficientNet / MobileNetV3 layer shapes, one thread:
    /// `cargo test --release -p nnrt-backend-cpu -- --ignored --nocapture post_act_speed`
    #[test]
    #[ignore]
    fn post_act_speed() {
        let base = ConvGeom {
            batch: 1, in_h: 56, in_w: 56, in_c: 24, out_h: 56, out_w: 56, out_c: 144, k_h: 1, k_w: 1,
            stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 0, pad_left: 0, groups: 1,
        };
        let convs = [
            ("1x1 56x56x24->144", base),
            ("1x1 112x112x16->96", ConvGeom { in_h: 112, in_w: 112, out_h: 112, out_w: 112, in_c: 16, out_c: 96, ..base }),
            ("1x1 14x14x80->480", ConvGeom { in_h: 14, in_w: 14, out_h: 14, out_w: 14, in_c: 80, out_c: 480, ..base }),
            ("3x3/2 stem 224x224x3->32", ConvGeom { in_h: 224, in_w: 224, in_c: 3, out_h: 112, out_w: 112, out_c: 32, k_h: 3, k_w: 3, stride_h: 2, stride_w: 2, ..base }),
        ];
        let posts = [("silu", PostAct::Silu { x_first: true, act: Act::NONE }), ("hard_swish", PostAct::HardSwish)];
        let pool = nnrt_threads::KernelPool::new(1).unwrap();
        pool.install(|| {
            for (name, g) in convs {
                let (x, w, b) = (values(g.input_len(), 1), values(g.filter_len(), 2), values(g.out_c, 3));
                let mut conv = Conv2d::new(g, &w, Some(&b), Act::NONE);
                let (mut y, mut out) = (vec![0.0; g.output_len()], vec![0.0; g.output_len()]);
                for (pname, post) in posts {
                    let (fused, apart) = race(|fused| {
                        if fused {
                            return conv.run_post(&x, post, &mut out);
                        }
                        conv.run(&x, &mut y);
                        match post {
                            PostAct::HardSwish => unary_in_place(UnaryOp::HardSwish, &mut y),
                            PostAct::Silu { x_first, act } => silu(&y, x_first, act, &mut out),
                        }
                    });
                    println!("conv {name} + {pname}: fused {fused:.0} µs, apart {apart:.0} µs ({:.3}x)", fused / apart);
                }
            }
            let dw = DepthwiseGeom { batch: 1, in_h: 56, in_w: 56, in_c: 144, multiplier: 1, out_h: 56, out_w: 56, k_h: 3, k_w: 3, stride_h: 1, stride_w: 1, dil_h: 1, dil_w: 1, pad_top: 1, pad_left: 1 };
            let (x, w, b) = (values(dw.input_len(), 4), values(dw.filter_len(), 5), values(dw.out_c(), 6));
            let (mut y, mut out) = (vec![0.0; dw.output_len()], vec![0.0; dw.output_len()]);
            for (pname, post) in posts {
                let (fused, apart) = race(|fused| {
                    if fused {
                        return depthwise_conv2d_post(&dw, &x, &w, Some(&b), Act::NONE, post, &mut out);
                    }
                    depthwise_conv2d(&dw, &x, &w, Some(&b), Act::NONE, &mut y);
                    match post {
                        PostAct::HardSwish => unary_in_place(UnaryOp::HardSwish, &mut y),
                        PostAct::Silu { x_first, act } => silu(&y, x_first, act, &mut out),
                    }
                });
                println!("depthwise 3x3 56x56x144 + {pname}: fused {fused:.0} µs, apart {apart:.0} µs ({:.3}x)", fused / apart);
            }
        });
    }
}
