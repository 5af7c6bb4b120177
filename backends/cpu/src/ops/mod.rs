//! Op builders: from an IR op and its concrete shapes to a [`Kernel`](crate::kernel::Kernel),
//! one file per op family. Each family builds its float and its quantized kernels (the dtype is
//! a branch inside the family) and names its ops in its `register` (`OpKind::name()`s, custom
//! ops apart), with its `supports` (what dtypes and options it handles, with a reason when not)
//! and its `build`. Adding an op to a family touches that family's file only.

/// Calls `$body` with `$t` bound to the Rust type of a quantized integer dtype.
macro_rules! by_qtype {
    ($dtype:expr, |$t:ident| $body:expr) => {
        match $dtype {
            DType::U8 => {
                type $t = u8;
                $body
            }
            DType::I8 => {
                type $t = i8;
                $body
            }
            DType::I16 => {
                type $t = i16;
                $body
            }
            other => return Err(format!("{other} is not a quantized integer type")),
        }
    };
}

mod arith;
mod conv;
mod data;
mod elementwise;
mod fft;
mod int_chain;
mod int_forms;
mod fuse;
mod fuse_act;
mod generate;
mod logic;
mod lstm;
mod matmul;
mod matrix;
mod mediapipe;
mod movement;
mod pool;
mod quantize;
mod reduce;
mod resize;
mod rnn;
mod scan;
mod scatter;
mod select;
mod softmax;
mod tosa_fuse;
mod transpose_conv_padded;
mod util;

use std::sync::OnceLock;

use nnrt_core::{CompileCtx, OpId, OpKind, OpRegistry};

use crate::kernel::Built;

pub(crate) use fuse::{fuse_block, fuse_padded_residual, fuse_pair};
pub(crate) use util::fusion_off;
pub(crate) use fuse_act::fuse_conv_act;
pub(crate) use int_chain::{fuse_int_chain, Form as IntChainForm, IntChain};
pub(crate) use tosa_fuse::fuse_rescale_chain;
pub(crate) use mediapipe::{is_builtin_custom, output_dims as custom_output_dims};

/// Why the CPU backend cannot run an op, or `Ok` when it can.
type SupportsFn = fn(&CompileCtx, OpId) -> Result<(), String>;
/// Builds an op's kernel.
type BuildFn = fn(&CompileCtx, OpId) -> Result<Built, String>;
/// Whether an op takes its family's integer kernels rather than its float ones (the family's
/// dtype branch: usually whether its first input is quantized).
type QuantizedFn = fn(&CompileCtx, OpId) -> bool;

/// How one op is checked and built: the float (or type-generic) kernels, and the integer ones
/// with the test that picks them.
#[derive(Clone, Copy)]
struct Entry {
    supports: SupportsFn,
    build: BuildFn,
    int: Option<(QuantizedFn, SupportsFn, BuildFn)>,
}

impl Entry {
    /// The `supports` and `build` that handle `op`.
    fn pick(&self, ctx: &CompileCtx, id: OpId) -> (SupportsFn, BuildFn) {
        match self.int {
            Some((quantized, supports, build)) if quantized(ctx, id) => (supports, build),
            _ => (self.supports, self.build),
        }
    }
}

/// Every op the CPU backend runs, an [`OpRegistry`] of [`Entry`]s: builtin ops by
/// `OpKind::name()`, custom ops by their name (kept apart, so a custom op named like a builtin
/// is never taken for it).
#[derive(Default)]
pub(crate) struct Registry(OpRegistry<Entry>);

impl Registry {
    /// Registers builtin ops by their `OpKind::name()`, all built by one family's `supports`
    /// and `build`.
    pub(crate) fn ops(&mut self, names: &[&'static str], supports: SupportsFn, build: BuildFn) {
        self.0.ops(names, Entry { supports, build, int: None });
    }

    /// Registers builtin ops that also have integer kernels: `int` holds the family's test
    /// that picks them for an op and their `supports` and `build`.
    pub(crate) fn ops_with_int(&mut self, names: &[&'static str], supports: SupportsFn, build: BuildFn, int: (QuantizedFn, SupportsFn, BuildFn)) {
        self.0.ops(names, Entry { supports, build, int: Some(int) });
    }

    /// Registers custom ops by name (kernels built into this backend, like MediaPipe's).
    pub(crate) fn customs(&mut self, names: &[&'static str], supports: SupportsFn, build: BuildFn) {
        self.0.customs(names, Entry { supports, build, int: None });
    }

    fn get(&self, kind: &OpKind) -> Option<&Entry> {
        self.0.get(kind)
    }
}

/// The registry, built on first use from each family's `register`.
fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut r = Registry::default();
        arith::register(&mut r);
        conv::register(&mut r);
        data::register(&mut r);
        elementwise::register(&mut r);
        fft::register(&mut r);
        generate::register(&mut r);
        logic::register(&mut r);
        lstm::register(&mut r);
        matmul::register(&mut r);
        matrix::register(&mut r);
        mediapipe::register(&mut r);
        movement::register(&mut r);
        pool::register(&mut r);
        quantize::register(&mut r);
        reduce::register(&mut r);
        resize::register(&mut r);
        rnn::register(&mut r);
        scan::register(&mut r);
        scatter::register(&mut r);
        transpose_conv_padded::register(&mut r);
        select::register(&mut r);
        softmax::register(&mut r);
        r
    })
}

/// Why the CPU backend cannot run `op`, or `Ok` when it can.
pub(crate) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let kind = &ctx.graph.op(id).kind;
    match registry().get(kind) {
        Some(entry) => entry.pick(ctx, id).0(ctx, id),
        None => Err(match kind {
            OpKind::Custom { name, .. } => format!("no kernel is registered for custom op '{name}'"),
            OpKind::If { .. } | OpKind::While { .. } => "control flow is not implemented yet".into(),
            _ => "the CPU backend has no kernel for this op".into(),
        }),
    }
}

/// Builds the kernel of `op` (packing constant weights now).
pub(crate) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    match registry().get(&ctx.graph.op(id).kind) {
        Some(entry) => entry.pick(ctx, id).1(ctx, id),
        None => Err("the CPU backend has no kernel for this op".into()),
    }
}

#[cfg(test)]
mod tests {
    use nnrt_core::{Activation, BinaryOp, CompileCtx, Config, DType, OpId, OpKind, Operand, Operation, Subgraph};

    /// `supports` for a graph of one `kind` op over two float32 [4] tensors.
    fn supports_of(kind: OpKind) -> Result<(), String> {
        let mut g = Subgraph::default();
        let a = g.add_operand(Operand::new("a", DType::F32, &[4]));
        let b = g.add_operand(Operand::new("b", DType::F32, &[4]));
        let o = g.add_operand(Operand::new("o", DType::F32, &[4]));
        g.add_op(Operation { kind, inputs: vec![Some(a), Some(b)], outputs: vec![o] });
        let (shapes, config, origin) = (vec![vec![4]; 3], Config::default(), [OpId::new(0)]);
        super::supports(&CompileCtx { graph: &g, shapes: &shapes, threads: 1, config: &config, origin: &origin }, OpId::new(0))
    }

    /// Builtins are found by `OpKind::name()`; a custom op named like a builtin is not taken
    /// for it, while the MediaPipe customs this backend builds are found by their names.
    #[test]
    fn builtins_by_name_customs_apart() {
        assert_eq!(supports_of(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }), Ok(()));
        let custom = |name: &str| supports_of(OpKind::Custom { name: name.into(), options: Vec::new() });
        assert_eq!(custom("Add"), Err("no kernel is registered for custom op 'Add'".into()));
        let mediapipe = custom("MaxUnpooling2D").unwrap_err();
        assert!(!mediapipe.contains("no kernel is registered"), "{mediapipe}");
    }
}
