//! Graph passes run at prepare, before partitioning.

use crate::{ConstData, DType, OpId, OpKind, Subgraph};

/// Folds ops whose inputs are all constant and whose result is cheap to compute here:
/// `Dequantize` of float16 weights (how the TFLite converter stores fp16 models) becomes a float32
/// constant, so kernels can pack those weights once; `Reshape` of a constant becomes the same bytes
/// under the static output shape. Returns the folded graph and, for each of its
/// ops, the index of the op in `g` it came from.
pub fn fold_constants(g: &Subgraph) -> (Subgraph, Vec<OpId>) {
    let mut out = g.clone();
    out.ops.clear();
    let mut origin = Vec::with_capacity(g.ops.len());
    for (i, op) in g.ops.iter().enumerate() {
        if let (OpKind::Dequantize, Some(src), [dst]) = (&op.kind, op.input(crate::ops::convert::INPUT), op.outputs.as_slice()) {
            let (s, d) = (&g.operands[src.index()], &g.operands[dst.index()]);
            let is_graph_output = g.outputs.contains(dst);
            if let (Some(data), DType::F16, DType::F32, false) = (&s.data, s.dtype, d.dtype, is_graph_output) {
                let halves: Vec<u16> = data.bytes().chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                let mut bytes = Vec::with_capacity(halves.len() * 4);
                for h in halves {
                    bytes.extend_from_slice(&half::f16::from_bits(h).to_f32().to_le_bytes());
                }
                let target = &mut out.operands[dst.index()];
                target.data = Some(ConstData::owned(bytes));
                target.shape = s.shape.clone();
                target.default_dims = s.default_dims.clone();
                continue;
            }
        }
        // RESHAPE of a constant (TOSA's depthwise filters, [KH, KW, C, M] to [1, KH, KW, C*M]):
        // the same bytes under the output's static shape, so kernels pack the filter once.
        if let (OpKind::Reshape { .. }, Some(src), [dst]) = (&op.kind, op.input(0), op.outputs.as_slice()) {
            let (s, d) = (&out.operands[src.index()], &g.operands[dst.index()]);
            let dims = d.shape.concrete();
            let fits = |dims: &Vec<usize>| crate::shape::num_elements(dims).and_then(|n| n.checked_mul(d.dtype.size())) == s.data.as_ref().map(|x| x.bytes().len());
            if let (Some(data), Some(dims), false, true) = (s.data.clone(), dims, g.outputs.contains(dst), s.dtype == d.dtype && s.quant == d.quant) {
                if fits(&dims) {
                    let target = &mut out.operands[dst.index()];
                    target.data = Some(data);
                    target.default_dims = dims;
                    continue;
                }
            }
        }
        out.ops.push(op.clone());
        origin.push(OpId::new(i));
    }
    (out, origin)
}

/// Fuses a float RELU, RELU6 or RELU_N1_TO_1 into the op that produces its input when that op
/// has a fused activation of its own left at NONE (CONV_2D, DEPTHWISE_CONV_2D,
/// FULLY_CONNECTED, ADD/SUB/MUL/DIV, pooling) and nothing else reads the intermediate tensor —
/// what the TFLite converter leaves unfused in some models (MediaPipe's BlazeFace: ADD then
/// RELU). The producer then writes the activation's output; `origin` maps ops as
/// [`fold_constants`] does. Only float32: a quantized RELU may requantize.
pub fn fuse_activations(g: Subgraph, origin: Vec<OpId>) -> (Subgraph, Vec<OpId>) {
    use crate::{Activation, BinaryOp, UnaryOp};
    let mut uses = vec![0usize; g.operands.len()];
    for op in &g.ops {
        for id in op.inputs.iter().flatten() {
            uses[id.index()] += 1;
        }
    }
    for id in &g.outputs {
        uses[id.index()] += 1;
    }
    let mut producer: Vec<Option<usize>> = vec![None; g.operands.len()];
    for (i, op) in g.ops.iter().enumerate() {
        for id in &op.outputs {
            producer[id.index()] = Some(i);
        }
    }
    let mut ops: Vec<Option<crate::Operation>> = g.ops.into_iter().map(Some).collect();
    for u in 0..ops.len() {
        let Some(op) = &ops[u] else { continue };
        let act = match op.kind {
            OpKind::Unary(UnaryOp::Relu) => Activation::Relu,
            OpKind::Unary(UnaryOp::Relu6) => Activation::Relu6,
            OpKind::Unary(UnaryOp::ReluN1To1) => Activation::ReluN1To1,
            _ => continue,
        };
        let (Some(t), [out]) = (op.input(crate::ops::elementwise::INPUT), op.outputs.as_slice()) else { continue };
        let out = *out;
        let f32_all = [t, out].iter().all(|id| g.operands[id.index()].dtype == DType::F32);
        let Some(p) = producer[t.index()] else { continue };
        if !f32_all || uses[t.index()] != 1 || g.inputs.contains(&t) || g.operands[t.index()].data.is_some() {
            continue;
        }
        let Some(prod) = ops[p].as_mut() else { continue };
        if prod.outputs.len() != 1 {
            continue;
        }
        let slot = match &mut prod.kind {
            OpKind::Conv2D(c) => &mut c.act,
            OpKind::DepthwiseConv2D(c) => &mut c.act,
            OpKind::FullyConnected(c) => &mut c.act,
            OpKind::Pool2D(c) => &mut c.act,
            OpKind::Binary { op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div, act } => act,
            _ => continue,
        };
        if *slot != Activation::None {
            continue;
        }
        *slot = act;
        prod.outputs[0] = out;
        producer[out.index()] = Some(p);
        ops[u] = None;
    }
    let mut kept = Vec::with_capacity(ops.len());
    let mut kept_origin = Vec::with_capacity(ops.len());
    for (op, o) in ops.into_iter().zip(origin) {
        if let Some(op) = op {
            kept.push(op);
            kept_origin.push(o);
        }
    }
    (Subgraph { ops: kept, ..g }, kept_origin)
}
