//! Lowering: each supported op becomes one or more shader dispatches (or an alias, for ops that
//! only relabel dims). The same code answers `supports` (a lowering error is the reason the op
//! falls back) and builds the dispatches at compile, so the two can never disagree.

use std::collections::HashMap;

use nnrt_core::infer::window_output;
use nnrt_core::{Activation, BinaryOp, CompileCtx, DType, OpId, OpKind, OperandId, PoolKind, ReduceOp, ResizeMode, UnaryOp};

use crate::device::PipelineKey;
use crate::shaders::PARAM_WORDS;

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

type R<T> = Result<T, String>;

/// Operands and dims of a conv-like op, and its padding before (top, left).
struct Windowed {
    x: OperandId,
    w: OperandId,
    o: OperandId,
    xd: Vec<usize>,
    wd: Vec<usize>,
    od: Vec<usize>,
    pad: [usize; 2],
}

struct Cx<'a, 'b> {
    ctx: &'a CompileCtx<'b>,
    op: OpId,
    consts: &'a mut Consts,
    limits: Limits,
}

fn act_code(a: Activation) -> R<u32> {
    Ok(match a {
        Activation::None => 0,
        Activation::Relu => 1,
        Activation::ReluN1To1 => 2,
        Activation::Relu6 => 3,
        Activation::Tanh => 4,
        Activation::SignBit => return Err("fused activation SIGN_BIT is not supported on gpu".into()),
    })
}

fn numel(d: &[usize]) -> usize {
    d.iter().product()
}

fn u(v: usize) -> R<u32> {
    u32::try_from(v).map_err(|_| format!("size {v} does not fit the shaders' 32-bit indices"))
}

/// Left-pads `d` with 1s to 6 dims.
fn pad6(d: &[usize]) -> R<[usize; 6]> {
    if d.len() > 6 {
        return Err(format!("rank {} is over the gpu kernels' 6", d.len()));
    }
    let mut out = [1usize; 6];
    out[6 - d.len()..].copy_from_slice(d);
    Ok(out)
}

fn strides(d: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; d.len()];
    for i in (0..d.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * d[i + 1];
    }
    s
}

impl Cx<'_, '_> {
    fn graph(&self) -> &nnrt_core::Subgraph {
        self.ctx.graph
    }

    fn input(&self, i: usize) -> R<OperandId> {
        self.graph().op(self.op).input(i).ok_or_else(|| format!("input {i} is absent"))
    }

    fn output(&self) -> R<OperandId> {
        let outs = &self.graph().op(self.op).outputs;
        match outs.as_slice() {
            [o] => Ok(*o),
            _ => Err(format!("{} outputs; gpu kernels write one", outs.len())),
        }
    }

    fn dims(&self, id: OperandId) -> &[usize] {
        self.ctx.dims(id)
    }

    fn dtype(&self, id: OperandId) -> DType {
        self.graph().operand(id).dtype
    }

    fn expect_f32(&self, id: OperandId, what: &str) -> R<()> {
        match self.dtype(id) {
            DType::F32 => Ok(()),
            d => Err(format!("{what} is {d}; gpu kernels compute in float32")),
        }
    }

    fn expect_word(&self, id: OperandId, what: &str) -> R<()> {
        match self.dtype(id) {
            DType::F32 | DType::I32 => Ok(()),
            d => Err(format!("{what} is {d}; this gpu kernel moves 4-byte elements (float32, int32)")),
        }
    }

    /// Checks a tensor against the adapter's binding size.
    fn fits(&self, id: OperandId) -> R<()> {
        let bytes = (numel(self.dims(id)) * self.dtype(id).size()) as u64;
        if numel(self.dims(id)) == 0 {
            return Err(format!("tensor {id} is empty"));
        }
        if bytes > self.limits.max_binding {
            return Err(format!("tensor {id} ({bytes} bytes) is over the adapter's storage binding limit ({} bytes)", self.limits.max_binding));
        }
        Ok(())
    }

    /// The buffer of operand `id`: its constant data, or the tensor.
    fn buf(&mut self, id: OperandId) -> R<Buf> {
        self.fits(id)?;
        let o = self.ctx.graph.operand(id);
        match &o.data {
            None => Ok(Buf::Tensor(id)),
            Some(d) => {
                Ok(self.consts.operand(id, false, || d.bytes().to_vec()))
            }
        }
    }

    /// Whether weights are stored as f16 (`GPU_PRECISION=f16` and an adapter with f16 shaders).
    fn f16_weights(&self) -> bool {
        self.limits.f16 && self.ctx.config.get("GPU_PRECISION").is_some_and(|v| v.trim().eq_ignore_ascii_case("f16"))
    }

    /// The buffer of weight operand `id` and the shader variant reading it: constant f32 weights
    /// become f16 when [`Cx::f16_weights`]; anything else is bound as it is.
    fn weights(&mut self, id: OperandId, shader: &'static str, shader_f16: &'static str) -> R<(Buf, &'static str)> {
        let o = self.ctx.graph.operand(id);
        let Some(d) = o.data.as_ref().filter(|_| self.f16_weights() && o.dtype == DType::F32) else {
            return Ok((self.buf(id)?, shader));
        };
        self.fits(id)?;
        let halves = || d.bytes().chunks_exact(4).flat_map(|c| half::f16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()).collect();
        Ok((self.consts.operand(id, true, halves), shader_f16))
    }

    /// Input, filter and output of a windowed op (conv, depthwise) checked to be 4-D float32,
    /// with the padding before each spatial dim.
    fn windowed(&self, what: &str, stride: [usize; 2], dilation: [usize; 2], padding: nnrt_core::Padding) -> R<Windowed> {
        let (x, w, o) = (self.input(0)?, self.input(1)?, self.output()?);
        self.expect_f32(x, "the input")?;
        self.expect_f32(w, "the filter")?;
        self.expect_f32(o, "the output")?;
        let (xd, wd, od) = (self.dims(x).to_vec(), self.dims(w).to_vec(), self.dims(o).to_vec());
        if xd.len() != 4 || wd.len() != 4 || od.len() != 4 {
            return Err(format!("{what} tensors must be 4-D"));
        }
        let wh = window_output(xd[1], wd[1], stride[0], dilation[0], padding, 0).ok_or("invalid window")?;
        let ww = window_output(xd[2], wd[2], stride[1], dilation[1], padding, 1).ok_or("invalid window")?;
        Ok(Windowed { x, w, o, xd, wd, od, pad: [wh.pad_before, ww.pad_before] })
    }

    fn const_ints(&self, id: OperandId, what: &str) -> R<Vec<i64>> {
        let o = self.graph().operand(id);
        let d = o.data.as_ref().ok_or_else(|| format!("{what} is not a constant"))?;
        let b = d.bytes();
        Ok(match o.dtype {
            DType::I32 => b.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
            DType::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
            d => return Err(format!("{what} is {d}, not int32/int64")),
        })
    }

    /// Bias input `i` (absent → zeros of `n`), checked to hold `n` floats.
    fn bias(&mut self, i: usize, n: usize) -> R<Buf> {
        match self.graph().op(self.op).input(i) {
            Some(b) => {
                self.expect_f32(b, "the bias")?;
                if numel(self.dims(b)) != n {
                    return Err(format!("the bias has {} elements, expected {n}", numel(self.dims(b))));
                }
                self.buf(b)
            }
            None => Ok(self.consts.push(|| vec![0u8; n * 4])),
        }
    }

    /// A 1-D kernel over `threads` threads: 64-wide workgroups on a 2-D grid.
    fn grid(&self, threads: usize) -> R<[u32; 3]> {
        let g = threads.div_ceil(64);
        let max = self.limits.max_groups as usize;
        if g <= max {
            return Ok([u(g)?, 1, 1]);
        }
        let y = g.div_ceil(max);
        if y > max {
            return Err(format!("{threads} threads are over the adapter's workgroup grid ({max} per dimension)"));
        }
        Ok([u(g.div_ceil(y))?, u(y)?, 1])
    }

    fn dispatch(&self, shader: &'static str, constants: Vec<(&'static str, u32)>, params: Vec<u32>, bufs: Vec<Buf>, groups: [u32; 3]) -> R<Dispatch> {
        if params.len() > PARAM_WORDS {
            return Err(format!("{} parameters are over the {PARAM_WORDS} a dispatch passes", params.len()));
        }
        if bufs.len() as u32 > self.limits.max_storage {
            return Err(format!("{} storage buffers are over the adapter's {} per stage", bufs.len(), self.limits.max_storage));
        }
        if groups.iter().any(|&g| g > self.limits.max_groups) {
            return Err(format!("workgroup grid {groups:?} is over the adapter's {} per dimension", self.limits.max_groups));
        }
        Ok(Dispatch { key: PipelineKey { shader, constants }, params, bufs, groups })
    }
}

/// Lowers op `op` of `ctx.graph`; the error is why the gpu cannot run it.
pub(crate) fn lower(ctx: &CompileCtx, op: OpId, consts: &mut Consts, limits: Limits) -> R<Lowered> {
    let mut cx = Cx { ctx, op, consts, limits };
    let kind = ctx.graph.op(op).kind.clone();
    match &kind {
        OpKind::Conv2D(p) => conv(&mut cx, p),
        OpKind::DepthwiseConv2D(p) => depthwise(&mut cx, p),
        OpKind::FullyConnected(p) => fully_connected(&mut cx, p),
        OpKind::BatchMatMul { adj_x, adj_y } => batch_matmul(&mut cx, *adj_x, *adj_y),
        OpKind::Pool2D(p) => pool(&mut cx, p),
        OpKind::Binary { op, act } => binary(&mut cx, *op, *act),
        OpKind::Unary(u) => unary(&mut cx, *u),
        OpKind::Reduce { op, .. } => reduce(&mut cx, *op),
        OpKind::Softmax { beta } => softmax(&mut cx, *beta, false),
        OpKind::LogSoftmax => softmax(&mut cx, 1.0, true),
        OpKind::Concatenation { axis, act } => concat(&mut cx, *axis, *act),
        OpKind::Pad => pad(&mut cx),
        OpKind::Transpose => transpose(&mut cx),
        OpKind::Resize(r) => resize(&mut cx, r),
        OpKind::Reshape { .. } | OpKind::Squeeze { .. } | OpKind::ExpandDims => alias(&mut cx),
        other => Err(format!("{} has no gpu kernel", other.name())),
    }
}

fn alias(cx: &mut Cx) -> R<Lowered> {
    let x = cx.input(0)?;
    let o = cx.output()?;
    if cx.dtype(x) != cx.dtype(o) || numel(cx.dims(x)) != numel(cx.dims(o)) {
        return Err("input and output differ in type or element count".into());
    }
    let from = cx.buf(x)?;
    Ok(Lowered::Alias { from, to: o })
}

/// The matmul dispatch for C[b, m, n] over batches `batch` ([outer, inner]) with the given strides.
#[allow(clippy::too_many_arguments)]
fn matmul(cx: &Cx, shader: &'static str, a: Buf, b: Buf, bias: Buf, out: Buf, m: usize, n: usize, k: usize, batch: [usize; 2], a_str: [usize; 4], b_str: [usize; 4], act: u32) -> R<Dispatch> {
    let p = vec![u(m)?, u(n)?, u(k)?, u(batch[0])?, u(batch[1])?, u(a_str[0])?, u(a_str[1])?, u(a_str[2])?, u(a_str[3])?, u(b_str[0])?, u(b_str[1])?, u(b_str[2])?, u(b_str[3])?];
    let groups = [u(n.div_ceil(4).div_ceil(8))?, u(m.div_ceil(4).div_ceil(8))?, u(batch[0] * batch[1])?];
    cx.dispatch(shader, vec![("ACT", act)], p, vec![a, b, bias, out], groups)
}

fn conv(cx: &mut Cx, p: &nnrt_core::Conv2D) -> R<Lowered> {
    let Windowed { x, w, o, xd, wd, od, pad } = cx.windowed("convolution", p.stride, p.dilation, p.padding)?;
    if xd[3] != wd[3] {
        return Err(format!("grouped convolution ({} input channels, filter depth {}) has no gpu kernel", xd[3], wd[3]));
    }
    let act = act_code(p.act)?;
    let (bias, xb, ob) = (cx.bias(2, wd[0])?, cx.buf(x)?, cx.buf(o)?);
    let pointwise = wd[1] == 1 && wd[2] == 1 && p.stride == [1, 1] && pad == [0, 0] && od[1] == xd[1] && od[2] == xd[2];
    if pointwise {
        // 1x1: the input is an [N*H*W, Cin] matrix, the OHWI filter a [Cout, Cin] one.
        let (m, n, k) = (xd[0] * xd[1] * xd[2], wd[0], xd[3]);
        let (wb, shader) = cx.weights(w, "matmul", "matmul_f16")?;
        let d = matmul(cx, shader, xb, wb, bias, ob, m, n, k, [1, 1], [0, 0, k, 1], [0, 0, 1, k], act)?;
        return Ok(Lowered::Dispatches(vec![d]));
    }
    let threads = od[0] * od[1] * od[2] * od[3].div_ceil(4);
    let params = [threads, xd[0], xd[1], xd[2], xd[3], od[1], od[2], od[3], wd[1], wd[2], p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], pad[0], pad[1]]
        .iter()
        .map(|&v| u(v))
        .collect::<R<Vec<u32>>>()?;
    let groups = cx.grid(threads)?;
    let (wb, shader) = cx.weights(w, "conv", "conv_f16")?;
    Ok(Lowered::Dispatches(vec![cx.dispatch(shader, vec![("ACT", act)], params, vec![xb, wb, bias, ob], groups)?]))
}

fn depthwise(cx: &mut Cx, p: &nnrt_core::DepthwiseConv2D) -> R<Lowered> {
    let Windowed { x, w, o, xd, wd, od, pad } = cx.windowed("depthwise convolution", p.stride, p.dilation, p.padding)?;
    if xd[3] == 0 || wd[3] % xd[3] != 0 || od[3] != wd[3] {
        return Err(format!("filter depth {} is not a multiple of the {} input channels", wd[3], xd[3]));
    }
    let act = act_code(p.act)?;
    let (bias, xb, ob) = (cx.bias(2, wd[3])?, cx.buf(x)?, cx.buf(o)?);
    let (wb, shader) = cx.weights(w, "depthwise", "depthwise_f16")?;
    let threads = numel(&od);
    let params = [threads, xd[0], xd[1], xd[2], xd[3], od[1], od[2], od[3], wd[1], wd[2], p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], pad[0], pad[1], wd[3] / xd[3]]
        .iter()
        .map(|&v| u(v))
        .collect::<R<Vec<u32>>>()?;
    let groups = cx.grid(threads)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch(shader, vec![("ACT", act)], params, vec![xb, wb, bias, ob], groups)?]))
}

fn fully_connected(cx: &mut Cx, p: &nnrt_core::FullyConnected) -> R<Lowered> {
    let (x, w, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(w, "the weights")?;
    cx.expect_f32(o, "the output")?;
    let wd = cx.dims(w).to_vec();
    if wd.len() != 2 || wd[1] == 0 {
        return Err("the weights must be [units, depth]".into());
    }
    let (n, k) = (wd[0], wd[1]);
    let total = numel(cx.dims(x));
    if !total.is_multiple_of(k) {
        return Err(format!("{total} input elements are not a multiple of the weights' depth {k}"));
    }
    let m = total / k;
    let act = act_code(p.act)?;
    let (xb, bias, ob) = (cx.buf(x)?, cx.bias(2, n)?, cx.buf(o)?);
    let (wb, shader) = cx.weights(w, "matmul", "matmul_f16")?;
    // B[k, n] is W[n, k]: the weights are read in place (no packing, non-constant weights work).
    let d = matmul(cx, shader, xb, wb, bias, ob, m, n, k, [1, 1], [0, 0, k, 1], [0, 0, 1, k], act)?;
    Ok(Lowered::Dispatches(vec![d]))
}

fn batch_matmul(cx: &mut Cx, adj_x: bool, adj_y: bool) -> R<Lowered> {
    let (x, y, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_f32(x, "x")?;
    cx.expect_f32(y, "y")?;
    cx.expect_f32(o, "the output")?;
    let (xd, yd, od) = (cx.dims(x).to_vec(), cx.dims(y).to_vec(), cx.dims(o).to_vec());
    if xd.len() < 2 || yd.len() < 2 || od.len() < 2 || od.len() > 4 {
        return Err("batch matmul needs inputs of rank 2 or more and an output of rank 4 or less".into());
    }
    let (m, k) = if adj_x { (xd[xd.len() - 1], xd[xd.len() - 2]) } else { (xd[xd.len() - 2], xd[xd.len() - 1]) };
    let n = if adj_y { yd[yd.len() - 2] } else { yd[yd.len() - 1] };
    // Batch strides of each input against the output's two (left-padded) batch dims.
    let ob = pad6(&od[..od.len() - 2])?;
    let batch = [ob[4], ob[5]];
    let bstr = |d: &[usize]| -> R<[usize; 2]> {
        let bd = pad6(&d[..d.len() - 2])?;
        if bd[..4].iter().any(|&v| v != 1) {
            return Err("more than two batch dims".to_string());
        }
        let inner = d[d.len() - 2] * d[d.len() - 1];
        let s1 = if bd[5] == 1 { 0 } else { inner };
        let s0 = if bd[4] == 1 { 0 } else { inner * bd[5] };
        Ok([s0, s1])
    };
    let (xs, ys) = (bstr(&xd)?, bstr(&yd)?);
    let xc = xd[xd.len() - 1];
    let yc = yd[yd.len() - 1];
    let a_str = if adj_x { [xs[0], xs[1], 1, xc] } else { [xs[0], xs[1], xc, 1] };
    let b_str = if adj_y { [ys[0], ys[1], 1, yc] } else { [ys[0], ys[1], yc, 1] };
    let (xb, yb, bias, obuf) = (cx.buf(x)?, cx.buf(y)?, cx.bias(usize::MAX, n)?, cx.buf(o)?);
    let d = matmul(cx, "matmul", xb, yb, bias, obuf, m, n, k, batch, a_str, b_str, 0)?;
    Ok(Lowered::Dispatches(vec![d]))
}

fn pool(cx: &mut Cx, p: &nnrt_core::Pool2D) -> R<Lowered> {
    let (x, o) = (cx.input(0)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(o, "the output")?;
    let (xd, od) = (cx.dims(x).to_vec(), cx.dims(o).to_vec());
    if xd.len() != 4 || od.len() != 4 {
        return Err("pooling tensors must be 4-D".into());
    }
    let act = act_code(p.act)?;
    let wh = window_output(xd[1], p.filter[0], p.stride[0], 1, p.padding, 0).ok_or("invalid window")?;
    let ww = window_output(xd[2], p.filter[1], p.stride[1], 1, p.padding, 1).ok_or("invalid window")?;
    let kind = match p.kind {
        PoolKind::Average => 0,
        PoolKind::Max => 1,
        PoolKind::L2 => 2,
    };
    let threads = numel(&od);
    let params = [threads, xd[0], xd[1], xd[2], xd[3], od[1], od[2], p.filter[0], p.filter[1], p.stride[0], p.stride[1], wh.pad_before, ww.pad_before]
        .iter()
        .map(|&v| u(v))
        .collect::<R<Vec<u32>>>()?;
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(threads)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("pool", vec![("ACT", act), ("KIND", kind)], params, vec![xb, ob], groups)?]))
}

fn binary(cx: &mut Cx, op: BinaryOp, act: Activation) -> R<Lowered> {
    let (a, b, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_f32(a, "input 0")?;
    cx.expect_f32(b, "input 1")?;
    cx.expect_f32(o, "the output")?;
    let code = match op {
        BinaryOp::Add => 0,
        BinaryOp::Sub => 1,
        BinaryOp::Mul => 2,
        BinaryOp::Div => 3,
        BinaryOp::Pow => 4,
        BinaryOp::SquaredDifference => 5,
        BinaryOp::Maximum => 6,
        BinaryOp::Minimum => 7,
        BinaryOp::FloorDiv => 8,
        BinaryOp::FloorMod => 9,
    };
    let act = act_code(act)?;
    let (ad, bd, od) = (cx.dims(a).to_vec(), cx.dims(b).to_vec(), cx.dims(o).to_vec());
    let o6 = pad6(&od)?;
    let bstrides = |d: &[usize]| -> R<Vec<u32>> {
        let d6 = pad6(d)?;
        let s = strides(&d6);
        (0..6)
            .map(|i| {
                if d6[i] == o6[i] {
                    u(s[i])
                } else if d6[i] == 1 {
                    Ok(0)
                } else {
                    Err(format!("dims {d:?} do not broadcast to {od:?}"))
                }
            })
            .collect()
    };
    let same = u32::from(ad == od && bd == od);
    let mut params = vec![u(numel(&od))?];
    params.extend(o6.iter().map(|&v| u(v)).collect::<R<Vec<u32>>>()?);
    params.extend(bstrides(&ad)?);
    params.extend(bstrides(&bd)?);
    let (ab, bb, ob) = (cx.buf(a)?, cx.buf(b)?, cx.buf(o)?);
    let groups = cx.grid(numel(&od))?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("binary", vec![("ACT", act), ("OP", code), ("SAME", same)], params, vec![ab, bb, ob], groups)?]))
}

fn unary(cx: &mut Cx, op: UnaryOp) -> R<Lowered> {
    let (x, o) = (cx.input(0)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(o, "the output")?;
    let mut alpha = 0.0f32;
    let code = match op {
        UnaryOp::Relu => 0,
        UnaryOp::Relu6 => 1,
        UnaryOp::ReluN1To1 => 2,
        UnaryOp::Tanh => 3,
        UnaryOp::Logistic => 4,
        UnaryOp::HardSwish => 5,
        UnaryOp::LeakyRelu(a) => {
            alpha = a;
            6
        }
        UnaryOp::Relu0To1 => 7,
        UnaryOp::Elu => 8,
        UnaryOp::Gelu { approximate: false } => 9,
        UnaryOp::Gelu { approximate: true } => 10,
        UnaryOp::Abs => 11,
        UnaryOp::Neg => 12,
        UnaryOp::Exp => 13,
        UnaryOp::Log => 14,
        UnaryOp::Sqrt => 15,
        UnaryOp::Rsqrt => 16,
        UnaryOp::Square => 17,
        UnaryOp::Sin => 18,
        UnaryOp::Cos => 19,
        UnaryOp::Floor => 20,
        UnaryOp::Ceil => 21,
        UnaryOp::Round => 22,
        UnaryOp::Sign => 23,
        UnaryOp::LogicalNot => return Err("LogicalNot works on bools; gpu kernels compute in float32".into()),
    };
    let n = numel(cx.dims(o));
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("unary", vec![("OP", code)], vec![u(n)?, alpha.to_bits()], vec![xb, ob], groups)?]))
}

fn reduce(cx: &mut Cx, op: ReduceOp) -> R<Lowered> {
    let (x, axes, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(o, "the output")?;
    let code = match op {
        ReduceOp::Mean => 0,
        ReduceOp::Sum => 1,
        ReduceOp::Max => 2,
        ReduceOp::Min => 3,
        ReduceOp::Prod => 4,
        ReduceOp::Any | ReduceOp::All => return Err("Any/All work on bools; gpu kernels compute in float32".into()),
    };
    let xd = cx.dims(x).to_vec();
    let rank = xd.len();
    let d6 = pad6(&xd)?;
    let mut reduced = [0u32; 6];
    for a in cx.const_ints(axes, "the axes")? {
        let a = if a < 0 { a + rank as i64 } else { a };
        if a < 0 || a >= rank as i64 {
            return Err(format!("axis {a} is out of range for rank {rank}"));
        }
        reduced[6 - rank + a as usize] = 1;
    }
    let r: usize = (0..6).filter(|&i| reduced[i] == 1).map(|i| d6[i]).product();
    let outs = numel(&xd) / r.max(1);
    if r == 0 {
        return Err("reducing an empty axis".into());
    }
    let s = strides(&d6);
    let mut params = vec![u(outs)?, u(r)?];
    params.extend(d6.iter().map(|&v| u(v)).collect::<R<Vec<u32>>>()?);
    params.extend(s.iter().map(|&v| u(v)).collect::<R<Vec<u32>>>()?);
    params.extend(reduced);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(outs)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("reduce", vec![("OP", code)], params, vec![xb, ob], groups)?]))
}

fn softmax(cx: &mut Cx, beta: f32, log: bool) -> R<Lowered> {
    let (x, o) = (cx.input(0)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(o, "the output")?;
    let xd = cx.dims(x).to_vec();
    let len = *xd.last().ok_or("softmax of a scalar")?;
    let rows = numel(&xd) / len.max(1);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(rows)?;
    let params = vec![u(rows)?, u(len)?, beta.to_bits()];
    Ok(Lowered::Dispatches(vec![cx.dispatch("softmax", vec![("LOG", u32::from(log))], params, vec![xb, ob], groups)?]))
}

fn concat(cx: &mut Cx, axis: i32, act: Activation) -> R<Lowered> {
    let o = cx.output()?;
    cx.expect_word(o, "the output")?;
    let act = act_code(act)?;
    if act != 0 {
        cx.expect_f32(o, "the output (with a fused activation)")?;
    }
    let od = cx.dims(o).to_vec();
    let rank = od.len() as i64;
    let ax = if axis < 0 { i64::from(axis) + rank } else { i64::from(axis) };
    if ax < 0 || ax >= rank {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    let ax = ax as usize;
    let inner: usize = od[ax + 1..].iter().product();
    let ob = cx.buf(o)?;
    let n_in = cx.graph().op(cx.op).inputs.len();
    let mut at = 0;
    let mut out = Vec::new();
    for i in 0..n_in {
        let x = cx.input(i)?;
        if cx.dtype(x) != cx.dtype(o) {
            return Err(format!("input {i} is {}, the output {}", cx.dtype(x), cx.dtype(o)));
        }
        let xd = cx.dims(x).to_vec();
        if xd.len() != od.len() {
            return Err(format!("input {i} has rank {}, the output {}", xd.len(), od.len()));
        }
        let a = xd[ax];
        let n = numel(&xd);
        if n > 0 {
            let xb = cx.buf(x)?;
            let groups = cx.grid(n)?;
            let params = vec![u(n)?, u(a)?, u(inner)?, u(od[ax])?, u(at)?];
            out.push(cx.dispatch("copy", vec![("ACT", act)], params, vec![xb, ob], groups)?);
        }
        at += a;
    }
    if at != od[ax] {
        return Err(format!("inputs add up to {at} along axis {ax}, the output has {}", od[ax]));
    }
    Ok(Lowered::Dispatches(out))
}

fn pad(cx: &mut Cx) -> R<Lowered> {
    let (x, paddings, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_word(x, "the input")?;
    let (xd, od) = (cx.dims(x).to_vec(), cx.dims(o).to_vec());
    let pads = cx.const_ints(paddings, "the paddings")?;
    if pads.len() != 2 * xd.len() || pads.iter().any(|&p| p < 0) {
        return Err(format!("paddings {pads:?} do not fit rank {}", xd.len()));
    }
    let value = match cx.graph().op(cx.op).input(2) {
        Some(v) => {
            let d = cx.graph().operand(v).data.as_ref().ok_or("the pad value is not a constant")?;
            let b = d.bytes();
            if b.len() != 4 || cx.dtype(v) != cx.dtype(x) {
                return Err("the pad value must be one element of the input's type".into());
            }
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        }
        None => 0,
    };
    let (x6, o6) = (pad6(&xd)?, pad6(&od)?);
    let mut before = [0usize; 6];
    for (i, p) in pads.chunks(2).enumerate() {
        before[6 - xd.len() + i] = p[0] as usize;
    }
    let n = numel(&od);
    let mut params = vec![u(n)?];
    for arr in [o6, x6, before] {
        params.extend(arr.iter().map(|&v| u(v)).collect::<R<Vec<u32>>>()?);
    }
    params.push(value);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("pad", vec![], params, vec![xb, ob], groups)?]))
}

fn transpose(cx: &mut Cx) -> R<Lowered> {
    let (x, perm, o) = (cx.input(0)?, cx.input(1)?, cx.output()?);
    cx.expect_word(x, "the input")?;
    let xd = cx.dims(x).to_vec();
    let perm = cx.const_ints(perm, "the permutation")?;
    let rank = xd.len();
    if perm.len() != rank || rank > 6 {
        return Err(format!("permutation {perm:?} does not fit rank {rank}"));
    }
    let s = strides(&xd);
    let mut od = [1usize; 6];
    let mut os = [0usize; 6];
    for (i, &p) in perm.iter().enumerate() {
        let p = if p < 0 { p + rank as i64 } else { p };
        if p < 0 || p >= rank as i64 {
            return Err(format!("permutation {perm:?} is out of range"));
        }
        od[6 - rank + i] = xd[p as usize];
        os[6 - rank + i] = s[p as usize];
    }
    let n = numel(&xd);
    let mut params = vec![u(n)?];
    params.extend(od.iter().map(|&v| u(v)).collect::<R<Vec<u32>>>()?);
    params.extend(os.iter().map(|&v| u(v)).collect::<R<Vec<u32>>>()?);
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("transpose", vec![], params, vec![xb, ob], groups)?]))
}

fn resize(cx: &mut Cx, r: &nnrt_core::Resize) -> R<Lowered> {
    let (x, o) = (cx.input(0)?, cx.output()?);
    cx.expect_f32(x, "the input")?;
    cx.expect_f32(o, "the output")?;
    let (xd, od) = (cx.dims(x).to_vec(), cx.dims(o).to_vec());
    if xd.len() != 4 || od.len() != 4 {
        return Err("resize tensors must be 4-D".into());
    }
    let scale = |i: usize, o: usize| -> f32 {
        if r.align_corners && o > 1 {
            (i - 1) as f32 / (o - 1) as f32
        } else {
            i as f32 / o as f32
        }
    };
    let mode = match r.mode {
        ResizeMode::Bilinear => 0,
        ResizeMode::Nearest => 1,
    };
    let n = numel(&od);
    let params = vec![u(n)?, u(xd[0])?, u(xd[1])?, u(xd[2])?, u(xd[3])?, u(od[1])?, u(od[2])?, scale(xd[1], od[1]).to_bits(), scale(xd[2], od[2]).to_bits()];
    let (xb, ob) = (cx.buf(x)?, cx.buf(o)?);
    let groups = cx.grid(n)?;
    let constants = vec![("MODE", mode), ("HALF", u32::from(r.half_pixel_centers)), ("ALIGN", u32::from(r.align_corners))];
    Ok(Lowered::Dispatches(vec![cx.dispatch("resize", constants, params, vec![xb, ob], groups)?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad6_and_strides() {
        assert_eq!(pad6(&[2, 3]).unwrap(), [1, 1, 1, 1, 2, 3]);
        assert!(pad6(&[1; 7]).is_err());
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
    }

    /// An ADD of two [n] float tensors, lowered under `limits`.
    fn lower_add(n: usize, limits: Limits) -> R<Lowered> {
        use nnrt_core::{Config, Operand, Operation, Subgraph};
        let mut g = Subgraph::default();
        let a = g.add_operand(Operand::new("a", DType::F32, &[n]));
        let b = g.add_operand(Operand::new("b", DType::F32, &[n]));
        let o = g.add_operand(Operand::new("o", DType::F32, &[n]));
        g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, inputs: vec![Some(a), Some(b)], outputs: vec![o] });
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
}
