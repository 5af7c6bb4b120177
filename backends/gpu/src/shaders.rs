//! WGSL sources, composed per op family at pipeline creation from shared pieces and the family's
//! own file: `prelude.wgsl` (the parameter block and fused activations) first, then the pieces
//! the family names (bindings, the 1-D entry point, NHWC indexing, the convolution window, 6-D
//! index walks), then the family's math. Shapes travel in a uniform block, so one pipeline per
//! (family, override constants) serves every shape: software adapters JIT-compile each pipeline,
//! and per-shape pipelines would multiply that cost.

const PRELUDE: &str = include_str!("shaders/prelude.wgsl");

/// Bindings: a float32 input and output.
const IO_F32: &str = include_str!("shaders/io_f32.wgsl");
/// Bindings: an input and output of 4-byte elements moved as bits.
const IO_WORDS: &str = include_str!("shaders/io_words.wgsl");
/// Bindings: input, weights (`alias WT`), bias and output.
const IO_WEIGHTS: &str = include_str!("shaders/io_weights.wgsl");
/// `main` of the 1-D kernels: bounds check, then the family's `item(t)`.
const ENTRY: &str = include_str!("shaders/entry.wgsl");
/// NHWC output positions and input offsets.
const SPATIAL: &str = include_str!("shaders/spatial.wgsl");
/// The convolution window, folding the family's `tap`.
const WINDOW: &str = include_str!("shaders/window.wgsl");
/// Offsets of an element of a tensor of up to 6 dims under other strides.
const DIMS6: &str = include_str!("shaders/dims6.wgsl");
/// Offsets of the reductions' kept and reduced elements.
const REDUCE_INDEX: &str = include_str!("shaders/reduce_index.wgsl");

/// The families: name, the shared pieces they use (after the prelude), their own source.
const FAMILIES: &[(&str, &[&str], &str)] = &[
    ("binary", &[ENTRY, DIMS6], include_str!("shaders/binary.wgsl")),
    ("unary", &[IO_F32, ENTRY], include_str!("shaders/unary.wgsl")),
    ("matmul", &[IO_WEIGHTS], include_str!("shaders/matmul.wgsl")),
    ("conv", &[IO_WEIGHTS, ENTRY, SPATIAL, WINDOW], include_str!("shaders/conv.wgsl")),
    ("depthwise", &[IO_WEIGHTS, ENTRY, SPATIAL, WINDOW], include_str!("shaders/depthwise.wgsl")),
    ("pool", &[IO_F32, ENTRY, SPATIAL], include_str!("shaders/pool.wgsl")),
    ("reduce", &[IO_F32, ENTRY, REDUCE_INDEX], include_str!("shaders/reduce.wgsl")),
    ("reduce_wide", &[IO_F32, REDUCE_INDEX], include_str!("shaders/reduce_wide.wgsl")),
    ("softmax", &[IO_F32, ENTRY], include_str!("shaders/softmax.wgsl")),
    ("copy", &[IO_WORDS, ENTRY], include_str!("shaders/copy.wgsl")),
    ("pad", &[IO_WORDS, ENTRY], include_str!("shaders/pad.wgsl")),
    ("transpose", &[IO_WORDS, ENTRY, DIMS6], include_str!("shaders/transpose.wgsl")),
    ("resize", &[IO_F32, ENTRY, SPATIAL], include_str!("shaders/resize.wgsl")),
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
    let (_, pieces, body) = FAMILIES.iter().find(|(n, _, _)| *n == base)?;
    let mut src = String::from(if f16 { "enable f16;\n" } else { "" });
    for piece in std::iter::once(&PRELUDE).chain(pieces.iter()).chain([body]) {
        src.push_str(piece);
        src.push('\n');
    }
    Some(if f16 { src.replace("alias WT = f32;", "alias WT = f16;") } else { src })
}

/// Every family's name (for tests that compile them all).
pub fn families() -> impl Iterator<Item = &'static str> {
    FAMILIES.iter().map(|(n, _, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_compose_prelude_pieces_and_body() {
        for name in families() {
            let src = source(name).unwrap();
            assert!(src.starts_with(PRELUDE), "{name}");
            assert_eq!(src.matches("fn main(").count(), 1, "{name} has one entry point");
        }
        let conv = source("conv_f16").unwrap();
        assert!(conv.starts_with("enable f16;\n") && conv.contains("alias WT = f16;") && !conv.contains("alias WT = f32;"));
        assert!(source("pool_f16").is_none() && source("nope").is_none());
    }

    /// Every family and f16 variant compiles on the first adapter (skipped where there is none).
    #[test]
    fn every_family_compiles() {
        let gpu = match crate::device::open(None) {
            Ok(g) => g,
            Err(why) => {
                eprintln!("SKIPPED, no GPU adapter: {why}");
                return;
            }
        };
        let f16 = F16_WEIGHTS.iter().filter(|_| gpu.has_f16()).map(|n| format!("{n}_f16"));
        for name in families().map(String::from).chain(f16) {
            let shader: &'static str = Box::leak(name.into_boxed_str());
            gpu.pipeline(&crate::device::PipelineKey { shader, constants: vec![] }).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
