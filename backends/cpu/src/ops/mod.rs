//! Op builders: from an IR op and its concrete shapes to a [`Kernel`], one file per op family.
//! Each family has `supports` (what dtypes/options it handles, with a reason when not) and
//! `build`.

mod conv;
mod data;
mod elementwise;
mod pool;
mod reduce;

use nnrt_core::{Activation, CompileCtx, DType, InputSource, Layout, OpId, OpKind, OperandId};

use crate::backend::{Built, Kernel};
use crate::kernels::Act;

/// Why the CPU backend cannot run `op`, or `Ok` when it can.
pub(crate) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).layout == Layout::Nchw && matches!(op.kind, OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::Pool2D(_)) {
            return Err(format!("operand {o} is NCHW; the CPU kernels are NHWC"));
        }
    }
    match &op.kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => conv::supports(ctx, id),
        OpKind::Pool2D(_) => pool::supports(ctx, id),
        OpKind::Binary { .. } | OpKind::Unary(_) | OpKind::Softmax { .. } | OpKind::Dequantize => elementwise::supports(ctx, id),
        OpKind::Reduce { .. } => reduce::supports(ctx, id),
        OpKind::Concatenation { .. } | OpKind::Reshape { .. } | OpKind::Transpose | OpKind::Pad | OpKind::MirrorPad(_) => data::supports(ctx, id),
        OpKind::Quantize => Err("quantized inference is not implemented yet".into()),
        OpKind::Custom { name, .. } => Err(format!("no kernel is registered for custom op '{name}'")),
        OpKind::If { .. } | OpKind::While { .. } => Err("control flow is not implemented yet".into()),
    }
}

/// Builds the kernel of `op` (packing constant weights now).
pub(crate) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    supports(ctx, id)?;
    match &ctx.graph.op(id).kind {
        OpKind::Conv2D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => conv::build(ctx, id),
        OpKind::Pool2D(_) => pool::build(ctx, id),
        OpKind::Binary { .. } | OpKind::Unary(_) | OpKind::Softmax { .. } | OpKind::Dequantize => elementwise::build(ctx, id),
        OpKind::Reduce { .. } => reduce::build(ctx, id),
        _ => data::build(ctx, id),
    }
}

/// Requires every present input and output of `op` to be float32.
pub(crate) fn all_f32(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        let operand = ctx.graph.operand(o);
        if operand.dtype != DType::F32 {
            let q = if operand.quant.is_quantized() { "quantized " } else { "" };
            return Err(format!("operand {o} is {q}{}; this CPU kernel handles float32 (quantized kernels are not implemented yet)", operand.dtype));
        }
    }
    Ok(())
}

/// The clamp of a fused activation and whether a tanh must follow. SIGN_BIT is refused by
/// `supports`.
pub(crate) fn fused(a: Activation) -> (Act, bool) {
    match a {
        Activation::None | Activation::SignBit => (Act::NONE, false),
        Activation::Relu => (Act::RELU, false),
        Activation::ReluN1To1 => (Act::RELU_N1_TO_1, false),
        Activation::Relu6 => (Act::RELU6, false),
        Activation::Tanh => (Act::NONE, true),
    }
}

/// Rejects the fused activations nnrt does not implement.
pub(crate) fn check_act(a: Activation) -> Result<(), String> {
    if a == Activation::SignBit {
        return Err("fused activation SIGN_BIT is not supported".into());
    }
    Ok(())
}

/// The values of a float32 constant operand.
pub(crate) fn const_f32(ctx: &CompileCtx, id: OperandId) -> Option<Vec<f32>> {
    let o = ctx.graph.operand(id);
    let d = o.data.as_ref()?;
    if o.dtype != DType::F32 {
        return None;
    }
    Some(d.bytes().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Where input `id` comes from at run time: the arena, or an aligned copy of its constant data.
pub(crate) fn source(ctx: &CompileCtx, id: OperandId) -> InputSource {
    InputSource::of(ctx.graph, ctx.dims(id), id)
}

/// Sources for every present input of `op`, in order.
pub(crate) fn sources(ctx: &CompileCtx, id: OpId) -> Vec<InputSource> {
    ctx.graph.op(id).inputs.iter().flatten().map(|&i| source(ctx, i)).collect()
}

/// A kernel made from a closure over (inputs, outputs).
pub(crate) struct FnKernel<F>(pub F);

impl<F> Kernel for FnKernel<F>
where
    F: FnMut(&[nnrt_core::TensorRef<'_>], &mut [nnrt_core::TensorMut<'_>]) -> Result<(), String> + Send,
{
    fn run(&mut self, ins: &[nnrt_core::TensorRef<'_>], outs: &mut [nnrt_core::TensorMut<'_>]) -> Result<(), String> {
        (self.0)(ins, outs)
    }
}

/// Boxes a closure kernel with its run-time inputs.
pub(crate) fn built<F>(inputs: Vec<InputSource>, f: F) -> Built
where
    F: FnMut(&[nnrt_core::TensorRef<'_>], &mut [nnrt_core::TensorMut<'_>]) -> Result<(), String> + Send + 'static,
{
    Built { kernel: Box::new(FnKernel(f)), inputs }
}
