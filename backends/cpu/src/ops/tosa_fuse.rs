//! TOSA's integer convolution chains as one step: CONV2D or DEPTHWISE_CONV2D on int8 with zero
//! points (int32 sums), the RESCALE that takes the sums to int8/int16, and the CLAMP after it
//! (MAXIMUM then MINIMUM with one-element constant bounds, as the TOSA reader writes CLAMP).
//! The sums never reach memory: the optimized quantized kernels ([`Int8Conv`])
//! run with [`Requant::Tosa`] in their epilogue, i.e. the specification's `apply_scale_32` per
//! output channel, the output zero point added in int32, then the type's and the clamp's range
//! — the same integers as the three ops one by one (tests compare them).

use nnrt_core::{cast, cast_mut, CompileCtx, DType, OpId, OpKind, OperandId};

use super::fuse::read_once_by;
use super::int_forms::{is_int_form, zp, Int8Conv};
use super::quantize::rescale_params;
use super::util::{const_ints, source};
use crate::kernel::{built, Built};
use crate::quant::{QInt, Requant};

/// A fused chain starting at `ids[0]`: the step and how many ops of `ids` it covers.
pub(crate) fn fuse_rescale_chain(ctx: &CompileCtx, ids: &[OpId]) -> Option<(Built, usize)> {
    if super::util::fusion_off("tosa") {
        return None;
    }
    let chain = Chain::find(ctx, ids)?;
    let len = chain.len;
    chain.build(ctx).ok().map(|b| (b, len))
}

/// The ops of one chain, as found.
struct Chain {
    /// A RESCALE before the convolution that only moves unsigned input bytes to int8
    /// (`b − in_zp + out_zp`, exactly, for every byte): the convolution reads the bytes
    /// themselves with its zero point moved by `in_zp − out_zp`.
    pre: Option<(OpId, i32)>,
    conv: OpId,
    rescale: OpId,
    /// Output range from the CLAMP after the RESCALE, if any.
    clamp: Option<(i32, i32)>,
    /// Ops covered (2 or 4).
    len: usize,
}

/// A one-element integer constant.
fn scalar(ctx: &CompileCtx, id: OperandId) -> Option<i64> {
    match const_ints(ctx, id).ok()?.as_slice() {
        [v] => Some(*v),
        _ => None,
    }
}

/// `in_zp − out_zp` when `pre` is a RESCALE of unsigned int8 bytes to signed int8 that gives
/// exactly `b − in_zp + out_zp` for every byte `b` and whose result only `conv` reads.
fn byte_shift(ctx: &CompileCtx, pre: OpId, conv: OpId) -> Option<i32> {
    let g = ctx.graph;
    let r = g.op(pre);
    let OpKind::Rescale(p) = r.kind else { return None };
    let (x, &y) = (r.input(0)?, r.outputs.first()?);
    if !p.input_unsigned || p.output_unsigned || g.operand(x).dtype != DType::I8 || g.operand(y).dtype != DType::I8 {
        return None;
    }
    if g.op(conv).input(0) != Some(y) || !read_once_by(ctx, y, conv) {
        return None;
    }
    let params = rescale_params(ctx, pre).ok()?;
    let (in_zp, out_zp) = (params.input_zp, params.output_zp);
    let table = params.table8::<i8>();
    let exact = (0..params.multiplier.len()).all(|c| (0..256i64).all(|b| i64::from(table[c * 256 + b as usize]) == b - in_zp + out_zp));
    exact.then_some((in_zp - out_zp) as i32)
}

impl Chain {
    fn find(ctx: &CompileCtx, ids: &[OpId]) -> Option<Chain> {
        if let Some(shift) = byte_shift(ctx, *ids.first()?, *ids.get(1)?) {
            let mut chain = Chain::find_from_conv(ctx, &ids[1..])?;
            chain.pre = Some((ids[0], shift));
            chain.len += 1;
            return Some(chain);
        }
        Chain::find_from_conv(ctx, ids)
    }

    fn find_from_conv(ctx: &CompileCtx, ids: &[OpId]) -> Option<Chain> {
        let g = ctx.graph;
        let (&conv, &rescale) = (ids.first()?, ids.get(1)?);
        let c = g.op(conv);
        if !matches!(c.kind, OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_)) || !is_int_form(ctx, conv) || c.outputs.len() != 1 {
            return None;
        }
        let x = c.input(0)?;
        if g.operand(x).dtype != DType::I8 || g.operand(c.outputs[0]).dtype != DType::I32 {
            return None;
        }
        let r = g.op(rescale);
        let OpKind::Rescale(p) = r.kind else { return None };
        if r.outputs.len() != 1 {
            return None;
        }
        if !p.scale32 || p.input_unsigned || r.input(0) != Some(c.outputs[0]) || !read_once_by(ctx, c.outputs[0], rescale) {
            return None;
        }
        if scalar(ctx, r.input(3)?) != Some(0) {
            return None;
        }
        let y = r.outputs[0];
        let mut chain = Chain { pre: None, conv, rescale, clamp: None, len: 2 };
        // The CLAMP: MAXIMUM(y, lo) then MINIMUM(that, hi), either operand order, on a signed output.
        if let (Some(&mx), Some(&mn), false) = (ids.get(2), ids.get(3), p.output_unsigned) {
            let (a, b) = (g.op(mx), g.op(mn));
            if a.outputs.len() != 1 || b.outputs.len() != 1 {
                return Some(chain);
            }
            let bound = |op: &nnrt_core::Operation, t: OperandId| -> Option<i64> {
                match (op.input(0)?, op.input(1)?) {
                    (i, k) if i == t => scalar(ctx, k),
                    (k, i) if i == t => scalar(ctx, k),
                    _ => None,
                }
            };
            let is = |op: &nnrt_core::Operation, want: nnrt_core::BinaryOp| matches!(op.kind, OpKind::Binary { op, act: nnrt_core::Activation::None } if op == want);
            if is(a, nnrt_core::BinaryOp::Maximum) && is(b, nnrt_core::BinaryOp::Minimum) && read_once_by(ctx, y, mx) && read_once_by(ctx, a.outputs[0], mn) {
                let same = [a.outputs[0], b.outputs[0]].iter().all(|&o| g.operand(o).dtype == g.operand(y).dtype);
                if let (Some(lo), Some(hi), true) = (bound(a, y), bound(b, a.outputs[0]), same) {
                    if lo <= hi {
                        chain.clamp = Some((lo as i32, hi as i32));
                        chain.len = 4;
                    }
                }
            }
        }
        Some(chain)
    }

    fn build(&self, ctx: &CompileCtx) -> Result<Built, String> {
        let g = ctx.graph;
        let c = g.op(self.conv);
        let x = match self.pre {
            Some((pre, _)) => g.op(pre).input(0).ok_or("input 0 is absent")?,
            None => c.input(0).ok_or("input 0 is absent")?,
        };
        let r = rescale_params(ctx, self.rescale)?;
        let requant = r.multiplier.iter().zip(&r.shift).map(|(&multiplier, &shift)| Requant::Tosa { multiplier, shift, double_round: r.double_round }).collect();
        let mut x_zp = zp(ctx, self.conv, 3)?;
        if let Some((_, shift)) = self.pre {
            x_zp += shift;
        }
        let bytes = self.pre.is_some();
        let ot = g.operand(g.op(self.rescale).outputs[0]).dtype;
        let (tmin, tmax) = match (ot, r.output_unsigned) {
            (DType::I8, false) => (i32::from(i8::MIN), i32::from(i8::MAX)),
            (DType::I8, true) => (0, 255),
            (DType::I16, false) => (i32::from(i16::MIN), i32::from(i16::MAX)),
            (other, u) => return Err(format!("RESCALE to {other}{} is not fused", if u { " (unsigned)" } else { "" })),
        };
        let act = match self.clamp {
            Some((lo, hi)) => (lo.max(tmin), hi.min(tmax)),
            None => (tmin, tmax),
        };
        let k = Int8Conv::new(ctx, self.conv, x_zp, requant, (r.output_zp as i32, act), bytes)?;
        fn run_to<TI: QInt>(k: &Int8Conv, x: &[TI], ot: DType, unsigned: bool, out: &mut [u8]) -> Result<(), String> {
            match (ot, unsigned) {
                (DType::I8, false) => k.run(x, cast_mut::<i8>(out)?),
                (DType::I8, true) => k.run(x, cast_mut::<u8>(out)?),
                _ => k.run(x, cast_mut::<i16>(out)?),
            }
            Ok(())
        }
        Ok(built(vec![source(ctx, x)], move |ins, outs| {
            if bytes {
                run_to(&k, cast::<u8>(ins[0].bytes)?, ot, r.output_unsigned, outs[0].bytes)
            } else {
                run_to(&k, cast::<i8>(ins[0].bytes)?, ot, r.output_unsigned, outs[0].bytes)
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use nnrt_core::{Activation, BinaryOp, CompileCtx, ConstData, Config, Conv2D, DType, DepthwiseConv2D, OpId, OpKind, Operand, Operation, Padding, Rescale as RescaleOp, Subgraph, TensorMut, TensorRef};

    use crate::quant::tosa::{IntConv, Rescale};
    use crate::testdata::xorshift;

    /// One chain's parameters.
    struct Case {
        depthwise: bool,
        /// Input `[h, w, c]`, output channels, kernel, stride, padding `[top, bottom, left, right]`.
        hwc: [usize; 3],
        oc: usize,
        k: usize,
        stride: usize,
        pad: [usize; 4],
        /// Scales below ½ (the VNNI lanes) or up to 4 (the scalar epilogue).
        small_scale: bool,
        /// Scales of 2^28 and more: results beyond int32 saturate (the scalar epilogue).
        huge_scale: bool,
        double_round: bool,
        clamp: Option<(i32, i32)>,
        w_zp: i32,
    }

    fn constant(g: &mut Subgraph, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> nnrt_core::OperandId {
        let mut o = Operand::new("k", dtype, dims);
        o.data = Some(ConstData::owned(bytes));
        g.add_operand(o)
    }

    /// The fused step against the unfused ops' own kernels (the plain-integer convolution,
    /// RESCALE, then the clamp), on random data.
    fn check(case: &Case, seed: u64) {
        let mut rng = xorshift(seed);
        let mut next = move || rng.next().unwrap_or(1);
        let [h, w, c] = case.hwc;
        let (k, s, p) = (case.k, case.stride, case.pad);
        let oh = (h + p[0] + p[1] - k) / s + 1;
        let ow = (w + p[2] + p[3] - k) / s + 1;
        let oc = case.oc;
        let x: Vec<i8> = (0..h * w * c).map(|_| next() as i8).collect();
        let wdims = if case.depthwise { vec![1, k, k, oc] } else { vec![oc, k, k, c] };
        let wv: Vec<i8> = (0..wdims.iter().product::<usize>()).map(|_| next() as i8).collect();
        let bias: Vec<i32> = (0..oc).map(|_| (next() % 8192) as i32 - 4096).collect();
        let x_zp = (next() % 256) as i32 - 128;
        let mults: Vec<i32> = (0..oc).map(|_| (1 << 30) + (next() % (1 << 30)) as i32).collect();
        // multiplier in [2^30, 2^31): scale = m / 2^shift; shift 32..39 gives < 1/2, 29..31 up to 4.
        let shifts: Vec<u32> = (0..oc).map(|_| if case.huge_scale { 2 + (next() % 3) as u32 } else if case.small_scale { 32 + (next() % 8) as u32 } else { 29 + (next() % 3) as u32 }).collect();
        let out_zp = (next() % 256) as i32 - 128;

        let mut g = Subgraph::default();
        let xi = g.add_operand(Operand::new("x", DType::I8, &[1, h, w, c]));
        let wi = constant(&mut g, DType::I8, &wdims, wv.iter().map(|&v| v as u8).collect());
        let bi = constant(&mut g, DType::I32, &[oc], bias.iter().flat_map(|b| b.to_le_bytes()).collect());
        let xz = constant(&mut g, DType::I8, &[1], vec![x_zp as i8 as u8]);
        let wz = constant(&mut g, DType::I8, &[1], vec![case.w_zp as i8 as u8]);
        let acc = g.add_operand(Operand::new("acc", DType::I32, &[1, oh, ow, oc]));
        let kind = if case.depthwise {
            OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Explicit(p), stride: [s, s], dilation: [1, 1], depth_multiplier: oc / c, act: Activation::None })
        } else {
            OpKind::Conv2D(Conv2D { padding: Padding::Explicit(p), stride: [s, s], dilation: [1, 1], act: Activation::None })
        };
        let mut ops = vec![g.add_op(Operation { kind, inputs: vec![Some(xi), Some(wi), Some(bi), Some(xz), Some(wz)], outputs: vec![acc] })];
        let mi = constant(&mut g, DType::I32, &[oc], mults.iter().flat_map(|m| m.to_le_bytes()).collect());
        let si = constant(&mut g, DType::I8, &[oc], shifts.iter().map(|&s| s as u8).collect());
        let iz = constant(&mut g, DType::I32, &[1], 0i32.to_le_bytes().to_vec());
        let oz = constant(&mut g, DType::I8, &[1], vec![out_zp as i8 as u8]);
        let y = g.add_operand(Operand::new("y", DType::I8, &[1, oh, ow, oc]));
        let rp = RescaleOp { scale32: true, double_round: case.double_round, per_channel: true, input_unsigned: false, output_unsigned: false };
        ops.push(g.add_op(Operation { kind: OpKind::Rescale(rp), inputs: vec![Some(acc), Some(mi), Some(si), Some(iz), Some(oz)], outputs: vec![y] }));
        let mut last = y;
        if let Some((lo, hi)) = case.clamp {
            let (l, hk) = (constant(&mut g, DType::I8, &[1, 1, 1, 1], vec![lo as i8 as u8]), constant(&mut g, DType::I8, &[1, 1, 1, 1], vec![hi as i8 as u8]));
            let mid = g.add_operand(Operand::new("mid", DType::I8, &[1, oh, ow, oc]));
            let z = g.add_operand(Operand::new("z", DType::I8, &[1, oh, ow, oc]));
            ops.push(g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Maximum, act: Activation::None }, inputs: vec![Some(y), Some(l)], outputs: vec![mid] }));
            ops.push(g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Minimum, act: Activation::None }, inputs: vec![Some(mid), Some(hk)], outputs: vec![z] }));
            last = z;
        }
        g.inputs = vec![xi];
        g.outputs = vec![last];
        let shapes: Vec<Vec<usize>> = g.operands.iter().map(|o| o.shape.concrete().unwrap_or_default()).collect();
        let config = Config::default();
        let origin: Vec<OpId> = (0..g.ops.len()).map(OpId::new).collect();
        let ctx = CompileCtx { graph: &g, shapes: &shapes, threads: 1, config: &config, origin: &origin };

        let (mut built, n) = super::fuse_rescale_chain(&ctx, &ops).expect("the chain fuses");
        assert_eq!(n, ops.len());
        let xb: Vec<u8> = x.iter().map(|&v| v as u8).collect();
        let (xdims, odims) = ([1, h, w, c], [1, oh, ow, oc]);
        let mut got = vec![0u8; oh * ow * oc];
        built.kernel.run(&[TensorRef { dtype: DType::I8, dims: &xdims, bytes: &xb }], &mut [TensorMut { dtype: DType::I8, dims: &odims, bytes: &mut got }]).expect("runs");

        let conv = IntConv { input: [1, h, w, c], output: [1, oh, ow, oc], kernel: [k, k], stride: [s, s], dilation: [1, 1], pad: [p[0], p[2]], depthwise: case.depthwise, x_zp, w_zp: case.w_zp };
        let mut sums = vec![0i32; oh * ow * oc];
        conv.run(&x, &wv, Some(&bias), &mut sums);
        let r = Rescale { multiplier: mults, shift: shifts, scale32: true, double_round: case.double_round, input_zp: 0, output_zp: i64::from(out_zp), input_unsigned: false, output_unsigned: false };
        let mut want = vec![0i8; sums.len()];
        r.run::<i32, i8>(&sums, &mut want);
        if let Some((lo, hi)) = case.clamp {
            want.iter_mut().for_each(|v| *v = (*v).max(lo as i8).min(hi as i8));
        }
        let got: Vec<i8> = got.iter().map(|&v| v as i8).collect();
        assert_eq!(got, want, "depthwise {} seed {seed}", case.depthwise);
    }

    #[test]
    fn fused_chains_compute_the_unfused_ops_integers() {
        let base = Case { depthwise: false, hwc: [9, 7, 5], oc: 19, k: 3, stride: 1, pad: [1, 1, 1, 1], small_scale: true, huge_scale: false, double_round: true, clamp: Some((-128, 127)), w_zp: 0 };
        let cases = [
            Case { ..base },
            Case { stride: 2, pad: [0, 1, 0, 1], clamp: None, double_round: false, ..base },
            Case { k: 1, pad: [0; 4], hwc: [6, 6, 40], oc: 37, clamp: Some((-3, 100)), ..base },
            Case { small_scale: false, clamp: Some((-100, 90)), ..base },
            Case { w_zp: 3, ..base },
            Case { huge_scale: true, ..base },
            Case { depthwise: true, hwc: [6, 5, 8], oc: 8, huge_scale: true, double_round: false, ..base },
            Case { depthwise: true, hwc: [8, 9, 24], oc: 24, ..base },
            Case { depthwise: true, hwc: [8, 9, 3], oc: 6, stride: 2, pad: [1, 0, 1, 0], ..base },
            Case { depthwise: true, hwc: [5, 5, 70], oc: 70, small_scale: false, double_round: false, clamp: Some((0, 127)), ..base },
            Case { depthwise: true, hwc: [7, 7, 16], oc: 16, clamp: Some((-20, 20)), ..base },
        ];
        for (i, case) in cases.iter().enumerate() {
            for seed in 0..4 {
                check(case, 1 + 97 * i as u64 + seed);
            }
        }
    }
}
