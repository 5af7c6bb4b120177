//! Op builders: from an IR op and its concrete shapes to a [`Kernel`], one file per op family.
//! Each family has `supports` (what dtypes/options it handles, with a reason when not) and
//! `build`.

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
mod generate;
mod logic;
mod lstm;
mod matmul;
mod matrix;
mod mediapipe;
mod movement;
mod pool;
mod quant;
mod quant_act;
mod quant_hybrid;
mod quant_lstm;
mod quant_matmul;
mod reduce;
mod resize;
mod rnn;
mod scan;
mod scatter;
mod select;

use nnrt_core::{Activation, CompileCtx, DType, InputSource, Layout, OpId, OpKind, OperandId};

use crate::backend::{Built, Kernel};
use crate::kernels::Act;

/// One step for ops `a` then `b` when the backend has a fused kernel for the pair (see
/// `conv::build_expand_depthwise`, `conv::build_depthwise_project` and `conv::build_conv_add`),
/// `None` otherwise. `after` is the op after `b`, if any: a pair that would take `b` from a
/// larger saving with `after` is left alone.
pub(crate) fn fuse_pair(ctx: &CompileCtx, a: OpId, b: OpId, after: Option<OpId>) -> Option<Built> {
    if std::env::var_os("NNRT_NOFUSE").is_some() {
        return None;
    }
    // The convolution + residual pair only with several threads: on one, keeping the
    // projection's input alive one op longer moved the greedy plan's tensors and the fused
    // expansion steps ran slower (MobileNetV2, 1 thread: +3 %; 2 threads: −1.4 %). The
    // depthwise + projection pair only on one thread: there it saves 3.4 % of MobileNetV2
    // (less memory traffic, and a plan with fewer tensors); on two, its row bands ran each pair
    // 0–6 % slower than the two ops split across threads, and it took the projections from
    // the residual fusion (+3 %).
    conv::build_expand_depthwise(ctx, a, b).or_else(|| {
        if ctx.threads >= 2 {
            conv::build_conv_add(ctx, a, b)
        } else if after.is_some_and(|c| conv::expand_depthwise_applies(ctx, b, c)) {
            // MobileNetV1's pointwise convolution sits between two depthwise ones: its pair with
            // the next depthwise (the large expanded tensor never written) saves more.
            None
        } else {
            conv::build_depthwise_project(ctx, a, b)
        }
    })
}

pub(crate) use mediapipe::{is_builtin_custom, output_dims as custom_output_dims};

/// Why the CPU backend cannot run `op`, or `Ok` when it can.
pub(crate) fn supports(ctx: &CompileCtx, id: OpId) -> Result<(), String> {
    if quant::is_quantized_op(ctx, id) {
        return quant::supports(ctx, id);
    }
    let op = ctx.graph.op(id);
    for &o in op.inputs.iter().flatten().chain(&op.outputs) {
        if ctx.graph.operand(o).layout == Layout::Nchw && nhwc_only(&op.kind) {
            return Err(format!("operand {o} is NCHW; the CPU kernels are NHWC"));
        }
    }
    match &op.kind {
        OpKind::Conv2D(_) | OpKind::Conv3D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => conv::supports(ctx, id),
        OpKind::Pool2D(_) => pool::supports(ctx, id),
        OpKind::Binary { .. } | OpKind::Unary(_) | OpKind::Softmax { .. } | OpKind::Dequantize => elementwise::supports(ctx, id),
        OpKind::Prelu | OpKind::LogSoftmax | OpKind::L2Normalization { .. } => elementwise::supports(ctx, id),
        OpKind::Reduce { .. } => reduce::supports(ctx, id),
        OpKind::Concatenation { .. } | OpKind::Reshape { .. } | OpKind::Transpose | OpKind::Pad | OpKind::MirrorPad(_) => data::supports(ctx, id),
        OpKind::Quantize => Err("quantized inference is not implemented yet".into()),
        OpKind::Rfft2d | OpKind::ComplexAbs | OpKind::Real | OpKind::Imag => fft::supports(ctx, id),
        OpKind::Custom { name, .. } if mediapipe::is_builtin_custom(name) => mediapipe::supports(ctx, id),
        OpKind::Custom { name, .. } => Err(format!("no kernel is registered for custom op '{name}'")),
        OpKind::If { .. } | OpKind::While { .. } => Err("control flow is not implemented yet".into()),
        _ => family(&op.kind).supports(ctx, id),
    }
}

/// Ops whose CPU kernels read image tensors as NHWC.
fn nhwc_only(kind: &OpKind) -> bool {
    if let OpKind::Custom { name, .. } = kind {
        return mediapipe::is_builtin_custom(name);
    }
    matches!(
        kind,
        OpKind::Conv2D(_)
            | OpKind::DepthwiseConv2D(_)
            | OpKind::Pool2D(_)
            | OpKind::TransposeConv(_)
            | OpKind::Resize(_)
            | OpKind::SpaceToDepth { .. }
            | OpKind::DepthToSpace { .. }
            | OpKind::SpaceToBatchNd
            | OpKind::BatchToSpaceNd
    )
}

/// Builds the kernel of `op` (packing constant weights now).
pub(crate) fn build(ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
    if quant::is_quantized_op(ctx, id) {
        return quant::build(ctx, id);
    }
    supports(ctx, id)?;
    match &ctx.graph.op(id).kind {
        OpKind::Conv2D(_) | OpKind::Conv3D(_) | OpKind::DepthwiseConv2D(_) | OpKind::FullyConnected(_) => conv::build(ctx, id),
        OpKind::Pool2D(_) => pool::build(ctx, id),
        OpKind::Binary { .. } | OpKind::Unary(_) | OpKind::Softmax { .. } | OpKind::Dequantize => elementwise::build(ctx, id),
        OpKind::Prelu | OpKind::LogSoftmax | OpKind::L2Normalization { .. } => elementwise::build(ctx, id),
        OpKind::Reduce { .. } => reduce::build(ctx, id),
        OpKind::Concatenation { .. } | OpKind::Reshape { .. } | OpKind::Transpose | OpKind::Pad | OpKind::MirrorPad(_) => data::build(ctx, id),
        OpKind::Rfft2d | OpKind::ComplexAbs | OpKind::Real | OpKind::Imag => fft::build(ctx, id),
        OpKind::Custom { .. } => mediapipe::build(ctx, id),
        kind => family(kind).build(ctx, id),
    }
}

/// The op families added for the float builtins, one builder file each.
#[derive(Clone, Copy)]
enum Family {
    MatMul,
    Logic,
    Movement,
    Resize,
    Generate,
    Scan,
    Lstm,
    Arith,
    Scatter,
    Select,
    Matrix,
    Rnn,
    None,
}

fn family(kind: &OpKind) -> Family {
    match kind {
        OpKind::TransposeConv(_) | OpKind::Conv3DTranspose(_) | OpKind::BatchMatMul { .. } => Family::MatMul,
        OpKind::Compare(_) | OpKind::Logical(_) | OpKind::Select { .. } | OpKind::Cast => Family::Logic,
        OpKind::Split { .. }
        | OpKind::SplitV { .. }
        | OpKind::Pack { .. }
        | OpKind::Unpack { .. }
        | OpKind::Squeeze { .. }
        | OpKind::ExpandDims
        | OpKind::Slice
        | OpKind::StridedSlice(_)
        | OpKind::Gather { .. }
        | OpKind::GatherNd
        | OpKind::Tile
        | OpKind::ReverseV2
        | OpKind::SpaceToDepth { .. }
        | OpKind::DepthToSpace { .. }
        | OpKind::SpaceToBatchNd
        | OpKind::BatchToSpaceNd => Family::Movement,
        OpKind::Resize(_) => Family::Resize,
        OpKind::Fill | OpKind::Range | OpKind::Shape | OpKind::Rank | OpKind::ZerosLike | OpKind::OnesLike | OpKind::OneHot { .. } => {
            Family::Generate
        }
        OpKind::Cumsum { .. } | OpKind::TopKV2 | OpKind::ArgMinMax { .. } => Family::Scan,
        OpKind::UnidirectionalSequenceLstm(_) => Family::Lstm,
        OpKind::AddN
        | OpKind::Atan2
        | OpKind::Bitwise(_)
        | OpKind::Bucketize { .. }
        | OpKind::FakeQuant { .. }
        | OpKind::LocalResponseNorm(_)
        | OpKind::BroadcastTo
        | OpKind::BroadcastArgs => Family::Arith,
        OpKind::ScatterNd
        | OpKind::SparseToDense { .. }
        | OpKind::DynamicUpdateSlice
        | OpKind::EmbeddingLookup
        | OpKind::SegmentSum
        | OpKind::UnsortedSegment(_) => Family::Scatter,
        OpKind::Where | OpKind::Unique | OpKind::NonMaxSuppression { .. } => Family::Select,
        OpKind::MatrixDiag | OpKind::MatrixSetDiag | OpKind::ReverseSequence { .. } => Family::Matrix,
        OpKind::Rnn(_) | OpKind::SequenceRnn(_) | OpKind::Svdf(_) => Family::Rnn,
        _ => Family::None,
    }
}

impl Family {
    fn supports(self, ctx: &CompileCtx, id: OpId) -> Result<(), String> {
        match self {
            Family::MatMul => matmul::supports(ctx, id),
            Family::Logic => logic::supports(ctx, id),
            Family::Movement => movement::supports(ctx, id),
            Family::Resize => resize::supports(ctx, id),
            Family::Generate => generate::supports(ctx, id),
            Family::Scan => scan::supports(ctx, id),
            Family::Lstm => lstm::supports(ctx, id),
            Family::Arith => arith::supports(ctx, id),
            Family::Scatter => scatter::supports(ctx, id),
            Family::Select => select::supports(ctx, id),
            Family::Matrix => matrix::supports(ctx, id),
            Family::Rnn => rnn::supports(ctx, id),
            Family::None => Err("the CPU backend has no kernel for this op".into()),
        }
    }

    fn build(self, ctx: &CompileCtx, id: OpId) -> Result<Built, String> {
        match self {
            Family::MatMul => matmul::build(ctx, id),
            Family::Logic => logic::build(ctx, id),
            Family::Movement => movement::build(ctx, id),
            Family::Resize => resize::build(ctx, id),
            Family::Generate => generate::build(ctx, id),
            Family::Scan => scan::build(ctx, id),
            Family::Lstm => lstm::build(ctx, id),
            Family::Arith => arith::build(ctx, id),
            Family::Scatter => scatter::build(ctx, id),
            Family::Select => select::build(ctx, id),
            Family::Matrix => matrix::build(ctx, id),
            Family::Rnn => rnn::build(ctx, id),
            Family::None => Err("the CPU backend has no kernel for this op".into()),
        }
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
    Built { kernel: Box::new(FnKernel(f)), inputs, state: Vec::new() }
}
