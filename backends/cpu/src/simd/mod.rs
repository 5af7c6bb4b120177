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
pub(crate) mod lut;
pub(crate) mod qdepthwise;
pub(crate) mod qmisc;
pub(crate) mod quant;
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

cpu_token!(
    /// Proof that this CPU runs AVX2 and FMA.
    Avx2Token: "avx2", "fma"
);
