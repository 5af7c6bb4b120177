//! Row-wise requantization of int32 accumulators with per-channel Q31 multipliers, written
//! branch-free so it vectorizes (the SIMD module compiles it again with AVX-512 enabled). It is
//! [`super::fixedpoint::mbqm`] element for element; a test checks that.

/// Per-channel multipliers of a row of accumulators, split for branch-free evaluation.
#[derive(Clone, Debug, Default)]
pub struct ChannelRequant {
    /// `1 << max(shift, 0)`.
    pub lmul: Vec<i32>,
    /// Q31 significands.
    pub mult: Vec<i32>,
    /// `max(-shift, 0)`.
    pub right: Vec<i32>,
    /// Whether any channel shifts left (otherwise `lmul` is all ones).
    pub any_left: bool,
    /// Per-channel float scales instead of the fixed-point multipliers (XNNPACK's fp32
    /// requantization, [`super::Requant::Single`]); empty otherwise.
    pub single: Vec<f32>,
    /// Per-channel TOSA `apply_scale_32` parameters instead ([`super::Requant::Tosa`]); empty
    /// otherwise.
    pub tosa: Vec<TosaScale>,
}

/// One channel's `apply_scale_32(acc, multiplier, shift, double_round)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TosaScale {
    pub multiplier: i32,
    /// 2..=62.
    pub shift: u32,
    pub double_round: bool,
}

impl ChannelRequant {
    /// From `(multiplier, shift)` pairs.
    pub fn new(pairs: impl IntoIterator<Item = (i32, i32)>) -> ChannelRequant {
        let pairs: Vec<(i32, i32)> = pairs.into_iter().collect();
        // Each vector sized exactly (they live as long as the prepared kernel).
        ChannelRequant {
            lmul: pairs.iter().map(|&(_, s)| 1i32.wrapping_shl(s.max(0) as u32)).collect(),
            mult: pairs.iter().map(|&(m, _)| m).collect(),
            right: pairs.iter().map(|&(_, s)| (-s).max(0)).collect(),
            any_left: pairs.iter().any(|&(_, s)| s > 0),
            ..ChannelRequant::default()
        }
    }

    /// From per-channel float scales: `rint(acc * scale)`, half to even.
    pub fn single(scales: impl IntoIterator<Item = f32>) -> ChannelRequant {
        ChannelRequant { single: scales.into_iter().collect(), ..ChannelRequant::default() }
    }

    /// One of these for `requant`, when every channel is fixed-point or every channel is a
    /// float scale.
    pub fn of(requant: &[super::Requant]) -> Option<ChannelRequant> {
        use super::Requant;
        if let Some(pairs) = Requant::fixed_pairs(requant) {
            return Some(ChannelRequant::new(pairs));
        }
        if let Some(scales) = requant.iter().map(|r| if let Requant::Single(s) = r { Some(*s) } else { None }).collect::<Option<Vec<_>>>() {
            return Some(ChannelRequant::single(scales));
        }
        let tosa = requant
            .iter()
            .map(|r| if let Requant::Tosa { multiplier, shift, double_round } = *r { Some(TosaScale { multiplier, shift, double_round }) } else { None })
            .collect::<Option<Vec<_>>>()?;
        Some(ChannelRequant { tosa, ..ChannelRequant::default() })
    }
}

/// [`super::fixedpoint::mbqm`] without branches (`lmul = 1 << max(shift, 0)`, `right =
/// max(-shift, 0)`), for loops the compiler should vectorize.
#[inline(always)]
pub fn mbqm_branchless(x: i32, mult: i32, lmul: i32, right: i32) -> i32 {
    let x = x.wrapping_mul(lmul);
    let ab = x as i64 * mult as i64;
    let nudge = if ab >= 0 { 1i64 << 30 } else { 1 - (1i64 << 30) };
    let t = ab + nudge;
    // Division by 2^31 truncating toward zero, as C++ `/` does.
    let q = ((t + ((t >> 63) & ((1i64 << 31) - 1))) >> 31) as i32;
    let mask = ((1i64 << right) - 1) as i32;
    let rem = q & mask;
    let thr = (mask >> 1) + ((q < 0) as i32);
    (q >> right) + ((rem > thr) as i32)
}

/// `acc[i] = clamp(mbqm(acc[i] + bias[i], mult, shift) + out_zp, lo, hi)` for channels
/// `c0 .. c0 + acc.len()`.
#[inline(always)]
pub fn requant_row(acc: &mut [i32], bias: &[i32], r: &ChannelRequant, c0: usize, out_zp: i32, lo: i32, hi: i32) {
    let n = acc.len();
    if !r.tosa.is_empty() {
        // The sum saturates to int32 in apply_scale_32; the zero point is added in int32 and the
        // result clipped (RESCALE's apply_add_s, then the output type's and CLAMP's range).
        let (bias, ts) = (&bias[c0..c0 + n], &r.tosa[c0..c0 + n]);
        for i in 0..n {
            let t = ts[i];
            let v = super::tosa::apply_scale_32_i32(acc[i].wrapping_add(bias[i]), t.multiplier, t.shift, t.double_round);
            acc[i] = v.saturating_add(out_zp).clamp(lo, hi);
        }
        return;
    }
    if !r.single.is_empty() {
        let (bias, scale) = (&bias[c0..c0 + n], &r.single[c0..c0 + n]);
        for i in 0..n {
            let v = super::rint_to_i32(acc[i].wrapping_add(bias[i]) as f32 * scale[i]);
            acc[i] = v.wrapping_add(out_zp).clamp(lo, hi);
        }
        return;
    }
    let (bias, lmul, mult, right) = (&bias[c0..c0 + n], &r.lmul[c0..c0 + n], &r.mult[c0..c0 + n], &r.right[c0..c0 + n]);
    for i in 0..n {
        let v = mbqm_branchless(acc[i].wrapping_add(bias[i]), mult[i], lmul[i], right[i]);
        acc[i] = v.wrapping_add(out_zp).clamp(lo, hi);
    }
}

/// [`requant_row`] with whole blocks of 16 channels through AVX-512 when the CPU has it
/// (`simd::quant::requant_row_prefix`), the rest here.
#[inline(always)]
pub(crate) fn requant_row_simd(acc: &mut [i32], bias: &[i32], r: &ChannelRequant, c0: usize, out_zp: i32, lo: i32, hi: i32) {
    if !r.single.is_empty() || !r.tosa.is_empty() {
        requant_row(acc, bias, r, c0, out_zp, lo, hi);
        return;
    }
    let full = crate::simd::quant::requant_row_prefix(acc, &bias[c0..], &r.lmul[c0..], &r.mult[c0..], &r.right[c0..], r.any_left, out_zp, lo, hi);
    requant_row(&mut acc[full..], bias, r, c0 + full, out_zp, lo, hi);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::fixedpoint::mbqm;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn row_requant_is_mbqm(acc in proptest::collection::vec(any::<i32>(), 1..40), m in (1i32 << 30)..i32::MAX, s in -31i32..8, zp in -128i32..128) {
            let r = ChannelRequant::new(std::iter::repeat_n((m, s), acc.len()));
            let bias = vec![0; acc.len()];
            let mut got = acc.clone();
            requant_row(&mut got, &bias, &r, 0, zp, i32::MIN, i32::MAX);
            for (g, a) in got.iter().zip(&acc) {
                prop_assert_eq!(*g, mbqm(*a, m, s).wrapping_add(zp));
            }
        }

        #[test]
        fn row_requant_single_is_rint(acc in proptest::collection::vec(-(1i32 << 24)..(1 << 24), 1..40), scale in 1e-6f32..4.0, zp in -128i32..128) {
            let r = ChannelRequant::single(std::iter::repeat_n(scale, acc.len()));
            let bias: Vec<i32> = (0..acc.len() as i32).collect();
            let mut got = acc.clone();
            requant_row_simd(&mut got, &bias, &r, 0, zp, -128, 127);
            for ((g, a), b) in got.iter().zip(&acc).zip(&bias) {
                let want = (((a + b) as f32 * scale).round_ties_even() as i32 + zp).clamp(-128, 127);
                prop_assert_eq!(*g, want);
            }
        }
    }
}
