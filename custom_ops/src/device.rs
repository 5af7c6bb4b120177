//! Device ops: custom ops a driver (plugin ABI version 2) runs on an accelerator, with nnrt
//! doing the host side. Today that is the Edge TPU's `edgetpu-custom-op`: at prepare its options
//! are read as a DarwiNN package ([`nnrt_loaders::darwinn`]), the runnable executable's layers
//! are matched to the op's tensors by name and the driver's init gets the option bytes; at run
//! each input is laid out for its layer (quantized with the layer's numerics when the tensor is
//! float, padded, sign bits flipped for the signed types), the driver fills one buffer per output
//! layer in the device's tile layout, and each is re-laid out to YXZ and written to its tensor
//! (dequantized when the tensor is float). Outputs named `NAME_variable_output` carry the new
//! state of input `NAME` (a compiled LSTM's): the op keeps it and feeds it back on the next run,
//! as TFLite keeps a variable tensor.

use std::ffi::CString;
use std::sync::Arc;

use nnrt_core::{CompileCtx, CompileError, DType, InputSource, OpId, OpIo, RunError, TensorArena};
use nnrt_loaders::darwinn::check::{match_op, LayerMatch, OpTensor, OutputTarget};
use nnrt_loaders::darwinn::{self, host, Layer};
use nnrt_loaders::format::EDGETPU_CUSTOM_OP;

use crate::plugin::{DeviceDriverOp, DeviceOpState};

/// One device op, prepared: the driver's state, the layers and their buffers.
pub(crate) struct DeviceStep {
    name: String,
    io: OpIo,
    state: DeviceOpState,
    inputs: Vec<Layer>,
    outputs: Vec<Layer>,
    names_in: Vec<CString>,
    names_out: Vec<CString>,
    matched: LayerMatch,
    /// Device-layout buffers, one per layer (`size_bytes`).
    in_bufs: Vec<Vec<u8>>,
    out_bufs: Vec<Vec<u8>>,
    /// State written back by `*_variable_output` layers, per input layer (YXZ, two's complement).
    states: Vec<Option<Vec<u8>>>,
}

fn size(l: &Layer) -> Result<usize, String> {
    usize::try_from(l.size_bytes).map_err(|_| format!("layer '{}' has size_bytes {}", l.name, l.size_bytes))
}

fn zeroed(n: usize) -> Result<Vec<u8>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| format!("cannot allocate {n} bytes for a device buffer"))?;
    v.resize(n, 0);
    Ok(v)
}

/// Prepares op `id` (custom op `name` with `options`) for `driver`.
pub(crate) fn prepare(ctx: &CompileCtx, id: OpId, name: &str, options: &[u8], driver: &Arc<DeviceDriverOp>) -> Result<DeviceStep, CompileError> {
    let fail = |reason: String| CompileError::InvalidOp { op: id, kind: name.to_string(), reason };
    if name != EDGETPU_CUSTOM_OP {
        return Err(fail(format!(
            "{} registers a {} driver for '{name}', but nnrt has no host side for that op (it has one for '{EDGETPU_CUSTOM_OP}')",
            driver.origin(),
            driver.device()
        )));
    }
    let op = ctx.graph.op(id);
    let opts = darwinn::read_options(options).map_err(|e| fail(e.to_string()))?;
    let exe = opts.packages.iter().find_map(|p| p.runnable()).ok_or_else(|| fail("no package holds a runnable executable".into()))?;
    let in_ids: Vec<_> = op.inputs.iter().flatten().copied().collect();
    let tensors = |ids: &[nnrt_core::OperandId]| -> Vec<OpTensor<'_>> {
        ids.iter()
            .map(|&o| {
                let operand = ctx.graph.operand(o);
                OpTensor { name: &operand.name, dims: ctx.dims(o), elem_bytes: operand.dtype.size(), is_float: operand.dtype == DType::F32 }
            })
            .collect()
    };
    let matched = match_op(exe, &tensors(&in_ids), &tensors(&op.outputs)).map_err(|e| fail(e.to_string()))?;
    for l in exe.input_layers.iter().chain(&exe.output_layers) {
        host::supported(l).map_err(&fail)?;
    }
    let cstr = |l: &Layer| CString::new(l.name.clone()).map_err(|_| fail(format!("layer name '{}' holds a NUL byte", l.name.escape_debug())));
    let names_in = exe.input_layers.iter().map(cstr).collect::<Result<Vec<_>, _>>()?;
    let names_out = exe.output_layers.iter().map(cstr).collect::<Result<Vec<_>, _>>()?;
    let bufs = |layers: &[Layer]| layers.iter().map(|l| size(l).and_then(zeroed)).collect::<Result<Vec<_>, String>>();
    let in_bufs = bufs(&exe.input_layers).map_err(&fail)?;
    let out_bufs = bufs(&exe.output_layers).map_err(&fail)?;
    let state = driver.init(options).map_err(&fail)?;
    log::info!(
        "op {id} {name}: {} driver for chip '{}' (package needs runtime version {}), {} input and {} output layers",
        driver.device(),
        exe.chip.as_deref().unwrap_or("?"),
        opts.packages[0].min_runtime_version,
        exe.input_layers.len(),
        exe.output_layers.len()
    );
    let inputs = in_ids.iter().map(|&i| InputSource::of(ctx.graph, ctx.dims(i), i)).collect();
    Ok(DeviceStep {
        name: name.to_string(),
        io: OpIo::new(id, inputs, op.outputs.clone()),
        state,
        states: vec![None; exe.input_layers.len()],
        inputs: exe.input_layers.clone(),
        outputs: exe.output_layers.clone(),
        names_in,
        names_out,
        matched,
        in_bufs,
        out_bufs,
    })
}

impl DeviceStep {
    /// Runs one inference: host-side input layout, the driver, host-side output re-layout.
    pub(crate) fn run(&mut self, arena: &mut TensorArena) -> Result<(), RunError> {
        let op = self.io.op;
        let kind = self.name.clone();
        let fail = |reason: String| RunError::Kernel { op, kind: kind.clone(), reason };
        let (ins, mut outs) = self.io.views(arena)?;
        for (k, l) in self.inputs.iter().enumerate() {
            let t = &ins[self.matched.inputs[k]];
            let quantized;
            let plain: &[u8] = match (&self.states[k], t.dtype) {
                (Some(state), _) => state,
                (None, DType::F32) => {
                    let values = nnrt_core::cast::<f32>(t.bytes).map_err(&fail)?;
                    let mut q = zeroed(l.actual_bytes().unwrap_or(0)).map_err(&fail)?;
                    host::quantize(l.data_type, l.numerics, values, &mut q).map_err(|e| fail(format!("input layer '{}': {e}", l.name)))?;
                    quantized = q;
                    &quantized
                }
                (None, _) => t.bytes,
            };
            host::pack_input(l, plain, &mut self.in_bufs[k]).map_err(&fail)?;
        }
        {
            let ins: Vec<_> = self.names_in.iter().zip(&self.in_bufs).map(|(n, b)| (n.as_c_str(), b.as_slice())).collect();
            let mut outs: Vec<_> = self.names_out.iter().zip(self.out_bufs.iter_mut()).map(|(n, b)| (n.as_c_str(), b.as_mut_slice())).collect();
            self.state.run(&ins, &mut outs).map_err(&fail)?;
        }
        for (k, l) in self.outputs.iter().enumerate() {
            let mut plain = zeroed(l.actual_bytes().unwrap_or(0)).map_err(&fail)?;
            host::relayout(l, &self.out_bufs[k], &mut plain).map_err(|e| fail(format!("output layer '{}': {e}", l.name)))?;
            host::flip_sign(l.data_type, &mut plain);
            match self.matched.outputs[k] {
                OutputTarget::State(i) => self.states[i] = Some(plain),
                OutputTarget::Output(i) => {
                    let t = &mut outs[i];
                    if t.dtype == DType::F32 {
                        let mut values = vec![0f32; t.bytes.len() / 4];
                        host::dequantize(l.data_type, l.numerics, &plain, &mut values).map_err(|e| fail(format!("output layer '{}': {e}", l.name)))?;
                        for (b, v) in t.bytes.chunks_exact_mut(4).zip(&values) {
                            b.copy_from_slice(&v.to_le_bytes());
                        }
                    } else if t.bytes.len() == plain.len() {
                        t.bytes.copy_from_slice(&plain);
                    } else {
                        return Err(fail(format!("output layer '{}' has {} bytes for a tensor of {}", l.name, plain.len(), t.bytes.len())));
                    }
                }
            }
        }
        Ok(())
    }
}
