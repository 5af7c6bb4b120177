//! Quantized ADD, SUB, MUL and SQUARED_DIFFERENCE with NumPy broadcasting (TFLite's `AddFunc`,
//! `SubFunc`, `MulElementwise` and `squared_difference.cc`): add/sub rescale both inputs to a
//! common scale after a left shift of 20 bits (15 for int16) and requantize the sum; mul
//! requantizes the product of offsets; squared difference rescales both inputs after a left
//! shift of 7 bits and requantizes the square of their difference.

use nnrt_core::Activation;

use super::fixedpoint::{checked_log2, mbqm, rdbp, mbqm_smaller_than_one, quantize_multiplier, quantize_multiplier_smaller_than_one};
use super::requant::mbqm_branchless;
use super::{activation_range, QInt, QParams};
use crate::kernels::binary::{broadcast_rows, map_chunks, map_row, Row};
use crate::simd::lut::lut8;
use crate::simd::qbinary::{QLanes, Second, SideParams};
use crate::simd::quant::{with_avx512, Avx512Body};

/// Which arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QBinaryOp {
    /// a + b
    Add,
    /// a − b
    Sub,
    /// a · b
    Mul,
    /// (a − b)², int8 only in TFLite.
    SquaredDifference,
}

/// Prepared parameters of one quantized binary op.
#[derive(Clone, Copy, Debug)]
pub struct QBinary {
    op: QBinaryOp,
    left_shift: i32,
    in1_offset: i32,
    in1_mult: (i32, i32),
    in2_offset: i32,
    in2_mult: (i32, i32),
    out_mult: (i32, i32),
    out_offset: i32,
    act: (i32, i32),
    /// int16 ADD with power-of-two scales: TFLite's `pot_scale_int16` path (the schema's
    /// default), as right shifts of the two inputs.
    pot16: Option<(i32, i32)>,
    /// XNNPACK's arithmetic instead of TFLite's ([`QBinary::xnnpack`]).
    xnn: Option<XnnArith>,
    /// 8-bit operands: the arithmetic over AVX-512 or AVX2 lanes ([`QBinary::run_lanes`]).
    lanes: Option<QLanes>,
}

/// XNNPACK's quantized add/sub (`qs8-vadd`: 21-bit multipliers of each input's scale over the
/// output's, one arithmetic right shift with the rounding folded into the bias) and mul
/// (`qs8-vmul` fp32: the product of offsets times `a_scale * b_scale / out_scale` in float,
/// rounded half to even).
#[derive(Clone, Copy, Debug)]
enum XnnArith {
    Add { a_mult: i32, b_mult: i32, bias: i32, shift: u32 },
    Mul { scale: f32 },
}

/// Same-shape quantized add/sub/mul ([`QBinary::run_same`]) of `a` and `b`, run through
/// `simd::quant::with_avx512`.
struct SameShape<'a, T> {
    p: &'a QBinary,
    a: &'a [T],
    b: &'a [T],
    /// 8-bit add/sub's rescaled inputs by byte (see [`QBinary::run`]).
    tables: Option<&'a ([i32; 256], [i32; 256])>,
}

impl<T: QInt, TO: QInt> Avx512Body<TO> for SameShape<'_, T> {
    #[inline(always)]
    fn run(&self, out: &mut [TO]) {
        self.p.run_same(self.a, self.b, self.tables, out)
    }
}

impl QBinary {
    /// TFLite's Prepare for `op` on inputs `a`, `b` producing `out` of type `TO`.
    pub fn new<TO: QInt>(op: QBinaryOp, a: QParams, b: QParams, out: QParams, act: Activation) -> QBinary {
        let mut p = QBinary::new_reference::<TO>(op, a, b, out, act);
        if TO::MAX - TO::MIN == 255 && p.pot16.is_none() && op != QBinaryOp::SquaredDifference {
            let side = |zp: i32, mult: (i32, i32)| SideParams { zp, mult };
            p.lanes = QLanes::new(
                TO::MIN < 0,
                op == QBinaryOp::Mul,
                op == QBinaryOp::Sub,
                p.left_shift as u32,
                side(-p.in1_offset, p.in1_mult),
                side(-p.in2_offset, p.in2_mult),
                p.out_mult,
                p.out_offset,
                p.act,
            );
        }
        p
    }

    /// [`QBinary::new`]'s parameters before the lanes are chosen.
    fn new_reference<TO: QInt>(op: QBinaryOp, a: QParams, b: QParams, out: QParams, act: Activation) -> QBinary {
        let act = activation_range(act, out, TO::MIN, TO::MAX);
        let mut p = QBinary {
            op,
            left_shift: 0,
            in1_offset: -a.zero_point,
            in1_mult: (0, 0),
            in2_offset: -b.zero_point,
            in2_mult: (0, 0),
            out_mult: (0, 0),
            out_offset: out.zero_point,
            act,
            pot16: None,
            xnn: None,
            lanes: None,
        };
        match op {
            QBinaryOp::Add | QBinaryOp::Sub if TO::MIN == i16::MIN as i32 && a.zero_point == 0 && b.zero_point == 0 && out.zero_point == 0 => {
                // nnrt's IR does not keep ADD/SUB's `pot_scale_int16` option (the option would
                // need a field in `OpKind::Binary`, which code outside the CPU backend builds
                // literally); like TFLite with the schema default (true), power-of-two scales
                // take the shift-based path (`PrepareInt16SubOpPOT` / add's POT branch).
                if let (Some(la), Some(lb), Some(lo)) = (checked_log2(a.scale), checked_log2(b.scale), checked_log2(out.scale)) {
                    let (s1, s2) = (la - lo, lb - lo);
                    if (s1 == 0 || s2 == 0) && s1 <= 0 && s2 <= 0 {
                        p.pot16 = Some((s1, s2));
                        return p;
                    }
                }
                return QBinary::new_general::<TO>(p, a, b, out);
            }
            QBinaryOp::Add | QBinaryOp::Sub => return QBinary::new_general::<TO>(p, a, b, out),
            QBinaryOp::SquaredDifference => {
                // TFLite's Prepare: 7 bits of left shift (255² · 2^14 fits 32 bits), both
                // inputs over twice the larger scale, the square back over 2^14 · the output's.
                p.left_shift = 7;
                let twice_max = (2.0f32 * a.scale.max(b.scale)) as f64;
                p.in1_mult = quantize_multiplier_smaller_than_one(a.scale as f64 / twice_max);
                p.in2_mult = quantize_multiplier_smaller_than_one(b.scale as f64 / twice_max);
                let below = ((1i32 << (2 * p.left_shift)) as f32 * out.scale) as f64;
                p.out_mult = quantize_multiplier_smaller_than_one(twice_max * twice_max / below);
            }
            QBinaryOp::Mul => {
                // TFLite multiplies the float scales in float before widening.
                let real = (a.scale * b.scale / out.scale) as f64;
                p.out_mult = quantize_multiplier(real);
            }
        }
        p
    }

    /// XNNPACK's parameters for `op` (ExecuTorch's XNNPACK-lowered quantized add, sub, mul;
    /// XNNPACK has no quantized squared difference: TFLite's arithmetic).
    pub fn xnnpack<TO: QInt>(op: QBinaryOp, a: QParams, b: QParams, out: QParams, act: Activation) -> QBinary {
        let mut p = QBinary::new::<TO>(op, a, b, out, act);
        p.xnn = Some(match op {
            QBinaryOp::SquaredDifference => return p,
            QBinaryOp::Mul => XnnArith::Mul { scale: a.scale * b.scale / out.scale },
            QBinaryOp::Add | QBinaryOp::Sub => {
                let a_out = a.scale / out.scale;
                let b_out = if op == QBinaryOp::Sub { -(b.scale / out.scale) } else { b.scale / out.scale };
                let max = a_out.abs().max(b_out.abs());
                let exponent = (max.to_bits() >> 23) as i32 - 127;
                // 21-bit multipliers; XNNPACK asserts the scale ratios lie in [2^-10, 2^8).
                let shift = (20 - exponent).clamp(1, 31) as u32;
                let mult = |v: f32| {
                    // `v * 2^shift` is exact (a change of exponent), then `lrintf`.
                    let m = (v.abs() * (1u64 << shift) as f32).round_ties_even() as i32;
                    if v.is_sign_negative() { -m } else { m }
                };
                let (a_mult, b_mult) = (mult(a_out), mult(b_out));
                let bias = (1i32 << (shift - 1)).wrapping_sub(a_mult.wrapping_mul(a.zero_point)).wrapping_sub(b_mult.wrapping_mul(b.zero_point));
                XnnArith::Add { a_mult, b_mult, bias, shift }
            }
        });
        p.pot16 = None;
        p.lanes = None;
        p
    }

    /// The same op with its lanes on AVX2 (`None` without lanes): tests run the AVX2 kernel on
    /// AVX-512 machines too.
    #[cfg(test)]
    pub(crate) fn with_avx2_lanes(&self) -> Option<QBinary> {
        Some(QBinary { lanes: Some(self.lanes?.on_avx2()?), ..*self })
    }

    /// Add/sub's general scaling: both inputs to twice the larger scale after a left shift.
    fn new_general<TO: QInt>(mut p: QBinary, a: QParams, b: QParams, out: QParams) -> QBinary {
        p.left_shift = if TO::MIN == i16::MIN as i32 { 15 } else { 20 };
        // `2 * max(float, float)` is computed in float, then widened.
        let twice_max = (2.0f32 * a.scale.max(b.scale)) as f64;
        p.in1_mult = quantize_multiplier_smaller_than_one(a.scale as f64 / twice_max);
        p.in2_mult = quantize_multiplier_smaller_than_one(b.scale as f64 / twice_max);
        let real_out = twice_max / ((1i64 << p.left_shift) as f64 * out.scale as f64);
        p.out_mult = quantize_multiplier(real_out);
        p
    }

    /// One output value from two input values.
    #[inline(always)]
    pub fn apply(&self, x: i32, y: i32) -> i32 {
        match self.xnn {
            Some(XnnArith::Add { a_mult, b_mult, bias, shift }) => {
                let acc = bias.wrapping_add(x.wrapping_mul(a_mult)).wrapping_add(y.wrapping_mul(b_mult));
                return (acc >> shift).wrapping_add(self.out_offset).clamp(self.act.0, self.act.1);
            }
            Some(XnnArith::Mul { scale }) => {
                let acc = (self.in1_offset + x).wrapping_mul(self.in2_offset + y);
                return super::rint_to_i32(acc as f32 * scale).wrapping_add(self.out_offset).clamp(self.act.0, self.act.1);
            }
            None => {}
        }
        if let Some((s1, s2)) = self.pot16 {
            // One input is already at the output scale (shift 0); the other is rounding-shifted
            // to it. The sum saturates to int16 (gemmlowp's `SaturatingAdd`/`SaturatingSub`).
            let (a, b) = (rdbp(x, (-s1).min(31)), rdbp(y, (-s2).min(31)));
            let r = if self.op == QBinaryOp::Sub { a - b } else { a + b };
            return r.clamp(i16::MIN as i32, i16::MAX as i32).clamp(self.act.0, self.act.1);
        }
        let raw = match self.op {
            QBinaryOp::Add | QBinaryOp::Sub => {
                let a = (self.in1_offset + x).wrapping_mul(1 << self.left_shift);
                let b = (self.in2_offset + y).wrapping_mul(1 << self.left_shift);
                let a = mbqm_smaller_than_one(a, self.in1_mult.0, self.in1_mult.1);
                let b = mbqm_smaller_than_one(b, self.in2_mult.0, self.in2_mult.1);
                let s = if self.op == QBinaryOp::Add { a.wrapping_add(b) } else { a.wrapping_sub(b) };
                mbqm_smaller_than_one(s, self.out_mult.0, self.out_mult.1)
            }
            QBinaryOp::Mul => mbqm((self.in1_offset + x).wrapping_mul(self.in2_offset + y), self.out_mult.0, self.out_mult.1),
            QBinaryOp::SquaredDifference => {
                let a = mbqm_smaller_than_one((self.in1_offset + x).wrapping_mul(1 << self.left_shift), self.in1_mult.0, self.in1_mult.1);
                let b = mbqm_smaller_than_one((self.in2_offset + y).wrapping_mul(1 << self.left_shift), self.in2_mult.0, self.in2_mult.1);
                let d = a.wrapping_sub(b);
                mbqm_smaller_than_one(d.wrapping_mul(d), self.out_mult.0, self.out_mult.1)
            }
        };
        raw.wrapping_add(self.out_offset).clamp(self.act.0, self.act.1)
    }

    /// Applies the op over broadcast operands (`a_dims`, `b_dims` right-aligned to `out_dims`,
    /// which the caller has checked broadcast).
    ///
    /// Rows of the broadcast run vectorized (`kernels::binary::broadcast_rows`: coalesced outer
    /// dims, a contiguous or repeated operand along each row, rows split across the kernel
    /// pool); an 8-bit operand against one that repeats along the trailing dims (a scalar, the
    /// per-channel constants `[1,1,1,C]`) looks every output up in a table of that operand's
    /// values. Every path computes [`QBinary::apply`]'s integers.
    pub fn run<T: QInt, TO: QInt>(&self, a: &[T], a_dims: &[usize], b: &[T], b_dims: &[usize], out: &mut [TO], out_dims: &[usize]) {
        let sq = self.op == QBinaryOp::SquaredDifference;
        if sq && T::MAX - T::MIN == 255 && self.run_by_table(a, a_dims, b, b_dims, out, out_dims) {
            return;
        }
        if self.pot16.is_some() || self.xnn.is_some() || sq {
            broadcast_rows(a, a_dims, b, b_dims, out, out_dims, |ra, rb, o| map_row(ra, rb, o, |x: T, y: T| TO::put(self.apply(x.get(), y.get()))));
            return;
        }
        if self.run_lanes(a, a_dims, b, b_dims, out, out_dims) {
            return;
        }
        if T::MAX - T::MIN == 255 && self.run_by_table(a, a_dims, b, b_dims, out, out_dims) {
            return;
        }
        let add = self.op == QBinaryOp::Add;
        // 8-bit add/sub: each input's rescaled value depends on its byte alone, so two 256-entry
        // tables replace two of the three fixed-point multiplies (built once per run).
        let tables = (self.op != QBinaryOp::Mul && T::MAX - T::MIN == 255 && out.len() >= 1024).then(|| {
            let table = |offset: i32, (m, s): (i32, i32), neg: bool| -> [i32; 256] {
                let (l, r) = (1i32.wrapping_shl(s.max(0) as u32), (-s).max(0));
                std::array::from_fn(|i| {
                    let v = mbqm_branchless((offset + T::MIN + i as i32).wrapping_mul(1 << self.left_shift), m, l, r);
                    if neg { v.wrapping_neg() } else { v }
                })
            };
            Box::new((table(self.in1_offset, self.in1_mult, false), table(self.in2_offset, self.in2_mult, !add)))
        });
        let tables = tables.as_deref();
        broadcast_rows(a, a_dims, b, b_dims, out, out_dims, |ra, rb, o| match (ra, rb) {
            (Row::Slice(x), Row::Slice(y)) => with_avx512(&SameShape { p: self, a: x, b: y, tables }, o),
            (Row::Slice(x), Row::Splat(y)) => with_avx512(&SplatRow { p: self, v: x, c: self.side(y.get(), false), v_is_a: true }, o),
            (Row::Splat(x), Row::Slice(y)) => with_avx512(&SplatRow { p: self, v: y, c: self.side(x.get(), true), v_is_a: false }, o),
            (Row::Splat(x), Row::Splat(y)) => o.fill(TO::put(self.apply(x.get(), y.get()))),
        });
    }

    /// 8-bit operands where one of them (`m` values) repeats along the trailing dims of the
    /// other (`[N,H,W,C] op [C]`, `op [1]`): the `m × 256` outputs are tabulated once and each
    /// element looked up. Returns false (nothing written) for other shapes, or where the table
    /// would cost more than the lookups save.
    fn run_by_table<T: QInt, TO: QInt>(&self, a: &[T], a_dims: &[usize], b: &[T], b_dims: &[usize], out: &mut [TO], out_dims: &[usize]) -> bool {
        // The dims of `small` without leading 1s are the trailing dims of the output.
        let trailing = |dims: &[usize]| {
            let first = dims.iter().position(|&d| d != 1).unwrap_or(dims.len());
            let d = &dims[first..];
            d.len() <= out_dims.len() && out_dims[out_dims.len() - d.len()..] == *d
        };
        let n = out.len();
        let (small, full, small_is_a) = if b.len() < n && a.len() == n && trailing(b_dims) {
            (b, a, false)
        } else if a.len() < n && b.len() == n && trailing(a_dims) {
            (a, b, true)
        } else {
            return false;
        };
        let m = small.len();
        if m == 0 || !n.is_multiple_of(m) || m.saturating_mul(256).saturating_mul(8) > n {
            return false;
        }
        let value = |s: T, v: i32| TO::put(if small_is_a { self.apply(s.get(), v) } else { self.apply(v, s.get()) });
        if m == 1 && std::mem::size_of::<TO>() == 1 {
            // One operand is a scalar: one table by input byte, looked up 64 bytes at a time.
            let table: [u8; 256] = std::array::from_fn(|b| bytemuck::cast::<TO, u8>(value(small[0], bytemuck::cast::<u8, T>(b as u8).get())));
            map_chunks(bytemuck::cast_slice::<T, u8>(full), bytemuck::cast_slice_mut::<TO, u8>(out), 1, |x, o| lut8(&table, x, o));
            return true;
        }
        let mut table = Vec::new();
        if table.try_reserve_exact(m * 256).is_err() {
            return false;
        }
        for &s in small {
            table.extend((T::MIN..=T::MAX).map(|v| value(s, v)));
        }
        let lookup = |full: &[T], out: &mut [TO]| {
            for (o, x) in out.chunks_exact_mut(m).zip(full.chunks_exact(m)) {
                for (j, (o, &x)) in o.iter_mut().zip(x).enumerate() {
                    *o = table[j * 256 + (x.get() - T::MIN) as usize];
                }
            }
        };
        match crate::kernels::binary::par_chunk(n / m, m) {
            None => lookup(full, out),
            Some(c) => nnrt_threads::par_chunks_mut(out, c * m, |i, o| lookup(&full[i * c * m..i * c * m + o.len()], o)),
        }
        true
    }

    /// The value one side contributes when it is the same `v` for a whole row: add/sub's
    /// rescaled input (negated for sub's right side), mul's offset input.
    fn side(&self, v: i32, is_a: bool) -> i32 {
        let (offset, (m, s)) = if is_a { (self.in1_offset, self.in1_mult) } else { (self.in2_offset, self.in2_mult) };
        if self.op == QBinaryOp::Mul {
            return offset + v;
        }
        let r = mbqm_branchless((offset + v).wrapping_mul(1 << self.left_shift), m, 1i32.wrapping_shl(s.max(0) as u32), (-s).max(0));
        if !is_a && self.op == QBinaryOp::Sub { r.wrapping_neg() } else { r }
    }
}

/// The broadcast of `a_dims` and `b_dims` to `out_dims` as `(size, a stride, b stride)` per
/// dimension, outermost first: size-1 dimensions dropped and neighbours each operand walks as
/// one merged; `None` when the shapes do not broadcast.
fn coalesce(a_dims: &[usize], b_dims: &[usize], out_dims: &[usize]) -> Option<Vec<(usize, usize, usize)>> {
    let rank = out_dims.len();
    if a_dims.len() > rank || b_dims.len() > rank {
        return None;
    }
    let strides = |dims: &[usize]| -> Option<Vec<usize>> {
        let mut s = vec![0; rank];
        let mut acc = 1usize;
        for i in (0..rank).rev() {
            let d = (i + dims.len()).checked_sub(rank).map_or(1, |j| dims[j]);
            if d != out_dims[i] && d != 1 {
                return None;
            }
            s[i] = if d == 1 { 0 } else { acc };
            acc = acc.checked_mul(d)?;
        }
        Some(s)
    };
    let (sa, sb) = (strides(a_dims)?, strides(b_dims)?);
    let mut merged: Vec<(usize, usize, usize)> = Vec::with_capacity(rank);
    for i in 0..rank {
        let d = out_dims[i];
        if d == 1 {
            continue;
        }
        match merged.last_mut() {
            Some(last) if last.1 == sa[i] * d && last.2 == sb[i] * d => *last = (last.0 * d, sa[i], sb[i]),
            _ => merged.push((d, sa[i], sb[i])),
        }
    }
    Some(merged)
}

/// How [`QBinary::run_lanes`] walks the output: segments of `len` values, one after another,
/// each with the first operand contiguous and the second as `mode` says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SegMode {
    /// The second operand contiguous too.
    Contig,
    /// One row of `n` values of the second operand repeated along the segment.
    Tiled(usize),
    /// One value of the second operand per row of `n` (a multiple of 16).
    PerRow(usize),
    /// One value of the second operand for the whole segment.
    Splat,
}

/// Rows shorter than this are not worth a call each: such shapes take the other paths.
const MIN_SEGMENT: usize = 64;
/// A row repeated along a segment is tiled into a buffer of this many bytes at most.
const TILE: usize = crate::simd::qbinary::MAX_TILE;

impl QBinary {
    /// [`QBinary::run`] on the AVX-512 or AVX2 lanes ([`QLanes`]) for 8-bit operands: same shapes, a
    /// row repeated (`[1,1,1,C]`, `[1,H,1,C]`), a value per row (`[N,H,W,1]`), split across
    /// the kernel pool. Returns false (nothing written) where this CPU or these parameters
    /// have no lanes, for a scalar operand (a table lookup serves it better), and for shapes
    /// whose contiguous runs are too short to pay for a call each.
    pub fn run_lanes<T: QInt, TO: QInt>(&self, a: &[T], a_dims: &[usize], b: &[T], b_dims: &[usize], out: &mut [TO], out_dims: &[usize]) -> bool {
        let Some(lanes) = self.lanes else { return false };
        if std::mem::size_of::<T>() != 1 || std::mem::size_of::<TO>() != 1 || a.len() <= 1 || b.len() <= 1 || out.is_empty() {
            return false;
        }
        let Some(dims) = coalesce(a_dims, b_dims, out_dims) else { return false };
        if a.len() != a_dims.iter().product::<usize>() || b.len() != b_dims.iter().product::<usize>() || out.len() != out_dims.iter().product::<usize>() {
            return false;
        }
        let Some(&(n, ia, ib)) = dims.last() else { return false };
        // The first operand is one contiguous along the innermost dimension.
        let (a8, b8): (&[u8], &[u8]) = (bytemuck::cast_slice(a), bytemuck::cast_slice(b));
        let (first, second, lanes, dims) = if ia == 1 {
            (a8, b8, lanes, dims)
        } else if ib == 1 {
            (b8, a8, lanes.swapped(), dims.iter().map(|&(d, x, y)| (d, y, x)).collect())
        } else {
            return false;
        };
        let inner_second = dims[dims.len() - 1].2;
        let next = (dims.len() >= 2).then(|| dims[dims.len() - 2]);
        let (mode, seg_len, outer) = match (inner_second, next) {
            (1, Some((d2, f2, 0))) if f2 == n && n < TILE / 2 => (SegMode::Tiled(n), d2 * n, &dims[..dims.len() - 2]),
            (1, _) => (SegMode::Contig, n, &dims[..dims.len() - 1]),
            (0, Some((d2, f2, 1))) if f2 == n && n.is_multiple_of(16) => (SegMode::PerRow(n), d2 * n, &dims[..dims.len() - 2]),
            (0, _) => (SegMode::Splat, n, &dims[..dims.len() - 1]),
            _ => return false,
        };
        if seg_len < MIN_SEGMENT && seg_len < out.len() {
            return false;
        }
        let out8: &mut [u8] = bytemuck::cast_slice_mut(out);
        // The operands' offsets at segment `g` (mixed radix over the outer dims).
        let offsets = |g: usize| {
            let (mut rem, mut oa, mut ob) = (g, 0, 0);
            for &(d, sa, sb) in outer.iter().rev() {
                oa += rem % d * sa;
                ob += rem % d * sb;
                rem /= d;
            }
            (oa, ob)
        };
        // Values `pos .. pos + o.len()` of the output.
        let run_range = |pos: usize, o: &mut [u8]| {
            let mut tile = [0u8; TILE + 16];
            let mut tiled_at = usize::MAX;
            let mut done = 0;
            while done < o.len() {
                let p = pos + done;
                let (g, within) = (p / seg_len, p % seg_len);
                let len = (seg_len - within).min(o.len() - done);
                let (oa, ob) = offsets(g);
                let src = &first[oa + within..oa + within + len];
                let dst = &mut o[done..done + len];
                match mode {
                    SegMode::Contig => lanes.run(src, Second::Contig(&second[ob + within..ob + within + len]), within, dst),
                    SegMode::Splat => lanes.run(src, Second::Splat(second[ob]), within, dst),
                    SegMode::PerRow(p) => lanes.run(src, Second::PerRow(&second[ob..], p), within, dst),
                    SegMode::Tiled(n) => {
                        // The shortest whole number of rows of at least 16 values.
                        let period = n * 16usize.div_ceil(n);
                        if tiled_at != ob {
                            for t in tile[..period + 16].chunks_mut(n) {
                                t.copy_from_slice(&second[ob..ob + t.len()]);
                            }
                            tiled_at = ob;
                        }
                        lanes.run(src, Second::Tiled(&tile[..period + 16], period), within, dst)
                    }
                }
                done += len;
            }
        };
        let total = out8.len();
        match crate::kernels::binary::par_chunk(total, 4) {
            None => run_range(0, out8),
            Some(c) => {
                let c = c.div_ceil(64) * 64;
                nnrt_threads::par_chunks_mut(out8, c, |i, o| run_range(i * c, o));
            }
        }
        true
    }
}

/// Every output of an op on 8-bit operands by its two input bytes, at `a_byte << 8 | b_byte`
/// ([`QBinary::table2`]).
pub struct Table2(pub(crate) Box<[u8; 65536]>);

impl QBinary {
    /// The 64 KiB table of [`QBinary::apply`] over every pair of input bytes, for one-byte `T`
    /// and `TO`; `None` for wider types or when the memory cannot be had. Built once per op (it
    /// costs a [`QBinary::run`] over 65536 pairs), it turns every broadcast of a large op into one lookup per value.
    pub fn table2<T: QInt, TO: QInt>(&self) -> Option<Table2> {
        if std::mem::size_of::<T>() != 1 || std::mem::size_of::<TO>() != 1 {
            return None;
        }
        // Every pair of bytes through `run`'s vector paths (the same integers as `apply`), as
        // two operands of 65536: a third of the time of 65536 scalar `apply`s, which took 1.3 ms
        // of a MobileNetV2's first run.
        let (mut a, mut b, mut t) = (Vec::new(), Vec::new(), Vec::new());
        a.try_reserve_exact(65536).ok()?;
        b.try_reserve_exact(65536).ok()?;
        t.try_reserve_exact(65536).ok()?;
        for x in 0..=255u8 {
            a.extend(std::iter::repeat_n(bytemuck::cast::<u8, T>(x), 256));
            b.extend((0..=255u8).map(bytemuck::cast::<u8, T>));
        }
        t.resize(65536, 0u8);
        self.run::<T, TO>(&a, &[65536], &b, &[65536], bytemuck::cast_slice_mut::<u8, TO>(&mut t), &[65536]);
        let t: Box<[u8; 65536]> = t.into_boxed_slice().try_into().ok()?;
        Some(Table2(t))
    }

    /// [`QBinary::run`] by lookups in `table` ([`QBinary::table2`] of this op and these types):
    /// the same values. A scalar operand takes `run`'s vector lookup of one table row.
    #[allow(clippy::too_many_arguments)]
    pub fn run_table2<T: QInt, TO: QInt>(&self, table: &Table2, a: &[T], a_dims: &[usize], b: &[T], b_dims: &[usize], out: &mut [TO], out_dims: &[usize]) {
        if a.len() == 1 || b.len() == 1 || std::mem::size_of::<T>() != 1 || std::mem::size_of::<TO>() != 1 {
            return self.run(a, a_dims, b, b_dims, out, out_dims);
        }
        if self.run_lanes(a, a_dims, b, b_dims, out, out_dims) {
            return;
        }
        let t: &[u8; 65536] = &table.0;
        let (a8, b8) = (bytemuck::cast_slice::<T, u8>(a), bytemuck::cast_slice::<T, u8>(b));
        broadcast_rows(a8, a_dims, b8, b_dims, bytemuck::cast_slice_mut::<TO, u8>(out), out_dims, |ra, rb, o| {
            map_row(ra, rb, o, |x: u8, y: u8| t[(x as usize) << 8 | y as usize])
        });
    }
}

/// One row of a quantized add/sub/mul where the other side is the constant `c`
/// ([`QBinary::side`]), run through `simd::quant::with_avx512`.
struct SplatRow<'a, T> {
    p: &'a QBinary,
    v: &'a [T],
    c: i32,
    v_is_a: bool,
}

impl<T: QInt, TO: QInt> Avx512Body<TO> for SplatRow<'_, T> {
    #[inline(always)]
    fn run(&self, out: &mut [TO]) {
        let p = self.p;
        let split = |(m, s): (i32, i32)| (m, 1i32.wrapping_shl(s.max(0) as u32), (-s).max(0));
        let (mo, lo, ro) = split(p.out_mult);
        let (offset, (m, l, r)) = if self.v_is_a { (p.in1_offset, split(p.in1_mult)) } else { (p.in2_offset, split(p.in2_mult)) };
        let c = self.c;
        let finish = |raw: i32| TO::put(raw.wrapping_add(p.out_offset).clamp(p.act.0, p.act.1));
        if p.op == QBinaryOp::Mul {
            for (o, &x) in out.iter_mut().zip(self.v) {
                *o = finish(mbqm_branchless((offset + x.get()).wrapping_mul(c), mo, lo, ro));
            }
            return;
        }
        let neg = !self.v_is_a && p.op == QBinaryOp::Sub;
        for (o, &x) in out.iter_mut().zip(self.v) {
            let q = mbqm_branchless((offset + x.get()).wrapping_mul(1 << p.left_shift), m, l, r);
            let q = if neg { q.wrapping_neg() } else { q };
            *o = finish(mbqm_branchless(q.wrapping_add(c), mo, lo, ro));
        }
    }
}

/// Strides of `dims` (right-aligned to `out`) with 0 along broadcast dimensions.
pub fn broadcast_strides(dims: &[usize], out: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; out.len()];
    let off = out.len() - dims.len().min(out.len());
    let mut s = 1;
    for d in (0..dims.len().min(out.len())).rev() {
        strides[off + d] = if dims[d] == 1 { 0 } else { s };
        s *= dims[d];
    }
    strides
}

/// Calls `f(flat_index, multi_index)` for every element of `dims` in row-major order.
pub fn for_each_index(dims: &[usize], mut f: impl FnMut(usize, &[usize])) {
    let total: usize = dims.iter().product();
    let mut idx = vec![0; dims.len()];
    for i in 0..total {
        f(i, &idx);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

impl QBinary {
    /// Same-shape operands, written branch-free so the SIMD module can vectorize it.
    #[inline(always)]
    pub(crate) fn run_same<T: QInt, TO: QInt>(&self, a: &[T], b: &[T], tables: Option<&([i32; 256], [i32; 256])>, out: &mut [TO]) {
        let split = |(m, s): (i32, i32)| (m, 1i32.wrapping_shl(s.max(0) as u32), (-s).max(0));
        let (m1, l1, r1) = split(self.in1_mult);
        let (m2, l2, r2) = split(self.in2_mult);
        let (mo, lo, ro) = split(self.out_mult);
        let add = self.op == QBinaryOp::Add;
        let mul = self.op == QBinaryOp::Mul;
        if let (Some((ta, tb)), false, true) = (tables, mul, T::MAX - T::MIN == 255) {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                let s = ta[(x.get() - T::MIN) as u8 as usize].wrapping_add(tb[(y.get() - T::MIN) as u8 as usize]);
                let raw = mbqm_branchless(s, mo, lo, ro);
                *o = TO::put(raw.wrapping_add(self.out_offset).clamp(self.act.0, self.act.1));
            }
            return;
        }
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            let xa = self.in1_offset + x.get();
            let ya = self.in2_offset + y.get();
            let raw = if mul {
                mbqm_branchless(xa.wrapping_mul(ya), mo, lo, ro)
            } else {
                let p = mbqm_branchless(xa.wrapping_mul(1 << self.left_shift), m1, l1, r1);
                let q = mbqm_branchless(ya.wrapping_mul(1 << self.left_shift), m2, l2, r2);
                let q = if add { q } else { q.wrapping_neg() };
                mbqm_branchless(p.wrapping_add(q), mo, lo, ro)
            };
            *o = TO::put(raw.wrapping_add(self.out_offset).clamp(self.act.0, self.act.1));
        }
    }
}
