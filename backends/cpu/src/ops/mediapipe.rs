//! The MediaPipe custom ops that LiteRT runs without registering anything, because its XNNPACK
//! delegate implements them: `Convolution2DTransposeBias` (selfie and hair segmentation's
//! upsampling), `MaxPoolingWithArgmax2D` and `MaxUnpooling2D`. Their options are raw C structs
//! (`TfLiteTransposeConvParams`, `TfLitePoolParams`: little-endian int32 fields), not
//! flexbuffers. Semantics and output shapes follow MediaPipe's own kernels
//! (`mediapipe/util/tflite/operations`). A plugin that registers one of these names takes
//! precedence (the partitioner places custom ops on the plugin backend first).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, Subgraph};

use super::util::{const_f32, nhwc, source};
use super::Registry;
use crate::kernel::{built, Built};
use crate::kernels::argmax_pool::{max_pool_argmax, max_unpool};
use crate::kernels::pool::PoolGeom;
use crate::kernels::transpose_conv::{TransposeConv, TransposeConvGeom};
use crate::kernels::Act;

const TRANSPOSE_CONV_BIAS: &str = "Convolution2DTransposeBias";
const MAX_POOL_ARGMAX: &str = "MaxPoolingWithArgmax2D";
const MAX_UNPOOL: &str = "MaxUnpooling2D";

/// Whether `name` is one of the custom ops this module implements.
pub(crate) fn is_builtin_custom(name: &str) -> bool {
    matches!(name, TRANSPOSE_CONV_BIAS | MAX_POOL_ARGMAX | MAX_UNPOOL)
}

/// TfLitePadding.
const SAME: i32 = 1;
const VALID: i32 = 2;

fn ints(options: &[u8], n: usize, what: &str) -> Result<Vec<i32>, String> {
    if options.len() < 4 * n {
        return Err(format!("options must hold {what} ({n} int32 fields), got {} bytes", options.len()));
    }
    Ok(options.chunks_exact(4).take(n).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn positive(v: i32, what: &str) -> Result<usize, String> {
    usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| format!("{what} must be positive, got {v}"))
}

fn padding(v: i32) -> Result<i32, String> {
    match v {
        SAME | VALID => Ok(v),
        other => Err(format!("padding {other} is neither SAME (1) nor VALID (2)")),
    }
}

/// `TfLiteTransposeConvParams`: padding, stride_width, stride_height.
struct DeconvParams {
    padding: i32,
    stride: [usize; 2],
}

impl DeconvParams {
    fn parse(options: &[u8]) -> Result<DeconvParams, String> {
        let v = ints(options, 3, "TfLiteTransposeConvParams: padding, stride_width, stride_height")?;
        Ok(DeconvParams { padding: padding(v[0])?, stride: [positive(v[2], "stride_height")?, positive(v[1], "stride_width")?] })
    }

    /// Total padding along one axis: `max(0, k - (n - 1) % stride - 1)` for SAME.
    fn total_pad(&self, axis: usize, k: usize, n: usize) -> usize {
        if self.padding == SAME {
            k.saturating_sub((n - 1) % self.stride[axis] + 1)
        } else {
            0
        }
    }

    /// Output dims for input `[n, h, w, c]` and weights `[o, kh, kw, c]`.
    fn output_dims(&self, x: &[usize], w: &[usize]) -> Result<Vec<usize>, String> {
        if x.len() != 4 || w.len() != 4 {
            return Err(format!("input {x:?} and weights {w:?} must both be 4-D"));
        }
        if x[3] != w[3] {
            return Err(format!("the input has {} channels but the weights (OHWI) expect {}", x[3], w[3]));
        }
        if x[1] == 0 || x[2] == 0 {
            return Err(format!("input {x:?} has an empty spatial dim"));
        }
        let axis = |a: usize| (self.stride[a] * (x[a + 1] - 1) + w[a + 1]).checked_sub(self.total_pad(a, w[a + 1], x[a + 1]));
        match (axis(0), axis(1)) {
            (Some(h), Some(wd)) if h > 0 && wd > 0 => Ok(vec![x[0], h, wd, w[0]]),
            _ => Err("the output would be empty".into()),
        }
    }
}

/// `TfLitePoolParams`: padding, stride_width, stride_height, filter_width, filter_height,
/// activation (absent in short option blobs: none).
struct PoolParams {
    padding: i32,
    stride: [usize; 2],
    filter: [usize; 2],
    act: Act,
}

impl PoolParams {
    fn parse(options: &[u8]) -> Result<PoolParams, String> {
        let what = "TfLitePoolParams: padding, stride_width, stride_height, filter_width, filter_height";
        let v = ints(options, 5, what)?;
        let act = match ints(options, 6, what).map_or(0, |v| v[5]) {
            0 | 4..=6 => Act::NONE,
            1 => Act::RELU,
            2 => Act::RELU_N1_TO_1,
            3 => Act::RELU6,
            other => return Err(format!("fused activation {other} is not a TfLiteFusedActivation")),
        };
        Ok(PoolParams {
            padding: padding(v[0])?,
            stride: [positive(v[2], "stride_height")?, positive(v[1], "stride_width")?],
            filter: [positive(v[4], "filter_height")?, positive(v[3], "filter_width")?],
            act,
        })
    }

    /// TFLite's `ComputePadding`: `max(((out - 1) * stride + k - in) / 2, 0)`.
    fn pad(&self, axis: usize, input: usize, out: usize) -> usize {
        (((out as isize - 1) * self.stride[axis] as isize + self.filter[axis] as isize - input as isize) / 2).max(0) as usize
    }

    /// The pooled size of an input of `n` cells (TensorFlow's windowed output size).
    fn pooled(&self, axis: usize, n: usize) -> usize {
        let s = self.stride[axis];
        match self.padding {
            SAME => n.div_ceil(s),
            _ => (n + s).saturating_sub(self.filter[axis]) / s,
        }
    }

    /// The geometry between the full-size side `full` and the pooled side `pooled`, both NHWC
    /// (the unpooling pads as the pooling that would map its output back onto its input).
    fn geom(&self, full: &[usize], pooled: &[usize]) -> PoolGeom {
        let pad = |a: usize| self.pad(a, full[a + 1], pooled[a + 1]);
        PoolGeom::nhwc(full, pooled, self.filter, self.stride, [pad(0), pad(1)])
    }
}

fn name_and_options(graph: &Subgraph, id: OpId) -> Option<(&str, &[u8])> {
    match &graph.op(id).kind {
        OpKind::Custom { name, options } if is_builtin_custom(name) => Some((name.as_str(), options.as_slice())),
        _ => None,
    }
}

/// The output dims of a MediaPipe op from its input dims (`ins[k]` for present input k).
pub(crate) fn output_dims(name: &str, options: &[u8], ins: &[&[usize]]) -> Result<Vec<Vec<usize>>, String> {
    let need = |n: usize| if ins.len() == n { Ok(()) } else { Err(format!("{name} takes {n} inputs, the op has {}", ins.len())) };
    match name {
        TRANSPOSE_CONV_BIAS => {
            need(3)?;
            Ok(vec![DeconvParams::parse(options)?.output_dims(ins[0], ins[1])?])
        }
        MAX_POOL_ARGMAX => {
            need(1)?;
            let p = PoolParams::parse(options)?;
            let x = four_d("input", ins[0])?;
            let out = vec![x[0], p.pooled(0, x[1]), p.pooled(1, x[2]), x[3]];
            if out[1] == 0 || out[2] == 0 {
                return Err(format!("the {}x{} window does not fit input {x:?}", p.filter[0], p.filter[1]));
            }
            Ok(vec![out.clone(), out])
        }
        MAX_UNPOOL => {
            need(2)?;
            let p = PoolParams::parse(options)?;
            let x = four_d("input", ins[0])?;
            if ins[1] != x {
                return Err(format!("the indices {:?} must have the input's shape {x:?}", ins[1]));
            }
            Ok(vec![vec![x[0], x[1] * p.filter[0], x[2] * p.filter[1], x[3]]])
        }
        other => Err(format!("'{other}' is not a MediaPipe op of the CPU backend")),
    }
}

fn four_d<'a>(what: &str, d: &'a [usize]) -> Result<&'a [usize], String> {
    if d.len() == 4 {
        Ok(d)
    } else {
        Err(format!("the {what} must be 4-D (NHWC), got {d:?}"))
    }
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    nhwc(ctx, id)?;
    let op = ctx.graph.op(id);
    let Some((name, options)) = name_and_options(ctx.graph, id) else {
        return Err("not a MediaPipe op of the CPU backend".into());
    };
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        let t = ctx.graph.operand(o).dtype;
        if t != DType::F32 {
            return Err(format!("operand {o} is {t}; {name} takes float32 tensors (indices included)"));
        }
    }
    let want_outs = if name == MAX_POOL_ARGMAX { 2 } else { 1 };
    if op.outputs.len() != want_outs {
        return Err(format!("{name} has {want_outs} output(s), the op has {}", op.outputs.len()));
    }
    if name == TRANSPOSE_CONV_BIAS {
        DeconvParams::parse(options)?;
        for (k, what) in [(1, "weights"), (2, "bias")] {
            match op.input(k) {
                Some(w) if ctx.graph.operand(w).is_const() => {}
                Some(_) => return Err(format!("the {what} must be a constant tensor (packed at prepare)")),
                None => return Err(format!("input {k} ({what}) is absent")),
            }
        }
    } else {
        PoolParams::parse(options)?;
    }
    Ok(())
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    let op = ctx.graph.op(id);
    let (name, options) = name_and_options(ctx.graph, id).ok_or("not a MediaPipe op of the CPU backend")?;
    let ins: Vec<_> = op.inputs.iter().flatten().copied().collect();
    let in_dims: Vec<&[usize]> = ins.iter().map(|&i| ctx.dims(i)).collect();
    let want = output_dims(name, options, &in_dims)?;
    for (k, (&o, w)) in op.outputs.iter().zip(&want).enumerate() {
        if ctx.dims(o) != w.as_slice() {
            return Err(format!("output {k} is planned as {:?} but {name} computes {w:?}", ctx.dims(o)));
        }
    }
    match name {
        TRANSPOSE_CONV_BIAS => {
            let p = DeconvParams::parse(options)?;
            let (xd, wd, od) = (in_dims[0], in_dims[1], &want[0]);
            let filter = const_f32(ctx, ins[1]).ok_or("the weights must be a float32 constant")?;
            let bias = const_f32(ctx, ins[2]).ok_or("the bias must be a float32 constant")?;
            if bias.len() != wd[0] {
                return Err(format!("the bias has {} values for {} output channels", bias.len(), wd[0]));
            }
            let pad = [p.total_pad(0, wd[1], xd[1]) / 2, p.total_pad(1, wd[2], xd[2]) / 2];
            let g = TransposeConvGeom::nhwc(xd, wd, od, p.stride, pad);
            if filter.len() != wd.iter().product::<usize>() {
                return Err(format!("the weights hold {} values for shape {wd:?}", filter.len()));
            }
            let mut conv = TransposeConv::new(g, &filter, Some(&bias), Act::NONE);
            Ok(built(vec![source(ctx, ins[0])], move |ins, outs| {
                conv.run(cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
        MAX_POOL_ARGMAX => {
            let p = PoolParams::parse(options)?;
            let g = p.geom(in_dims[0], &want[0]);
            let act = p.act;
            Ok(built(vec![source(ctx, ins[0])], move |ins, outs| {
                let [values, indices] = outs else { return Err("MaxPoolingWithArgmax2D writes two outputs".into()) };
                max_pool_argmax(&g, act, cast::<f32>(ins[0].bytes)?, cast_mut::<f32>(values.bytes)?, cast_mut::<f32>(indices.bytes)?);
                Ok(())
            }))
        }
        _ => {
            let p = PoolParams::parse(options)?;
            let g = p.geom(&want[0], in_dims[0]);
            Ok(built(vec![source(ctx, ins[0]), source(ctx, ins[1])], move |ins, outs| {
                max_unpool(&g, cast::<f32>(ins[0].bytes)?, cast::<f32>(ins[1].bytes)?, cast_mut::<f32>(outs[0].bytes)?);
                Ok(())
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn transpose_conv_bias_shapes_follow_mediapipe() {
        let same = le(&[SAME, 2, 2]);
        // 2x2 stride 2 doubles; an odd 3x3 input with a 3x3 kernel: 2 * 2 + 3 - 2 = 5.
        assert_eq!(output_dims(TRANSPOSE_CONV_BIAS, &same, &[&[1, 8, 8, 4], &[16, 2, 2, 4], &[16]]).unwrap(), vec![vec![1, 16, 16, 16]]);
        assert_eq!(output_dims(TRANSPOSE_CONV_BIAS, &same, &[&[1, 3, 4, 2], &[2, 3, 3, 2], &[2]]).unwrap(), vec![vec![1, 5, 8, 2]]);
        let valid = le(&[VALID, 2, 2]);
        assert_eq!(output_dims(TRANSPOSE_CONV_BIAS, &valid, &[&[1, 3, 4, 2], &[2, 3, 3, 2], &[2]]).unwrap(), vec![vec![1, 7, 9, 2]]);
        let e = output_dims(TRANSPOSE_CONV_BIAS, &le(&[SAME, 0, 2]), &[&[1, 3, 4, 2], &[2, 3, 3, 2], &[2]]).unwrap_err();
        assert!(e.contains("stride_width"), "{e}");
        let e = output_dims(TRANSPOSE_CONV_BIAS, &[1, 0, 0, 0], &[&[1, 3, 4, 2], &[2, 3, 3, 2], &[2]]).unwrap_err();
        assert!(e.contains("4 bytes"), "{e}");
    }

    #[test]
    fn pooling_shapes_follow_mediapipe() {
        let same = le(&[SAME, 2, 2, 2, 2, 0]);
        let pooled = output_dims(MAX_POOL_ARGMAX, &same, &[&[1, 5, 6, 3]]).unwrap();
        assert_eq!(pooled, vec![vec![1, 3, 3, 3]; 2]);
        let valid = le(&[VALID, 2, 2, 3, 3]);
        assert_eq!(output_dims(MAX_POOL_ARGMAX, &valid, &[&[1, 5, 6, 3]]).unwrap(), vec![vec![1, 2, 2, 3]; 2]);
        assert_eq!(output_dims(MAX_UNPOOL, &same, &[&[1, 3, 3, 3], &[1, 3, 3, 3]]).unwrap(), vec![vec![1, 6, 6, 3]]);
        assert!(output_dims(MAX_UNPOOL, &same, &[&[1, 3, 3, 3], &[1, 3, 3, 1]]).is_err());
        let e = output_dims(MAX_POOL_ARGMAX, &le(&[7, 2, 2, 2, 2]), &[&[1, 4, 4, 1]]).unwrap_err();
        assert!(e.contains("padding 7"), "{e}");
        // The SAME padding of a 5-row input pooled to 3 rows: (2 * 2 + 2 - 5) / 2 = 0.
        let p = PoolParams::parse(&same).unwrap();
        assert_eq!(p.geom(&[1, 5, 6, 3], &[1, 3, 3, 3]).pad_top, 0);
        let p = PoolParams::parse(&le(&[SAME, 1, 1, 3, 3])).unwrap();
        assert_eq!(p.geom(&[1, 5, 5, 1], &[1, 5, 5, 1]).pad_top, 1);
    }
}

/// Registers the ops this file builds (`OpKind::name()`s, or custom op names).
pub(super) fn register(r: &mut Registry) {
    r.customs(&[TRANSPOSE_CONV_BIAS, MAX_POOL_ARGMAX, MAX_UNPOOL], supports, build);
}
