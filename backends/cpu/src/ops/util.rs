//! Helpers the op families share: operand sources, constants, dtype and quantization checks,
//! fused activations. A leaf of `ops`: it imports no family.

use nnrt_core::{cast, cast_mut, Activation, CompileCtx, DType, InputSource, Layout, OpId, OperandId, Quantization};

use crate::kernel::{built, Built};
use crate::kernels::Act;
use crate::quant::QParams;

/// Fusions that `NNRT_NOFUSE` can turn off one at a time (by naming it), for A/B.
const NAMED_FUSIONS: [&str; 3] = ["block", "padded_residual", "conv_add"];

/// Whether `NNRT_NOFUSE` (read at prepare) turns off the fusion `name`: a value naming one of
/// [`NAMED_FUSIONS`] turns off that one alone, any other value every fusion.
pub(crate) fn fusion_off(name: &str) -> bool {
    match std::env::var("NNRT_NOFUSE") {
        Err(std::env::VarError::NotPresent) => false,
        Ok(v) if NAMED_FUSIONS.contains(&v.as_str()) => v == name,
        _ => true,
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

/// Refuses NCHW operands for kernels that read image tensors as NHWC.
pub(crate) fn nhwc(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).layout == Layout::Nchw {
            return Err(format!("operand {o} is NCHW; the CPU kernels are NHWC"));
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

/// Applies a fused TANH to a kernel's output in place (no allocation).
pub(crate) fn tanh_in_place(out: &mut [f32]) {
    crate::kernels::unary::unary_in_place(crate::kernels::unary::UnaryOp::Tanh, out);
}

/// Rejects the fused activations nnrt does not implement.
pub(crate) fn check_act(a: Activation) -> Result<(), String> {
    if a == Activation::SignBit {
        return Err("fused activation SIGN_BIT is not supported".into());
    }
    Ok(())
}

/// The values of a float32 constant operand.
pub(crate) fn const_f32<'c>(ctx: &CompileCtx<'c>, id: OperandId) -> Option<std::borrow::Cow<'c, [f32]>> {
    let o = ctx.graph.operand(id);
    let d = o.data.as_ref()?;
    if o.dtype != DType::F32 {
        return None;
    }
    // Float16 weights (folded DEQUANTIZE): widened for this caller only, so the kernel's packed
    // copy is the only float32 one that stays.
    if let Some(values) = d.widen_unkept() {
        return Some(std::borrow::Cow::Owned(values));
    }
    // Borrowed from the (memory-mapped) model where aligned: most weights are only read once,
    // to pack them, so a copy would cost a pass over them and their pages.
    #[cfg(target_endian = "little")]
    if let Ok(v) = bytemuck::try_cast_slice::<u8, f32>(d.bytes()) {
        return Some(std::borrow::Cow::Borrowed(v));
    }
    Some(std::borrow::Cow::Owned(d.bytes().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
}

/// Whether operand `id` is a float32 constant (what [`const_f32`] returns values for).
pub(crate) fn is_const_f32(ctx: &CompileCtx, id: OperandId) -> bool {
    let o = ctx.graph.operand(id);
    o.dtype == DType::F32 && o.data.is_some()
}

/// Where input `id` comes from at run time: the arena, or an aligned copy of its constant data.
pub(crate) fn source(ctx: &CompileCtx, id: OperandId) -> InputSource {
    InputSource::of(ctx.graph, ctx.dims(id), id)
}

/// Sources for every present input of `op`, in order.
pub(crate) fn sources(ctx: &CompileCtx, id: OpId) -> Vec<InputSource> {
    ctx.graph.op(id).inputs.iter().flatten().map(|&i| source(ctx, i)).collect()
}

/// Whether `d` is a quantized integer type (uint8, int8, int16).
pub(crate) fn is_qint(d: DType) -> bool {
    matches!(d, DType::U8 | DType::I8 | DType::I16)
}

/// Whether `id` is an operand of a quantized integer type carrying quantization parameters.
pub(crate) fn quantized(ctx: &CompileCtx, id: OperandId) -> bool {
    let o = ctx.graph.operand(id);
    is_qint(o.dtype) && o.quant.is_quantized()
}

/// Whether input `i` of `op` is present and [`quantized`]: most families take the quantized
/// branch on their first input's type.
pub(crate) fn quantized_input(ctx: &CompileCtx, id: OpId, i: usize) -> bool {
    ctx.graph.op(id).input(i).is_some_and(|x| quantized(ctx, x))
}

/// Whether input 0 of `op` is [`quantized`]: the dtype branch of most families.
pub(crate) fn first_input_quantized(ctx: &CompileCtx, id: OpId) -> bool {
    quantized_input(ctx, id, 0)
}

/// Scale and zero point of a per-tensor quantized operand.
pub(crate) fn qp(ctx: &CompileCtx, id: OperandId) -> Result<QParams, String> {
    match &ctx.graph.operand(id).quant {
        Quantization::PerTensor { scale, zero_point } => Ok(QParams {
            scale: *scale,
            zero_point: *zero_point as i32,
        }),
        Quantization::PerAxis { .. } => Err(format!("operand {id} is quantized per channel; this op needs one scale")),
        Quantization::None => Err(format!("operand {id} has no quantization parameters")),
    }
}

/// The dtype of operand `id`.
pub(crate) fn dtype(ctx: &CompileCtx, id: OperandId) -> DType {
    ctx.graph.operand(id).dtype
}

/// Input `i` of `op`, or why it is missing.
pub(crate) fn input(ctx: &CompileCtx, id: OpId, i: usize) -> Result<OperandId, String> {
    ctx.graph.op(id).input(i).ok_or_else(|| format!("input {i} is absent"))
}

/// The integer values of a constant operand (int8/uint8/int16/int32/int64), widened.
pub(crate) fn const_ints(ctx: &CompileCtx, id: OperandId) -> Result<Vec<i64>, String> {
    let o = ctx.graph.operand(id);
    let d = o.data.as_ref().ok_or_else(|| format!("operand {id} must be a constant"))?.bytes();
    Ok(match o.dtype {
        DType::U8 => d.iter().map(|&v| v as i64).collect(),
        DType::I8 => d.iter().map(|&v| v as i8 as i64).collect(),
        DType::I16 => d.chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]]) as i64).collect(),
        DType::I32 => d.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect(),
        DType::I64 => d.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect(),
        other => return Err(format!("operand {id} is {other}, not an integer constant")),
    })
}

/// Per-channel scales and zero points of a weight operand with `n` channels along `axis`.
pub(crate) fn channel_quant(ctx: &CompileCtx, id: OperandId, n: usize, axis: usize) -> Result<(Vec<f32>, Vec<i32>), String> {
    match &ctx.graph.operand(id).quant {
        Quantization::PerTensor { scale, zero_point } => Ok((vec![*scale; n], vec![*zero_point as i32; n])),
        Quantization::PerAxis { scales, zero_points, axis: a } => {
            if *a != axis || scales.len() != n {
                return Err(format!(
                    "weights {id} are quantized along dim {a} with {} scales; expected {n} along dim {axis}",
                    scales.len()
                ));
            }
            Ok((scales.clone(), zero_points.iter().map(|&z| z as i32).collect()))
        }
        Quantization::None => Err(format!("weights {id} have no quantization parameters")),
    }
}

/// Rejects scales that are not finite and positive and zero points outside their type.
pub(crate) fn check_params(ctx: &CompileCtx, id: OperandId) -> Result<(), String> {
    let o = ctx.graph.operand(id);
    if !is_qint(o.dtype) {
        return Ok(());
    }
    let range = match o.dtype {
        DType::U8 => 0..=255i64,
        DType::I8 => -128..=127,
        _ => -32768..=32767,
    };
    let (scales, zps): (Vec<f32>, Vec<i64>) = match &o.quant {
        Quantization::PerTensor { scale, zero_point } => (vec![*scale], vec![*zero_point]),
        Quantization::PerAxis { scales, zero_points, .. } => (scales.clone(), zero_points.clone()),
        Quantization::None => return Ok(()),
    };
    if let Some(s) = scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(format!("operand {id} has scale {s}; quantized kernels need a finite positive scale"));
    }
    if let Some(z) = zps.iter().find(|z| !range.contains(z)) {
        return Err(format!("operand {id} has zero point {z}, outside the range of {}", o.dtype));
    }
    Ok(())
}

/// [`check_params`] of every operand of `op`: the first check of every quantized kernel.
pub(crate) fn check_all_params(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        check_params(ctx, o)?;
    }
    Ok(())
}

/// The first input and the output of a quantized op with their dtypes and dims, after
/// [`check_all_params`]: what every quantized `supports` checks first and every quantized
/// `build` reads.
pub(crate) struct QuantIo {
    /// Input 0.
    pub x: OperandId,
    /// Output 0.
    pub out: OperandId,
    pub xt: DType,
    pub ot: DType,
    pub xd: Vec<usize>,
    pub od: Vec<usize>,
}

impl QuantIo {
    /// Checks every operand's quantization, then reads input 0 and output 0 of `op`.
    pub(crate) fn of(ctx: &CompileCtx, id: OpId) -> Result<QuantIo, String> {
        check_all_params(ctx, id)?;
        let out = ctx.graph.op(id).outputs.first().copied().ok_or("the op has no output")?;
        let x = input(ctx, id, 0)?;
        Ok(QuantIo { x, out, xt: dtype(ctx, x), ot: dtype(ctx, out), xd: ctx.dims(x).to_vec(), od: ctx.dims(out).to_vec() })
    }
}

/// A kernel of one float32 input and output: `run(x, out)`, then the fused TANH when `tanh`.
pub(crate) fn float_kernel(input: InputSource, tanh: bool, mut run: impl FnMut(&[f32], &mut [f32]) + Send + 'static) -> Built {
    built(vec![input], move |ins, outs| {
        let out = cast_mut::<f32>(outs[0].bytes)?;
        run(cast::<f32>(ins[0].bytes)?, out);
        if tanh {
            tanh_in_place(out);
        }
        Ok(())
    })
}

/// The type of a constant's values read from its little-endian bytes: borrowed from them (the
/// memory-mapped model) where they are aligned for `T`, as every 8-bit constant is; copied
/// otherwise. Weights are only read to be packed, so a copy would cost a pass over them and
/// their pages.
pub(crate) fn const_values<T: bytemuck::Pod>(bytes: &[u8]) -> std::borrow::Cow<'_, [T]> {
    #[cfg(target_endian = "little")]
    if let Ok(v) = bytemuck::try_cast_slice::<u8, T>(bytes) {
        return std::borrow::Cow::Borrowed(v);
    }
    std::borrow::Cow::Owned(bytes.chunks_exact(std::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned).collect())
}
