//! Every `unsafe` SIMD routine of the CPU backend lives under this module.
//!
//! The instruction set is detected once per process ([`isa`]); each routine has a portable
//! fallback in `kernels`, so the crate runs on any CPU and under valgrind (which does not emulate
//! AVX-512). Nothing here is chosen at compile time with `target-cpu=native`.

/// Declares a proof-of-features token: `$name::new()` returns one only when the CPU has every
/// feature listed (and, where `isa >= ...` is given, `NNRT_ISA` does not lower [`isa`] below
/// that level). Tokens are built only after this run-time detection.
macro_rules! cpu_token {
    ($(#[$doc:meta])* $name:ident: $($feat:tt),+ $(; isa >= $min:expr)?) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name(());

        impl $name {
            /// A token when the CPU has the features.
            pub(crate) fn new() -> Option<Self> {
                #[cfg(target_arch = "x86_64")]
                {
                    if true $(&& $crate::simd::isa() >= $min)? $(&& is_x86_feature_detected!($feat))+ {
                        return Some($name(()));
                    }
                }
                None
            }
        }
    };
}

pub(crate) mod depthwise;
pub(crate) mod elementwise;
pub(crate) mod gemm;
pub(crate) mod pack;
pub(crate) mod pool;
pub(crate) mod lut;
pub(crate) mod qdepthwise;
pub(crate) mod qbinary;
pub(crate) mod qmisc;
pub(crate) mod qpair;
pub(crate) mod qdw_avx2;
pub(crate) mod quant;
pub(crate) mod quantize;
pub(crate) mod rescale;
pub(crate) mod resize;
pub(crate) mod residual;
pub(crate) mod spmm;

use std::sync::OnceLock;

/// The vector instruction sets the kernels know how to use, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// No usable vector extension: the portable Rust code runs.
    Scalar,
    /// AArch64 Advanced SIMD.
    Neon,
    /// x86-64 AVX2 with FMA.
    Avx2Fma,
    /// x86-64 AVX-512 F (with the AVX2/FMA baseline).
    Avx512,
}

/// The best instruction set of this CPU, detected on first call. `NNRT_ISA=scalar|avx2|avx512`
/// lowers it (for tests and for comparing kernels); it never raises it past what the CPU has.
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        let best = detect();
        match std::env::var("NNRT_ISA").ok().as_deref() {
            Some("scalar") => Isa::Scalar,
            Some("avx2") if best >= Isa::Avx2Fma => Isa::Avx2Fma,
            Some("neon") if best == Isa::Neon => Isa::Neon,
            _ => best,
        }
    })
}

fn detect() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return Isa::Avx2Fma;
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            return Isa::Neon;
        }
    }
    Isa::Scalar
}

cpu_token!(
    /// Proof that this CPU runs AVX-512F, AVX2 and FMA.
    Avx512Token: "avx512f", "avx2", "fma"
);

/// An [`Avx512Token`] when [`isa`] chose AVX-512 (so `NNRT_ISA` can turn it off), else `None`.
pub(crate) fn avx512() -> Option<Avx512Token> {
    match isa() {
        Isa::Avx512 => Avx512Token::new(),
        _ => None,
    }
}

/// Lane mask of the 16-lane vector `v` of a row holding `cols` valid values (all lanes, the
/// first `cols − 16·v`, or none).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn lane_mask16(cols: usize, v: usize) -> u16 {
    match cols.saturating_sub(16 * v) {
        n if n >= 16 => 0xffff,
        n => ((1u32 << n) - 1) as u16,
    }
}

/// Asks the CPU to bring the cache line holding `v`'s first value into L1: a hint, which
/// changes no value and never faults.
#[inline]
pub(crate) fn prefetch(v: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and never faults, whatever the address.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(v.as_ptr().cast::<i8>())
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

cpu_token!(
    /// Proof that this CPU runs AVX2 and FMA.
    Avx2Token: "avx2", "fma"
);

impl Avx2Token {
    /// A token when the CPU has AVX2 and FMA and `NNRT_ISA` allows them (kernels choose by
    /// it; tests that compare instruction sets call [`Avx2Token::new`]).
    pub(crate) fn allowed() -> Option<Self> {
        if isa() >= Isa::Avx2Fma { Self::new() } else { None }
    }
}

/// The instruction set of a float loop written twice, with AVX-512 (16 lanes) and AVX2 (8).
#[derive(Clone, Copy, Debug)]
pub(crate) enum VecIsa {
    Avx512(Avx512Token),
    Avx2(Avx2Token),
}

impl VecIsa {
    /// The best one this CPU has and `NNRT_ISA` allows, if any.
    pub(crate) fn best() -> Option<VecIsa> {
        avx512().map(VecIsa::Avx512).or_else(|| Avx2Token::allowed().map(VecIsa::Avx2))
    }

    /// Every one this CPU has (tests compare them with the scalar code).
    #[cfg(test)]
    pub(crate) fn all() -> Vec<VecIsa> {
        Avx512Token::new().map(VecIsa::Avx512).into_iter().chain(Avx2Token::new().map(VecIsa::Avx2)).collect()
    }
}

cpu_token!(
    /// Proof that this CPU runs AVX-512 F/BW/DQ/VL (and `NNRT_ISA` allows AVX-512).
    WideToken: "avx512f", "avx512bw", "avx512dq", "avx512vl"; isa >= Isa::Avx512
);

/// Plain loops compiled a second and third time, for AVX-512 (F/BW/DQ/VL) and for AVX2, so
/// that the compiler vectorizes them with instructions the baseline x86-64 build lacks (64-bit
/// compares, shifts and multiplies). Chosen once, from the detected features.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wide {
    Avx512(WideToken),
    Avx2(Avx2Token),
    Plain,
}

impl Wide {
    /// The best form this CPU (and `NNRT_ISA`) allows.
    pub(crate) fn detect() -> Wide {
        match isa() {
            Isa::Avx512 => WideToken::new().map(Wide::Avx512).or_else(|| Avx2Token::new().map(Wide::Avx2)).unwrap_or(Wide::Plain),
            Isa::Avx2Fma => Avx2Token::new().map_or(Wide::Plain, Wide::Avx2),
            Isa::Scalar | Isa::Neon => Wide::Plain,
        }
    }

    /// Runs `b.body()` inside a function compiled for this form: what the body inlines (its
    /// loops marked `#[inline(always)]`) is compiled with the form's instructions.
    #[inline(always)]
    pub(crate) fn run<B: WideBody>(self, b: &mut B) {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            fn avx512<B: WideBody>(b: &mut B) {
                b.body()
            }
            #[target_feature(enable = "avx2,fma")]
            fn avx2<B: WideBody>(b: &mut B) {
                b.body()
            }
            match self {
                // SAFETY: the token proves the CPU runs the features the function is built for.
                Wide::Avx512(_) => unsafe { avx512(b) },
                // SAFETY: as above.
                Wide::Avx2(_) => unsafe { avx2(b) },
                Wide::Plain => b.body(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        b.body()
    }
}

/// A body of loops for [`Wide::run`]; its `body` must be `#[inline(always)]` (else it is
/// compiled once, for the baseline).
pub(crate) trait WideBody {
    fn body(&mut self);
}
