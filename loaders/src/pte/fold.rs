//! Folds per-channel affine ops into the convolution before them: `conv -> Mul(s) -> Add(t)`,
//! what an unfused batch norm imports as, becomes one convolution with weights scaled by `s` and
//! bias `b * s + t`. Only float32, constant weights, constants with one value per output channel
//! (or one value), and a convolution output nothing else reads.

use nnrt_core::{ConstData, DType, Operand, OperandId, OpKind, Subgraph};

fn f32s(d: &ConstData) -> Vec<f32> {
    d.bytes().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The per-channel values of constant `id` for `c` channels laid out last (`[.., C]` with
/// every other dim 1, or one value for all).
fn per_channel(g: &Subgraph, id: OperandId, c: usize) -> Option<Vec<f32>> {
    let op = g.operand(id);
    let data = op.data.as_ref().filter(|_| op.dtype == DType::F32)?;
    let dims = &op.default_dims;
    let v = f32s(data);
    if v.len() == 1 {
        return Some(vec![v[0]; c]);
    }
    let last_only = dims.last() == Some(&c) && dims.iter().rev().skip(1).all(|&d| d == 1);
    (last_only && v.len() == c).then_some(v)
}

/// Rewrites `g` in place; returns how many ops were folded away.
pub(crate) fn fold_conv_affine(g: &mut Subgraph) -> usize {
    use nnrt_core::{Activation, BinaryOp};
    let mut folded = 0;
    loop {
        let mut uses = vec![0usize; g.operands.len()];
        for op in &g.ops {
            for id in op.inputs.iter().flatten() {
                uses[id.index()] += 1;
            }
        }
        for id in &g.outputs {
            uses[id.index()] += 1;
        }
        let mut producer = vec![None; g.operands.len()];
        for (i, op) in g.ops.iter().enumerate() {
            for id in &op.outputs {
                producer[id.index()] = Some(i);
            }
        }
        let mut change = None;
        for (u, op) in g.ops.iter().enumerate() {
            let OpKind::Binary { op: bop @ (BinaryOp::Mul | BinaryOp::Add), act: Activation::None } = op.kind else { continue };
            let (Some(x), Some(y), [out]) = (op.input(0), op.input(1), op.outputs.as_slice()) else { continue };
            let (t, k) = if producer[x.index()].is_some() && g.operand(y).data.is_some() { (x, y) } else if producer[y.index()].is_some() && g.operand(x).data.is_some() { (y, x) } else { continue };
            let Some(p) = producer[t.index()] else { continue };
            let conv = &g.ops[p];
            let (depthwise, filter, bias) = match &conv.kind {
                OpKind::Conv2D(c) if c.act == Activation::None => (false, conv.input(1), conv.input(2)),
                OpKind::DepthwiseConv2D(c) if c.act == Activation::None => (true, conv.input(1), conv.input(2)),
                _ => continue,
            };
            let Some(filter) = filter else { continue };
            let f = g.operand(filter);
            if uses[t.index()] != 1 || g.outputs.contains(&t) || f.dtype != DType::F32 || g.operand(t).dtype != DType::F32 || g.operand(*out).dtype != DType::F32 {
                continue;
            }
            let Some(fd) = f.data.as_ref() else { continue };
            let c = if depthwise { f.default_dims.last().copied() } else { f.default_dims.first().copied() };
            let Some(c) = c.filter(|&c| c > 0) else { continue };
            let Some(v) = per_channel(g, k, c) else { continue };
            if !f32s(fd).len().is_multiple_of(c) {
                continue;
            }
            let bias_v = match bias {
                Some(b) => match g.operand(b).data.as_ref().filter(|_| g.operand(b).dtype == DType::F32) {
                    Some(d) if f32s(d).len() == c => f32s(d),
                    _ => continue,
                },
                None => vec![0.0; c],
            };
            let (w, b) = if bop == BinaryOp::Mul {
                let mut w = f32s(fd);
                let per = w.len() / c;
                for (i, x) in w.iter_mut().enumerate() {
                    // OHWI: channel = i / per; depthwise [1, H, W, C]: channel = i % C.
                    *x *= v[if depthwise { i % c } else { i / per.max(1) }];
                }
                (Some(w), bias_v.iter().zip(&v).map(|(b, s)| b * s).collect::<Vec<f32>>())
            } else {
                (None, bias_v.iter().zip(&v).map(|(b, s)| b + s).collect())
            };
            change = Some((p, u, *out, w, b, filter, c));
            break;
        }
        let Some((p, u, out, w, b, filter, c)) = change else { return folded };
        if let Some(w) = w {
            let f = g.operand(filter).clone();
            let n = g.operands.len();
            let mut nf = Operand::new(format!("{}_folded{n}", f.name), DType::F32, &f.default_dims);
            nf.data = Some(ConstData::owned(bytes(&w)));
            let id = g.add_operand(nf);
            g.ops[p].inputs[1] = Some(id);
        }
        let n = g.operands.len();
        let mut nb = Operand::new(format!("bias_folded{n}"), DType::F32, &[c]);
        nb.data = Some(ConstData::owned(bytes(&b)));
        let bid = g.add_operand(nb);
        if g.ops[p].inputs.len() < 3 {
            g.ops[p].inputs.resize(3, None);
        }
        g.ops[p].inputs[2] = Some(bid);
        g.ops[p].outputs[0] = out;
        g.ops.remove(u);
        folded += 1;
    }
}
