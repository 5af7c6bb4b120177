//! SIMD micro-kernels of the integer GEMM (`quant::gemm`): the AVX-512 VNNI tile (`vpdpbusd`)
//! and the AVX2 tile (`vpmaddwd` on bytes widened to 16 bits, exact), plus the portable twins
//! they must match bit for bit.
//!
//! Each entry point is a safe wrapper: it checks every slice bound once, then calls a
//! `#[target_feature]` function that reads through raw pointers. Tokens prove the CPU has the
//! instruction set; they are built only after run-time detection.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Rows of every integer GEMM tile.
pub(crate) const MR_QUAD: usize = 8;
/// Columns of a quad-packed panel.
const NR_QUAD: usize = 32;
/// Columns of a pair-packed panel.
const NR_PAIR: usize = 16;

cpu_token!(
    /// Proof that this CPU runs AVX-512F/BW/VL with VNNI (and `NNRT_ISA` does not lower the ISA).
    VnniToken: "avx512f", "avx512bw", "avx512vnni", "avx512vl"; isa >= super::Isa::Avx512
);

cpu_token!(
    /// Proof that this CPU runs AVX2 (and `NNRT_ISA` does not lower the ISA to scalar).
    Avx2Token: "avx2"; isa >= super::Isa::Avx2Fma
);

/// `acc[r][c] = Σ_k a[r][k] · b[c][k]` for an `MR_QUAD × 32` tile: `a` holds `MR_QUAD` rows of
/// `kp` unsigned bytes, `panel` the quad-packed columns. Uses VNNI when present.
pub(crate) fn tile_quad(kp: usize, a: &[u8], panel: &[i8], acc: &mut [i32]) {
    assert!(kp.is_multiple_of(4) && a.len() >= MR_QUAD * kp && panel.len() >= kp * NR_QUAD && acc.len() >= MR_QUAD * NR_QUAD);
    #[cfg(target_arch = "x86_64")]
    if VnniToken::new().is_some() {
        // SAFETY: the token proves AVX-512 VNNI; the assert above bounds every read (rows
        // `0..MR_QUAD` of `kp` bytes, `kp/4` groups of 128 panel bytes) and the 256 writes.
        unsafe { quad_vnni(kp, a.as_ptr(), panel.as_ptr(), acc.as_mut_ptr()) };
        return;
    }
    tile_quad_portable(kp, a, panel, acc);
}

/// Portable twin of the VNNI tile.
pub(crate) fn tile_quad_portable(kp: usize, a: &[u8], panel: &[i8], acc: &mut [i32]) {
    let acc = &mut acc[..MR_QUAD * NR_QUAD];
    acc.fill(0);
    for r in 0..MR_QUAD {
        let arow = &a[r * kp..(r + 1) * kp];
        let out: &mut [i32; NR_QUAD] = (&mut acc[r * NR_QUAD..(r + 1) * NR_QUAD]).try_into().expect("tile row");
        for (q, group) in panel[..kp * NR_QUAD].chunks_exact(4 * NR_QUAD).enumerate() {
            let av = &arow[4 * q..4 * q + 4];
            for (c, w) in group.chunks_exact(4).enumerate() {
                let s: i32 = (0..4).map(|t| av[t] as i32 * w[t] as i32).sum();
                out[c] = out[c].wrapping_add(s);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn quad_vnni(kp: usize, a: *const u8, b: *const i8, acc: *mut i32) {
    let mut c0 = [_mm512_setzero_si512(); MR_QUAD];
    let mut c1 = [_mm512_setzero_si512(); MR_QUAD];
    for q in 0..kp / 4 {
        // SAFETY: q < kp/4, so the 128 bytes at q*128 lie inside the panel (checked by caller).
        let (b0, b1) = unsafe {
            let p = b.add(q * 4 * NR_QUAD);
            (_mm512_loadu_si512(p as *const _), _mm512_loadu_si512(p.add(64) as *const _))
        };
        for r in 0..MR_QUAD {
            // SAFETY: row r < MR_QUAD, bytes 4q..4q+4 < kp: inside `a` (checked by caller).
            let v = unsafe { (a.add(r * kp + 4 * q) as *const i32).read_unaligned() };
            let av = _mm512_set1_epi32(v);
            c0[r] = _mm512_dpbusd_epi32(c0[r], av, b0);
            c1[r] = _mm512_dpbusd_epi32(c1[r], av, b1);
        }
    }
    for r in 0..MR_QUAD {
        // SAFETY: acc holds MR_QUAD rows of 32 i32 (checked by caller).
        unsafe {
            _mm512_storeu_si512(acc.add(r * NR_QUAD) as *mut _, c0[r]);
            _mm512_storeu_si512(acc.add(r * NR_QUAD + 16) as *mut _, c1[r]);
        }
    }
}

/// Per-column epilogue of the fused VNNI tile, padded to whole panels so 16-lane loads stay
/// inside: `acc + bias − zw·row_sum`, then `MultiplyByQuantizedMultiplier`, `+ zp`, clamp.
#[derive(Clone, Debug)]
pub(crate) struct LaneRequant {
    /// Bias with the column corrections folded in.
    pub bias: Vec<i32>,
    /// Weight zero point per column in the signed-byte domain (used when row sums are).
    pub zw: Vec<i32>,
    /// Q31 multiplier.
    pub mult: Vec<i32>,
    /// Left shift.
    pub left: Vec<i32>,
    /// Output zero point and clamp.
    pub out: (i32, i32, i32),
    /// Whether some column shifts left (otherwise the epilogue skips that step).
    pub any_left: bool,
    /// The two roundings of `MultiplyByQuantizedMultiplier` as one 64-bit shift (see
    /// [`requant64`]), per 16-column group split into its even and odd columns: `[g][parity][i]`
    /// holds column `16g + 2i + parity`. `k`: the added rounding constant, `corr`: what
    /// negative products take off, `sh`: the total right shift.
    pub k: Vec<i64>,
    pub corr: Vec<i64>,
    pub sh: Vec<i64>,
}

/// One column's requantization in [`requant64`]'s terms: the multiplier and left shift applied
/// to the sum, and the 64-bit rounding constant, negative-product correction and right shift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneConst {
    pub mult: i32,
    pub left: i32,
    pub k: i64,
    pub corr: i64,
    pub sh: i64,
}

impl LaneConst {
    /// TFLite's `MultiplyByQuantizedMultiplier(acc, mult, shift)` (see [`requant64`]).
    pub(crate) fn fixed(mult: i32, shift: i32) -> LaneConst {
        let r = i64::from((-shift).max(0));
        LaneConst { mult, left: shift.max(0), k: (1 << 30) + if r > 0 { 1 << (30 + r) } else { 0 }, corr: if r > 0 { 1 << 31 } else { 0 }, sh: 31 + r }
    }

    /// TOSA's `apply_scale_32(acc, multiplier, shift, double_round)` — `⌊(p + 2^(shift−1) ± 2³⁰)
    /// / 2^shift⌋`, the `± 2³⁰` only with DOUBLE_ROUND and `shift > 31`, `+` for `acc ≥ 0` — for
    /// sums of magnitude at most `acc_bound`, when the lanes compute it exactly: `multiplier > 0`
    /// (then `acc < 0 ⇔ p < 0`; [`requant64`] corrects products below `−2³⁰` only, but for
    /// `−2³⁰ ≤ p < 0` and `shift ≥ 32` both roundings give 0) and every result fits int32
    /// (the lanes truncate where the specification saturates).
    pub(crate) fn tosa(multiplier: i32, shift: u32, double_round: bool, acc_bound: i64) -> Option<LaneConst> {
        if multiplier <= 0 || !(2..=62).contains(&shift) {
            return None;
        }
        let largest = ((i128::from(acc_bound.max(0)) * i128::from(multiplier)) >> shift) + 2;
        if largest >= i128::from(i32::MAX) {
            return None;
        }
        let twice = double_round && shift > 31;
        Some(LaneConst { mult: multiplier, left: 0, k: (1i64 << (shift - 1)) + if twice { 1 << 30 } else { 0 }, corr: if twice { 1 << 31 } else { 0 }, sh: i64::from(shift) })
    }

    /// For a [`crate::quant::Requant`] of sums of magnitude at most `acc_bound`, when the lanes
    /// compute it exactly.
    pub(crate) fn of(r: crate::quant::Requant, acc_bound: i64) -> Option<LaneConst> {
        match r {
            crate::quant::Requant::Fixed { multiplier, shift } => Some(LaneConst::fixed(multiplier, shift)),
            crate::quant::Requant::Tosa { multiplier, shift, double_round } => LaneConst::tosa(multiplier, shift, double_round, acc_bound),
            _ => None,
        }
    }
}

impl LaneRequant {
    /// From per-column `(bias, zw, (multiplier, shift))` (TFLite's requantization), padded with
    /// zeros to `len`.
    #[cfg(test)]
    pub(crate) fn new(cols: impl IntoIterator<Item = (i32, i32, (i32, i32))>, len: usize, out: (i32, i32, i32)) -> LaneRequant {
        Self::with(cols.into_iter().map(|(b, z, (m, sh))| (b, z, LaneConst::fixed(m, sh))), len, out)
    }

    /// From per-column `(bias, zw, lane constants)`, padded with zeros to `len`.
    pub(crate) fn with(cols: impl IntoIterator<Item = (i32, i32, LaneConst)>, len: usize, out: (i32, i32, i32)) -> LaneRequant {
        let len = len.div_ceil(16) * 16;
        let mut l = LaneRequant {
            bias: vec![0; len],
            zw: vec![0; len],
            mult: vec![0; len],
            left: vec![0; len],
            out,
            any_left: false,
            k: vec![0; len],
            corr: vec![0; len],
            sh: vec![0; len],
        };
        // Padding columns: multiplier 0, the TFLite constants of shift 0.
        let pad = LaneConst::fixed(0, 0);
        let mut consts = vec![pad; len];
        for (i, (b, z, c)) in cols.into_iter().enumerate().take(len) {
            l.bias[i] = b;
            l.zw[i] = z;
            l.mult[i] = c.mult;
            l.left[i] = c.left;
            l.any_left |= c.left > 0;
            consts[i] = c;
        }
        (l.k, l.corr, l.sh) = LaneConst::split(&consts);
        l
    }
}

impl LaneConst {
    /// [`requant64`]'s 64-bit constants `(k, corr, sh)` of `consts` (a whole number of 16-lane
    /// groups), each group's even lanes first, then its odd ones.
    pub(crate) fn split(consts: &[LaneConst]) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        let n = consts.len();
        let (mut k, mut corr, mut sh) = (vec![0i64; n], vec![0i64; n], vec![0i64; n]);
        for (i, c) in consts.iter().enumerate() {
            let j = (i / 16) * 16 + (i % 2) * 8 + (i % 16) / 2;
            k[j] = c.k;
            corr[j] = c.corr;
            sh[j] = c.sh;
        }
        (k, corr, sh)
    }
}

/// Every tile of one block of the fused VNNI GEMM: `rows` rows of `a` (`kp` bytes each,
/// allocated to a whole number of `MR_QUAD`-row tiles) against all `n.div_ceil(32)` panels of
/// `bytes`, requantized with `lr` and stored as bytes at `out[r * ldc + j]` (`j < n`), int8
/// when `signed`, else uint8 (which decides the epilogue's shortcuts, see [`Narrow`]).
/// Checks bounds once and runs the panel × row-tile loops in one `#[target_feature]` function,
/// loading each panel's requantization lanes once; panels of at most 16 columns compute only
/// their first vector.
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_quad_out(t: VnniToken, kp: usize, a: &[u8], rows: usize, bytes: &[i8], n: usize, lr: &LaneRequant, row_sums: Option<&[i32]>, out: &mut [u8], ldc: usize, signed: bool) {
    let _ = t;
    if rows == 0 || n == 0 {
        return;
    }
    let panels = check_block(kp, a, rows, bytes, n, out.len(), ldc);
    for v in [&lr.bias, &lr.zw, &lr.mult, &lr.left] {
        assert!(v.len() >= panels * NR_QUAD);
    }
    assert!(row_sums.is_none_or(|s| s.len() >= rows));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX-512 F/BW/VNNI; the asserts bound every tile's A rows (whole
    // tiles of `kp` bytes), every panel, the parameter lanes of every panel, the row sums and
    // the `n` bytes of each of the `rows` output rows.
    unsafe {
        block_vnni(kp, a.as_ptr(), rows, bytes.as_ptr(), n, lr, row_sums.map(|s| s.as_ptr()), out.as_mut_ptr(), ldc, Narrow::of(lr.out, signed));
    }
}

/// The bounds every block of the fused VNNI GEMM relies on (`rows ≥ 1`): whole tiles of `kp`
/// bytes of `a`, every panel of `bytes`, the `n` values of each of the `rows` output rows
/// (`out_len` long, `ldc` apart). Returns the panels.
fn check_block(kp: usize, a: &[u8], rows: usize, bytes: &[i8], n: usize, out_len: usize, ldc: usize) -> usize {
    let panels = n.div_ceil(NR_QUAD);
    assert!(kp.is_multiple_of(4) && a.len() >= rows.div_ceil(MR_QUAD) * MR_QUAD * kp && bytes.len() >= panels * kp * NR_QUAD);
    assert!(ldc >= n && out_len >= (rows - 1) * ldc + n);
    panels
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn block_vnni(kp: usize, a: *const u8, rows: usize, b: *const i8, n: usize, lr: &LaneRequant, row_sums: Option<*const i32>, out: *mut u8, ldc: usize, narrow: Narrow) {
    for p in 0..n.div_ceil(NR_QUAD) {
        let c0 = p * NR_QUAD;
        let cols = (n - c0).min(NR_QUAD);
        // SAFETY: panel p's lanes c0 .. c0 + 32 exist (checked by the caller).
        let ld = |v: &Vec<i32>, h: usize| unsafe { _mm512_loadu_si512(v.as_ptr().add(c0 + 16 * h) as *const _) };
        // SAFETY: as `ld`, for the 64-bit parameters (16 per group, `c0 + 16h` starts one).
        let ld64 = |v: &Vec<i64>, h: usize, parity: usize| unsafe { _mm512_loadu_si512(v.as_ptr().add(c0 + 16 * h + 8 * parity) as *const _) };
        let mut params = [[_mm512_setzero_si512(); 10]; 2];
        for (h, q) in params.iter_mut().enumerate() {
            let mult = ld(&lr.mult, h);
            *q = [
                ld(&lr.bias, h),
                ld(&lr.zw, h),
                mult,
                _mm512_srli_epi64::<32>(mult),
                ld(&lr.left, h),
                ld64(&lr.k, h, 0),
                ld64(&lr.k, h, 1),
                ld64(&lr.corr, h, 0),
                ld64(&lr.corr, h, 1),
                _mm512_or_si512(ld64(&lr.sh, h, 0), _mm512_slli_epi64::<32>(ld64(&lr.sh, h, 1))),
            ];
        }
        let masks: [__mmask16; 2] = [((1u32 << cols.min(16)) - 1) as u16, ((1u32 << cols.saturating_sub(16)) - 1) as u16];
        // SAFETY: panel p lies inside the checked panels.
        let bp = unsafe { b.add(p * kp * NR_QUAD) };
        for r0 in (0..rows).step_by(MR_QUAD) {
            let tile_rows = (rows - r0).min(MR_QUAD);
            // SAFETY: rows r0.. of A (a whole tile), row sums r0.. and output rows r0.. at
            // columns c0.. are inside the checked regions.
            unsafe {
                let (ap, sums, op) = (a.add(r0 * kp), row_sums.map(|s| s.add(r0)), out.add(r0 * ldc + c0));
                macro_rules! go {
                    ($nv:literal) => {
                        match (narrow.neg, narrow.sat) {
                            (true, true) => tile_vnni_out::<$nv, true, true>(kp, ap, bp, tile_rows, &params, &masks, lr.out, lr.any_left, sums, op, ldc),
                            (true, false) => tile_vnni_out::<$nv, true, false>(kp, ap, bp, tile_rows, &params, &masks, lr.out, lr.any_left, sums, op, ldc),
                            (false, true) => tile_vnni_out::<$nv, false, true>(kp, ap, bp, tile_rows, &params, &masks, lr.out, lr.any_left, sums, op, ldc),
                            (false, false) => tile_vnni_out::<$nv, false, false>(kp, ap, bp, tile_rows, &params, &masks, lr.out, lr.any_left, sums, op, ldc),
                        }
                    };
                }
                if cols <= 16 {
                    go!(1)
                } else {
                    go!(2)
                }
            }
        }
    }
}

/// One `MR_QUAD × 16·NV` tile of [`block_vnni`] (the panel is 32 wide; `NV = 1` computes its
/// first 16 columns only).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
unsafe fn tile_vnni_out<const NV: usize, const NEG: bool, const SAT: bool>(
    kp: usize,
    a: *const u8,
    b: *const i8,
    rows: usize,
    params: &[[__m512i; 10]; 2],
    masks: &[__mmask16; 2],
    out_q: (i32, i32, i32),
    any_left: bool,
    row_sums: Option<*const i32>,
    out: *mut u8,
    ldc: usize,
) {
    // SAFETY: the caller's contract is `tile_acc`'s.
    let c = unsafe { tile_acc::<NV, MR_QUAD>(kp, a, b) };
    for (r, cr) in c.iter().enumerate().take(rows) {
        for h in 0..NV {
            if masks[h] == 0 {
                continue;
            }
            let p = &params[h];
            let mut x = _mm512_add_epi32(cr[h], p[0]);
            if let Some(rs) = row_sums {
                // SAFETY: r < rows ≤ the row sums left from here (checked by the caller).
                let s = _mm512_set1_epi32(unsafe { *rs.add(r) });
                x = _mm512_sub_epi32(x, _mm512_mullo_epi32(p[1], s));
            }
            if any_left {
                x = _mm512_sllv_epi32(x, p[4]);
            }
            let q = requant64::<NEG>(x, p[2], p[3], [p[5], p[6]], [p[7], p[8]], p[9]);
            // SAFETY: row r < rows, lanes 16h .. 16h + popcount(mask) < cols of that row are
            // inside `out` (checked by the caller).
            // (`vpmovdb` to a register, then a byte-masked store: the memory form of `vpmovdb`
            // is several times slower.)
            unsafe { _mm_mask_storeu_epi8(out.add(r * ldc + 16 * h) as *mut _, masks[h], narrow_q::<SAT>(q, out_q)) };
        }
    }
}

/// The raw dot products of one `R × 16·NV` tile: `R` rows of `kp` bytes at `a` against the
/// quad-packed panel at `b` (its first `16·NV` columns).
///
/// # Safety
/// `a` holds `R` rows of `kp` bytes and `b` a panel of `kp · 32` bytes; `kp % 4 == 0`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
unsafe fn tile_acc<const NV: usize, const R: usize>(kp: usize, a: *const u8, b: *const i8) -> [[__m512i; NV]; R] {
    let mut c = [[_mm512_setzero_si512(); NV]; R];
    for q in 0..kp / 4 {
        // SAFETY: as in `quad_vnni`.
        let bv: [__m512i; NV] = std::array::from_fn(|h| unsafe { _mm512_loadu_si512(b.add(q * 4 * NR_QUAD + 64 * h) as *const _) });
        if R < 8 {
            // Few rows: the weights stream through once; ask for them ahead.
            _mm_prefetch::<_MM_HINT_T0>(b.wrapping_add(q * 4 * NR_QUAD + 1024));
        }
        for (r, cr) in c.iter_mut().enumerate() {
            // SAFETY: as in `quad_vnni`.
            let v = unsafe { (a.add(r * kp + 4 * q) as *const i32).read_unaligned() };
            let av = _mm512_set1_epi32(v);
            for h in 0..NV {
                cr[h] = _mm512_dpbusd_epi32(cr[h], av, bv[h]);
            }
        }
    }
    c
}

/// The float epilogue of a dynamic-range ("hybrid") GEMM, per row `i` and column `j`:
/// `clamp((acc − zx'ᵢ·Σw'[j]) · scale[j] · input_scaleᵢ + bias[j])`, the float operations in
/// TFLite's order: `(acc · scale) · input_scale` for convolutions (`HybridConvPerChannel`),
/// `acc · (input_scale · scale)` when `scales_first` (the fully connected kernels); NaN-free
/// clamps as `f32::max` / `min`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FloatLanes<'a> {
    /// `Σ_k w'` per column, padded to whole panels.
    pub col_sum: &'a [i32],
    /// Weight scale per column, padded to whole panels.
    pub scale: &'a [f32],
    /// Bias per column, padded to whole panels (none: nothing is added).
    pub bias: Option<&'a [f32]>,
    /// The input zero point in the unsigned-byte domain and the input's scale: one of each for
    /// every row, or one per row of the whole GEMM.
    pub zx: &'a [i32],
    pub input_scale: &'a [f32],
    /// Multiply the two scales first (see above).
    pub scales_first: bool,
    /// Clamp of the fused activation.
    pub clamp: (f32, f32),
}

impl FloatLanes<'_> {
    /// Zero point and scale of GEMM row `r`.
    #[inline(always)]
    pub(crate) fn row(&self, r: usize) -> (i32, f32) {
        if self.zx.len() == 1 {
            (self.zx[0], self.input_scale[0])
        } else {
            (self.zx[r], self.input_scale[r])
        }
    }

    /// The value of column `c` for a raw dot product `acc` of a row with zero point `zx` and
    /// scale `s` (the element form of the vector epilogue).
    #[inline(always)]
    pub(crate) fn finish(&self, acc: i32, c: usize, zx: i32, s: f32) -> f32 {
        let x = acc.wrapping_sub(zx.wrapping_mul(self.col_sum[c])) as f32;
        let v = if self.scales_first { x * (self.scale[c] * s) } else { x * self.scale[c] * s };
        self.bias.map_or(v, |b| v + b[c]).max(self.clamp.0).min(self.clamp.1)
    }
}

/// [`block_quad_out`] with the float epilogue of [`FloatLanes`]: `rows` rows of `a` (rows
/// `row0 ..` of the whole GEMM) against all panels of `bytes`, stored as floats at
/// `out[r * ldc + j]` (`j < n`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn block_quad_f32(t: VnniToken, kp: usize, a: &[u8], rows: usize, row0: usize, bytes: &[i8], n: usize, f: &FloatLanes, out: &mut [f32], ldc: usize) {
    let _ = t;
    if rows == 0 || n == 0 {
        return;
    }
    let panels = check_block(kp, a, rows, bytes, n, out.len(), ldc);
    assert!(f.col_sum.len() >= panels * NR_QUAD && f.scale.len() >= panels * NR_QUAD && f.bias.is_none_or(|b| b.len() >= panels * NR_QUAD));
    let per_row = f.zx.len() != 1;
    assert!(f.zx.len() == f.input_scale.len() && (!per_row || f.zx.len() >= row0 + rows));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the token proves AVX-512 F/BW/VNNI; the asserts bound every tile's A rows (whole
    // tiles of `kp` bytes), every panel, the lanes of every panel, the row parameters and the
    // `n` floats of each of the `rows` output rows.
    unsafe {
        match (per_row, f.scales_first) {
            (false, false) => block_vnni_f32::<false, false>(kp, a.as_ptr(), rows, row0, bytes.as_ptr(), n, f, out.as_mut_ptr(), ldc),
            (false, true) => block_vnni_f32::<false, true>(kp, a.as_ptr(), rows, row0, bytes.as_ptr(), n, f, out.as_mut_ptr(), ldc),
            (true, false) => block_vnni_f32::<true, false>(kp, a.as_ptr(), rows, row0, bytes.as_ptr(), n, f, out.as_mut_ptr(), ldc),
            (true, true) => block_vnni_f32::<true, true>(kp, a.as_ptr(), rows, row0, bytes.as_ptr(), n, f, out.as_mut_ptr(), ldc),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn block_vnni_f32<const PER_ROW: bool, const FIRST: bool>(kp: usize, a: *const u8, rows: usize, row0: usize, b: *const i8, n: usize, f: &FloatLanes, out: *mut f32, ldc: usize) {
    let (lo, hi) = (_mm512_set1_ps(f.clamp.0), _mm512_set1_ps(f.clamp.1));
    let (zx0, s0) = f.row(0);
    let ins = _mm512_set1_ps(s0);
    for p in 0..n.div_ceil(NR_QUAD) {
        let c0 = p * NR_QUAD;
        let cols = (n - c0).min(NR_QUAD);
        // Per half panel: the column sums, scales and biases, and for one zero point and
        // scale for all rows the correction `−zx'·Σw'` and the product of the scales.
        // SAFETY: panel p's lanes c0 .. c0 + 32 exist (checked by the caller).
        // SAFETY: panel p's lanes c0 .. c0 + 32 exist (checked by the caller).
        let params = unsafe { [col_params(f, c0, zx0, s0), col_params(f, c0 + 16, zx0, s0)] };
        let masks: [__mmask16; 2] = [((1u32 << cols.min(16)) - 1) as u16, ((1u32 << cols.saturating_sub(16)) - 1) as u16];
        // SAFETY: panel p lies inside the checked panels.
        let bp = unsafe { b.add(p * kp * NR_QUAD) };
        for r0 in (0..rows).step_by(MR_QUAD) {
            let tile_rows = (rows - r0).min(MR_QUAD);
            let mut rp = [(zx0, s0); MR_QUAD];
            if PER_ROW {
                for (r, p) in rp.iter_mut().enumerate().take(tile_rows) {
                    *p = f.row(row0 + r0 + r);
                }
            }
            // SAFETY: rows r0.. of A (a whole tile) and output rows r0.. at columns c0.. are
            // inside the checked regions.
            unsafe {
                let (ap, op) = (a.add(r0 * kp), out.add(r0 * ldc + c0));
                let e = TileF32 { params: &params, masks: &masks, has_bias: f.bias.is_some(), clamp: (lo, hi), ins, rows: &rp };
                if cols <= 16 {
                    tile_vnni_f32::<1, PER_ROW, FIRST>(kp, ap, bp, tile_rows, &e, op, ldc)
                } else {
                    tile_vnni_f32::<2, PER_ROW, FIRST>(kp, ap, bp, tile_rows, &e, op, ldc)
                }
            }
        }
    }
}

/// The [`ColParams`] of columns `at .. at + 16` for the zero point `zx0` and scale `s0`. (A
/// function of its own with the kernel's features: as a closure it was compiled without them
/// and called per panel, 6 % of a small recurrent model's run.)
///
/// # Safety
/// Lanes `at .. at + 16` exist in `f`'s column arrays.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn col_params(f: &FloatLanes, at: usize, zx0: i32, s0: f32) -> ColParams {
    // SAFETY: the caller's contract.
    unsafe {
        let col_sum = _mm512_loadu_si512(f.col_sum.as_ptr().add(at) as *const _);
        let scale = _mm512_loadu_ps(f.scale.as_ptr().add(at));
        ColParams {
            col_sum,
            corr: _mm512_mullo_epi32(col_sum, _mm512_set1_epi32(zx0.wrapping_neg())),
            scale,
            both: _mm512_mul_ps(scale, _mm512_set1_ps(s0)),
            bias: f.bias.map_or(_mm512_setzero_ps(), |v| _mm512_loadu_ps(v.as_ptr().add(at))),
        }
    }
}

/// Column parameters of half a panel (16 columns) for [`tile_vnni_f32`].
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct ColParams {
    col_sum: __m512i,
    /// `−zx'·Σw'` for the first row's zero point (all rows', unless per row).
    corr: __m512i,
    scale: __m512,
    /// `scale · input_scale` for the first row's scale.
    both: __m512,
    bias: __m512,
}

/// What [`tile_vnni_f32`] needs beside the operands.
#[cfg(target_arch = "x86_64")]
struct TileF32<'a> {
    params: &'a [ColParams; 2],
    masks: &'a [__mmask16; 2],
    has_bias: bool,
    clamp: (__m512, __m512),
    /// The input scale of every row (unless per row).
    ins: __m512,
    /// Zero point and scale of each row of the tile (per row).
    rows: &'a [(i32, f32); MR_QUAD],
}

/// One `MR_QUAD × 16·NV` tile of [`block_vnni_f32`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
unsafe fn tile_vnni_f32<const NV: usize, const PER_ROW: bool, const FIRST: bool>(kp: usize, a: *const u8, b: *const i8, rows: usize, e: &TileF32, out: *mut f32, ldc: usize) {
    // A part tile (the last rows of a GEMM, a fully connected layer's few rows) computes only
    // its rows, rounded up to 1, 2, 4 or 8.
    // SAFETY: the caller's contract (`rows ≤ MR_QUAD` rows of A) is `tile_acc`'s.
    unsafe {
        match rows {
            0 => {}
            1 => tile_rows_f32::<NV, 1, PER_ROW, FIRST>(tile_acc::<NV, 1>(kp, a, b), rows, e, out, ldc),
            2 => tile_rows_f32::<NV, 2, PER_ROW, FIRST>(tile_acc::<NV, 2>(kp, a, b), rows, e, out, ldc),
            3 | 4 => tile_rows_f32::<NV, 4, PER_ROW, FIRST>(tile_acc::<NV, 4>(kp, a, b), rows, e, out, ldc),
            _ => tile_rows_f32::<NV, MR_QUAD, PER_ROW, FIRST>(tile_acc::<NV, MR_QUAD>(kp, a, b), rows, e, out, ldc),
        }
    }
}

/// The float epilogue of [`tile_vnni_f32`] on the accumulators `c` of `rows` rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
unsafe fn tile_rows_f32<const NV: usize, const R: usize, const PER_ROW: bool, const FIRST: bool>(c: [[__m512i; NV]; R], rows: usize, e: &TileF32, out: *mut f32, ldc: usize) {
    let (lo, hi) = e.clamp;
    for (r, cr) in c.iter().enumerate().take(rows) {
        let (zx, s) = e.rows[r];
        let ins = if PER_ROW { _mm512_set1_ps(s) } else { e.ins };
        for h in 0..NV {
            if e.masks[h] == 0 {
                continue;
            }
            let p = &e.params[h];
            let corr = if PER_ROW { _mm512_mullo_epi32(p.col_sum, _mm512_set1_epi32(zx.wrapping_neg())) } else { p.corr };
            let x = _mm512_cvtepi32_ps(_mm512_add_epi32(cr[h], corr));
            let mut v = match (FIRST, PER_ROW) {
                (true, false) => _mm512_mul_ps(x, p.both),
                (true, true) => _mm512_mul_ps(x, _mm512_mul_ps(p.scale, ins)),
                (false, _) => _mm512_mul_ps(_mm512_mul_ps(x, p.scale), ins),
            };
            if e.has_bias {
                v = _mm512_add_ps(v, p.bias);
            }
            // `vmaxps(v, lo)` is `v > lo ? v : lo`: `f32::max(v, lo)`, which also gives `lo`
            // for a NaN `v` (zero times an infinite input scale).
            let v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
            // SAFETY: row r < rows, lanes 16h .. 16h + popcount(mask) < cols of that row are
            // inside `out` (checked by the caller).
            unsafe { _mm512_mask_storeu_ps(out.add(r * ldc + 16 * h), e.masks[h], v) };
        }
    }
}

/// `MultiplyByQuantizedMultiplier` (after the left shift) on 16 lanes with its two roundings
/// folded into one 64-bit shift. With `p = x·m` (exact in 64 bits)
/// and right shift `R`, TFLite computes `q = ⌊(p + 2³⁰) / 2³¹⌋` (its nudge and truncating
/// division amount to this floor for either sign) and then rounds `q / 2^R` half away from
/// zero, `⌊(q + 2^(R−1) − [q < 0]) / 2^R⌋` for `R ≥ 1`. Since `⌊(⌊a/b⌋ + c) / d⌋ = ⌊(a + cb) / bd⌋`
/// and `q < 0 ⇔ p < −2³⁰`, that is `⌊(p + k − [p < −2³⁰]·corr) / 2^(31+R)⌋` with
/// `k = 2³⁰ + 2^(30+R)`, `corr = 2³¹` (`k = 2³⁰`, `corr = 0` when `R = 0`): no intermediate
/// exceeds 2⁶³. `k`/`corr` hold the even and the odd lanes' 64-bit constants, `sh` the shifts
/// (`31 + R`) of even lanes in its low and of odd lanes in its high dwords; `mult_odd` is
/// `mult >> 32` per qword.
/// (The result before `+ zp` and the clamp, which [`narrow_q`] applies.) With `NEG = false` the correction of negative
/// products is left out (four of the epilogue's µops, all on ports 0 and 5): results for
/// `q < 0` may then come out one higher, but both values are ≤ 0, so when the output zero
/// point is at or below the clamp's lower bound (every ReLU/ReLU6-fused layer: the lower bound
/// is the zero point) both clamp to that bound. [`Narrow::of`] decides.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn requant64<const NEG: bool>(x: __m512i, mult: __m512i, mult_odd: __m512i, k: [__m512i; 2], corr: [__m512i; 2], sh: __m512i) -> __m512i {
    requant64_split::<NEG>(x, mult, mult_odd, k, corr, [_mm512_and_si512(sh, _mm512_set1_epi64(0xffff_ffff)), _mm512_srli_epi64::<32>(sh)])
}

/// [`requant64`] with the even and the odd lanes' shifts in two vectors of 64-bit lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn requant64_split<const NEG: bool>(x: __m512i, mult: __m512i, mult_odd: __m512i, k: [__m512i; 2], corr: [__m512i; 2], sh: [__m512i; 2]) -> __m512i {
    let thr = _mm512_set1_epi64(-(1 << 30));
    let half = |p: __m512i, k: __m512i, corr: __m512i, sh: __m512i| {
        let t = _mm512_add_epi64(p, k);
        let t = if NEG { _mm512_mask_sub_epi64(t, _mm512_cmpgt_epi64_mask(thr, p), t, corr) } else { t };
        _mm512_srav_epi64(t, sh)
    };
    let even = half(_mm512_mul_epi32(x, mult), k[0], corr[0], sh[0]);
    let odd = half(_mm512_mul_epi32(_mm512_srli_epi64::<32>(x), mult_odd), k[1], corr[1], sh[1]);
    _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64::<32>(odd))
}

/// How an 8-bit epilogue may shorten [`requant64`] and [`narrow_q`] for one layer's `(zp, lo, hi)` (output
/// zero point and clamp): `neg` whether negative products need their rounding correction
/// (not when `zp ≤ lo`, see [`requant64`]); `sat` whether the clamp is the whole int8 range,
/// so that a saturating narrow (`vpmovsdb`) replaces max, min and the truncating narrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Narrow {
    pub neg: bool,
    pub sat: bool,
}

impl Narrow {
    /// For outputs of a signed (`signed`) or unsigned byte type.
    pub(crate) fn of((zp, lo, hi): (i32, i32, i32), signed: bool) -> Narrow {
        Narrow { neg: zp > lo, sat: signed && lo == i8::MIN as i32 && hi == i8::MAX as i32 }
    }
}

/// `q + zp` clamped to `[lo, hi]` as 16 bytes: [`Narrow::sat`] narrows with signed saturation
/// (the clamp is the int8 range), otherwise max/min then truncate.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn narrow_q<const SAT: bool>(q: __m512i, (zp, lo, hi): (i32, i32, i32)) -> __m128i {
    let v = _mm512_add_epi32(q, _mm512_set1_epi32(zp));
    if SAT {
        _mm512_cvtsepi32_epi8(v)
    } else {
        _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, _mm512_set1_epi32(lo)), _mm512_set1_epi32(hi)))
    }
}

/// `acc[r][c] = Σ_k a[r][k] · b[c][k]` for an `MR_QUAD × 16` tile over a pair-packed panel
/// (16-bit weights, two per column per step). Uses AVX2 when present.
pub(crate) fn tile_pair(kp: usize, a: &[u8], panel: &[i8], acc: &mut [i32]) {
    assert!(kp.is_multiple_of(2) && a.len() >= MR_QUAD * kp && panel.len() >= kp * NR_PAIR && acc.len() >= MR_QUAD * NR_PAIR);
    #[cfg(target_arch = "x86_64")]
    if Avx2Token::new().is_some() {
        for half in 0..2 {
            // SAFETY: the token proves AVX2; rows half*4 .. half*4+4 of `a` and the matching
            // rows of `acc` are inside the slices checked above.
            unsafe { pair_avx2(kp, a.as_ptr().add(half * 4 * kp), panel.as_ptr(), acc.as_mut_ptr().add(half * 4 * NR_PAIR)) };
        }
        return;
    }
    tile_pair_portable(kp, a, panel, acc);
}

/// Portable twin of the AVX2 tile.
pub(crate) fn tile_pair_portable(kp: usize, a: &[u8], panel: &[i8], acc: &mut [i32]) {
    let acc = &mut acc[..MR_QUAD * NR_PAIR];
    acc.fill(0);
    for r in 0..MR_QUAD {
        let arow = &a[r * kp..(r + 1) * kp];
        for (q, group) in panel[..kp * NR_PAIR].chunks_exact(2 * NR_PAIR).enumerate() {
            for (c, w) in group.chunks_exact(2).enumerate() {
                let s = arow[2 * q] as i32 * w[0] as i32 + arow[2 * q + 1] as i32 * w[1] as i32;
                acc[r * NR_PAIR + c] = acc[r * NR_PAIR + c].wrapping_add(s);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pair_avx2(kp: usize, a: *const u8, b: *const i8, acc: *mut i32) {
    let mut c0 = [_mm256_setzero_si256(); 4];
    let mut c1 = [_mm256_setzero_si256(); 4];
    for q in 0..kp / 2 {
        // SAFETY: q < kp/2: the 32 values at q*32 lie inside the panel (checked by caller).
        let (b0, b1) = unsafe {
            let p = b.add(q * 2 * NR_PAIR);
            (_mm256_cvtepi8_epi16(_mm_loadu_si128(p as *const _)), _mm256_cvtepi8_epi16(_mm_loadu_si128(p.add(16) as *const _)))
        };
        for r in 0..4 {
            // SAFETY: row r < 4 of this half, bytes 2q, 2q+1 < kp (checked by caller).
            let (lo, hi) = unsafe { (*a.add(r * kp + 2 * q) as i32, *a.add(r * kp + 2 * q + 1) as i32) };
            let av = _mm256_set1_epi32(lo | (hi << 16));
            c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(av, b0));
            c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(av, b1));
        }
    }
    for r in 0..4 {
        // SAFETY: acc holds 4 rows of 16 i32 from here (checked by caller).
        unsafe {
            _mm256_storeu_si256(acc.add(r * NR_PAIR) as *mut _, c0[r]);
            _mm256_storeu_si256(acc.add(r * NR_PAIR + 8) as *mut _, c1[r]);
        }
    }
}

/// Whether the vectorized row helpers may use AVX-512 (F, BW, DQ, VL).
#[inline(always)]
fn row_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static OK: OnceLock<bool> = OnceLock::new();
        *OK.get_or_init(|| {
            super::isa() >= super::Isa::Avx512
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vl")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Safe Rust that [`with_avx512`] compiles again with AVX-512 (F, BW, DQ, VL) enabled, so its
/// loops vectorize 16 lanes wide: the integer GEMM's tasks, the depthwise rows, same-shape
/// binary ops. Implementations mark `run` `#[inline(always)]` so it is compiled inside the
/// AVX-512 trampoline. The output is an argument of its own so the compiler knows that it
/// aliases nothing the body reads.
pub(crate) trait Avx512Body<O> {
    /// Runs the body into `out`.
    fn run(&self, out: &mut [O]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn run_avx512<O, B: Avx512Body<O>>(body: &B, out: &mut [O]) {
    body.run(out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<O, B: Avx512Body<O>>(body: &B, out: &mut [O]) {
    body.run(out)
}

/// Runs `body` into `out`, compiled for AVX-512 when the CPU has it, else for AVX2 and FMA
/// when it has those (8 lanes, where the baseline x86-64 build has 4), else as it is.
pub(crate) fn with_avx512<O, B: Avx512Body<O>>(body: &B, out: &mut [O]) {
    #[cfg(target_arch = "x86_64")]
    {
        if row_avx512() {
            // SAFETY: `row_avx512` verified the features; the body is safe Rust.
            return unsafe { run_avx512(body, out) };
        }
        if super::isa() >= super::Isa::Avx2Fma {
            // SAFETY: `isa` chose AVX2+FMA only after detecting both; the body is safe Rust.
            return unsafe { run_avx2(body, out) };
        }
    }
    body.run(out)
}

/// The AVX-512 part of TFLite's double requantization of a row (`Requant::Float`): for the
/// first `n / 8 * 8` channels, `acc[i] = clamp(round(f64(acc[i] + bias[i]) · scale[i]) + zp,
/// lo, hi)`, `round` half away from zero (C's `round`), as `Requant::apply` computes it per
/// value; the product is held within ±2^30 first, which the clamp to an output range inside
/// ±2^29 cannot tell from the scalar path's saturation. Returns how many channels it did (0
/// without AVX-512); the caller finishes the rest.
pub(crate) fn requant_float_prefix(acc: &mut [i32], bias: &[i32], scale: &[f64], zp: i32, lo: i32, hi: i32) -> usize {
    let n = acc.len();
    assert!(bias.len() >= n && scale.len() >= n && lo > -(1 << 29) && hi < 1 << 29 && zp.abs() < 1 << 28);
    #[cfg(target_arch = "x86_64")]
    if row_avx512() {
        let full = n / 8 * 8;
        // SAFETY: the features were checked; every 8-lane access lies at `i .. i + 8 <= full <=
        // n` of `acc`, `bias` and `scale` (asserted above).
        unsafe { requant_float_avx512(full, acc.as_mut_ptr(), bias.as_ptr(), scale.as_ptr(), zp, lo, hi) };
        return full;
    }
    #[cfg(target_arch = "x86_64")]
    if Avx2Token::new().is_some() {
        let full = n / 8 * 8;
        // SAFETY: the token proves AVX2; every 8-lane access lies at `i .. i + 8 <= full <= n`
        // of `acc`, `bias` and `scale` (asserted above).
        unsafe { super::qpair::requant_float_rows_avx2(full, acc.as_mut_ptr(), bias.as_ptr(), scale.as_ptr(), (zp, lo, hi)) };
        return full;
    }
    let _ = (bias, scale, zp, lo, hi);
    0
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2")]
unsafe fn requant_float_avx512(n: usize, acc: *mut i32, bias: *const i32, scale: *const f64, zp: i32, lo: i32, hi: i32) {
    let lim = _mm512_set1_pd(1_073_741_824.0);
    let (half, one) = (_mm512_set1_pd(0.5), _mm512_set1_pd(1.0));
    let (vzp, vlo, vhi) = (_mm256_set1_epi32(zp), _mm256_set1_epi32(lo), _mm256_set1_epi32(hi));
    let mut i = 0;
    while i < n {
        // SAFETY: i + 8 <= n (function contract).
        unsafe {
            let a = _mm256_add_epi32(_mm256_loadu_si256(acc.add(i) as *const __m256i), _mm256_loadu_si256(bias.add(i) as *const __m256i));
            let x = _mm512_mul_pd(_mm512_cvtepi32_pd(a), _mm512_loadu_pd(scale.add(i)));
            let x = _mm512_min_pd(lim, _mm512_max_pd(_mm512_sub_pd(_mm512_setzero_pd(), lim), x));
            // Half away from zero: truncate, then step away from zero when the dropped part
            // is at least one half (exact: |x| ≤ 2^30).
            let t = _mm512_roundscale_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
            let frac = _mm512_sub_pd(x, t);
            let t = _mm512_mask_add_pd(t, _mm512_cmp_pd_mask::<_CMP_GE_OQ>(frac, half), t, one);
            let t = _mm512_mask_sub_pd(t, _mm512_cmp_pd_mask::<_CMP_LE_OQ>(frac, _mm512_sub_pd(_mm512_setzero_pd(), half)), t, one);
            let q = _mm256_add_epi32(_mm512_cvttpd_epi32(t), vzp);
            _mm256_storeu_si256(acc.add(i) as *mut __m256i, _mm256_min_epi32(vhi, _mm256_max_epi32(vlo, q)));
        }
        i += 8;
    }
}

/// The AVX-512 part of a row requantization (`quant::requant::requant_row`): for the first
/// `n / 16 * 16` channels, `acc[i] = clamp(mbqm(acc[i] + bias[i], mult[i], shift) + zp, lo,
/// hi)` with `lmul = 1 << max(shift, 0)` (applied when `any_left`) and `right = max(-shift, 0)`.
/// The 32×32→64-bit high multiply runs on even and odd lanes with `vpmuldq`, the rounding shift
/// per lane with `vpsravd` (8 lanes at a time with AVX2 only). Returns how many channels it did
/// (0 without AVX2); the caller
/// finishes the rest.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn requant_row_prefix(acc: &mut [i32], bias: &[i32], lmul: &[i32], mult: &[i32], right: &[i32], any_left: bool, zp: i32, lo: i32, hi: i32) -> usize {
    let n = acc.len();
    assert!(bias.len() >= n && lmul.len() >= n && mult.len() >= n && right.len() >= n);
    #[cfg(target_arch = "x86_64")]
    if row_avx512() {
        let full = n / 16 * 16;
        // SAFETY: the features were checked; the assert above bounds every 16-lane load and
        // store at offsets `i .. i + 16 <= full <= n` of `acc` and of the parameter slices.
        unsafe { requant16_avx512(full, acc.as_mut_ptr(), bias.as_ptr(), lmul.as_ptr(), mult.as_ptr(), right.as_ptr(), zp, lo, hi, any_left) };
        return full;
    }
    #[cfg(target_arch = "x86_64")]
    if Avx2Token::new().is_some() {
        let full = n / 8 * 8;
        // SAFETY: the token proves AVX2; the assert above bounds every 8-lane load and store at
        // offsets `i .. i + 8 <= full <= n` of `acc` and of the parameter slices.
        unsafe { super::qpair::requant_rows_avx2(full, acc.as_mut_ptr(), bias.as_ptr(), lmul.as_ptr(), mult.as_ptr(), right.as_ptr(), (zp, lo, hi), any_left) };
        return full;
    }
    let _ = (bias, lmul, mult, right, any_left, zp, lo, hi);
    0
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn requant16_avx512(n: usize, acc: *mut i32, bias: *const i32, lmul: *const i32, mult: *const i32, right: *const i32, zp: i32, lo: i32, hi: i32, left: bool) {
    let one = _mm512_set1_epi32(1);
    let half = _mm512_set1_epi64(1 << 30);
    let (vzp, vlo, vhi) = (_mm512_set1_epi32(zp), _mm512_set1_epi32(lo), _mm512_set1_epi32(hi));
    // gemmlowp's nudge-then-truncate equals one floor shift: for p >= 0, (p + 2^30) / 2^31
    // truncates like >> 31; for p < 0, trunc((p + 1 - 2^30) / 2^31) = (p + 2^30) >> 31 too.
    let high = |p: __m512i| -> __m512i { _mm512_srai_epi64::<31>(_mm512_add_epi64(p, half)) };
    let mut i = 0;
    while i < n {
        // SAFETY: i + 16 <= n, within every slice (checked by the caller).
        unsafe {
            let x = _mm512_add_epi32(_mm512_loadu_si512(acc.add(i) as *const _), _mm512_loadu_si512(bias.add(i) as *const _));
            let x = if left { _mm512_mullo_epi32(x, _mm512_loadu_si512(lmul.add(i) as *const _)) } else { x };
            let m = _mm512_loadu_si512(mult.add(i) as *const _);
            let even = high(_mm512_mul_epi32(x, m));
            let odd = high(_mm512_mul_epi32(_mm512_srli_epi64::<32>(x), _mm512_srli_epi64::<32>(m)));
            let q = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64::<32>(odd));
            let sh = _mm512_loadu_si512(right.add(i) as *const _);
            let mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, sh), one);
            let rem = _mm512_and_si512(q, mask);
            let qneg = _mm512_cmplt_epi32_mask(q, _mm512_setzero_si512());
            let thr = _mm512_mask_add_epi32(_mm512_srai_epi32::<1>(mask), qneg, _mm512_srai_epi32::<1>(mask), one);
            let up = _mm512_cmpgt_epi32_mask(rem, thr);
            let v = _mm512_mask_add_epi32(_mm512_srav_epi32(q, sh), up, _mm512_srav_epi32(q, sh), one);
            let v = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, vzp), vlo), vhi);
            _mm512_storeu_si512(acc.add(i) as *mut _, v);
        }
        i += 16;
    }
}

/// Safe views of the AVX-512 epilogue for tests that compare it with `quant`'s scalar
/// arithmetic.
#[cfg(all(test, target_arch = "x86_64"))]
pub(crate) mod probe {
    use super::*;

    /// `requant64::<true>` of 16 accumulators with `lr`'s lanes, `None` without AVX-512 VNNI.
    pub(crate) fn requant64_lanes(lr: &LaneRequant, lanes: [i32; 16]) -> Option<[i32; 16]> {
        VnniToken::new()?;
        // SAFETY: AVX-512 (the token above); all loads are of 16-lane arrays.
        Some(unsafe { std::mem::transmute::<__m512i, [i32; 16]>(run::<true>(lr, lanes)) })
    }

    /// The 16 bytes the epilogue `n` stores for 16 accumulators, `None` without AVX-512 VNNI.
    pub(crate) fn narrow_lanes(lr: &LaneRequant, lanes: [i32; 16], n: Narrow) -> Option<[u8; 16]> {
        VnniToken::new()?;
        // SAFETY: as in `requant64_lanes`.
        Some(unsafe { run_narrow(lr, lanes, n) })
    }

    /// `requant64::<NEG>` of 16 accumulators with `lr`'s lanes (left shift included).
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const NEG: bool>(lr: &LaneRequant, lanes: [i32; 16]) -> __m512i {
        // SAFETY: every vector loaded holds 16 lanes (LaneRequant pads to 16 columns).
        unsafe {
            let ld = |v: &Vec<i32>| _mm512_loadu_si512(v.as_ptr() as *const _);
            let ld64 = |v: &Vec<i64>, parity: usize| _mm512_loadu_si512(v.as_ptr().add(8 * parity) as *const _);
            let mut x = _mm512_loadu_si512(lanes.as_ptr() as *const _);
            if lr.any_left {
                x = _mm512_sllv_epi32(x, ld(&lr.left));
            }
            let mult = ld(&lr.mult);
            let sh = _mm512_or_si512(ld64(&lr.sh, 0), _mm512_slli_epi64::<32>(ld64(&lr.sh, 1)));
            requant64::<NEG>(x, mult, _mm512_srli_epi64::<32>(mult), [ld64(&lr.k, 0), ld64(&lr.k, 1)], [ld64(&lr.corr, 0), ld64(&lr.corr, 1)], sh)
        }
    }

    /// The epilogue `n` picks, as the 16 bytes it stores.
    #[target_feature(enable = "avx512f")]
    unsafe fn run_narrow(lr: &LaneRequant, lanes: [i32; 16], n: Narrow) -> [u8; 16] {
        // SAFETY: as `run`.
        let q = unsafe { if n.neg { run::<true>(lr, lanes) } else { run::<false>(lr, lanes) } };
        let b = if n.sat { narrow_q::<true>(q, lr.out) } else { narrow_q::<false>(q, lr.out) };
        // SAFETY: a 128-bit vector is 16 bytes.
        unsafe { std::mem::transmute(b) }
    }
}
