//! Reference twins: TFLite's reference loops for quantized CONV_2D, DEPTHWISE_CONV_2D,
//! FULLY_CONNECTED, TRANSPOSE_CONV and BATCH_MATMUL, transcribed for clarity, generic over the integer types. The optimized
//! kernels in `gemm` and `depthwise` must produce the same integers.

use super::{QInt, Requant};
use crate::kernels::conv::ConvGeom;
use crate::kernels::batch_matmul::MatMulGeom;
use crate::kernels::depthwise::DepthwiseGeom;
use crate::kernels::transpose_conv::TransposeConvGeom;

/// Everything a quantized convolution-like op needs besides its data: zero points, the per
/// output channel requantization, the activation clamp and the bias.
#[derive(Clone, Debug)]
pub struct ConvQuant {
    /// Input zero point.
    pub in_zp: i32,
    /// Filter zero point of each output channel (0 for symmetric int8 weights).
    pub w_zp: Vec<i32>,
    /// Output zero point.
    pub out_zp: i32,
    /// Requantization of each output channel.
    pub requant: Vec<Requant>,
    /// Clamp of the output (activation range intersected with the type's range).
    pub act: (i32, i32),
    /// Bias of each output channel (int32 or int64 in the model), if any.
    pub bias: Option<Vec<i64>>,
    /// Accumulate in 64 bits and requantize with TFLite's int64 multiplier (16x8 with int64
    /// bias); otherwise the accumulator is TFLite's wrapping int32.
    pub wide: bool,
}

impl ConvQuant {
    /// Parameters that leave the int32 accumulators raw (no zero points, an identity
    /// requantization, no clamp), for the dynamic-range kernels to scale in float.
    pub fn raw(n: usize) -> ConvQuant {
        ConvQuant {
            in_zp: 0,
            w_zp: vec![0; n],
            out_zp: 0,
            requant: vec![Requant::Fixed { multiplier: 1 << 30, shift: 1 }; n],
            act: (i32::MIN, i32::MAX),
            bias: None,
            wide: false,
        }
    }

    /// What an optimized kernel keeps once it has folded the per-channel bias and
    /// requantization into its own epilogue: the zero points, clamp and width, without the
    /// per-channel bias and requantization ([`ConvQuant::finish`] must not be called on it).
    pub fn fast_path_only(self) -> ConvQuant {
        ConvQuant { requant: Vec::new(), bias: None, ..self }
    }

    /// Bias, requantization, output zero point and clamp of channel `c`'s accumulator.
    #[inline(always)]
    pub fn finish(&self, c: usize, acc: i64) -> i32 {
        let acc = acc + self.bias.as_ref().map_or(0, |b| b[c]);
        let v = if self.wide {
            self.requant[c].apply64(acc)
        } else {
            self.requant[c].apply(acc as i32)
        };
        v.saturating_add(self.out_zp).clamp(self.act.0, self.act.1)
    }
}

/// Reference CONV_2D (TFLite's `ConvPerChannel` / uint8 `Conv`): taps outside the input are
/// skipped, i.e. read the input zero point.
pub fn conv<TI: QInt, TW: QInt, TO: QInt>(g: &ConvGeom, q: &ConvQuant, input: &[TI], filter: &[TW], out: &mut [TO]) {
    let (cin_g, cout_g) = (g.group_in_c(), g.group_out_c());
    for b in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                for oc in 0..g.out_c {
                    let group = oc / cout_g;
                    let mut acc: i64 = 0;
                    for ky in 0..g.k_h {
                        let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                        if iy < 0 || iy >= g.in_h as isize {
                            continue;
                        }
                        for kx in 0..g.k_w {
                            let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                            if ix < 0 || ix >= g.in_w as isize {
                                continue;
                            }
                            let ibase = ((b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c + group * cin_g;
                            let wbase = ((oc * g.k_h + ky) * g.k_w + kx) * cin_g;
                            for ic in 0..cin_g {
                                let x = input[ibase + ic].get() - q.in_zp;
                                let w = filter[wbase + ic].get() - q.w_zp[oc];
                                acc += (x * w) as i64;
                            }
                        }
                    }
                    let o = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c + oc;
                    out[o] = TO::put(q.finish(oc, acc));
                }
            }
        }
    }
}

/// Reference DEPTHWISE_CONV_2D (`DepthwiseConvPerChannel` / uint8 `DepthwiseConv`); the filter
/// is `[1, k_h, k_w, out_c]`.
pub fn depthwise<TI: QInt, TW: QInt, TO: QInt>(g: &DepthwiseGeom, q: &ConvQuant, input: &[TI], filter: &[TW], out: &mut [TO]) {
    let oc_n = g.out_c();
    for b in 0..g.batch {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                for ic in 0..g.in_c {
                    for m in 0..g.multiplier {
                        let oc = ic * g.multiplier + m;
                        let mut acc: i64 = 0;
                        for ky in 0..g.k_h {
                            let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                            if iy < 0 || iy >= g.in_h as isize {
                                continue;
                            }
                            for kx in 0..g.k_w {
                                let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                                if ix < 0 || ix >= g.in_w as isize {
                                    continue;
                                }
                                let x = input[((b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c + ic].get() - q.in_zp;
                                let w = filter[(ky * g.k_w + kx) * oc_n + oc].get() - q.w_zp[oc];
                                acc += (x * w) as i64;
                            }
                        }
                        out[((b * g.out_h + oy) * g.out_w + ox) * oc_n + oc] = TO::put(q.finish(oc, acc));
                    }
                }
            }
        }
    }
}

/// Reference FULLY_CONNECTED: `input` is `[m, k]`, `weights` `[n, k]`.
pub fn fully_connected<TI: QInt, TW: QInt, TO: QInt>(m: usize, k: usize, n: usize, q: &ConvQuant, input: &[TI], weights: &[TW], out: &mut [TO]) {
    for r in 0..m {
        for c in 0..n {
            let mut acc: i64 = 0;
            for d in 0..k {
                let x = input[r * k + d].get() - q.in_zp;
                let w = weights[c * k + d].get() - q.w_zp[c];
                acc += (x * w) as i64;
            }
            out[r * n + c] = TO::put(q.finish(c, acc));
        }
    }
}

/// Reference TRANSPOSE_CONV (TFLite's `reference_integer_ops::TransposeConv` and the uint8
/// `reference_ops::TransposeConv`): each input pixel scatters `(x − zx) · (w − zw)` onto the
/// output taps it reaches; the sums are then finished like a convolution's. `filter` is
/// `[out_c, k_h, k_w, in_c]`.
pub fn transpose_conv<TI: QInt, TW: QInt, TO: QInt>(g: &TransposeConvGeom, q: &ConvQuant, input: &[TI], filter: &[TW], out: &mut [TO]) {
    let mut acc = vec![0i64; g.batch * g.out_h * g.out_w * g.out_c];
    for b in 0..g.batch {
        for iy in 0..g.in_h {
            for ix in 0..g.in_w {
                for ic in 0..g.in_c {
                    let x = input[((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ic].get() - q.in_zp;
                    for ky in 0..g.k_h {
                        for kx in 0..g.k_w {
                            let oy = (iy * g.stride_h + ky) as isize - g.pad_top as isize;
                            let ox = (ix * g.stride_w + kx) as isize - g.pad_left as isize;
                            if oy < 0 || ox < 0 || oy >= g.out_h as isize || ox >= g.out_w as isize {
                                continue;
                            }
                            for oc in 0..g.out_c {
                                let w = filter[((oc * g.k_h + ky) * g.k_w + kx) * g.in_c + ic].get() - q.w_zp[oc];
                                acc[((b * g.out_h + oy as usize) * g.out_w + ox as usize) * g.out_c + oc] += (x * w) as i64;
                            }
                        }
                    }
                }
            }
        }
    }
    for (i, (o, &a)) in out.iter_mut().zip(&acc).enumerate() {
        *o = TO::put(q.finish(i % g.out_c, a));
    }
}

/// Reference BATCH_MATMUL (TFLite's quantized `reference_ops::BatchMatMul`): for each output
/// matrix, `out[i][j] = finish(Σ_k (x[i][k] − zx)(y[k][j] − zy))` with `x`, `y` read through
/// `adj_x` / `adj_y` and the batch broadcast of `g`. `q.w_zp[j]` is y's zero point.
pub fn batch_matmul<TX: QInt, TY: QInt, TO: QInt>(g: &MatMulGeom, q: &ConvQuant, x: &[TX], y: &[TY], out: &mut [TO]) {
    let (m, k, n) = (g.m, g.k, g.n);
    for (bi, &(xi, yi)) in g.pairs.iter().enumerate() {
        let (xm, ym) = (&x[xi * m * k..(xi + 1) * m * k], &y[yi * k * n..(yi + 1) * k * n]);
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0i64;
                for d in 0..k {
                    let xv = if g.adj_x { xm[d * m + i] } else { xm[i * k + d] }.get() - q.in_zp;
                    let yv = if g.adj_y { ym[j * k + d] } else { ym[d * n + j] }.get() - q.w_zp[j];
                    acc += xv as i64 * yv as i64;
                }
                out[(bi * m + i) * n + j] = TO::put(q.finish(j, acc));
            }
        }
    }
}
