//! WGSL sources, one file per op family, each prefixed with `prelude.wgsl` (the parameter block,
//! thread indexing and fused activations). Shapes travel in a uniform block, so one pipeline per
//! (family, override constants) serves every shape: software adapters JIT-compile each pipeline,
//! and per-shape pipelines would multiply that cost.

const PRELUDE: &str = include_str!("shaders/prelude.wgsl");

/// The families and their sources.
const FAMILIES: &[(&str, &str)] = &[
    ("binary", include_str!("shaders/binary.wgsl")),
    ("unary", include_str!("shaders/unary.wgsl")),
    ("matmul", include_str!("shaders/matmul.wgsl")),
    ("conv", include_str!("shaders/conv.wgsl")),
    ("depthwise", include_str!("shaders/depthwise.wgsl")),
    ("pool", include_str!("shaders/pool.wgsl")),
    ("reduce", include_str!("shaders/reduce.wgsl")),
    ("softmax", include_str!("shaders/softmax.wgsl")),
    ("copy", include_str!("shaders/copy.wgsl")),
    ("pad", include_str!("shaders/pad.wgsl")),
    ("transpose", include_str!("shaders/transpose.wgsl")),
    ("resize", include_str!("shaders/resize.wgsl")),
];

/// Number of u32 parameters a dispatch can pass (the size of the prelude's `Params`).
pub(crate) const PARAM_WORDS: usize = 64;

/// Families whose weights (`alias WT`) may be stored as f16.
pub(crate) const F16_WEIGHTS: &[&str] = &["conv", "depthwise", "matmul"];

/// The full WGSL source of family `name`; `name_f16` is the family with f16 weight storage.
pub(crate) fn source(name: &str) -> Option<String> {
    let (base, f16) = match name.strip_suffix("_f16") {
        Some(b) if F16_WEIGHTS.contains(&b) => (b, true),
        _ => (name, false),
    };
    let body = FAMILIES.iter().find(|(n, _)| *n == base)?.1;
    Some(if f16 { format!("enable f16;\n{PRELUDE}\n{}", body.replace("alias WT = f32;", "alias WT = f16;")) } else { format!("{PRELUDE}\n{body}") })
}

/// Every family's name (for tests that compile them all).
pub fn families() -> impl Iterator<Item = &'static str> {
    FAMILIES.iter().map(|(n, _)| *n)
}
