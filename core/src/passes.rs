//! Graph passes run at prepare, before partitioning.

use crate::{ConstData, DType, OpId, OpKind, Subgraph};

/// Folds ops whose inputs are all constant and whose result is cheap to compute here:
/// `Dequantize` of float16 weights (how the TFLite converter stores fp16 models) becomes a float32
/// constant, so kernels can pack those weights once. Returns the folded graph and, for each of its
/// ops, the index of the op in `g` it came from.
pub fn fold_constants(g: &Subgraph) -> (Subgraph, Vec<OpId>) {
    let mut out = g.clone();
    out.ops.clear();
    let mut origin = Vec::with_capacity(g.ops.len());
    for (i, op) in g.ops.iter().enumerate() {
        if let (OpKind::Dequantize, Some(src), [dst]) = (&op.kind, op.input(0), op.outputs.as_slice()) {
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
        out.ops.push(op.clone());
        origin.push(OpId::new(i));
    }
    (out, origin)
}
