//! The XNNPACK delegate (`XnnpackBackend`): its payload decoded into nnrt's IR, inline in the
//! calling method's subgraph.
//!
//! Payload: an optional 32-byte `XH00` header (bytes 4..8; u16 length at 8, u32 flatbuffer
//! offset and size at 10 and 14, u32 constant section offset at 18, u64 its size at 22), then the
//! `XN00`/`XN01` graph flatbuffer (`loaders/schema/xnnpack.fbs`). Values are NHWC as XNNPACK
//! keeps them; constants come from the program's named data (sha256 keys), the payload's
//! constant section, or (old payloads) the graph's inline buffers. External values are the
//! DelegateCall's arguments by `external_id` (inputs, then outputs).
//!
//! Dynamically quantized int8 values (`qdint8`: scale and zero point per row, chosen at run time)
//! are float32 operands written by a `DynamicQuantize` with XNNPACK's rule; the float op that
//! reads one multiplies them with its weights dequantized here, once (int8 `qcint8`, 4-bit
//! `qcint4` per channel and `qbint4` per block, both with zero point 8): the same products as
//! XNNPACK's integer kernels, summed in float.

use std::collections::HashMap;

use flatbuffers::VerifierOptions;

use nnrt_core::{Activation, BinaryOp, ConstData, Conv2D, DType, DepthwiseConv2D, DynamicQuantize, FullyConnected, LoadError, OpKind, Operand, OperandId, Padding, Pool2D, PoolKind, QParamsRule, Quantization, ReduceOp, Resize, ResizeMode, TransposeConv, UnaryOp};

use super::method::MethodBuilder;
use super::ops::{reshape_into, transpose};
use crate::generated::nnrt_xnnpack as x;

/// `XNN_INVALID_VALUE_ID`: no value (no bias, unused concat input).
const NONE: u32 = u32::MAX;
const FLAG_EXTERNAL_INPUT: u32 = 1;
const FLAG_EXTERNAL_OUTPUT: u32 = 2;

struct Payload<'a> {
    graph: &'a [u8],
    constants: Option<&'a [u8]>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Splits the payload into the graph flatbuffer and the constant section.
fn payload<'a>(b: &MethodBuilder<'_, '_>, data: &'a [u8]) -> Result<Payload<'a>, LoadError> {
    if data.get(4..8) != Some(b"XH00".as_slice()) {
        return Ok(Payload { graph: data, constants: None });
    }
    if data.len() < 30 {
        return Err(b.err(format!("the XNNPACK payload is {} bytes, shorter than its 30-byte header", data.len())));
    }
    let (fo, fs, co) = (u32_at(data, 10) as u64, u32_at(data, 14) as u64, u32_at(data, 18) as u64);
    let cs = u64::from_le_bytes(data[22..30].try_into().unwrap_or([0; 8]));
    let len = data.len() as u64;
    if fs < 8 || fo + fs > len || co.checked_add(cs).is_none_or(|e| e > len) || co < fo + fs {
        return Err(b.err(format!("the XNNPACK header's flatbuffer {fo}+{fs} and constants {co}+{cs} do not fit the {len}-byte payload without overlapping")));
    }
    Ok(Payload { graph: &data[fo as usize..(fo + fs) as usize], constants: Some(&data[co as usize..(co + cs) as usize]) })
}

/// Imports the delegate's graph; `args` are the DelegateCall's value indices.
pub(crate) fn call<'a>(b: &mut MethodBuilder<'_, 'a>, data: &'a [u8], args: &[i64]) -> Result<(), LoadError> {
    let p = payload(b, data)?;
    let id = p.graph.get(4..8).unwrap_or_default();
    if id != b"XN00" && id != b"XN01" {
        return Err(b.err(format!("the XNNPACK graph's identifier is \"{}\", not \"XN00\" or \"XN01\"", id.escape_ascii())));
    }
    let opts = VerifierOptions { max_tables: 10_000_000, max_depth: 64, max_apparent_size: 1 << 31, ..Default::default() };
    let g = x::root_as_xnngraph_with_opts(&opts, p.graph).map_err(|e| b.err(format!("the XNNPACK graph does not verify: {e}")))?;
    let mut cx = Cx { values: HashMap::new(), ops: HashMap::new(), g, p, args };
    for v in g.xvalues().unwrap_or_default().iter() {
        let (t, quant) = match (v.xvalue_union_as_xnntensor_value(), v.xvalue_union_as_xnnquantized_tensor_value()) {
            (Some(t), _) => (t, None),
            (None, Some(q)) => (q.tensor_value().ok_or_else(|| b.err("a quantized XNNPACK value has no tensor"))?, Some(q)),
            _ => return Err(b.err("an XNNPACK value of unknown kind")),
        };
        cx.values.insert(t.id_out(), (t, quant));
    }
    for (k, n) in g.xnodes().unwrap_or_default().iter().enumerate() {
        node(b, &mut cx, k, &n)?;
    }
    // External outputs: written by the graph, handed back to the program.
    for (&vid, &(t, _)) in &cx.values {
        if t.flags() & FLAG_EXTERNAL_OUTPUT != 0 {
            let src = *cx.ops.get(&vid).ok_or_else(|| b.err(format!("XNNPACK output value {vid} is never written")))?;
            let ext = args.get(t.external_id() as usize).copied().ok_or_else(|| b.err(format!("XNNPACK value {vid} names argument {} of {}", t.external_id(), args.len())))?;
            let out = b.write(ext)?;
            reshape_into(b, src, out);
        }
    }
    Ok(())
}

type Quant<'a> = Option<x::XNNQuantizedTensorValue<'a>>;

struct Cx<'a, 'p> {
    values: HashMap<u32, (x::XNNTensorValue<'a>, Quant<'a>)>,
    ops: HashMap<u32, OperandId>,
    g: x::XNNGraph<'a>,
    p: Payload<'a>,
    args: &'p [i64],
}

fn dtype(b: &MethodBuilder<'_, '_>, t: &x::XNNTensorValue<'_>) -> Result<DType, LoadError> {
    Ok(match t.datatype() {
        // Dynamic int8 values are held dequantized; 4-bit weights are dequantized at load.
        x::XNNDatatype::xnn_datatype_fp32 | x::XNNDatatype::xnn_datatype_qdint8 => DType::F32,
        x::XNNDatatype::xnn_datatype_qcint4 | x::XNNDatatype::xnn_datatype_qbint4 => DType::F32,
        x::XNNDatatype::xnn_datatype_fp16 => DType::F16,
        x::XNNDatatype::xnn_datatype_qint8 | x::XNNDatatype::xnn_datatype_qcint8 => DType::I8,
        x::XNNDatatype::xnn_datatype_quint8 => DType::U8,
        x::XNNDatatype::xnn_datatype_qint32 | x::XNNDatatype::xnn_datatype_qcint32 | x::XNNDatatype::xnn_datatype_int32 => DType::I32,
        other => {
            return Err(LoadError::UnsupportedType {
                path: b.c.path.to_string(),
                tensor: t.id_out() as usize,
                name: format!("XNNPACK value {} of method '{}'", t.id_out(), b.method),
                dtype: other.variant_name().map_or_else(|| format!("XNNPACK datatype {}", other.0), str::to_string),
            })
        }
    })
}

impl<'a> Cx<'a, '_> {
    /// The operand of XNNPACK value `id`: an external input, a constant, or a node's result.
    fn get(&mut self, b: &mut MethodBuilder<'_, 'a>, id: u32) -> Result<OperandId, LoadError> {
        if let Some(&o) = self.ops.get(&id) {
            return Ok(o);
        }
        let &(t, q) = self.values.get(&id).ok_or_else(|| b.err(format!("XNNPACK value {id} does not exist")))?;
        let o = if t.flags() & FLAG_EXTERNAL_INPUT != 0 {
            let ext = self.args.get(t.external_id() as usize).copied().ok_or_else(|| b.err(format!("XNNPACK input {id} names argument {} of {}", t.external_id(), self.args.len())))?;
            let src = b.read(ext)?;
            let want = dims(&t);
            if b.dims(src) == want {
                src
            } else {
                let r = b.temp(b.dtype(src), &want);
                reshape_into(b, src, r);
                r
            }
        } else if t.constant_buffer_idx() != 0 && matches!(t.datatype(), x::XNNDatatype::xnn_datatype_qcint4 | x::XNNDatatype::xnn_datatype_qbint4) {
            let op = self.int4_weights(b, &t, q)?;
            b.g.add_operand(op)
        } else if t.constant_buffer_idx() != 0 {
            let mut op = self.declare(b, &t, q)?;
            op.data = Some(self.constant(b, &t, &op)?);
            b.g.add_operand(op)
        } else {
            return Err(b.err(format!("XNNPACK value {id} is read before a node writes it")));
        };
        self.ops.insert(id, o);
        Ok(o)
    }

    fn declare(&self, b: &MethodBuilder<'_, 'a>, t: &x::XNNTensorValue<'_>, q: Quant<'_>) -> Result<Operand, LoadError> {
        let mut op = Operand::new(format!("xnn{}", t.id_out()), dtype(b, t)?, &dims(t));
        if t.datatype() == x::XNNDatatype::xnn_datatype_qdint8 {
            // Held dequantized (float32, see the module's notes).
            return Ok(op);
        }
        if let Some(q) = q {
            op.quant = if let Some(pt) = q.quant_params_as_per_tensor_quant() {
                Quantization::PerTensor { scale: pt.scale(), zero_point: i64::from(pt.zero_point()) }
            } else if let Some(pc) = q.quant_params_as_per_channel_quant() {
                let scales: Vec<f32> = if pc.scale_buffer_idx() != 0 {
                    let bytes = self.constant_bytes(b, pc.scale_buffer_idx())?;
                    bytes.chunks_exact(4).take(pc.num_scales() as usize).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
                } else {
                    pc.scale().map(|s| s.iter().collect()).unwrap_or_default()
                };
                let axis = usize::try_from(pc.channel_dim()).map_err(|_| b.err("a negative quantization channel dim"))?;
                Quantization::PerAxis { zero_points: vec![0; scales.len()], scales, axis }
            } else {
                return Err(b.err(format!("XNNPACK value {} uses dynamic or blockwise quantization, which nnrt does not run yet", t.id_out())));
            };
        }
        Ok(op)
    }

    /// The float32 values of 4-bit weights: `qcint4` (one float scale per channel of
    /// `channel_dim`) or `qbint4` (one bfloat16 scale per block of `group_size` along the last
    /// dim of each row); two values per byte, the low nibble first, zero point 8.
    fn int4_weights(&self, b: &MethodBuilder<'_, 'a>, t: &x::XNNTensorValue<'_>, q: Quant<'_>) -> Result<Operand, LoadError> {
        let id = t.id_out();
        let d = dims(t);
        let n = b.budget(d.iter().try_fold(1usize, |a, &v| a.checked_mul(v)), &format!("XNNPACK value {id}'s 4-bit weights"))?;
        let packed = self.constant_bytes(b, t.constant_buffer_idx())?;
        let packed = packed.get(..n.div_ceil(2)).ok_or_else(|| b.err(format!("XNNPACK value {id}: {n} 4-bit values need {} bytes, the constant has {}", n.div_ceil(2), packed.len())))?;
        let nibble = |e: usize| i32::from((packed[e / 2] >> (4 * (e % 2))) & 15) - 8;
        let q = q.ok_or_else(|| b.err(format!("4-bit XNNPACK value {id} has no quantization")))?;
        let last = d.last().copied().unwrap_or(1).max(1);
        let scale_of: Box<dyn Fn(usize) -> f32> = if let Some(pc) = q.quant_params_as_per_channel_quant() {
            let axis = usize::try_from(pc.channel_dim()).ok().filter(|&a| a < d.len()).ok_or_else(|| b.err(format!("XNNPACK value {id}: channel dim {} of a rank-{} tensor", pc.channel_dim(), d.len())))?;
            let scales: Vec<f32> = if pc.scale_buffer_idx() != 0 {
                self.constant_bytes(b, pc.scale_buffer_idx())?.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
            } else {
                pc.scale().map(|s| s.iter().collect()).unwrap_or_default()
            };
            let inner: usize = d[axis + 1..].iter().product();
            if scales.len() < d[axis] {
                return Err(b.err(format!("XNNPACK value {id}: {} scales for {} channels", scales.len(), d[axis])));
            }
            let c = d[axis].max(1);
            Box::new(move |e| scales[(e / inner.max(1)) % c])
        } else if let Some(g) = q.quant_params_as_per_channel_group_quant() {
            let group = usize::try_from(g.group_size()).ok().filter(|&s| s > 0 && last % s == 0).ok_or_else(|| b.err(format!("XNNPACK value {id}: group size {} does not divide its rows of {last}", g.group_size())))?;
            let bf16 = |v: u16| f32::from_bits(u32::from(v) << 16);
            let scales: Vec<f32> = if g.scale_buffer_idx() != 0 {
                self.constant_bytes(b, g.scale_buffer_idx())?.chunks_exact(2).map(|c| bf16(u16::from_le_bytes([c[0], c[1]]))).collect()
            } else if let Some(s) = g.scale_bf16().filter(|s| !s.is_empty()) {
                s.iter().map(bf16).collect()
            } else {
                g.scale().map(|s| s.iter().collect()).unwrap_or_default()
            };
            let blocks = n / group;
            if scales.len() < blocks {
                return Err(b.err(format!("XNNPACK value {id}: {} block scales for {blocks} blocks of {group}", scales.len())));
            }
            Box::new(move |e| scales[e / group])
        } else {
            return Err(b.err(format!("4-bit XNNPACK value {id} has neither per-channel nor per-block scales")));
        };
        let bytes: Vec<u8> = (0..n).flat_map(|e| (nibble(e) as f32 * scale_of(e)).to_le_bytes()).collect();
        let mut op = Operand::new(format!("xnn{id}_dequantized"), DType::F32, &d);
        op.data = Some(ConstData::owned(bytes));
        Ok(op)
    }

    /// The bytes of `constant_data[k]`.
    fn constant_bytes(&self, b: &MethodBuilder<'_, 'a>, k: u32) -> Result<&'a [u8], LoadError> {
        if let Some(list) = self.g.constant_data().filter(|l| !l.is_empty()) {
            let c = list.iter().nth(k as usize).ok_or_else(|| b.err(format!("XNNPACK constant {k} does not exist (the graph has {})", list.len())))?;
            let size = usize::try_from(c.size()).unwrap_or(usize::MAX);
            let bytes: &'a [u8] = match c.named_key().filter(|k| !k.is_empty()) {
                Some(key) => b.c.named(key)?,
                None => {
                    let sec = self.p.constants.ok_or_else(|| b.err(format!("XNNPACK constant {k} has an offset but the payload has no constant section")))?;
                    let start = usize::try_from(c.offset()).ok().filter(|&s| s <= sec.len()).ok_or_else(|| b.err(format!("XNNPACK constant {k}'s offset {} is past its section ({} bytes)", c.offset(), sec.len())))?;
                    &sec[start..]
                }
            };
            return bytes.get(..size).ok_or_else(|| b.err(format!("XNNPACK constant {k} needs {size} bytes, its data has {}", bytes.len())));
        }
        let bufs = self.g.constant_buffer().ok_or_else(|| b.err(format!("XNNPACK constant {k}: the graph has no constant data")))?;
        let buf = bufs.iter().nth(k as usize).ok_or_else(|| b.err(format!("XNNPACK constant buffer {k} does not exist")))?;
        Ok(buf.storage().map(|s| s.bytes()).unwrap_or(&[]))
    }

    fn constant(&self, b: &MethodBuilder<'_, 'a>, t: &x::XNNTensorValue<'_>, op: &Operand) -> Result<nnrt_core::ConstData, LoadError> {
        let bytes = self.constant_bytes(b, t.constant_buffer_idx())?;
        let need = op.default_dims.iter().try_fold(op.dtype.size(), |a, &d| a.checked_mul(d)).unwrap_or(usize::MAX);
        let bytes = bytes.get(..need).ok_or_else(|| b.err(format!("XNNPACK value {} needs {need} bytes of constant data, has {}", t.id_out(), bytes.len())))?;
        b.c.borrow(bytes)
    }

    /// A fresh operand for node output `id`.
    fn out(&mut self, b: &mut MethodBuilder<'_, 'a>, id: u32) -> Result<OperandId, LoadError> {
        let &(t, q) = self.values.get(&id).ok_or_else(|| b.err(format!("XNNPACK value {id} does not exist")))?;
        let op = self.declare(b, &t, q)?;
        let o = b.g.add_operand(op);
        self.ops.insert(id, o);
        Ok(o)
    }
}

/// Quantized constant weights `w` dequantized to a float32 constant when the op's input `i` is
/// float (a dynamically quantized value); otherwise `w` itself.
fn float_weights(b: &mut MethodBuilder<'_, '_>, i: OperandId, w: OperandId) -> Result<OperandId, LoadError> {
    let wo = b.g.operand(w);
    if b.g.operand(i).dtype != DType::F32 || !wo.quant.is_quantized() || wo.data.is_none() {
        return Ok(w);
    }
    let q = wo.quant.clone();
    super::ops::dequantized_constant(b, w, &q)
}

fn dims(t: &x::XNNTensorValue<'_>) -> Vec<usize> {
    t.dims().map(|d| d.iter().map(|v| v as usize).collect()).unwrap_or_default()
}

/// The fused activation an output range is, or `None` when it needs a clamp of its own.
fn activation(n: &x::XNode<'_>) -> (Activation, Option<(f32, f32)>) {
    let Some(mm) = n.output_min_max() else { return (Activation::None, None) };
    match (mm.output_min(), mm.output_max()) {
        (lo, hi) if lo == f32::NEG_INFINITY && hi == f32::INFINITY => (Activation::None, None),
        (lo, hi) if lo == 0.0 && hi == f32::INFINITY => (Activation::Relu, None),
        (lo, hi) if lo == 0.0 && hi == 6.0 => (Activation::Relu6, None),
        (lo, hi) if lo == -1.0 && hi == 1.0 => (Activation::ReluN1To1, None),
        (lo, hi) => (Activation::None, Some((lo, hi))),
    }
}

/// `min(max(y, lo), hi)` into node output `out_id` (only the bounds that bind).
fn clamp_to<'a>(b: &mut MethodBuilder<'_, 'a>, cx: &mut Cx<'a, '_>, y: OperandId, lo: f32, hi: f32, out_id: u32) -> Result<(), LoadError> {
    let yo = b.g.operand(y).clone();
    if let (Quantization::PerTensor { scale, zero_point }, DType::I8 | DType::U8) = (&yo.quant, yo.dtype) {
        // A clamp of quantized values: the bounds quantized with the input's parameters, the
        // comparisons on the stored integers.
        let (qmin, qmax) = if yo.dtype == DType::I8 { (-128.0, 127.0) } else { (0.0, 255.0) };
        let q = |v: f32| ((f64::from(v) / f64::from(*scale)).round_ties_even() + *zero_point as f64).clamp(qmin, qmax);
        let mut v = y;
        for (bound, op) in [(lo, BinaryOp::Maximum), (hi, BinaryOp::Minimum)] {
            if bound.is_infinite() {
                continue;
            }
            let byte = if yo.dtype == DType::I8 { (q(bound) as i8) as u8 } else { q(bound) as u8 };
            let mut k = nnrt_core::Operand::new("clamp_bound", yo.dtype, &[]);
            k.quant = yo.quant.clone();
            k.data = Some(nnrt_core::ConstData::owned(vec![byte]));
            let k = b.g.add_operand(k);
            let mut t = nnrt_core::Operand::new("clamped", yo.dtype, &yo.default_dims);
            t.quant = yo.quant.clone();
            let t = b.g.add_operand(t);
            b.emit_all(OpKind::Binary { op, act: Activation::None }, &[v, k], vec![t]);
            v = t;
        }
        let out = cx.out(b, out_id)?;
        reshape_into(b, v, out);
        return Ok(());
    }
    let mut v = y;
    if lo > f32::NEG_INFINITY {
        let k = b.const_f32(&[], &[lo]);
        v = super::ops::binary(b, BinaryOp::Maximum, v, k);
    }
    if hi < f32::INFINITY {
        let k = b.const_f32(&[], &[hi]);
        v = super::ops::binary(b, BinaryOp::Minimum, v, k);
    }
    let out = cx.out(b, out_id)?;
    reshape_into(b, v, out);
    Ok(())
}

/// Emits `kind` on `inputs` into node output `out_id`, then the node's output range.
fn emit<'a>(b: &mut MethodBuilder<'_, 'a>, cx: &mut Cx<'a, '_>, n: &x::XNode<'_>, kind: OpKind, inputs: Vec<Option<OperandId>>, out_id: u32, clamps: bool) -> Result<(), LoadError> {
    let extra = if clamps { activation(n).1 } else { None };
    match extra {
        None => {
            let out = cx.out(b, out_id)?;
            b.emit(kind, inputs, vec![out]);
        }
        Some((lo, hi)) => {
            let &(t, _) = cx.values.get(&out_id).ok_or_else(|| b.err(format!("XNNPACK value {out_id} does not exist")))?;
            let y = b.temp(dtype(b, &t)?, &dims(&t));
            b.emit(kind, inputs, vec![y]);
            clamp_to(b, cx, y, lo, hi, out_id)?;
        }
    }
    Ok(())
}

fn unary<'a>(b: &mut MethodBuilder<'_, 'a>, cx: &mut Cx<'a, '_>, n: &x::XNode<'_>, u: Option<x::XNNUnaryNode<'_>>, op: UnaryOp) -> Result<(), LoadError> {
    let u = u.ok_or_else(|| b.err("an empty XNNPACK node"))?;
    let i = cx.get(b, u.input_id())?;
    emit(b, cx, n, OpKind::Unary(op), vec![Some(i)], u.output_id(), false)
}

fn binary<'a>(b: &mut MethodBuilder<'_, 'a>, cx: &mut Cx<'a, '_>, n: &x::XNode<'_>, u: Option<x::XNNBinaryNode<'_>>, op: BinaryOp) -> Result<(), LoadError> {
    let u = u.ok_or_else(|| b.err("an empty XNNPACK node"))?;
    let (i1, i2) = (cx.get(b, u.input1_id())?, cx.get(b, u.input2_id())?);
    let clamps = matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div);
    let act = if clamps { activation(n).0 } else { Activation::None };
    emit(b, cx, n, OpKind::Binary { op, act }, vec![Some(i1), Some(i2)], u.output_id(), clamps)
}

fn opt<'a>(cx: &mut Cx<'a, '_>, b: &mut MethodBuilder<'_, 'a>, id: u32) -> Result<Option<OperandId>, LoadError> {
    if id == NONE {
        Ok(None)
    } else {
        cx.get(b, id).map(Some)
    }
}

fn node<'a>(b: &mut MethodBuilder<'_, 'a>, cx: &mut Cx<'a, '_>, k: usize, n: &x::XNode<'_>) -> Result<(), LoadError> {
    use x::XNodeUnion as N;
    let t = n.xnode_union_type();
    let name = t.variant_name().unwrap_or("unknown");
    let unsupported = |b: &MethodBuilder<'_, '_>| LoadError::UnsupportedOp {
        path: b.c.path.to_string(),
        subgraph: 0,
        index: b.at.0,
        op: format!("XnnpackBackend {name}"),
        detail: format!(" (method '{}', XNNPACK node {k})", b.method),
    };
    match t {
        N::XNNAdd => binary(b, cx, n, n.xnode_union_as_xnnadd(), BinaryOp::Add),
        N::XNNSubtract => binary(b, cx, n, n.xnode_union_as_xnnsubtract(), BinaryOp::Sub),
        N::XNNMultiply => binary(b, cx, n, n.xnode_union_as_xnnmultiply(), BinaryOp::Mul),
        N::XNNDiv => binary(b, cx, n, n.xnode_union_as_xnndiv(), BinaryOp::Div),
        N::XNNMinimum => binary(b, cx, n, n.xnode_union_as_xnnminimum(), BinaryOp::Minimum),
        N::XNNMaximum => binary(b, cx, n, n.xnode_union_as_xnnmaximum(), BinaryOp::Maximum),
        N::XNNPReLU => {
            let u = n.xnode_union_as_xnnpre_lu().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let (i1, i2) = (cx.get(b, u.input1_id())?, cx.get(b, u.input2_id())?);
            emit(b, cx, n, OpKind::Prelu, vec![Some(i1), Some(i2)], u.output_id(), false)
        }
        N::XNNBatchMatrixMultiply => {
            let u = n.xnode_union_as_xnnbatch_matrix_multiply().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let (i1, i2) = (cx.get(b, u.input1_id())?, cx.get(b, u.input2_id())?);
            emit(b, cx, n, OpKind::BatchMatMul { adj_x: false, adj_y: u.flags() & 1 != 0 }, vec![Some(i1), Some(i2)], u.output_id(), false)
        }
        N::XNNSigmoid => unary(b, cx, n, n.xnode_union_as_xnnsigmoid(), UnaryOp::Logistic),
        N::XNNFloor => unary(b, cx, n, n.xnode_union_as_xnnfloor(), UnaryOp::Floor),
        N::XNNCeiling => unary(b, cx, n, n.xnode_union_as_xnnceiling(), UnaryOp::Ceil),
        N::XNNSquareRoot => unary(b, cx, n, n.xnode_union_as_xnnsquare_root(), UnaryOp::Sqrt),
        N::XNNReciprocalSquareRoot => unary(b, cx, n, n.xnode_union_as_xnnreciprocal_square_root(), UnaryOp::Rsqrt),
        N::XNNNegate => unary(b, cx, n, n.xnode_union_as_xnnnegate(), UnaryOp::Neg),
        N::XNNSquare => unary(b, cx, n, n.xnode_union_as_xnnsquare(), UnaryOp::Square),
        N::XNNAbs => unary(b, cx, n, n.xnode_union_as_xnnabs(), UnaryOp::Abs),
        N::XNNHardswish => unary(b, cx, n, n.xnode_union_as_xnnhardswish(), UnaryOp::HardSwish),
        N::XNNLog => unary(b, cx, n, n.xnode_union_as_xnnlog(), UnaryOp::Log),
        N::XNNTanh => unary(b, cx, n, n.xnode_union_as_xnntanh(), UnaryOp::Tanh),
        N::XNNExp => unary(b, cx, n, n.xnode_union_as_xnnexp(), UnaryOp::Exp),
        N::XNNSin => unary(b, cx, n, n.xnode_union_as_xnnsin(), UnaryOp::Sin),
        N::XNNCos => unary(b, cx, n, n.xnode_union_as_xnncos(), UnaryOp::Cos),
        N::XNNGelu => unary(b, cx, n, n.xnode_union_as_xnngelu(), UnaryOp::Gelu { approximate: false }),
        N::XNNSoftmax => {
            let u = n.xnode_union_as_xnnsoftmax().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            emit(b, cx, n, OpKind::Softmax { beta: 1.0 }, vec![Some(i)], u.output_id(), false)
        }
        N::XNNCopy => {
            let u = n.xnode_union_as_xnncopy().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let out = cx.out(b, u.output_id())?;
            reshape_into(b, i, out);
            Ok(())
        }
        N::XNNClamp => {
            let u = n.xnode_union_as_xnnclamp().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let (lo, hi) = n.output_min_max().map_or((f32::NEG_INFINITY, f32::INFINITY), |m| (m.output_min(), m.output_max()));
            clamp_to(b, cx, i, lo, hi, u.output_id())
        }
        N::XNNConvert => {
            let u = n.xnode_union_as_xnnconvert().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let &(to, tq) = cx.values.get(&u.output_id()).ok_or_else(|| b.err(format!("XNNPACK value {} does not exist", u.output_id())))?;
            if to.datatype() == x::XNNDatatype::xnn_datatype_qdint8 {
                let rows = tq.and_then(|q| q.quant_params_as_per_token_dynamic_quant()).map_or(1, |p| p.num_nonbatch_dims());
                let row_dims = usize::try_from(rows).map_err(|_| b.err(format!("XNNPACK value {}: {rows} non-batch dims", u.output_id())))?;
                let out = cx.out(b, u.output_id())?;
                b.emit_all(OpKind::DynamicQuantize(DynamicQuantize { rule: QParamsRule::Xnnpack, qmin: -128, qmax: 127, row_dims }), &[i], vec![out]);
                return Ok(());
            }
            let out = cx.out(b, u.output_id())?;
            let kind = match (b.g.operand(i).quant.is_quantized(), b.g.operand(out).quant.is_quantized()) {
                (false, true) => OpKind::Quantize,
                (true, false) => OpKind::Dequantize,
                (true, true) => OpKind::Quantize,
                (false, false) => OpKind::Cast,
            };
            b.emit_all(kind, &[i], vec![out]);
            Ok(())
        }
        N::XNNELU => {
            let u = n.xnode_union_as_xnnelu().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            if u.alpha() != 1.0 {
                return Err(unsupported(b));
            }
            let i = cx.get(b, u.input_id())?;
            emit(b, cx, n, OpKind::Unary(UnaryOp::Elu), vec![Some(i)], u.output_id(), false)
        }
        N::XNNLeakyReLU => {
            let u = n.xnode_union_as_xnnleaky_re_lu().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            emit(b, cx, n, OpKind::Unary(UnaryOp::LeakyRelu(u.negative_slope())), vec![Some(i)], u.output_id(), false)
        }
        N::XNNFullyConnected => {
            let u = n.xnode_union_as_xnnfully_connected().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input1_id())?;
            let w = cx.get(b, u.filter_id())?;
            let mut w = float_weights(b, i, w)?;
            if u.flags() & 1 != 0 {
                w = transpose(b, w, &[1, 0]);
            }
            let bias = opt(cx, b, u.bias_id())?;
            let act = activation(n).0;
            emit(b, cx, n, OpKind::FullyConnected(FullyConnected { act, keep_num_dims: true, asymmetric_quantize_inputs: false }), vec![Some(i), Some(w), bias], u.output_id(), true)
        }
        N::XNNConv2d | N::XNNDepthwiseConv2d | N::XNNConvTranspose2d => {
            let u = match t {
                N::XNNConv2d => n.xnode_union_as_xnnconv_2d(),
                N::XNNDepthwiseConv2d => n.xnode_union_as_xnndepthwise_conv_2d(),
                _ => n.xnode_union_as_xnnconv_transpose_2d(),
            }
            .ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input1_id())?;
            let w = cx.get(b, u.filter_id())?;
            let w = float_weights(b, i, w)?;
            let bias = opt(cx, b, u.bias_id())?;
            let stride = [u.subsampling_height().max(1) as usize, u.subsampling_width().max(1) as usize];
            let dilation = [u.dilation_height().max(1) as usize, u.dilation_width().max(1) as usize];
            let pad = [u.padding_top() as usize, u.padding_bottom() as usize, u.padding_left() as usize, u.padding_right() as usize];
            let act = activation(n).0;
            let kind = match t {
                N::XNNConv2d => OpKind::Conv2D(Conv2D { padding: Padding::Explicit(pad), stride, dilation, act }),
                N::XNNDepthwiseConv2d => {
                    let m = (u.group_output_channels() / u.group_input_channels().max(1)) as usize;
                    OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Explicit(pad), stride, dilation, depth_multiplier: m, act })
                }
                _ => {
                    let adj = [u.adjustment_height() as usize, u.adjustment_width() as usize];
                    let groups = u.groups().max(1) as usize;
                    // Weights [groups * out/g, KH, KW, in/g]: group j is rows j*out/g.. and input
                    // channels j*in/g..; a dilated kernel becomes its zero-filled dense twin.
                    let w = if dilation == [1, 1] { w } else { super::ops::dilate_kernel(b, w, [1, 2], dilation).ok_or_else(|| unsupported(b))? };
                    let &(ot, _) = cx.values.get(&u.output_id()).ok_or_else(|| b.err("a missing XNNPACK output"))?;
                    let od = dims(&ot);
                    let (per_in, per_out) = (u.group_input_channels() as usize, u.group_output_channels() as usize);
                    if od.len() != 4 || (groups > 1 && (b.g.operand(w).data.is_none() || per_in * groups != b.dims(i).get(3).copied().unwrap_or(0))) {
                        return Err(unsupported(b));
                    }
                    let padding = Padding::Explicit([pad[0], pad[1].saturating_sub(adj[0]), pad[2], pad[3].saturating_sub(adj[1])]);
                    let act = activation(n).0;
                    if groups == 1 {
                        let shape = b.const_i32(&od.iter().map(|&d| d as i32).collect::<Vec<_>>());
                        let kind = OpKind::TransposeConv(TransposeConv { padding, stride, act });
                        return emit(b, cx, n, kind, vec![Some(shape), Some(w), Some(i), bias], u.output_id(), true);
                    }
                    let mut parts = Vec::with_capacity(groups);
                    for j in 0..groups {
                        let wj = super::ops::rows(b, w, j * per_out, per_out);
                        let bj = bias.map(|c| super::ops::rows(b, c, j * per_out, per_out));
                        let xj = super::ops::channels(b, i, j * per_in, per_in);
                        let pd = [od[0], od[1], od[2], per_out];
                        let shape = b.const_i32(&pd.iter().map(|&d| d as i32).collect::<Vec<_>>());
                        let y = b.temp(b.dtype(i), &pd);
                        b.emit(OpKind::TransposeConv(TransposeConv { padding, stride, act }), vec![Some(shape), Some(wj), Some(xj), bj], vec![y]);
                        parts.push(y);
                    }
                    let ins: Vec<Option<OperandId>> = parts.into_iter().map(Some).collect();
                    return emit(b, cx, n, OpKind::Concatenation { axis: 3, act: Activation::None }, ins, u.output_id(), true);
                }
            };
            emit(b, cx, n, kind, vec![Some(i), Some(w), bias], u.output_id(), true)
        }
        N::XNNMaxPooling2d | N::XNNAvgPooling2d => {
            let u = if t == N::XNNMaxPooling2d { n.xnode_union_as_xnnmax_pooling_2d() } else { n.xnode_union_as_xnnavg_pooling_2d() }.ok_or_else(|| b.err("an empty XNNPACK node"))?;
            if u.dilation_height() > 1 || u.dilation_width() > 1 {
                return Err(unsupported(b));
            }
            let i = cx.get(b, u.input_id())?;
            let kind = if t == N::XNNMaxPooling2d { PoolKind::Max } else { PoolKind::Average };
            let p = Pool2D {
                kind,
                padding: Padding::Explicit([u.padding_top() as usize, u.padding_bottom() as usize, u.padding_left() as usize, u.padding_right() as usize]),
                stride: [u.stride_height().max(1) as usize, u.stride_width().max(1) as usize],
                filter: [u.pooling_height() as usize, u.pooling_width() as usize],
                act: activation(n).0,
            };
            emit(b, cx, n, OpKind::Pool2D(p), vec![Some(i)], u.output_id(), true)
        }
        N::XNNGlobalAvgPooling2d => {
            let u = n.xnode_union_as_xnnglobal_avg_pooling_2d().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let rank = b.dims(i).len();
            if rank < 3 {
                return Err(b.err("global average pooling needs rank >= 3"));
            }
            let ax = b.const_i32(&[rank as i32 - 3, rank as i32 - 2]);
            emit(b, cx, n, OpKind::Reduce { op: ReduceOp::Mean, keep_dims: true }, vec![Some(i), Some(ax)], u.output_id(), true)
        }
        N::XNNStaticTranspose => {
            let u = n.xnode_union_as_xnnstatic_transpose().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let perm: Vec<i32> = u.perm().map(|p| p.iter().map(|v| v as i32).collect()).unwrap_or_default();
            let pc = b.const_i32(&perm);
            emit(b, cx, n, OpKind::Transpose, vec![Some(i), Some(pc)], u.output_id(), false)
        }
        N::XNNStaticReshape => {
            let u = n.xnode_union_as_xnnstatic_reshape().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let out = cx.out(b, u.output_id())?;
            reshape_into(b, i, out);
            Ok(())
        }
        N::XNNStaticSlice => {
            let u = n.xnode_union_as_xnnstatic_slice().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let begin: Vec<i32> = u.offsets().map(|p| p.iter().map(|v| v as i32).collect()).unwrap_or_default();
            let size: Vec<i32> = u.sizes().map(|p| p.iter().map(|v| v as i32).collect()).unwrap_or_default();
            let (bc, sc) = (b.const_i32(&begin), b.const_i32(&size));
            emit(b, cx, n, OpKind::Slice, vec![Some(i), Some(bc), Some(sc)], u.output_id(), false)
        }
        N::XNNStaticConstantPad => {
            let u = n.xnode_union_as_xnnstatic_constant_pad().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let pre: Vec<u32> = u.pre_paddings().map(|p| p.iter().collect()).unwrap_or_default();
            let post: Vec<u32> = u.post_paddings().map(|p| p.iter().collect()).unwrap_or_default();
            let rank = b.dims(i).len();
            if pre.len() != rank || post.len() != rank {
                return Err(b.err(format!("XNNPACK padding lists {pre:?} / {post:?} for rank {rank}")));
            }
            let pairs: Vec<u8> = pre.iter().zip(&post).flat_map(|(&a, &c)| [a as i32, c as i32]).flat_map(i32::to_le_bytes).collect();
            let pc = b.constant(DType::I32, &[rank, 2], pairs);
            let dt = b.dtype(i);
            let v = b.const_scalar(dt, super::method::Scalar::Double(f64::from(u.padding_value())))?;
            emit(b, cx, n, OpKind::Pad, vec![Some(i), Some(pc), Some(v)], u.output_id(), false)
        }
        N::XNNStaticResizeBilinear2D => {
            let u = n.xnode_union_as_xnnstatic_resize_bilinear_2_d().ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let i = cx.get(b, u.input_id())?;
            let size = b.const_i32(&[u.new_height() as i32, u.new_width() as i32]);
            let align = u.flags() & 0x8 != 0;
            let kind = OpKind::Resize(Resize { mode: ResizeMode::Bilinear, align_corners: align, half_pixel_centers: !align });
            emit(b, cx, n, kind, vec![Some(i), Some(size)], u.output_id(), false)
        }
        N::XNNConcatenate2 | N::XNNConcatenate3 | N::XNNConcatenate4 | N::XNNConcatenate5 => {
            let u = match t {
                N::XNNConcatenate2 => n.xnode_union_as_xnnconcatenate_2(),
                N::XNNConcatenate3 => n.xnode_union_as_xnnconcatenate_3(),
                N::XNNConcatenate4 => n.xnode_union_as_xnnconcatenate_4(),
                _ => n.xnode_union_as_xnnconcatenate_5(),
            }
            .ok_or_else(|| b.err("an empty XNNPACK node"))?;
            let want = match t {
                N::XNNConcatenate2 => 2,
                N::XNNConcatenate3 => 3,
                N::XNNConcatenate4 => 4,
                _ => 5,
            };
            let mut ins = Vec::new();
            for id in [u.input1_id(), u.input2_id(), u.input3_id(), u.input4_id(), u.input5_id()].into_iter().take(want) {
                ins.push(Some(cx.get(b, id)?));
            }
            emit(b, cx, n, OpKind::Concatenation { axis: u.axis() as i32, act: Activation::None }, ins, u.output_id(), false)
        }
        _ => Err(unsupported(b)),
    }
}
