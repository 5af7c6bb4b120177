//! Dynamic (run-time) quantization: a scale and zero point chosen from the values themselves,
//! per tensor or per row, by ExecuTorch's `choose_qparams` or XNNPACK's qd8 rule
//! ([`nnrt_core::QParamsRule`]); the values come back quantized and dequantized, as the float
//! op that reads them would see them.

use nnrt_core::QParamsRule;

/// ExecuTorch's (PyTorch's) smallest scale.
const SMALL_SCALE: f32 = 6.1e-5;

/// `choose_qparams`' scale (double) and zero point for the values in `[min, max]`.
pub fn executorch_qparams(min: f32, max: f32, qmin: i32, qmax: i32) -> (f64, i32) {
    // `std::min(min, 0.f)` / `std::max(max, 0.f)`: a NaN bound stays NaN.
    let mut min = if 0.0 < min { 0.0 } else { min };
    let mut max = if max < 0.0 { 0.0 } else { max };
    let steps = qmax - qmin;
    let mut scale = (f64::from(max) - f64::from(min)) / f64::from(steps);
    if scale as f32 == 0.0 || (1.0f32 / scale as f32).is_infinite() {
        scale = 0.1;
    }
    if scale < f64::from(SMALL_SCALE) {
        let org = scale as f32;
        scale = f64::from(SMALL_SCALE);
        if min == 0.0 {
            max = SMALL_SCALE * steps as f32;
        } else if max == 0.0 {
            min = -SMALL_SCALE * steps as f32;
        } else {
            let amplifier = SMALL_SCALE / org;
            min *= amplifier;
            max *= amplifier;
        }
    }
    let (lo, hi) = (f64::from(min) / scale, f64::from(max) / scale);
    let from_min = f64::from(qmin) - lo;
    let from_max = f64::from(qmax) - hi;
    let min_error = f64::from(qmin.unsigned_abs()) - lo.abs();
    let max_error = f64::from(qmax.unsigned_abs()) - hi.abs();
    let initial = if min_error < max_error { from_min } else { from_max };
    let zp = if initial < f64::from(qmin) {
        qmin
    } else if initial > f64::from(qmax) {
        qmax
    } else {
        initial.round_ties_even() as i32
    };
    (scale, zp)
}

/// XNNPACK's qd8 multiplier `255 / range` (float) and zero point for the values in `[min, max]`.
pub fn xnnpack_qparams(min: f32, max: f32) -> (f32, i32) {
    let (qmin, qmax) = (-128.0f32, 127.0f32);
    let rmin = if min < 0.0 { min } else { 0.0 };
    let rmax = if max > 0.0 { max } else { 0.0 };
    let scale = if rmin == rmax { 1.0 } else { (qmax - qmin) / (rmax - rmin) };
    let (rmin_scale, rmax_scale) = (rmin * scale, rmax * scale);
    let zp = if (qmin + rmin_scale) + (qmax + rmax_scale) > 0.0 { qmin - rmin_scale } else { qmax - rmax_scale };
    let zp = zp.max(qmin).min(qmax);
    (scale, zp.round_ties_even() as i32)
}

/// The smallest and largest of `x` as ExecuTorch's `vec_minf`/`vec_maxf` find them (a NaN
/// after the first element is skipped).
fn min_max(x: &[f32]) -> (f32, f32) {
    let first = x.first().copied().unwrap_or(0.0);
    x.iter().fold((first, first), |(lo, hi), &v| (if v < lo { v } else { lo }, if hi < v { v } else { hi }))
}

/// Quantizes and dequantizes `x` row by row (`row` elements; the whole of `x` when 0) into `out`.
pub fn dynamic_quantize(rule: QParamsRule, qmin: i32, qmax: i32, row: usize, x: &[f32], out: &mut [f32]) {
    let row = if row == 0 { x.len().max(1) } else { row };
    for (xr, or) in x.chunks(row).zip(out.chunks_mut(row)) {
        let (min, max) = min_max(xr);
        match rule {
            QParamsRule::ExecuTorch => {
                let (scale, zp) = executorch_qparams(min, max, qmin, qmax);
                let inv = 1.0f32 / scale as f32;
                let s = scale as f32;
                for (o, &v) in or.iter_mut().zip(xr) {
                    // `int32(zp) + nearbyint(float(inv * v))` is a float sum, then an int64.
                    let q = (zp as f32 + (inv * v).round_ties_even()) as i64;
                    let q = q.clamp(i64::from(qmin), i64::from(qmax)) as i32;
                    *o = q.wrapping_sub(zp) as f32 * s;
                }
            }
            QParamsRule::Xnnpack => {
                let (m, zp) = xnnpack_qparams(min, max);
                let inv = 1.0 / m;
                let (lo, hi) = ((qmin - zp) as f32, (qmax - zp) as f32);
                for (o, &v) in or.iter_mut().zip(xr) {
                    let q = (v * m).max(lo).min(hi).round_ties_even();
                    *o = q * inv;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executorch_rule_matches_pytorch_worked_values() {
        // [-1, 3] over 255 steps: scale 4/255, zero point round(-128 + 63.75) = -64.
        let (s, zp) = executorch_qparams(-1.0, 3.0, -128, 127);
        assert_eq!(s, 4.0 / 255.0);
        assert_eq!(zp, -64);
        // All zero: scale 0.1; both ends err alike, so the zero point comes from qmax.
        assert_eq!(executorch_qparams(0.0, 0.0, -128, 127), (0.1, 127));
        // A tiny positive range is raised to the smallest scale, the range with it.
        let (s, zp) = executorch_qparams(0.0, 1e-6, -128, 127);
        assert_eq!((s, zp), (f64::from(SMALL_SCALE), -128));
    }

    #[test]
    fn xnnpack_rule_matches_its_formula() {
        let (m, zp) = xnnpack_qparams(-1.0, 3.0);
        assert_eq!(m, 255.0 / 4.0);
        assert_eq!(zp, (-128.0f32 + 63.75).round_ties_even() as i32);
        // An empty range: multiplier 1, the zero point from qmax (-128 + 127 is not > 0).
        assert_eq!(xnnpack_qparams(0.0, 0.0), (1.0, 127));
    }

    #[test]
    fn values_land_on_the_grid_and_keep_zero() {
        let x = [-1.0f32, 0.0, 0.5, 3.0, 1.234, -0.3];
        for rule in [QParamsRule::ExecuTorch, QParamsRule::Xnnpack] {
            let mut out = [0.0f32; 6];
            dynamic_quantize(rule, -128, 127, 3, &x, &mut out);
            assert_eq!(out[1], 0.0, "{rule:?}");
            for (a, b) in x.iter().zip(&out) {
                // Within half a step of the row's scale (at most 4/255 here).
                assert!((a - b).abs() <= 2.0 / 255.0 + 1e-6, "{rule:?}: {a} became {b}");
            }
        }
    }
}
