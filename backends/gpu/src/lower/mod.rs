//! Lowering: each supported op becomes one or more shader dispatches (or an alias, for ops that
//! only relabel dims). The same code answers `supports` (a lowering error is the reason the op
//! falls back) and builds the dispatches at compile, so the two can never disagree.
//!
//! One module per op family; each family's `register` lists its ops by [`OpKind::name`], one
//! line per group of ops sharing a lowering, and [`lower`] looks an op up there. An op no family
//! lists has no gpu kernel.

mod binary;
mod conv;
mod cx;
mod layout;
mod matmul;
mod pool;
mod reduce;
mod unary;

use std::collections::HashMap;
use std::sync::OnceLock;

use nnrt_core::{CompileCtx, OpId, OpKind, OpRegistry, OperandId};

use crate::device::PipelineKey;
use cx::{no_kernel, Cx, R};

/// A buffer a dispatch binds: a tensor of the graph or a constant uploaded at compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Buf {
    Tensor(OperandId),
    Const(usize),
}

/// One compute dispatch.
#[derive(Debug)]
pub(crate) struct Dispatch {
    pub key: PipelineKey,
    pub params: Vec<u32>,
    /// Bindings 1.. in order; the last one is written, the others are read.
    pub bufs: Vec<Buf>,
    pub groups: [u32; 3],
}

/// What one op lowers to.
#[derive(Debug)]
pub(crate) enum Lowered {
    /// Dispatches run in order; they write the op's output.
    Dispatches(Vec<Dispatch>),
    /// The output is the input's buffer with other dims (reshape, squeeze, expand dims).
    Alias { from: Buf, to: OperandId },
}

/// The adapter limits lowering checks against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_binding: u64,
    pub max_groups: u32,
    pub max_storage: u32,
    /// Whether shaders may use f16.
    pub f16: bool,
}

impl Limits {
    pub fn of(gpu: &crate::Gpu) -> Limits {
        let l = &gpu.limits;
        Limits {
            max_binding: l.max_storage_buffer_binding_size.min(l.max_buffer_size),
            max_groups: l.max_compute_workgroups_per_dimension,
            max_storage: l.max_storage_buffers_per_shader_stage,
            f16: gpu.has_f16(),
        }
    }
}

/// Constants the lowered ops bind, uploaded once at compile.
#[derive(Default)]
pub(crate) struct Consts {
    pub data: Vec<Vec<u8>>,
    /// Constants already uploaded, by operand and whether stored as f16.
    by_operand: HashMap<(OperandId, bool), usize>,
    /// Only deciding support: constants are numbered but their bytes are not made.
    probe: bool,
}

impl Consts {
    /// Constants of a lowering that only answers `supports` (no bytes copied or converted).
    pub fn probe() -> Consts {
        Consts { probe: true, ..Consts::default() }
    }

    /// Adds a constant whose bytes `make` produces (not called when probing).
    fn push(&mut self, make: impl FnOnce() -> Vec<u8>) -> Buf {
        self.data.push(if self.probe { Vec::new() } else { make() });
        Buf::Const(self.data.len() - 1)
    }

    /// The constant of operand `id` (as f16 or not), added by `make` on first use.
    fn operand(&mut self, id: OperandId, f16: bool, make: impl FnOnce() -> Vec<u8>) -> Buf {
        if let Some(&k) = self.by_operand.get(&(id, f16)) {
            return Buf::Const(k);
        }
        let b = self.push(make);
        if let Buf::Const(k) = b {
            self.by_operand.insert((id, f16), k);
        }
        b
    }
}

/// Lowers one op of a family; `kind` is the op's kind (found under its name).
type LowerFn = fn(&mut Cx<'_, '_>, &OpKind) -> R<Lowered>;

/// Op name ([`OpKind::name`]) → its lowering, filled by each family's `register`.
type Registry = OpRegistry<LowerFn>;

/// Every family's ops.
fn registry() -> &'static Registry {
    static ALL: OnceLock<Registry> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut r = Registry::default();
        for register in [conv::register, matmul::register, pool::register, binary::register, unary::register, reduce::register, layout::register] {
            register(&mut r);
        }
        r
    })
}

/// Lowers op `op` of `ctx.graph`; the error is why the gpu cannot run it.
pub(crate) fn lower(ctx: &CompileCtx, op: OpId, consts: &mut Consts, limits: Limits) -> R<Lowered> {
    let kind = &ctx.graph.op(op).kind;
    // No custom op is registered: one that shares a builtin's name is not that builtin.
    let Some(lower) = registry().get(kind) else { return no_kernel(kind) };
    lower(&mut Cx { ctx, op, consts, limits }, kind)
}

#[cfg(test)]
mod tests {
    use super::cx::{act_code, pad6, strides};
    use super::*;
    use nnrt_core::{Activation, BinaryOp, DType};

    #[test]
    fn pad6_and_strides() {
        assert_eq!(pad6(&[2, 3]).unwrap(), [1, 1, 1, 1, 2, 3]);
        assert!(pad6(&[1; 7]).is_err());
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
    }

    /// An ADD of two [n] float tensors, lowered under `limits`.
    fn lower_add(n: usize, limits: Limits) -> R<Lowered> {
        lower_binary_kind(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, n, limits)
    }

    /// An op of kind `kind` on two [n] float tensors, lowered under `limits`.
    fn lower_binary_kind(kind: OpKind, n: usize, limits: Limits) -> R<Lowered> {
        use nnrt_core::{Config, Operand, Operation, Subgraph};
        let mut g = Subgraph::default();
        let a = g.add_operand(Operand::new("a", DType::F32, &[n]));
        let b = g.add_operand(Operand::new("b", DType::F32, &[n]));
        let o = g.add_operand(Operand::new("o", DType::F32, &[n]));
        g.add_op(Operation { kind, inputs: vec![Some(a), Some(b)], outputs: vec![o] });
        let shapes = vec![vec![n]; 3];
        let config = Config::default();
        let origin = [OpId::new(0)];
        let ctx = CompileCtx { graph: &g, shapes: &shapes, threads: 1, config: &config, origin: &origin };
        lower(&ctx, OpId::new(0), &mut Consts::default(), limits)
    }

    #[test]
    fn adapter_limits_refuse_with_a_reason() {
        let roomy = Limits { max_binding: 1 << 27, max_groups: 65535, max_storage: 8, f16: false };
        assert!(lower_add(1000, roomy).is_ok());
        let small_binding = Limits { max_binding: 1024, ..roomy };
        let e = lower_add(1000, small_binding).unwrap_err();
        assert!(e.contains("storage binding limit (1024 bytes)"), "{e}");
        // 1,000,000 threads need 15,625 workgroups: over a 100x100 grid.
        let small_grid = Limits { max_groups: 100, ..roomy };
        let e = lower_add(1_000_000, small_grid).unwrap_err();
        assert!(e.contains("workgroup grid"), "{e}");
        // 19,200 threads are 300 workgroups: they fit a 100x100 grid as 2-D.
        match lower_add(19_200, small_grid).unwrap() {
            Lowered::Dispatches(d) => assert!(d[0].groups[0] <= 100 && d[0].groups[1] > 1, "{:?}", d[0].groups),
            Lowered::Alias { .. } => panic!("an add is not an alias"),
        }
        let few_bindings = Limits { max_storage: 2, ..roomy };
        let e = lower_add(10, few_bindings).unwrap_err();
        assert!(e.contains("storage buffers"), "{e}");
    }

    #[test]
    fn activations_map_to_shader_codes() {
        assert_eq!(act_code(Activation::Relu6).unwrap(), 3);
        assert!(act_code(Activation::SignBit).is_err());
    }

    /// The ops the families list: every op the gpu lowers or refuses with a reason of its own.
    #[test]
    fn registry_lists_each_family_op_once() {
        let mut names: Vec<&str> = registry().builtin_names().collect();
        names.sort_unstable();
        let mut want = vec![
            "Conv2D", "DepthwiseConv2D", "FullyConnected", "BatchMatMul", "AveragePool2D", "MaxPool2D", "L2Pool2D", "ResizeBilinear", "ResizeNearestNeighbor",
            "Add", "Sub", "Mul", "Div", "Pow", "SquaredDifference", "Maximum", "Minimum", "FloorDiv", "FloorMod",
            "Relu", "Relu6", "ReluN1To1", "Tanh", "Logistic", "HardSwish", "LeakyRelu", "Relu0To1", "Elu", "Gelu", "Abs", "Neg", "Exp", "Log", "Sqrt", "Rsqrt", "Square", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign", "LogicalNot",
            "Mean", "Sum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceAny", "ReduceAll", "Softmax", "LogSoftmax",
            "Concatenation", "Pad", "Transpose", "Reshape", "Squeeze", "ExpandDims",
        ];
        want.sort_unstable();
        assert_eq!(names, want);
    }

    #[test]
    fn unlisted_ops_and_namesakes_have_no_kernel() {
        let roomy = Limits { max_binding: 1 << 27, max_groups: 65535, max_storage: 8, f16: false };
        let e = lower_binary_kind(OpKind::Atan2, 10, roomy).unwrap_err();
        assert_eq!(e, "Atan2 has no gpu kernel");
        // A custom op that shares a builtin's name is not that builtin.
        let custom = OpKind::Custom { name: "Add".into(), options: vec![] };
        assert_eq!(lower_binary_kind(custom, 10, roomy).unwrap_err(), "Add has no gpu kernel");
    }
}
