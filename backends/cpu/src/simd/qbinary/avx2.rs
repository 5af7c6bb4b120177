//! [`QLanes`] over 8 int32 lanes with AVX2, for CPUs without AVX-512 BW/VL (AMD Zen 1–3, Intel
//! client cores): the same steps, integers and loop structure as the AVX-512 kernel (see the
//! parent module's notes), 32 values per block. AVX2 has no byte-masked loads or stores, so the
//! tail block reads and writes through zero-padded copies on the stack, and a tiled row's
//! contributions are worked out from a padded copy of its bytes.
#![deny(unsafe_op_in_unsafe_fn)]

use std::arch::x86_64::*;

use super::{Kind, QLanes, Second, Split, Step, CONTIG, MAX_TILE, PER_ROW, SPLAT, TILED};

/// Lane constants of a [`Step`].
#[derive(Clone, Copy)]
struct StepV {
    pre: __m256i,
    shift_only: Option<__m256i>,
    m: __m256i,
    r: __m256i,
    c: __m256i,
    u: __m256i,
    /// [`Split`]'s `mh`, `ml`, `bias`, `k` and the mask of `n` (all ones where `neg`).
    split: [__m256i; 5],
}

#[target_feature(enable = "avx2")]
fn step_v(s: &Step) -> StepV {
    StepV {
        pre: _mm256_set1_epi32(s.pre as i32),
        shift_only: s.shift_only.map(|k| _mm256_set1_epi32(k as i32)),
        m: _mm256_set1_epi64x(i64::from(s.m)),
        r: _mm256_set1_epi32(s.r as i32),
        c: _mm256_set1_epi64x(s.c),
        u: _mm256_set1_epi32(s.u),
        split: match s.split {
            Some(Split { mh, ml, bias, k, neg }) => [mh, ml, bias, k as i32, if neg { -1 } else { 0 }].map(|v| _mm256_set1_epi32(v)),
            None => [_mm256_setzero_si256(); 5],
        },
    }
}

/// The step on 8 lanes with 64-bit products (the parent module's notes).
#[inline]
#[target_feature(enable = "avx2")]
fn step(x: __m256i, s: &StepV) -> __m256i {
    let y = _mm256_sllv_epi32(x, s.pre);
    let pe = _mm256_mul_epi32(y, s.m);
    let po = _mm256_mul_epi32(_mm256_srli_epi64::<32>(y), s.m);
    // Bits 31..63 of each 64-bit sum: the even lanes' shifted down into their low dword, the
    // odd lanes' shifted up by one into their high dword, then one blend.
    let qe = _mm256_srli_epi64::<31>(_mm256_add_epi64(pe, s.c));
    let qo = _mm256_slli_epi64::<1>(_mm256_add_epi64(po, s.c));
    let q = _mm256_blend_epi32::<0xAA>(qe, qo);
    let n = _mm256_srai_epi32::<31>(_mm256_add_epi32(y, s.u));
    _mm256_srav_epi32(_mm256_add_epi32(q, n), s.r)
}

/// An input step on 8 lanes: its plain shift (`SHIFT`) or its [`Split`].
#[inline]
#[target_feature(enable = "avx2")]
fn in_step<const SHIFT: bool>(x: __m256i, s: &StepV) -> __m256i {
    if SHIFT {
        return _mm256_sllv_epi32(x, s.shift_only.unwrap_or(s.pre));
    }
    let [mh, ml, bias, k, neg] = s.split;
    let hi = _mm256_mullo_epi32(x, mh);
    // |x| < 2¹⁵ and 0 <= ml < 2¹⁵: the low 16-bit halves' product is x·ml, the high halves'
    // (x's sign, ml's zero) nothing.
    let lo = _mm256_srav_epi32(_mm256_add_epi32(_mm256_madd_epi16(x, ml), bias), k);
    let n = _mm256_and_si256(_mm256_srai_epi32::<31>(x), neg);
    _mm256_srav_epi32(_mm256_add_epi32(_mm256_add_epi32(hi, lo), n), s.r)
}

/// The constants of one run of the kernel.
struct Consts {
    neg1: bool,
    neg2: bool,
    z1: __m256i,
    z2: __m256i,
    s1: StepV,
    s2: StepV,
    so: StepV,
}

/// The first 8 bytes of `b` as int32 lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn widen<const SIGNED: bool>(b: __m128i) -> __m256i {
    if SIGNED { _mm256_cvtepi8_epi32(b) } else { _mm256_cvtepu8_epi32(b) }
}

/// 8 bytes at `p` as int32 lanes.
///
/// # Safety
/// `p` readable for 8 bytes.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load8<const SIGNED: bool>(p: *const u8) -> __m256i {
    // SAFETY: the caller's.
    widen::<SIGNED>(unsafe { _mm_loadl_epi64(p.cast()) })
}

/// The second operand's contribution from its widened bytes: add/sub's rescaled value, mul's
/// offset value.
#[inline]
#[target_feature(enable = "avx2")]
fn side2<const MUL: bool, const SH2: bool>(c: &Consts, x2: __m256i) -> __m256i {
    let v = _mm256_sub_epi32(x2, c.z2);
    if MUL { v } else { in_step::<SH2>(v, &c.s2) }
}

/// 8 raw outputs (before the zero point) from the first operand's widened bytes and the
/// second's contribution.
#[inline]
#[target_feature(enable = "avx2")]
fn finish<const MUL: bool, const SH1: bool, const OS: bool>(c: &Consts, x1: __m256i, t2: __m256i) -> __m256i {
    let v1 = _mm256_sub_epi32(x1, c.z1);
    let s = if MUL {
        _mm256_mullo_epi32(v1, t2)
    } else {
        let t1 = in_step::<SH1>(v1, &c.s1);
        if c.neg2 {
            _mm256_sub_epi32(t1, t2)
        } else if c.neg1 {
            _mm256_sub_epi32(t2, t1)
        } else {
            _mm256_add_epi32(t1, t2)
        }
    };
    if OS { in_step::<false>(s, &c.so) } else { step(s, &c.so) }
}

/// Four vectors of 8 raw outputs to 32 bytes, as the AVX-512 `pack` does: int16 with
/// saturation, the zero point added saturating, bytes with saturation, the activation range
/// where `CLAMP`. Dword `d` of the result is dword `4·(d % 2) + d / 2` of the in-lane packs'
/// output.
#[inline]
#[target_feature(enable = "avx2")]
fn pack<const SIGNED: bool, const CLAMP: bool>(r: [__m256i; 4], order: __m256i, ozp: __m256i, lo8: __m256i, hi8: __m256i) -> __m256i {
    let w01 = _mm256_adds_epi16(_mm256_packs_epi32(r[0], r[1]), ozp);
    let w23 = _mm256_adds_epi16(_mm256_packs_epi32(r[2], r[3]), ozp);
    if SIGNED {
        let b = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23), order);
        if CLAMP { _mm256_min_epi8(_mm256_max_epi8(b, lo8), hi8) } else { b }
    } else {
        let b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w01, w23), order);
        if CLAMP { _mm256_min_epu8(_mm256_max_epu8(b, lo8), hi8) } else { b }
    }
}

/// [`QLanes::run`] on AVX2.
///
/// # Safety
/// AVX2 present; `first` and `out` valid for `n` bytes; the second operand as [`QLanes::run`]
/// checks.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn kernel(k: &QLanes, first: *const u8, second: Second<'_>, start: usize, out: *mut u8, n: usize) {
    dispatch_lanes!(kernel_g, k, first, second, start, out, n)
}

/// [`kernel`] for one op kind, signedness, pair of plain-shift input steps, output step (`OS`:
/// split) and second operand's mode (`MODE`, which must be `second`'s): whole blocks of 32
/// values, then one block for the tail through stack copies.
///
/// # Safety
/// As [`kernel`].
#[target_feature(enable = "avx2")]
unsafe fn kernel_g<const MUL: bool, const SIGNED: bool, const SH1: bool, const SH2: bool, const OS: bool, const MODE: u8>(k: &QLanes, first: *const u8, second: Second<'_>, start: usize, out: *mut u8, n: usize) {
    let (neg1, neg2) = k.negs();
    let c = Consts {
        neg1,
        neg2,
        z1: _mm256_set1_epi32(k.z[0]),
        z2: _mm256_set1_epi32(k.z[1]),
        s1: step_v(&k.input[0]),
        s2: step_v(&k.input[1]),
        so: step_v(&k.out),
    };
    let (sp, period) = second.bytes_and_period();
    let splat = match second {
        Second::Splat(b) => side2::<MUL, SH2>(&c, widen::<SIGNED>(_mm_set1_epi8(b as i8))),
        _ => _mm256_setzero_si256(),
    };
    // A tiled row's contributions (from a zero-padded copy of its bytes, whole vectors of 8),
    // or a per-row operand's by byte value.
    let mut tiled = [0i32; MAX_TILE + 24];
    if let Second::Tiled(s, _) = second {
        let mut bytes = [0u8; MAX_TILE + 24];
        bytes[..s.len()].copy_from_slice(s);
        for (q, t) in tiled[..s.len().next_multiple_of(8)].chunks_exact_mut(8).enumerate() {
            // SAFETY: bytes 8q .. 8q + 8 of `bytes` (s.len() + 7 < its length), 8 values of `t`.
            unsafe { _mm256_storeu_si256(t.as_mut_ptr().cast(), side2::<MUL, SH2>(&c, load8::<SIGNED>(bytes.as_ptr().add(8 * q)))) };
        }
    }
    if MODE == PER_ROW {
        let bytes: [u8; 256] = std::array::from_fn(|i| i as u8);
        for (q, t) in tiled[..256].chunks_exact_mut(8).enumerate() {
            // SAFETY: bytes 8q .. 8q + 8 of `bytes`, and 8 values of `t`.
            unsafe { _mm256_storeu_si256(t.as_mut_ptr().cast(), side2::<MUL, SH2>(&c, load8::<SIGNED>(bytes.as_ptr().add(8 * q)))) };
        }
    }
    let mut phase = if MODE == TILED || MODE == PER_ROW { start % period } else { 0 };
    let mut row = if MODE == PER_ROW { start / period } else { 0 };
    let mut row_t = _mm256_setzero_si256();
    if MODE == PER_ROW && phase != 0 {
        // SAFETY: n > 0 (checked by `run`) and `(start + n).div_ceil(p)` rows, so row
        // `start / p` is one.
        row_t = _mm256_set1_epi32(tiled[usize::from(unsafe { *sp.add(row) })]);
    }
    // The second operand's contribution at positions `at .. at + 8` (a contiguous operand's
    // bytes read from `src + at`), positions taken in order.
    macro_rules! second8 {
        ($src:expr, $at:expr) => {
            match MODE {
                // SAFETY: 8 bytes at `src + at` (the callers' bounds).
                CONTIG => side2::<MUL, SH2>(&c, unsafe { load8::<SIGNED>($src.add($at)) }),
                TILED => {
                    // SAFETY: `tiled` holds `period + 8` worked-out values and `phase < period`.
                    let v = unsafe { _mm256_loadu_si256(tiled.as_ptr().add(phase).cast()) };
                    phase += 8;
                    if phase >= period {
                        phase -= period;
                    }
                    v
                }
                PER_ROW => {
                    if phase == 0 {
                        // SAFETY: position `start + at` (an output position: the tail asks
                        // only for those) lies in row `row` < `(start + n).div_ceil(p)`; the 8
                        // positions from a multiple of 8 lie in one row (p is a multiple of 16).
                        row_t = _mm256_set1_epi32(tiled[usize::from(unsafe { *sp.add(row) })]);
                    }
                    phase += 8;
                    if phase == period {
                        phase = 0;
                        row += 1;
                    }
                    row_t
                }
                _ => splat,
            }
        };
    }
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let (ozp, lo8, hi8) = (_mm256_set1_epi16(k.out_zp.clamp(-32768, 32767) as i16), _mm256_set1_epi8(k.lo as i8), _mm256_set1_epi8(k.hi as i8));
    let whole = n - n % 32;
    let mut j = 0;
    macro_rules! blocks {
        ($clamp:literal) => {
            while j < whole {
                let mut r = [_mm256_setzero_si256(); 4];
                for (q, r) in r.iter_mut().enumerate() {
                    let at = j + 8 * q;
                    // SAFETY: bytes at .. at + 8 <= n of `first` (and of a contiguous second).
                    let x1 = unsafe { load8::<SIGNED>(first.add(at)) };
                    let t2 = second8!(sp, at);
                    *r = finish::<MUL, SH1, OS>(&c, x1, t2);
                }
                // SAFETY: bytes j .. j + 32 <= n of `out`.
                unsafe { _mm256_storeu_si256(out.add(j).cast(), pack::<SIGNED, $clamp>(r, order, ozp, lo8, hi8)) };
                j += 32;
            }
        };
    }
    let (type_lo, type_hi) = if SIGNED { (-128, 127) } else { (0, 255) };
    if k.lo <= type_lo && k.hi >= type_hi {
        blocks!(false);
    } else {
        blocks!(true);
    }
    if j < n {
        // The tail's bytes of the first (and a contiguous second) operand, zero-padded to a
        // whole block; the block's results land on the stack and its outputs are copied out.
        let len = n - j;
        let (mut f, mut s, mut o) = ([0u8; 32], [0u8; 32], [0u8; 32]);
        // SAFETY: bytes j .. n of `first` and `out` (and of a contiguous second operand), and
        // `len` < 32 bytes of the stack copies.
        unsafe {
            std::ptr::copy_nonoverlapping(first.add(j), f.as_mut_ptr(), len);
            if MODE == CONTIG {
                std::ptr::copy_nonoverlapping(sp.add(j), s.as_mut_ptr(), len);
            }
        }
        let mut r = [_mm256_setzero_si256(); 4];
        for (q, r) in r.iter_mut().enumerate() {
            if 8 * q >= len {
                break;
            }
            // SAFETY: bytes 8q .. 8q + 8 of the 32-byte copies.
            let x1 = unsafe { load8::<SIGNED>(f.as_ptr().add(8 * q)) };
            let t2 = second8!(s.as_ptr(), 8 * q);
            *r = finish::<MUL, SH1, OS>(&c, x1, t2);
        }
        // SAFETY: 32 bytes of `o`; then `len` bytes to j .. n of `out`.
        unsafe {
            _mm256_storeu_si256(o.as_mut_ptr().cast(), pack::<SIGNED, true>(r, order, ozp, lo8, hi8));
            std::ptr::copy_nonoverlapping(o.as_ptr(), out.add(j), len);
        }
    }
}
