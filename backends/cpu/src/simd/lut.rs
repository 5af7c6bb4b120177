//! 256-entry byte tables, `out[i] = table[x[i]]`, 64 bytes a step with AVX-512 VBMI's
//! two-source byte permutes (`vpermi2b` picks from 128 bytes by the low 7 index bits; two of
//! them, blended by the index's top bit, cover 256). The quantized ops whose 8-bit output is a
//! function of one 8-bit input (requantization, add/sub/mul against a scalar) look up their
//! results this way. Without VBMI (AVX2: AMD Zen 1–3, Intel client cores), 32 bytes a step:
//! the sixteen 16-byte rows of the table looked up by the low nibble (`vpshufb`), then narrowed
//! to the right row by the four high bits, one `vpblendvb` tree level per bit (15 blends). The
//! portable loop below is the twin.
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

cpu_token!(
    /// Proof that this CPU runs AVX-512 F/BW/VBMI (and `NNRT_ISA` allows AVX-512).
    VbmiToken: "avx512f", "avx512bw", "avx512vbmi"; isa >= super::Isa::Avx512
);

/// `out[i] = table[x[i]]` over the shorter of `x` and `out`.
pub(crate) fn lut8(table: &[u8; 256], x: &[u8], out: &mut [u8]) {
    let n = x.len().min(out.len());
    let (x, out) = (&x[..n], &mut out[..n]);
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = vbmi() {
        // SAFETY: the token proves the features; the kernel reads `x[..n]` and writes `out[..n]`
        // (whole 64-byte blocks, then one masked block), both at least `n` long.
        unsafe { lut8_vbmi(t, table, x.as_ptr(), out.as_mut_ptr(), n) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = avx2() {
        return lut8_avx2(t, table, x, out);
    }
    lut8_portable(table, x, out);
}

/// [`lut8`] on AVX2 (tests call it on AVX-512 machines too): whole blocks of 32, then the tail
/// through a stack copy.
#[cfg(target_arch = "x86_64")]
pub(crate) fn lut8_avx2(t: super::Avx2Token, table: &[u8; 256], x: &[u8], out: &mut [u8]) {
    let n = x.len().min(out.len());
    let whole = n - n % 32;
    // SAFETY: the token proves AVX2; the kernel reads `x[..whole]`, writes `out[..whole]`.
    unsafe { lut8_avx2_blocks(t, table, x.as_ptr(), out.as_mut_ptr(), whole) };
    if whole < n {
        let (mut xb, mut ob) = ([0u8; 32], [0u8; 32]);
        xb[..n - whole].copy_from_slice(&x[whole..n]);
        // SAFETY: as above, one block of the 32-byte copies.
        unsafe { lut8_avx2_blocks(t, table, xb.as_ptr(), ob.as_mut_ptr(), 32) };
        out[whole..n].copy_from_slice(&ob[..n - whole]);
    }
}

/// The AVX2 token, detected once (`NNRT_ISA` at least AVX2).
#[cfg(target_arch = "x86_64")]
fn avx2() -> Option<super::Avx2Token> {
    use std::sync::OnceLock;
    static T: OnceLock<Option<super::Avx2Token>> = OnceLock::new();
    *T.get_or_init(super::Avx2Token::allowed)
}

/// # Safety
/// `n` (a multiple of 32) bytes readable at `x` and writable at `out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lut8_avx2_blocks(_t: super::Avx2Token, table: &[u8; 256], x: *const u8, out: *mut u8, n: usize) {
    // Row h of the table in both 128-bit lanes.
    let rows: [__m256i; 16] = std::array::from_fn(|h| {
        // SAFETY: bytes 16h .. 16h + 16 of the 256-byte table.
        _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(table.as_ptr().add(16 * h).cast()) })
    });
    let nibble = _mm256_set1_epi8(0x0f);
    let mut i = 0;
    while i < n {
        // SAFETY: bytes i .. i + 32 <= n.
        let v = unsafe { _mm256_loadu_si256(x.add(i).cast()) };
        let lo = _mm256_and_si256(v, nibble);
        let mut r: [__m256i; 16] = std::array::from_fn(|h| _mm256_shuffle_epi8(rows[h], lo));
        // Bit 4 + b of each byte moved to its top bit (16-bit shifts: a byte's top bit comes
        // from that byte), then rows 2h and 2h + 1 of the level blended by it.
        let bits = [_mm256_slli_epi16::<3>(v), _mm256_slli_epi16::<2>(v), _mm256_slli_epi16::<1>(v), v];
        let mut len = 16;
        for m in bits {
            for h in 0..len / 2 {
                r[h] = _mm256_blendv_epi8(r[2 * h], r[2 * h + 1], m);
            }
            len /= 2;
        }
        // SAFETY: bytes i .. i + 32 <= n.
        unsafe { _mm256_storeu_si256(out.add(i).cast(), r[0]) };
        i += 32;
    }
}

/// The portable twin of [`lut8`].
pub(crate) fn lut8_portable(table: &[u8; 256], x: &[u8], out: &mut [u8]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = table[v as usize];
    }
}

/// The token, detected once.
fn vbmi() -> Option<VbmiToken> {
    use std::sync::OnceLock;
    static T: OnceLock<Option<VbmiToken>> = OnceLock::new();
    *T.get_or_init(VbmiToken::new)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn lut8_vbmi(_t: VbmiToken, table: &[u8; 256], x: *const u8, out: *mut u8, n: usize) {
    let p = table.as_ptr();
    // SAFETY (all loads and stores): the table is 256 bytes (four 64-byte loads); the caller
    // guarantees `n` readable bytes at `x` and writable at `out`; full blocks stay below `n`
    // and the last one is masked to `n - i < 64` bytes.
    unsafe {
        let t = [
            _mm512_loadu_si512(p.cast()),
            _mm512_loadu_si512(p.add(64).cast()),
            _mm512_loadu_si512(p.add(128).cast()),
            _mm512_loadu_si512(p.add(192).cast()),
        ];
        let mut i = 0;
        while i + 64 <= n {
            let v = _mm512_loadu_si512(x.add(i).cast());
            _mm512_storeu_si512(out.add(i).cast(), look(&t, v));
            i += 64;
        }
        if i < n {
            let k: __mmask64 = (1u64 << (n - i)) - 1;
            let v = _mm512_maskz_loadu_epi8(k, x.add(i).cast());
            _mm512_mask_storeu_epi8(out.add(i).cast(), k, look(&t, v));
        }
    }
}

/// 64 lookups: bytes `0..128` from the first two table blocks, `128..256` from the last two.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
fn look(t: &[__m512i; 4], v: __m512i) -> __m512i {
    let lo = _mm512_permutex2var_epi8(t[0], v, t[1]);
    let hi = _mm512_permutex2var_epi8(t[2], v, t[3]);
    _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length up to a few blocks (tails included) and every byte value.
    #[test]
    fn lut8_matches_portable() {
        let table: [u8; 256] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11) ^ 0x5a);
        let x: Vec<u8> = (0..300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).chain(0..=255).collect();
        for n in 0..x.len() {
            let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
            lut8(&table, &x[..n], &mut a);
            lut8_portable(&table, &x[..n], &mut b);
            assert_eq!(a, b, "n = {n}");
            #[cfg(target_arch = "x86_64")]
            if let Some(t) = crate::simd::Avx2Token::new() {
                a.fill(0);
                lut8_avx2(t, &table, &x[..n], &mut a);
                assert_eq!(a, b, "AVX2, n = {n}");
            }
        }
    }
}
