//! SIMD kernels of the float depthwise convolution: runs of output pixels (multiplier 1) that
//! share one set of valid taps ([`DwRun`]), and the geometry the depthwise kernels share.
//!
//! The AVX-512 and AVX2 kernels are one source, `dw_kernels!`, written over each instruction
//! set's primitives; each safe entry point takes a token that proves the CPU has the
//! instruction set, checks every bound once, then runs loops over raw pointers. The portable
//! twin lives in `kernels::depthwise`.
#![deny(unsafe_op_in_unsafe_fn)]

use super::{Avx2Token, Avx512Token};

/// Shape of one DEPTHWISE_CONV_2D; output channels are `in_c * multiplier`, and output channel
/// `ic * multiplier + m` reads input channel `ic`. Padding at the bottom and right is implied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepthwiseGeom {
    /// Batch size.
    pub batch: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Input channels.
    pub in_c: usize,
    /// Depth multiplier (output channels per input channel, ≥ 1).
    pub multiplier: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// Filter height.
    pub k_h: usize,
    /// Filter width.
    pub k_w: usize,
    /// Vertical stride (≥ 1).
    pub stride_h: usize,
    /// Horizontal stride (≥ 1).
    pub stride_w: usize,
    /// Vertical dilation (≥ 1).
    pub dil_h: usize,
    /// Horizontal dilation (≥ 1).
    pub dil_w: usize,
    /// Zero rows above the input.
    pub pad_top: usize,
    /// Zero columns left of the input.
    pub pad_left: usize,
}

impl DepthwiseGeom {
    /// Output channels: `in_c * multiplier`.
    pub fn out_c(&self) -> usize {
        self.in_c * self.multiplier
    }

    /// Values in the input tensor.
    pub fn input_len(&self) -> usize {
        self.batch * self.in_h * self.in_w * self.in_c
    }

    /// Values in the output tensor.
    pub fn output_len(&self) -> usize {
        self.batch * self.out_h * self.out_w * self.out_c()
    }

    /// Values in the filter: `k_h * k_w * out_c`.
    pub fn filter_len(&self) -> usize {
        self.k_h * self.k_w * self.out_c()
    }

    pub(crate) fn validate(&self) {
        assert!(self.multiplier >= 1, "depthwise multiplier must be ≥ 1");
        assert!(self.stride_h >= 1 && self.stride_w >= 1, "depthwise strides must be ≥ 1");
        assert!(self.dil_h >= 1 && self.dil_w >= 1, "depthwise dilations must be ≥ 1");
    }

    /// The most lines of one L1 set (64 sets of 64-byte lines, 32 KiB) that a block of 8 output
    /// pixels reads for one step of channels: its window of `k_h` input rows × (7·stride + k_w)
    /// pixels. Power-of-two channel counts map whole columns of that window to one set (512
    /// channels: every other pixel, and rows 14 pixels apart, 28 KiB, land on the same 4 KiB
    /// offset), so the set's 8 ways are refilled from L2 at every step of channels;
    /// MobileNetV1's 3×3 layers of 128 channels at stride 2 and of 256–1024 channels ran
    /// 1.3–1.8× slower so. 144, 384 or 576 channels spread over the sets.
    pub(crate) fn l1_set_conflicts(&self) -> usize {
        const SETS: usize = 64;
        let mut count = [0u8; SETS];
        let (c, f) = (self.out_c().max(1), std::mem::size_of::<f32>());
        let span = (7 * self.stride_w + (self.k_w.max(1) - 1) * self.dil_w) * c;
        for i in 0..self.k_h.min(16) {
            // Input pixels (one channel step each) from the window's first to its last.
            for col in (0..=span).step_by(c).take(64) {
                let set = (i * self.dil_h * self.in_w * c + col) * f / 64 % SETS;
                count[set] = count[set].saturating_add(1);
            }
        }
        count.iter().copied().max().unwrap_or(0) as usize
    }

    /// Whether the AVX2 kernel runs blocks of 2 pixels × 32 channels (few lines in flight)
    /// instead of 8 × 8: where the 8-pixel window puts more than 6 lines in one 8-way L1 set.
    pub(crate) fn two_pixel_blocks(&self) -> bool {
        self.l1_set_conflicts() > 6
    }
}

/// A run of depthwise-convolution output pixels (multiplier 1) that share one set of valid
/// taps: pixel `p < n_pix`, tap `(i < n_kh, j < n_kw)` and channel `ch < c` read
/// `input[in_off + p*pix_step + i*kh_step + j*kw_step + ch]` and
/// `filter[f_off + i*f_kh_step + j*c + ch]`. Sums start from the bias and take the taps
/// column by column (`j` outer, `i` inner), as XNNPACK does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DwRun<'a> {
    /// The whole NHWC input.
    pub input: &'a [f32],
    /// Input offset of pixel 0, first valid tap, channel 0.
    pub in_off: usize,
    /// Input distance between consecutive output pixels (`stride_w * c`).
    pub pix_step: usize,
    /// Input distance between consecutive filter rows (`dil_h * in_w * c`).
    pub kh_step: usize,
    /// Input distance between consecutive filter columns (`dil_w * c`).
    pub kw_step: usize,
    /// Valid filter rows.
    pub n_kh: usize,
    /// Valid filter columns.
    pub n_kw: usize,
    /// The whole filter, `[k_h, k_w, c]`.
    pub filter: &'a [f32],
    /// Filter offset of the first valid tap.
    pub f_off: usize,
    /// Filter distance between consecutive filter rows (`k_w * c`).
    pub f_kh_step: usize,
    /// Channels.
    pub c: usize,
    /// Per-channel bias (at least `c` values).
    pub bias: Option<&'a [f32]>,
    /// Lower clamp bound.
    pub min: f32,
    /// Upper clamp bound.
    pub max: f32,
}

impl DwRun<'_> {
    /// Panics unless every read of the run and the `n_pix * c` outputs are in bounds.
    fn check(&self, n_pix: usize, out: &[f32]) {
        assert!(out.len() >= n_pix * self.c, "depthwise output too short");
        if let Some(bias) = self.bias {
            assert!(bias.len() >= self.c, "depthwise bias too short");
        }
        if n_pix == 0 || self.n_kh == 0 || self.n_kw == 0 || self.c == 0 {
            return;
        }
        let last_in = self.in_off
            + (n_pix - 1) * self.pix_step
            + (self.n_kh - 1) * self.kh_step
            + (self.n_kw - 1) * self.kw_step
            + self.c;
        assert!(last_in <= self.input.len(), "depthwise input read out of bounds");
        let last_f = self.f_off + (self.n_kh - 1) * self.f_kh_step + (self.n_kw - 1) * self.c + self.c;
        assert!(last_f <= self.filter.len(), "depthwise filter read out of bounds");
    }
}

/// Writes `clamp(bias)` (or `clamp(0)`) to the `n_pix` pixels of a run with no valid tap
/// (the pixel sees only padding), without touching the input.
fn dw_bias_only(run: &DwRun, n_pix: usize, out: &mut [f32]) {
    let c = run.c;
    for o in out[..n_pix * c].chunks_exact_mut(c.max(1)) {
        for (ch, v) in o.iter_mut().enumerate() {
            let b = run.bias.map_or(0.0, |b| b[ch]);
            let y = if b < run.min { run.min } else { b };
            *v = if run.max < y { run.max } else { y };
        }
    }
}

/// Computes `n_pix` output pixels of a depthwise run with AVX-512 (see [`DwRun`]), writing
/// `out[p*c + ch]`.
pub(crate) fn dw_run_avx512(t: Avx512Token, run: &DwRun, n_pix: usize, out: &mut [f32]) {
    run.check(n_pix, out);
    if run.n_kh == 0 || run.n_kw == 0 || run.c == 0 {
        return dw_bias_only(run, n_pix, out);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        // SAFETY: the token proves AVX-512F/FMA and `check` proved every read of the run (at
        // least one tap) and the n_pix*c writes in bounds.
        unsafe { avx512::dw(run, n_pix, out.as_mut_ptr(), false) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, out);
        unreachable!("an Avx512Token cannot exist off x86_64");
    }
}

/// Computes `n_pix` output pixels of a depthwise run with AVX2 (see [`DwRun`]), in blocks of 2
/// pixels when `two_pixel` ([`DepthwiseGeom::two_pixel_blocks`]), else of 8.
pub(crate) fn dw_run_avx2(t: Avx2Token, run: &DwRun, n_pix: usize, out: &mut [f32], two_pixel: bool) {
    run.check(n_pix, out);
    if run.n_kh == 0 || run.n_kw == 0 || run.c == 0 {
        return dw_bias_only(run, n_pix, out);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let _ = t;
        // SAFETY: the token proves AVX2/FMA and `check` proved every read of the run (at least
        // one tap) and the n_pix*c writes in bounds.
        unsafe { avx2::dw(run, n_pix, out.as_mut_ptr(), two_pixel) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (t, out);
        unreachable!("an Avx2Token cannot exist off x86_64");
    }
}

/// Writes the depthwise kernels once over the primitives of the instruction set in scope (`V`
/// a vector of `L` floats, `M` a lane mask); `$feat` is the `target_feature` list they carry.
#[cfg(target_arch = "x86_64")]
macro_rules! dw_kernels {
    ($feat:literal) => {
        use super::DwRun;

        /// Splits a run into blocks of 8, 4, 2 and 1 pixels (of 2 and 1 when `narrow`: see
        /// [`super::DepthwiseGeom::two_pixel_blocks`]) and calls [`block`]`::<P, V, KH, KW>` on each: `P` pixels × `V`
        /// channel vectors make 8 independent accumulators (enough to hide FMA latency), and the
        /// filter size is a constant for the common 3×3 and 5×5 (`0` = read it from the run) so
        /// those loops unroll fully.
        ///
        /// # Safety
        /// The CPU has `$feat`, `run.check(n_pix, out)` passed for the slice behind `out`, and
        /// the run has at least one tap and one channel.
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn dw(run: &DwRun, n_pix: usize, out: *mut f32, narrow: bool) {
            macro_rules! sized {
                ($kh:literal, $kw:literal) => {{
                    let mut p = 0;
                    if narrow {
                        while p + 2 <= n_pix {
                            // SAFETY: pixels p..p+2 lie inside the checked run (contract).
                            unsafe { block::<2, 4, $kh, $kw>(run, p, out) };
                            p += 2;
                        }
                    }
                    while p + 8 <= n_pix {
                        // SAFETY: pixels p..p+8 lie inside the checked run (contract).
                        unsafe { block::<8, 1, $kh, $kw>(run, p, out) };
                        p += 8;
                    }
                    if p + 4 <= n_pix {
                        // SAFETY: pixels p..p+4 lie inside the checked run (contract).
                        unsafe { block::<4, 2, $kh, $kw>(run, p, out) };
                        p += 4;
                    }
                    if p + 2 <= n_pix {
                        // SAFETY: pixels p..p+2 lie inside the checked run (contract).
                        unsafe { block::<2, 4, $kh, $kw>(run, p, out) };
                        p += 2;
                    }
                    if p < n_pix {
                        // SAFETY: pixel p lies inside the checked run (contract).
                        unsafe { block::<1, 4, $kh, $kw>(run, p, out) };
                    }
                }};
            }
            match (run.n_kh, run.n_kw) {
                (3, 3) => sized!(3, 3),
                (5, 5) => sized!(5, 5),
                _ => sized!(0, 0),
            }
        }

        /// # Safety
        /// As [`dw`], with pixels `p0..p0 + P` inside the checked run; `KH`/`KW` are 0 or equal
        /// to `run.n_kh`/`run.n_kw`.
        #[target_feature(enable = $feat)]
        unsafe fn block<const P: usize, const V: usize, const KH: usize, const KW: usize>(run: &DwRun, p0: usize, out: *mut f32) {
            let c = run.c;
            let (n_kh, n_kw) = if KH > 0 { (KH, KW) } else { (run.n_kh, run.n_kw) };
            let (ps, khs, kws, fkhs) = (run.pix_step, run.kh_step, run.kw_step, run.f_kh_step);
            // SAFETY (every primitive below): the CPU has `$feat` (contract).
            let vmin = unsafe { splat(run.min) };
            let vmax = unsafe { splat(run.max) };
            // SAFETY: pixel p0, tap 0 and pixel p0's output are the first elements of regions
            // `check` proved in bounds.
            let (x0, w0, o0) = unsafe { (run.input.as_ptr().add(run.in_off + p0 * ps), run.filter.as_ptr().add(run.f_off), out.add(p0 * c)) };
            let mut ch = 0;
            // Full steps of V vectors: no masks.
            while ch + V * L <= c {
                let mut acc = [[unsafe { zero() }; V]; P];
                if let Some(bias) = run.bias {
                    for v in 0..V {
                        // SAFETY: ch + V*L ≤ c and the bias holds c values.
                        let b = unsafe { load(bias.as_ptr().add(ch + v * L)) };
                        acc.iter_mut().for_each(|a| a[v] = b);
                    }
                }
                for j in 0..n_kw {
                    for i in 0..n_kh {
                        // SAFETY: tap (i, j) < (n_kh, n_kw) of pixels p0..p0+P, channels
                        // ch..ch+V*L ≤ c: `check` bounded the last tap of the last pixel of the run.
                        unsafe {
                            let wp = w0.add(i * fkhs + j * c + ch);
                            let x = x0.add(i * khs + j * kws + ch);
                            let w: [Vf; V] = std::array::from_fn(|v| load(wp.add(v * L)));
                            for (q, a) in acc.iter_mut().enumerate() {
                                for v in 0..V {
                                    a[v] = fmadd(load(x.add(q * ps + v * L)), w[v], a[v]);
                                }
                            }
                        }
                    }
                }
                for (q, a) in acc.iter().enumerate() {
                    for (v, a) in a.iter().enumerate() {
                        // SAFETY: pixel p0 + q < n_pix and ch + v*L + L ≤ c: inside out[..n_pix*c].
                        unsafe {
                            let y = min(vmax, max(vmin, *a));
                            store(o0.add(q * c + ch + v * L), y)
                        };
                    }
                }
                ch += V * L;
            }
            // Remaining channels one vector at a time, the last one masked.
            while ch < c {
                let m = unsafe { mask(c - ch) };
                let init = match run.bias {
                    // SAFETY: the bias holds c values; lanes ≥ c - ch are masked off (not read).
                    Some(bias) => unsafe { load_masked(bias.as_ptr().add(ch), m) },
                    None => unsafe { zero() },
                };
                let mut acc = [init; P];
                for j in 0..n_kw {
                    for i in 0..n_kh {
                        // SAFETY: as above, with lanes ≥ c - ch masked off (neither read nor faulting).
                        unsafe {
                            let w = load_masked(w0.add(i * fkhs + j * c + ch), m);
                            let x = x0.add(i * khs + j * kws + ch);
                            for (q, a) in acc.iter_mut().enumerate() {
                                *a = fmadd(load_masked(x.add(q * ps), m), w, *a);
                            }
                        }
                    }
                }
                for (q, a) in acc.iter().enumerate() {
                    // SAFETY: pixel p0 + q < n_pix and lanes ≥ c - ch are masked: inside out[..n_pix*c].
                    unsafe {
                        let y = min(vmax, max(vmin, *a));
                        store_masked(o0.add(q * c + ch), m, y)
                    };
                }
                ch += L;
            }
        }
    };
}

/// Declares vector primitives: each becomes an `#[inline]` `unsafe fn` carrying `$feat`, so it
/// inlines into the kernels of `dw_kernels!`. Callers uphold that the CPU has `$feat` and that
/// pointers are valid for the lanes touched.
#[cfg(target_arch = "x86_64")]
macro_rules! prims {
    ($feat:literal; $(fn $name:ident ($($a:ident: $t:ty),*) $(-> $r:ty)? $body:block)*) => {
        $(
            #[inline]
            #[target_feature(enable = $feat)]
            #[allow(unused_unsafe)]
            unsafe fn $name($($a: $t),*) $(-> $r)? {
                // SAFETY: the caller upholds the contract above.
                unsafe { $body }
            }
        )*
    };
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::*;

    type Vf = __m512;
    type M = __mmask16;
    const L: usize = 16;

    prims! { "avx512f,avx2,fma";
        fn zero() -> Vf { _mm512_setzero_ps() }
        fn splat(x: f32) -> Vf { _mm512_set1_ps(x) }
        fn load(p: *const f32) -> Vf { _mm512_loadu_ps(p) }
        fn store(p: *mut f32, v: Vf) { _mm512_storeu_ps(p, v) }
        fn fmadd(a: Vf, b: Vf, c: Vf) -> Vf { _mm512_fmadd_ps(a, b, c) }
        fn min(a: Vf, b: Vf) -> Vf { _mm512_min_ps(a, b) }
        fn max(a: Vf, b: Vf) -> Vf { _mm512_max_ps(a, b) }
        fn mask(n: usize) -> M { if n >= L { 0xffff } else { (1u32 << n) as u16 - 1 } }
        fn load_masked(p: *const f32, m: M) -> Vf { _mm512_maskz_loadu_ps(m, p) }
        fn store_masked(p: *mut f32, m: M, v: Vf) { _mm512_mask_storeu_ps(p, m, v) }
    }

    dw_kernels!("avx512f,avx2,fma");
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::*;

    type Vf = __m256;
    type M = __m256i;
    const L: usize = 8;

    prims! { "avx2,fma";
        fn zero() -> Vf { _mm256_setzero_ps() }
        fn splat(x: f32) -> Vf { _mm256_set1_ps(x) }
        fn load(p: *const f32) -> Vf { _mm256_loadu_ps(p) }
        fn store(p: *mut f32, v: Vf) { _mm256_storeu_ps(p, v) }
        fn fmadd(a: Vf, b: Vf, c: Vf) -> Vf { _mm256_fmadd_ps(a, b, c) }
        fn min(a: Vf, b: Vf) -> Vf { _mm256_min_ps(a, b) }
        fn max(a: Vf, b: Vf) -> Vf { _mm256_max_ps(a, b) }
        fn mask(n: usize) -> M { super::super::gemm::lane_mask8(n) }
        fn load_masked(p: *const f32, m: M) -> Vf { _mm256_maskload_ps(p, m) }
        fn store_masked(p: *mut f32, m: M, v: Vf) { _mm256_maskstore_ps(p, m, v) }
    }

    dw_kernels!("avx2,fma");
}
