//! int16 LOGISTIC and TANH as TFLite's reference kernels compute them
//! (`reference_integer_ops::Logistic` / `Tanh` for int16, prepared by `SigmoidPrepare` /
//! `TanhPrepare`): the input is brought to a fixed scale of `1 / (3 · 4096)` per step, then a
//! 256-entry table of the sigmoid (0.16 format, one entry per 1/24) is interpolated linearly.
//! Tanh uses `tanh(x) = 2 · sigmoid(2x) − 1` on the same table.
//!
//! Two ways to reach the table scale, chosen at prepare:
//! - the input scale is a power of two `2^e` with `12 + e` in `{0, 1}` (logistic: `0` only):
//!   the multiplier is `3 << (12 + e)` with no shift;
//! - otherwise ("general scale"), the multiplier is `scale · 3 · 4096` doubled until it exceeds
//!   `32767 / 2` (at most 31 times), truncated to an integer, with as many rounding right shifts.

use super::fixedpoint::checked_log2;
use super::QParams;

/// TFLite's `sigmoid_table_uint16` (`tensorflow/lite/kernels/internal/common.h`): sigmoid of
/// `i / 24` in 0.16 format for `i` in `0..256`. The entries are hand-tuned for the linear
/// interpolation between them (44 of them differ by one from `round(65536 · σ(i / 24))`, none by
/// more than 1.11 from the exact value), so they are kept as data rather than recomputed; the
/// unit test below bounds them against σ.
pub const SIGMOID_TABLE: [u16; 256] = [
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255,
    46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174,
    56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441,
    61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835,
    63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845,
    64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517, 65517, 65518,
    65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529,
    65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533,
    65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
];

/// Prepared int16 LOGISTIC or TANH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sigmoid16 {
    tanh: bool,
    multiplier: i32,
    shift: u32,
}

impl Sigmoid16 {
    /// TFLite's Prepare: zero points must be 0 and the output scale `2^-15` (logistic: exactly
    /// `1 / 32768`). The error says which parameter TFLite would refuse.
    pub fn new(tanh: bool, input: QParams, output: QParams) -> Result<Sigmoid16, String> {
        if input.zero_point != 0 || output.zero_point != 0 {
            return Err(format!(
                "int16 {} needs zero points 0 (got input {}, output {})",
                if tanh { "TANH" } else { "LOGISTIC" },
                input.zero_point,
                output.zero_point
            ));
        }
        if checked_log2(output.scale) != Some(-15) || (!tanh && output.scale != 1.0 / 32768.0) {
            return Err(format!("int16 {} needs output scale 1/32768, got {}", if tanh { "TANH" } else { "LOGISTIC" }, output.scale));
        }
        let pot_shift = checked_log2(input.scale).map(|l| 12 + l);
        let pot = match pot_shift {
            Some(0) => Some(0),
            Some(1) if tanh => Some(1),
            _ => None,
        };
        if let Some(s) = pot {
            return Ok(Sigmoid16 { tanh, multiplier: 3 << s, shift: 0 });
        }
        let mut multiplier = input.scale as f64 * 4096.0 * 3.0;
        let mut shift = 0u32;
        while multiplier <= 32767.0 / 2.0 && shift <= 30 {
            shift += 1;
            multiplier *= 2.0;
        }
        // `static_cast<int32_t>` truncates; out of range it is x86's "integer indefinite".
        let m = if multiplier < 2147483648.0 { multiplier as i32 } else { i32::MIN };
        // A multiplier that truncates to 0 is read by the kernel as the power-of-two case.
        let (multiplier, shift) = if m == 0 { (3i32.wrapping_shl(shift), 0) } else { (m, shift) };
        Ok(Sigmoid16 { tanh, multiplier, shift })
    }

    /// One value.
    #[inline]
    pub fn apply(&self, x: i16) -> i16 {
        let round = if self.shift > 0 { 1i32 << (self.shift - 1) } else { 0 };
        let v = (x as i32).wrapping_mul(self.multiplier).wrapping_add(round) >> self.shift;
        let abs = v.wrapping_abs() as u32;
        if self.tanh {
            // Table steps of 1/24 cover [0, 10.7); tanh(x) reads sigmoid at 2x, hence 8 bits.
            let uh = abs >> 8;
            let r: i32 = if uh >= 255 {
                0xFFFF << 8
            } else {
                let (ua, ub) = (SIGMOID_TABLE[uh as usize] as u32, SIGMOID_TABLE[uh as usize + 1] as u32);
                ((ua << 8) + (abs & 0xFF) * (ub - ua)) as i32
            };
            let r = if v >= 0 { r - (1 << 23) + (1 << 7) } else { -r + (1 << 23) + (1 << 7) - 1 };
            (r >> 8) as i16
        } else {
            let uh = abs >> 9;
            let r: u32 = if uh >= 255 {
                0x7FFF << 10
            } else {
                let (ua, ub) = (SIGMOID_TABLE[uh as usize] as u32, SIGMOID_TABLE[uh as usize + 1] as u32);
                (ua << 9) + (abs & 0x1FF) * (ub - ua)
            };
            let r = if v >= 0 { r + (1 << 9) } else { (1u32 << 25).wrapping_sub(r).wrapping_add((1 << 9) - 1) };
            (r >> 10) as i16
        }
    }

    /// Applies it to every element.
    pub fn run(&self, input: &[i16], out: &mut [i16]) {
        for (o, &x) in out.iter_mut().zip(input) {
            *o = self.apply(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(scale: f32) -> QParams {
        QParams { scale, zero_point: 0 }
    }

    #[test]
    fn table_is_the_sigmoid_within_about_one_step() {
        for (i, &t) in SIGMOID_TABLE.iter().enumerate() {
            let s = 65536.0 / (1.0 + (-(i as f64) / 24.0).exp());
            // Hand-tuned entries sit up to 1.11 steps from σ; a typo would be far off.
            assert!((t as f64 - s.min(65535.0)).abs() <= 1.2, "entry {i}: {t} vs {s}");
        }
    }

    #[test]
    fn power_of_two_and_general_scales_pick_their_paths() {
        let out = q(1.0 / 32768.0);
        // 2^-12: shift 0 for both ops; 2^-11: tanh only (logistic takes the general path).
        assert_eq!(Sigmoid16::new(true, q(2f32.powi(-12)), out).unwrap(), Sigmoid16 { tanh: true, multiplier: 3, shift: 0 });
        assert_eq!(Sigmoid16::new(true, q(2f32.powi(-11)), out).unwrap(), Sigmoid16 { tanh: true, multiplier: 6, shift: 0 });
        let l = Sigmoid16::new(false, q(2f32.powi(-11)), out).unwrap();
        assert_eq!((l.multiplier, l.shift), (24576, 12));
        // A general scale: 0.001 * 12288 = 12.288, doubled 11 times to 25165.8 -> 25165.
        let g = Sigmoid16::new(false, q(0.001), out).unwrap();
        assert_eq!((g.multiplier, g.shift), (25165, 11));
        assert!(Sigmoid16::new(false, q(0.001), q(1.0 / 16384.0)).is_err());
        assert!(Sigmoid16::new(true, QParams { scale: 0.001, zero_point: 3 }, out).is_err());
    }

    #[test]
    fn outputs_track_the_real_functions() {
        let out = q(1.0 / 32768.0);
        for &scale in &[2f32.powi(-12), 2f32.powi(-11), 0.0007, 0.003] {
            let (t, l) = (Sigmoid16::new(true, q(scale), out).unwrap(), Sigmoid16::new(false, q(scale), out).unwrap());
            let mut prev = (i16::MIN, i16::MIN);
            for x in (i16::MIN..=i16::MAX).step_by(7) {
                let real = x as f64 * scale as f64;
                let (ty, ly) = (t.apply(x), l.apply(x));
                assert!((ty as f64 / 32768.0 - real.tanh()).abs() < 2e-3, "tanh({real}) = {ty} at scale {scale}");
                assert!((ly as f64 / 32768.0 - 1.0 / (1.0 + (-real).exp())).abs() < 2e-3, "logistic({real}) = {ly}");
                assert!(ty >= prev.0 && ly >= prev.1, "both are monotonic");
                prev = (ty, ly);
            }
        }
    }
}
