//! # nnrt-custom-ops
//!
//! Custom operators: kernels registered by name, either through the API (a Rust closure, what
//! `nnfw_register_custom_op_info` wraps) or loaded from plugins (shared libraries implementing
//! `include/nnrt_plugin.h`; write them in C, or in safe Rust with `nnrt-plugin-sdk`), and the
//! `custom` backend that runs them. A custom op the model uses but nobody registered fails at
//! prepare, naming the op. A plugin may give a shape function per op; the backend answers core's
//! shape inference with it ([`Backend::output_shapes`]), so outputs need not be known in the model.
//!
//! Depends on `nnrt-core`, libloading and the SDK's ABI types. All `unsafe` is in `plugin`.

#![deny(unsafe_code)]

mod device;
mod plugin;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use nnrt_core::{
    Backend, CompileCtx, CompileError, DType, Executable, InputSource, OpId, OpIo, OpKind, Quantization, RunError, Subgraph, Support,
    TensorArena, TensorMut, TensorRef,
};

pub use plugin::{DeviceDriverOp, DeviceOpState, PluginError, PluginLibrary, PluginOp};

/// The session configuration key that lets a session load the shared libraries in its package's
/// `custom_op/` folder (`1`, `true`, `yes` or `on`). Only the caller can set it: a package's own
/// cfg files cannot.
pub const ALLOW_PACKAGE_PLUGINS: &str = "ALLOW_PACKAGE_PLUGINS";

/// The session configuration key naming device driver libraries to load at prepare (paths
/// separated by `;`). Only the caller can set it: a package's own cfg files cannot, since it
/// loads code.
pub const DEVICE_LIB: &str = "DEVICE_LIB";

/// A custom op's kernel: reads the inputs, writes the (preallocated) outputs, given the op's
/// option bytes from the model. An `Err` becomes a typed run error naming the op.
pub type EvalFn = Arc<dyn Fn(&[TensorRef<'_>], &mut [TensorMut<'_>], &[u8]) -> Result<(), String> + Send + Sync>;

/// An input as a shape function sees it.
#[derive(Clone, Copy, Debug)]
pub struct ShapeInput<'a> {
    /// Element type.
    pub dtype: DType,
    /// Dims known at this point of shape inference.
    pub dims: &'a [usize],
    /// Per-tensor quantization (zeros when none).
    pub quant: QuantDesc,
    /// The bytes when the input is a constant of the model.
    pub data: Option<&'a [u8]>,
}

/// A custom op's shape function: input types and dims (and constant data), option bytes → the
/// dims of each output. Called at prepare, before memory is planned.
pub type ShapeFn = Arc<dyn Fn(&[ShapeInput<'_>], &[u8]) -> Result<Vec<Vec<usize>>, String> + Send + Sync>;

/// Per-tensor quantization as plugins see it; `scale` 0 means none (or per-axis).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QuantDesc {
    /// Scale.
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
}

impl QuantDesc {
    fn of(q: &Quantization) -> QuantDesc {
        match q {
            Quantization::PerTensor { scale, zero_point } => QuantDesc { scale: *scale, zero_point: *zero_point as i32 },
            _ => QuantDesc::default(),
        }
    }
}

#[derive(Clone)]
enum Kernel {
    Rust { eval: EvalFn, shape: Option<ShapeFn> },
    Plugin(Arc<PluginOp>),
    /// A device driver (plugin ABI version 2): nnrt does the host side (see `device`).
    Device(Arc<DeviceDriverOp>),
}

/// Custom op kernels by name.
#[derive(Clone, Default)]
pub struct Registry {
    ops: BTreeMap<String, Kernel>,
}

impl Registry {
    /// Registers (or replaces) the kernel of custom op `name`; outputs keep their declared shapes.
    pub fn register(&mut self, name: impl Into<String>, eval: EvalFn) {
        self.ops.insert(name.into(), Kernel::Rust { eval, shape: None });
    }

    /// Registers (or replaces) the kernel of custom op `name` with a shape function for outputs
    /// the model leaves unknown.
    pub fn register_with_shape(&mut self, name: impl Into<String>, eval: EvalFn, shape: ShapeFn) {
        self.ops.insert(name.into(), Kernel::Rust { eval, shape: Some(shape) });
    }

    /// Loads the plugin at `path` and registers (or replaces) every op it provides; returns their
    /// names.
    pub fn load_library(&mut self, path: impl AsRef<Path>) -> Result<Vec<String>, PluginError> {
        let lib = PluginLibrary::load(path.as_ref())?;
        Ok(self.add_plugin(&lib, true))
    }

    /// Registers the ops of a loaded plugin; with `replace` false, ops that already have a kernel
    /// keep it. Returns the names registered.
    pub fn add_plugin(&mut self, lib: &PluginLibrary, replace: bool) -> Vec<String> {
        let mut added = Vec::new();
        for op in lib.ops() {
            if replace || !self.ops.contains_key(op.name()) {
                self.ops.insert(op.name().to_string(), Kernel::Plugin(op.clone()));
                added.push(op.name().to_string());
            }
        }
        for op in lib.device_ops() {
            if replace || !self.ops.contains_key(op.name()) {
                self.ops.insert(op.name().to_string(), Kernel::Device(op.clone()));
                added.push(op.name().to_string());
            }
        }
        added
    }

    /// The device driver registered for custom op `name`, if its kernel is one.
    pub fn device_driver(&self, name: &str) -> Option<&Arc<DeviceDriverOp>> {
        match self.ops.get(name) {
            Some(Kernel::Device(d)) => Some(d),
            _ => None,
        }
    }

    /// Whether `name` has a kernel.
    pub fn contains(&self, name: &str) -> bool {
        self.ops.contains_key(name)
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.ops.keys().map(String::as_str)
    }
}

/// Whether a file name looks like a shared library (`.so`, `.so.N`, `.dylib`, `.dll`).
pub fn is_shared_library(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".so") || lower.contains(".so.") || lower.ends_with(".dylib") || lower.ends_with(".dll")
}

/// The backend (id `custom`) that runs registered custom ops.
pub struct CustomOpBackend {
    registry: Registry,
}

impl CustomOpBackend {
    /// A backend over a snapshot of `registry`.
    pub fn new(registry: Registry) -> CustomOpBackend {
        CustomOpBackend { registry }
    }
}

impl Backend for CustomOpBackend {
    fn id(&self) -> &str {
        nnrt_core::partition::CUSTOM
    }

    fn supports(&self, ctx: &CompileCtx, op: OpId) -> Support {
        match &ctx.graph.op(op).kind {
            OpKind::Custom { name, .. } if self.registry.contains(name) => Support::Yes,
            OpKind::Custom { name, .. } => Support::No(format!("no kernel is registered for custom op '{name}'")),
            other => Support::No(format!("{} is a builtin op", other.name())),
        }
    }

    fn output_shapes(&self, graph: &Subgraph, op: OpId, shapes: &[Option<Vec<usize>>]) -> Option<Result<Vec<Vec<usize>>, CompileError>> {
        let operation = graph.op(op);
        let OpKind::Custom { name, options } = &operation.kind else { return None };
        let kernel = self.registry.ops.get(name)?;
        if let Kernel::Rust { shape: None, .. } = kernel {
            return None;
        }
        if matches!(kernel, Kernel::Plugin(p) if !p.has_shape_fn()) || matches!(kernel, Kernel::Device(_)) {
            return None;
        }
        let fail = |reason: String| CompileError::InvalidOp { op, kind: name.clone(), reason };
        let mut ins = Vec::new();
        for (i, &id) in operation.inputs.iter().flatten().enumerate() {
            let o = graph.operand(id);
            let Some(dims) = shapes.get(id.index()).and_then(|s| s.as_deref()) else {
                return Some(Err(fail(format!("the shape of input {i} is not known when this op runs"))));
            };
            ins.push(ShapeInput { dtype: o.dtype, dims, quant: QuantDesc::of(&o.quant), data: o.data.as_ref().map(|d| d.bytes()) });
        }
        let result = match kernel {
            Kernel::Rust { shape: Some(f), .. } => f(&ins, options),
            Kernel::Plugin(p) => {
                let outs: Vec<(DType, QuantDesc)> = operation.outputs.iter().map(|&o| (graph.operand(o).dtype, QuantDesc::of(&graph.operand(o).quant))).collect();
                p.infer_shape(&ins, &outs, options)?
            }
            Kernel::Rust { shape: None, .. } | Kernel::Device(_) => return None,
        };
        Some(match result {
            Ok(dims) if dims.len() == operation.outputs.len() => Ok(dims),
            Ok(dims) => Err(fail(format!("the shape function gave {} shapes for {} outputs", dims.len(), operation.outputs.len()))),
            Err(reason) => Err(fail(reason)),
        })
    }

    fn compile(&self, ctx: &CompileCtx, ops: &[OpId]) -> Result<Box<dyn Executable>, CompileError> {
        let mut steps = Vec::with_capacity(ops.len());
        for &id in ops {
            let op = ctx.graph.op(id);
            let OpKind::Custom { name, options } = &op.kind else {
                return Err(CompileError::InvalidOp { op: id, kind: op.kind.name().to_string(), reason: "not a custom op".into() });
            };
            let kernel = self.registry.ops.get(name).cloned().ok_or_else(|| CompileError::CustomOpNotFound { op: id, name: name.clone() })?;
            if let Kernel::Device(driver) = &kernel {
                steps.push(StepRun::Device(device::prepare(ctx, id, name, options, driver)?));
                continue;
            }
            let ins: Vec<_> = op.inputs.iter().flatten().copied().collect();
            if matches!(kernel, Kernel::Plugin(_)) {
                if let Some(&big) = ins.iter().chain(&op.outputs).find(|&&o| ctx.dims(o).len() > nnrt_plugin_sdk::abi::NNRT_PLUGIN_MAX_RANK) {
                    return Err(CompileError::InvalidOp {
                        op: id,
                        kind: name.clone(),
                        reason: format!("operand {big} has rank {}, above the plugin ABI's limit of {}", ctx.dims(big).len(), nnrt_plugin_sdk::abi::NNRT_PLUGIN_MAX_RANK),
                    });
                }
            }
            let quant = |ids: &[nnrt_core::OperandId]| ids.iter().map(|&o| QuantDesc::of(&ctx.graph.operand(o).quant)).collect();
            let inputs = ins.iter().map(|&i| InputSource::of(ctx.graph, ctx.dims(i), i)).collect();
            steps.push(StepRun::Kernel(Step {
                name: name.clone(),
                options: options.clone(),
                in_quant: quant(&ins),
                out_quant: quant(&op.outputs),
                kernel,
                io: OpIo::new(id, inputs, op.outputs.clone()),
            }));
        }
        Ok(Box::new(CustomExecutable { steps }))
    }
}

struct Step {
    name: String,
    options: Vec<u8>,
    in_quant: Vec<QuantDesc>,
    out_quant: Vec<QuantDesc>,
    kernel: Kernel,
    io: OpIo,
}

enum StepRun {
    Kernel(Step),
    Device(device::DeviceStep),
}

struct CustomExecutable {
    steps: Vec<StepRun>,
}

impl Executable for CustomExecutable {
    fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        for s in &mut self.steps {
            let s = match s {
                StepRun::Kernel(s) => s,
                StepRun::Device(d) => {
                    d.run(arena)?;
                    continue;
                }
            };
            let (mut ins, mut outs) = (nnrt_core::InputViews::new(), nnrt_core::OutputViews::new());
            s.io.views_into(arena, &mut ins, &mut outs)?;
            let result = match &s.kernel {
                Kernel::Rust { eval, .. } => eval(&ins, &mut outs, &s.options),
                Kernel::Plugin(p) => p.eval(&ins, &s.in_quant, &mut outs, &s.out_quant, &s.options),
                Kernel::Device(_) => Err("a device op reached the kernel path".into()),
            };
            result.map_err(|reason| RunError::Kernel { op: s.io.op, kind: s.name.clone(), reason })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_library_names() {
        for yes in ["libfoo.so", "libfoo.so.1", "foo.dylib", "FOO.DLL"] {
            assert!(is_shared_library(yes), "{yes}");
        }
        for no in ["README.md", "kernel.cl", "foo.sox"] {
            assert!(!is_shared_library(no), "{no}");
        }
    }

    #[test]
    fn a_missing_library_is_a_clear_error() {
        let e = Registry::default().load_library("/nonexistent/libnope.so").unwrap_err();
        assert!(matches!(e, PluginError::Open { .. }), "{e}");
        assert_eq!(e.to_string().matches("/nonexistent/libnope.so").count(), 1, "named once: {e}");
    }
}
