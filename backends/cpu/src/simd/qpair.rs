//! The AVX2 integer GEMM blocks (CPUs without AVX-512 VNNI: AMD Zen 1–3, Intel before Ice
//! Lake): tiles over pair-packed panels (16 columns, int8 weights widened to 16 bits as they
//! are loaded, two `k` per column per step) with the epilogue in registers, as [`super::quant::block_quad_out`] and
//! [`super::quant::block_quad_f32`] do for VNNI.
//!
//! The dot products use `vpmaddwd` on activations zero-extended to 16 bits, which is exact
//! (`vpmaddubsw` would saturate). The caller widens each block of `A` once ([`widen`]); a
//! pair of a row's 16-bit activations is then one 32-bit broadcast from memory. The integer epilogue is TFLite's `MultiplyByQuantizedMultiplier` per column
//! (`quant::requant::mbqm_branchless`, lane for lane), the float one `FloatLanes::finish`.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use super::gemm::lane_mask8;
use super::quant::{Avx2Token, FloatLanes};

/// Rows of the A blocks (whole tiles of the integer GEMM).
const MR: usize = super::quant::MR_QUAD;
/// Columns of a pair-packed panel.
const NR: usize = 16;
/// Rows one register tile computes (its accumulators: two vectors per row).
const TR: usize = 4;

/// Per-column parameters of the fused AVX2 epilogue, padded with zeros to whole panels:
/// `x = acc + bias − zw·row_sum`, `x <<= left`, then TFLite's rounding high multiply by `mult`
/// and rounding right shift by `right`, `+ zp`, clamp.
#[derive(Clone, Debug)]
pub(crate) struct PairRequant {
    pub bias: Vec<i32>,
    pub zw: Vec<i32>,
    pub mult: Vec<i32>,
    pub left: Vec<i32>,
    pub right: Vec<i32>,
    /// `(1 << right) − 1`, and half of it (the rounding threshold of non-negative values).
    pub mask: Vec<i32>,
    pub half: Vec<i32>,
    pub any_left: bool,
    /// Output zero point and clamp.
    pub out: (i32, i32, i32),
    /// Per-column scales when the columns are requantized in double instead (TFLite's int8
    /// FULLY_CONNECTED, `quant::Requant::Float`: `round(f64(x) · scale)`, half away from
    /// zero); empty for the fixed-point form.
    pub scale: Vec<f64>,
}

impl PairRequant {
    /// From per-column `(bias, zw, (multiplier, shift))` (TFLite's fixed-point requantization),
    /// padded with zeros to whole panels of `n` columns.
    pub(crate) fn new(cols: impl IntoIterator<Item = (i32, i32, (i32, i32))>, n: usize, out: (i32, i32, i32)) -> PairRequant {
        let len = n.div_ceil(NR) * NR;
        let mut p = PairRequant {
            bias: vec![0; len],
            zw: vec![0; len],
            mult: vec![0; len],
            left: vec![0; len],
            right: vec![0; len],
            mask: vec![0; len],
            half: vec![0; len],
            any_left: false,
            out,
            scale: Vec::new(),
        };
        for (j, (b, z, (m, s))) in cols.into_iter().enumerate().take(len) {
            p.bias[j] = b;
            p.zw[j] = z;
            p.mult[j] = m;
            (p.left[j], p.right[j], p.mask[j], p.half[j]) = shifts(s);
            p.any_left |= s > 0;
        }
        p
    }

    /// From per-column `(bias, zw, scale)` requantized in double (`quant::Requant::Float`), for
    /// an output range `out` well inside ±2²⁹ (the lanes hold the product within ±2³⁰).
    pub(crate) fn float(cols: impl IntoIterator<Item = (i32, i32, f64)>, n: usize, out: (i32, i32, i32)) -> PairRequant {
        let cols: Vec<(i32, i32, f64)> = cols.into_iter().collect();
        let mut p = PairRequant::new(cols.iter().map(|&(b, z, _)| (b, z, (0, 0))), n, out);
        p.scale = vec![0.0; p.bias.len()];
        for (d, &(_, _, sc)) in p.scale.iter_mut().zip(&cols) {
            *d = sc;
        }
        p
    }
}

/// The lane constants of a `MultiplyByQuantizedMultiplier` shift: `(left, right, (1 << right) − 1,
/// half of that)`, as [`requant_lanes`] takes them.
pub(crate) fn shifts(shift: i32) -> (i32, i32, i32, i32) {
    let right = (-shift).clamp(0, 31);
    let mask = ((1i64 << right) - 1) as i32;
    (shift.clamp(0, 31), right, mask, mask >> 1)
}

/// Checks the bounds every block relies on (`rows ≥ 1`, `n ≥ 1`): whole `MR`-row tiles of `kp`
/// bytes of `a`, every panel of `pairs`, `lanes` parameter lanes, and the `n` values of each of
/// the `rows` output rows (`out_len` long, `ldc` apart). Returns the panels.
fn check_block(kp: usize, a: &[i16], rows: usize, pairs: &[i8], n: usize, lanes: usize, out_len: usize, ldc: usize) -> usize {
    let panels = n.div_ceil(NR);
    assert!(kp.is_multiple_of(4) && a.len() >= rows.div_ceil(MR) * MR * kp && pairs.len() >= panels * kp * NR);
    assert!(lanes >= panels * NR && ldc >= n && out_len >= (rows - 1) * ldc + n);
    panels
}

/// `out[i] = a[i]` widened to 16 bits (the unsigned-byte activations of a block of `A`).
pub(crate) fn widen(a: &[u8], out: &mut Vec<i16>) {
    out.clear();
    out.extend(a.iter().map(|&v| v as i16));
}

/// Every tile of one block of the integer GEMM on AVX2: `rows` rows of `a` (`kp` activations
/// each, [`widen`]ed, `kp % 4 == 0`, allocated to whole `MR`-row tiles) against all panels of `pairs`,
/// requantized with `pr` and stored as bytes at `out[r * ldc + j]` (`j < n`), int8 when
/// `signed`, else uint8. `row_sums` (the rows' byte sums) when some column's `zw` is not 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_pair_out(t: Avx2Token, kp: usize, a: &[i16], rows: usize, pairs: &[i8], n: usize, pr: &PairRequant, row_sums: Option<&[i32]>, out: &mut [u8], ldc: usize, signed: bool) {
    let _ = t;
    if rows == 0 || n == 0 {
        return;
    }
    let lanes = [&pr.bias, &pr.zw, &pr.mult, &pr.left, &pr.right, &pr.mask, &pr.half].iter().map(|v| v.len()).min().unwrap_or(0);
    check_block(kp, a, rows, pairs, n, lanes, out.len(), ldc);
    assert!(row_sums.is_none_or(|s| s.len() >= rows));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX2; the asserts bound every tile's A rows (whole tiles of `kp`
    // bytes), every panel, the parameter lanes of every panel, the row sums and the `n` bytes
    // of each of the `rows` output rows.
    unsafe {
        match signed {
            true => block_out::<true>(kp, a.as_ptr(), rows, pairs.as_ptr(), n, pr, row_sums.map(|s| s.as_ptr()), out.as_mut_ptr(), ldc),
            false => block_out::<false>(kp, a.as_ptr(), rows, pairs.as_ptr(), n, pr, row_sums.map(|s| s.as_ptr()), out.as_mut_ptr(), ldc),
        }
    }
}

/// [`block_pair_out`] with the float epilogue of [`FloatLanes`] (a dynamic-range GEMM): rows
/// `row0 ..` of the whole GEMM, stored as floats at `out[r * ldc + j]` (`j < n`). `f`'s lanes
/// start at the block's first panel.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_pair_f32(t: Avx2Token, kp: usize, a: &[i16], rows: usize, row0: usize, pairs: &[i8], n: usize, f: &FloatLanes, out: &mut [f32], ldc: usize) {
    let _ = t;
    if rows == 0 || n == 0 {
        return;
    }
    let lanes = f.col_sum.len().min(f.scale.len()).min(f.bias.map_or(usize::MAX, |b| b.len()));
    check_block(kp, a, rows, pairs, n, lanes, out.len(), ldc);
    let per_row = f.zx.len() != 1;
    assert!(f.zx.len() == f.input_scale.len() && (!per_row || f.zx.len() >= row0 + rows));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `block_pair_out`, with the row parameters bounded by the assert above.
    unsafe {
        block_f32(kp, a.as_ptr(), rows, row0, pairs.as_ptr(), n, f, out.as_mut_ptr(), ldc)
    }
}

/// The raw dot products of `R` rows (`kp` widened activations each at `a`) against the
/// pair-packed panel at `b`: two vectors of 8 columns per row.
///
/// # Safety
/// AVX2; `a` holds `R` rows of `kp` values, `b` a panel of `kp · 16` values; `kp % 4 == 0`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn acc_rows<const R: usize>(kp: usize, a: *const i16, b: *const i8) -> [[__m256i; 2]; R] {
    let mut c = [[_mm256_setzero_si256(); 2]; R];
    for q in 0..kp / 4 {
        // SAFETY: group q < kp/4 of the panel: 64 values at q·64 (the contract), widened to
        // 16 bits as they are loaded.
        let (b0, b1, b2, b3) = unsafe {
            let p = b.add(q * 4 * NR);
            (
                _mm256_cvtepi8_epi16(_mm_loadu_si128(p as *const _)),
                _mm256_cvtepi8_epi16(_mm_loadu_si128(p.add(8 * 2) as *const _)),
                _mm256_cvtepi8_epi16(_mm_loadu_si128(p.add(16 * 2) as *const _)),
                _mm256_cvtepi8_epi16(_mm_loadu_si128(p.add(24 * 2) as *const _)),
            )
        };
        for (r, cr) in c.iter_mut().enumerate() {
            // SAFETY: values 4q .. 4q + 4 ≤ kp of row r < R (the contract).
            let (w0, w1) = unsafe {
                let at = a.add(r * kp + 4 * q) as *const i32;
                (at.read_unaligned(), at.add(1).read_unaligned())
            };
            let (x0, x1) = (_mm256_set1_epi32(w0), _mm256_set1_epi32(w1));
            cr[0] = _mm256_add_epi32(cr[0], _mm256_madd_epi16(x0, b0));
            cr[1] = _mm256_add_epi32(cr[1], _mm256_madd_epi16(x0, b1));
            cr[0] = _mm256_add_epi32(cr[0], _mm256_madd_epi16(x1, b2));
            cr[1] = _mm256_add_epi32(cr[1], _mm256_madd_epi16(x1, b3));
        }
    }
    c
}

/// One half panel's (8 columns') epilogue parameters.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct OutParams {
    bias: __m256i,
    zw: __m256i,
    l: Lanes8,
    /// The double-precision scales of the 8 columns (the float form).
    scale: [__m256d; 2],
}

/// The fixed-point requantization of 8 lanes ([`requant_lanes`]): the Q31 multiplier (and its
/// odd lanes moved down), the left and right shifts, and `(1 << right) − 1` and half of it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Lanes8 {
    pub mult: __m256i,
    pub mult_odd: __m256i,
    pub left: __m256i,
    pub right: __m256i,
    pub mask: __m256i,
    pub half: __m256i,
}

#[cfg(target_arch = "x86_64")]
impl Default for OutParams {
    fn default() -> Self {
        // SAFETY: all-zero bits are a valid `__m256i`.
        unsafe { std::mem::zeroed() }
    }
}

/// `mbqm_branchless(x << left, mult, right) + zp`, clamped, on 8 lanes (`quant::requant`). The high multiply is
/// TFLite's nudge-and-truncate, which for every sign equals `⌊(p + 2³⁰) / 2³¹⌋`; its low 32
/// bits are bits 31 ..= 62 of `p + 2³⁰`, which a logical 64-bit shift gives as well as an
/// arithmetic one (AVX2 has only the logical).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) fn requant_lanes(x: __m256i, p: &Lanes8, any_left: bool, (zp, lo, hi): (__m256i, __m256i, __m256i)) -> __m256i {
    let x = if any_left { _mm256_sllv_epi32(x, p.left) } else { x };
    let nudge = _mm256_set1_epi64x(1 << 30);
    let even = _mm256_srli_epi64::<31>(_mm256_add_epi64(_mm256_mul_epi32(x, p.mult), nudge));
    let odd = _mm256_srli_epi64::<31>(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64::<32>(x), p.mult_odd), nudge));
    let q = _mm256_blend_epi32::<0b1010_1010>(even, _mm256_slli_epi64::<32>(odd));
    // Round half away from zero (gemmlowp's `RoundingDivideByPOT`): up when the remainder
    // exceeds half the divisor, rounded down, plus one for a negative q (`q < 0` is −1).
    let rem = _mm256_and_si256(q, p.mask);
    let thr = _mm256_sub_epi32(p.half, _mm256_cmpgt_epi32(_mm256_setzero_si256(), q));
    let up = _mm256_cmpgt_epi32(rem, thr);
    let v = _mm256_sub_epi32(_mm256_srav_epi32(q, p.right), up);
    _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, zp), lo), hi)
}

/// `round(f64(x) · scale) + zp` (half away from zero, C's `round`), clamped: `Requant::Float`
/// on 8 lanes. The product is held within ±2³⁰ first, which the clamp to an output range
/// inside ±2²⁹ cannot tell from the scalar path's saturation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn requant_float8(x: __m256i, scale: [__m256d; 2], (zp, lo, hi): (__m256i, __m256i, __m256i)) -> __m256i {
    let lim = _mm256_set1_pd(1_073_741_824.0);
    let nlim = _mm256_set1_pd(-1_073_741_824.0);
    let (half, nhalf, one) = (_mm256_set1_pd(0.5), _mm256_set1_pd(-0.5), _mm256_set1_pd(1.0));
    let halves = [_mm256_castsi256_si128(x), _mm256_extracti128_si256::<1>(x)];
    let mut r = [_mm_setzero_si128(); 2];
    for i in 0..2 {
        let y = _mm256_mul_pd(_mm256_cvtepi32_pd(halves[i]), scale[i]);
        let y = _mm256_min_pd(lim, _mm256_max_pd(nlim, y));
        // Truncate, then step away from zero when the dropped part is at least one half
        // (exact: |y| ≤ 2³⁰).
        let t = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(y);
        let frac = _mm256_sub_pd(y, t);
        let up = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GE_OQ>(frac, half), one);
        let down = _mm256_and_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(frac, nhalf), one);
        r[i] = _mm256_cvttpd_epi32(_mm256_sub_pd(_mm256_add_pd(t, up), down));
    }
    let v = _mm256_set_m128i(r[1], r[0]);
    _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, zp), lo), hi)
}

/// `acc[i] = clamp(round(f64(acc[i] + bias[i]) · scale[i]) + zp, lo, hi)` for `i < n` (a
/// multiple of 8): `Requant::Float` rows on 8 lanes.
///
/// # Safety
/// AVX2; `acc` readable and writable and `bias`, `scale` readable for `n` values; the output
/// range inside ±2²⁹.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn requant_float_rows_avx2(n: usize, acc: *mut i32, bias: *const i32, scale: *const f64, q: (i32, i32, i32)) {
    let q = (_mm256_set1_epi32(q.0), _mm256_set1_epi32(q.1), _mm256_set1_epi32(q.2));
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, within every slice (the contract).
        unsafe {
            let x = _mm256_add_epi32(_mm256_loadu_si256(acc.add(i) as *const __m256i), _mm256_loadu_si256(bias.add(i) as *const __m256i));
            let s = [_mm256_loadu_pd(scale.add(i)), _mm256_loadu_pd(scale.add(i + 4))];
            _mm256_storeu_si256(acc.add(i) as *mut __m256i, requant_float8(x, s, q));
        }
        i += 8;
    }
}

/// # Safety
/// AVX2; the bounds `block_pair_out` checks.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
unsafe fn block_out<const SIGNED: bool>(kp: usize, a: *const i16, rows: usize, b: *const i8, n: usize, pr: &PairRequant, row_sums: Option<*const i32>, out: *mut u8, ldc: usize) {
    let q = (_mm256_set1_epi32(pr.out.0), _mm256_set1_epi32(pr.out.1), _mm256_set1_epi32(pr.out.2));
    for p in 0..n.div_ceil(NR) {
        let c0 = p * NR;
        let cols = (n - c0).min(NR);
        // (Loops, not closures: a closure is compiled without the function's features.)
        let mut params = [OutParams::default(); 2];
        for (h, p) in params.iter_mut().enumerate() {
            macro_rules! ld {
                ($v:expr) => {
                    // SAFETY: panel p's lanes c0 .. c0 + 16 exist (checked by the caller).
                    unsafe { _mm256_loadu_si256($v.as_ptr().add(c0 + 8 * h) as *const _) }
                };
            }
            let mult = ld!(pr.mult);
            *p = OutParams {
                bias: ld!(pr.bias),
                zw: ld!(pr.zw),
                l: Lanes8 { mult, mult_odd: _mm256_srli_epi64::<32>(mult), left: ld!(pr.left), right: ld!(pr.right), mask: ld!(pr.mask), half: ld!(pr.half) },
                ..OutParams::default()
            };
            if !pr.scale.is_empty() {
                // SAFETY: as `ld!`: the scales are padded like the other lanes.
                unsafe { p.scale = [_mm256_loadu_pd(pr.scale.as_ptr().add(c0 + 8 * h)), _mm256_loadu_pd(pr.scale.as_ptr().add(c0 + 8 * h + 4))] };
            }
        }
        let float = !pr.scale.is_empty();
        // SAFETY: panel p lies inside the checked panels.
        let bp = unsafe { b.add(p * kp * NR) };
        for r0 in (0..rows).step_by(TR) {
            let tile_rows = (rows - r0).min(TR);
            // SAFETY: rows r0 .. r0 + TR of A lie in the block's whole tiles; row sums r0 ..
            // r0 + tile_rows and output rows r0 .. at columns c0 .. c0 + cols are inside the
            // checked regions.
            unsafe {
                let (ap, sums, op) = (a.add(r0 * kp), row_sums.map(|s| s.add(r0)), out.add(r0 * ldc + c0));
                match tile_rows {
                    1 => store_out::<1, SIGNED>(acc_rows::<1>(kp, ap, bp), &params, (pr.any_left, float), q, sums, op, ldc, cols),
                    2 => store_out::<2, SIGNED>(acc_rows::<2>(kp, ap, bp), &params, (pr.any_left, float), q, sums, op, ldc, cols),
                    3 => store_out::<3, SIGNED>(acc_rows::<3>(kp, ap, bp), &params, (pr.any_left, float), q, sums, op, ldc, cols),
                    _ => store_out::<TR, SIGNED>(acc_rows::<TR>(kp, ap, bp), &params, (pr.any_left, float), q, sums, op, ldc, cols),
                }
            }
        }
    }
}

/// Requantizes the accumulators `c` of `R` rows and stores their first `cols` bytes per row.
///
/// # Safety
/// AVX2; `R` row sums at `row_sums` (when given); `R` output rows of `cols` bytes at `out`,
/// `ldc` apart.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store_out<const R: usize, const SIGNED: bool>(
    c: [[__m256i; 2]; R],
    params: &[OutParams; 2],
    (any_left, float): (bool, bool),
    q: (__m256i, __m256i, __m256i),
    row_sums: Option<*const i32>,
    out: *mut u8,
    ldc: usize,
    cols: usize,
) {
    for (r, cr) in c.iter().enumerate() {
        let mut v = [_mm256_setzero_si256(); 2];
        for (h, vh) in v.iter_mut().enumerate() {
            let p = &params[h];
            let mut x = _mm256_add_epi32(cr[h], p.bias);
            if let Some(rs) = row_sums {
                // SAFETY: r < R row sums (the contract).
                let s = _mm256_set1_epi32(unsafe { *rs.add(r) });
                x = _mm256_sub_epi32(x, _mm256_mullo_epi32(p.zw, s));
            }
            *vh = if float { requant_float8(x, p.scale, q) } else { requant_lanes(x, &p.l, any_left, q) };
        }
        // The values are clamped to the output type's range, so the saturating packs only
        // narrow them. `packs_epi32` interleaves 4-lane groups; the permute puts them back.
        let w = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(v[0], v[1]));
        let (w0, w1) = (_mm256_castsi256_si128(w), _mm256_extracti128_si256::<1>(w));
        let bytes = if SIGNED { _mm_packs_epi16(w0, w1) } else { _mm_packus_epi16(w0, w1) };
        // SAFETY: row r < R holds `cols` bytes at r·ldc (the contract).
        unsafe {
            let dst = out.add(r * ldc);
            if cols == NR {
                _mm_storeu_si128(dst as *mut _, bytes);
            } else {
                let mut tmp = [0u8; NR];
                _mm_storeu_si128(tmp.as_mut_ptr() as *mut _, bytes);
                std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, cols);
            }
        }
    }
}

/// # Safety
/// AVX2; the bounds `block_pair_f32` checks.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_f32(kp: usize, a: *const i16, rows: usize, row0: usize, b: *const i8, n: usize, f: &FloatLanes, out: *mut f32, ldc: usize) {
    let clamp = (_mm256_set1_ps(f.clamp.0), _mm256_set1_ps(f.clamp.1));
    for p in 0..n.div_ceil(NR) {
        let c0 = p * NR;
        let cols = (n - c0).min(NR);
        let masks = [lane_mask8(cols), lane_mask8(cols.saturating_sub(8))];
        let mut params = [F32Params { col_sum: _mm256_setzero_si256(), scale: _mm256_setzero_ps(), bias: None }; 2];
        for (h, p) in params.iter_mut().enumerate() {
            let at = c0 + 8 * h;
            // SAFETY: panel p's lanes c0 .. c0 + 16 exist (checked by the caller).
            unsafe {
                p.col_sum = _mm256_loadu_si256(f.col_sum.as_ptr().add(at) as *const _);
                p.scale = _mm256_loadu_ps(f.scale.as_ptr().add(at));
                if let Some(v) = f.bias {
                    p.bias = Some(_mm256_loadu_ps(v.as_ptr().add(at)));
                }
            }
        }
        // SAFETY: panel p lies inside the checked panels.
        let bp = unsafe { b.add(p * kp * NR) };
        for r0 in (0..rows).step_by(TR) {
            let tile_rows = (rows - r0).min(TR);
            let e = F32Tile { params: &params, masks: &masks, full: [cols >= 8, cols >= NR], clamp, f, row0: row0 + r0 };
            // SAFETY: as in `block_out`.
            unsafe {
                let (ap, op) = (a.add(r0 * kp), out.add(r0 * ldc + c0));
                match tile_rows {
                    1 => store_f32::<1>(acc_rows::<1>(kp, ap, bp), &e, op, ldc),
                    2 => store_f32::<2>(acc_rows::<2>(kp, ap, bp), &e, op, ldc),
                    3 => store_f32::<3>(acc_rows::<3>(kp, ap, bp), &e, op, ldc),
                    _ => store_f32::<TR>(acc_rows::<TR>(kp, ap, bp), &e, op, ldc),
                }
            }
        }
    }
}

/// One half panel's float epilogue parameters.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct F32Params {
    col_sum: __m256i,
    scale: __m256,
    bias: Option<__m256>,
}

/// What [`store_f32`] needs beside the accumulators.
#[cfg(target_arch = "x86_64")]
struct F32Tile<'a> {
    params: &'a [F32Params; 2],
    masks: &'a [__m256i; 2],
    /// Whether each half panel is whole (its columns all exist).
    full: [bool; 2],
    clamp: (__m256, __m256),
    f: &'a FloatLanes<'a>,
    /// The GEMM row of the tile's first row.
    row0: usize,
}

/// `FloatLanes::finish` on the accumulators `c` of `R` rows, stored masked to the panel's
/// columns.
///
/// # Safety
/// AVX2; `R` output rows of the panel's columns at `out`, `ldc` apart; the row parameters of
/// GEMM rows `e.row0 .. e.row0 + R` exist.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn store_f32<const R: usize>(c: [[__m256i; 2]; R], e: &F32Tile, out: *mut f32, ldc: usize) {
    let (lo, hi) = e.clamp;
    for (r, cr) in c.iter().enumerate() {
        let (zx, s) = e.f.row(e.row0 + r);
        let (nzx, ins) = (_mm256_set1_epi32(zx.wrapping_neg()), _mm256_set1_ps(s));
        for h in 0..2 {
            let p = &e.params[h];
            let x = _mm256_cvtepi32_ps(_mm256_add_epi32(cr[h], _mm256_mullo_epi32(p.col_sum, nzx)));
            let mut v = match e.f.scales_first {
                true => _mm256_mul_ps(x, _mm256_mul_ps(p.scale, ins)),
                false => _mm256_mul_ps(_mm256_mul_ps(x, p.scale), ins),
            };
            if let Some(bias) = p.bias {
                v = _mm256_add_ps(v, bias);
            }
            // `vmaxps(v, lo)` is `v > lo ? v : lo`: `f32::max(v, lo)`, `lo` for a NaN `v`.
            let v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
            // SAFETY: row r < R, the masked lanes are columns < cols of that row (the contract);
            // a whole half panel stores without the mask (slow on AMD's cores).
            unsafe {
                match e.full[h] {
                    true => _mm256_storeu_ps(out.add(r * ldc + 8 * h), v),
                    false => _mm256_maskstore_ps(out.add(r * ldc + 8 * h), e.masks[h], v),
                }
            }
        }
    }
}

/// `acc[i] = clamp(mbqm((acc[i] + bias[i]) · lmul[i], mult[i], right[i]) + zp, lo, hi)` for
/// `i < n` (a multiple of 8): `quant::requant::requant_row`'s fixed-point case on 8 lanes.
///
/// # Safety
/// AVX2; `acc` readable and writable and the parameter slices readable for `n` values.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn requant_rows_avx2(n: usize, acc: *mut i32, bias: *const i32, lmul: *const i32, mult: *const i32, right: *const i32, (zp, lo, hi): (i32, i32, i32), any_left: bool) {
    let q = (_mm256_set1_epi32(zp), _mm256_set1_epi32(lo), _mm256_set1_epi32(hi));
    let one = _mm256_set1_epi32(1);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, within every slice (the contract).
        unsafe {
            macro_rules! ld {
                ($p:expr) => {
                    _mm256_loadu_si256($p.add(i) as *const __m256i)
                };
            }
            let mut x = _mm256_add_epi32(ld!(acc), ld!(bias));
            if any_left {
                x = _mm256_mullo_epi32(x, ld!(lmul));
            }
            let (m, r) = (ld!(mult), ld!(right));
            let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, r), one);
            let l = Lanes8 { mult: m, mult_odd: _mm256_srli_epi64::<32>(m), left: _mm256_setzero_si256(), right: r, mask, half: _mm256_srai_epi32::<1>(mask) };
            _mm256_storeu_si256(acc.add(i) as *mut __m256i, requant_lanes(x, &l, false, q));
        }
        i += 8;
    }
}
