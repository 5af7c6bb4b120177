//! TOSA TRANSPOSE_CONV2D (`TransposeConvPadded`) as the specification writes it: each output
//! pixel gathers the input pixels whose stride-spread position its window covers. Float32 sums
//! in float32; int8 (int32 sums) and int16 (int64, TOSA's int48) with zero points.

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, TransposeConvPadded};

use super::util::source;
use super::Registry;
use crate::kernel::{built, Built};
use crate::quant::tosa::{Acc, Lane};

/// Geometry: NHWC input, OHWI filter, NHWC output.
#[derive(Clone, Copy, Debug)]
struct Geom {
    input: [usize; 4],
    output: [usize; 4],
    kernel: [usize; 2],
    p: TransposeConvPadded,
}

impl Geom {
    /// Calls `tap(x_index, w_index)` for every input pixel and filter tap that output
    /// `(b, oy, ox, oc)` sums, in the specification's order (ky, kx, ic).
    #[inline]
    fn taps(&self, b: usize, oy: usize, ox: usize, oc: usize, mut tap: impl FnMut(usize, usize)) {
        let [_, ih, iw, ic] = self.input;
        let [kh, kw] = self.kernel;
        let [sy, sx] = self.p.stride;
        let iy = oy as i64 - i64::from(self.p.out_pad[0]);
        let ix = ox as i64 - i64::from(self.p.out_pad[2]);
        for ky in 0..kh {
            let y = iy - ky as i64;
            if y < 0 || y >= (ih * sy) as i64 || y % sy as i64 != 0 {
                continue;
            }
            for kx in 0..kw {
                let x = ix - kx as i64;
                if x < 0 || x >= (iw * sx) as i64 || x % sx as i64 != 0 {
                    continue;
                }
                let xb = ((b * ih + y as usize / sy) * iw + x as usize / sx) * ic;
                let wb = ((oc * kh + ky) * kw + kx) * ic;
                for c in 0..ic {
                    tap(xb + c, wb + c);
                }
            }
        }
    }

    fn each_output(&self, mut f: impl FnMut(usize, usize, usize, usize, usize)) {
        let [n, oh, ow, oc] = self.output;
        let mut k = 0;
        for b in 0..n {
            for oy in 0..oh {
                for ox in 0..ow {
                    for o in 0..oc {
                        f(k, b, oy, ox, o);
                        k += 1;
                    }
                }
            }
        }
    }

    fn run_f32(&self, x: &[f32], w: &[f32], bias: &[f32], out: &mut [f32]) {
        self.each_output(|k, b, oy, ox, o| {
            let mut acc = 0f32;
            self.taps(b, oy, ox, o, |xi, wi| acc += x[xi] * w[wi]);
            out[k] = acc + bias[if bias.len() == 1 { 0 } else { o }];
        });
    }

    fn run_int<X: Lane, O: Acc>(&self, x: &[X], w: &[i8], bias: &[O], zps: [i64; 2], out: &mut [O]) {
        self.each_output(|k, b, oy, ox, o| {
            let mut acc = 0i64;
            self.taps(b, oy, ox, o, |xi, wi| acc += (x[xi].widen(false) - zps[0]) * (i64::from(w[wi]) - zps[1]));
            out[k] = O::from_i64(acc + bias[if bias.len() == 1 { 0 } else { o }].to_i64());
        });
    }
}

/// A one-element int8 or int16 zero point at input `i`.
fn zp(ctx: &CompileCtx, id: OpId, i: usize) -> Result<i64, String> {
    let k = ctx.graph.op(id).input(i).ok_or_else(|| format!("input {i} is absent"))?;
    match ctx.graph.operand(k).data.as_ref().map(|d| d.bytes()) {
        Some(&[v]) => Ok(i64::from(v as i8)),
        Some(&[a, b]) => Ok(i64::from(i16::from_le_bytes([a, b]))),
        _ => Err(format!("zero point {i} must be one constant int8 or int16")),
    }
}

fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    if op.input(2).is_none() {
        return Err("TRANSPOSE_CONV2D needs its bias (input 2)".into());
    }
    for &i in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(i).quant.is_quantized() {
            return Err("TransposeConvPadded takes operands without quantization parameters".into());
        }
    }
    Ok(())
}

fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    let op = ctx.graph.op(id);
    let OpKind::TransposeConvPadded(p) = op.kind else { return Err("not a TransposeConvPadded".into()) };
    let ins: Vec<_> = (0..3).map(|i| op.input(i).ok_or_else(|| format!("input {i} is absent"))).collect::<Result<_, _>>()?;
    let (xd, wd, od) = (ctx.dims(ins[0]).to_vec(), ctx.dims(ins[1]).to_vec(), ctx.dims(op.outputs[0]).to_vec());
    if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
        return Err("TransposeConvPadded takes NHWC and OHWI".into());
    }
    let g = Geom { input: [xd[0], xd[1], xd[2], xd[3]], output: [od[0], od[1], od[2], od[3]], kernel: [wd[1], wd[2]], p };
    let t = ctx.graph.operand(ins[0]).dtype;
    let zps = if op.input(3).is_some() { [zp(ctx, id, 3)?, zp(ctx, id, 4)?] } else { [0, 0] };
    let srcs = ins.iter().map(|&i| source(ctx, i)).collect();
    Ok(built(srcs, move |ins, outs| {
        match t {
            DType::F32 => g.run_f32(cast(ins[0].bytes)?, cast(ins[1].bytes)?, cast(ins[2].bytes)?, cast_mut(outs[0].bytes)?),
            DType::I8 => g.run_int::<i8, i32>(cast(ins[0].bytes)?, cast(ins[1].bytes)?, cast(ins[2].bytes)?, zps, cast_mut(outs[0].bytes)?),
            DType::I16 => g.run_int::<i16, i64>(cast(ins[0].bytes)?, cast(ins[1].bytes)?, cast(ins[2].bytes)?, zps, cast_mut(outs[0].bytes)?),
            other => return Err(format!("TRANSPOSE_CONV2D of {other} is not supported")),
        }
        Ok(())
    }))
}

/// Registers the ops this file builds (`OpKind::name()`s).
pub(super) fn register(r: &mut Registry) {
    r.ops(&["TransposeConvPadded"], supports, build);
}
