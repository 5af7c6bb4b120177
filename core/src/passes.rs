//! Graph passes run at prepare, before partitioning.

use crate::{ConstData, DType, OpId, OpKind, Subgraph};

/// Folds ops whose inputs are all constant and whose result is cheap to compute here:
/// `Dequantize` of float16 weights (how the TFLite converter stores fp16 models) becomes a float32
/// constant, widened when first read ([`ConstData::widened_f16`]), so kernels can pack those
/// weights once, each from a transient float32 copy ([`ConstData::widen_unkept`]); `Reshape` of a constant becomes the same bytes
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
                let target = &mut out.operands[dst.index()];
                target.data = Some(ConstData::widened_f16(data.clone()));
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
            let fits = |dims: &Vec<usize>| crate::shape::num_elements(dims).and_then(|n| n.checked_mul(d.dtype.size())) == s.data.as_ref().map(|x| x.len());
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

/// For each operand of `g`: how many times ops and the graph's outputs read it, and the index of
/// the op that writes it.
fn uses_and_producers(g: &Subgraph) -> (Vec<usize>, Vec<Option<usize>>) {
    let mut uses = vec![0usize; g.operands.len()];
    for id in g.ops.iter().flat_map(|op| op.inputs.iter().flatten()).chain(&g.outputs) {
        uses[id.index()] += 1;
    }
    let mut producer: Vec<Option<usize>> = vec![None; g.operands.len()];
    for (i, op) in g.ops.iter().enumerate() {
        for id in &op.outputs {
            producer[id.index()] = Some(i);
        }
    }
    (uses, producer)
}

/// Fuses a float RELU, RELU6 or RELU_N1_TO_1 into the op that produces its input when that op
/// has a fused activation of its own left at NONE (CONV_2D, DEPTHWISE_CONV_2D,
/// FULLY_CONNECTED, ADD/SUB/MUL/DIV, pooling) and nothing else reads the intermediate tensor —
/// what the TFLite converter leaves unfused in some models (MediaPipe's BlazeFace: ADD then
/// RELU). The producer then writes the activation's output; `origin` maps ops as
/// [`fold_constants`] does. Only float32: a quantized RELU may requantize.
pub fn fuse_activations(g: Subgraph, origin: Vec<OpId>) -> (Subgraph, Vec<OpId>) {
    use crate::{Activation, BinaryOp, UnaryOp};
    let (uses, mut producer) = uses_and_producers(&g);
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
        let Some(mut p) = producer[t.index()] else { continue };
        if !f32_all || uses[t.index()] != 1 || g.inputs.contains(&t) || g.operands[t.index()].data.is_some() {
            continue;
        }
        // Through a RESHAPE (TOSA's FULLY_CONNECTED: RESHAPE, CONV2D, RESHAPE, then CLAMP): the
        // activation moves to the producer of the RESHAPE's input, which the RESHAPE alone
        // reads; the RESHAPE then writes the activation's output. Element-wise, so the same
        // values in the same bytes.
        let mut reshape = None;
        if let Some(r) = ops[p].as_ref().filter(|r| matches!(r.kind, OpKind::Reshape { .. }) && r.outputs.len() == 1) {
            let x = r.input(0);
            let from = x.and_then(|x| producer[x.index()]).filter(|_| x.is_some_and(|x| uses[x.index()] == 1 && !g.inputs.contains(&x) && g.operands[x.index()].dtype == DType::F32));
            let Some(q) = from else { continue };
            reshape = Some(p);
            p = q;
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
        let writer = match reshape {
            Some(r) => r,
            None => p,
        };
        if let Some(w) = ops[writer].as_mut() {
            w.outputs[0] = out;
        }
        producer[out.index()] = Some(writer);
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

/// Folds a PAD of only the spatial dims of an NHWC tensor into the CONV_2D or
/// DEPTHWISE_CONV_2D that alone reads its output, as explicit padding added to the
/// convolution's own (SAME first turned into its amounts for the padded input): what MediaPipe's
/// detectors put before their stride-2 convolutions. The convolution then reads the PAD's input
/// and the padded tensor is never written. Only convolutions with a stride of 2 or more (see
/// below for why).
///
/// Folded only where the result is the same bit for bit: a float32 PAD of +0 (PAD, or PADV2 with
/// a +0 value) into a float32 convolution with constant, finite weights (a padded tap adds
/// `w * 0 = +0`, which a skipped tap leaves out; an infinite weight would make it NaN); a
/// quantized PAD whose value is the input's zero point (its taps add `(zp - zp) * w = 0`), with
/// the same quantization on both sides. Never into pooling (a zero cell is not a skipped one for
/// MAX or AVERAGE) nor a hybrid convolution (float input, integer weights: the padded cells would
/// change the range the input is quantized over). `dims` and `dynamic` are the inferred shapes
/// by operand id (the pass adds no operands); `origin` maps ops as [`fold_constants`] does.
pub fn fold_pads(g: Subgraph, origin: Vec<OpId>, dims: &[Vec<usize>], dynamic: &[bool]) -> (Subgraph, Vec<OpId>) {
    use crate::ops::conv::Padding;
    let (uses, producer) = uses_and_producers(&g);
    let mut ops: Vec<Option<crate::Operation>> = g.ops.iter().cloned().map(Some).collect();
    for c in 0..ops.len() {
        let Some(conv) = &ops[c] else { continue };
        let (Some(t), Some(w), [out]) = (conv.input(0), conv.input(1), conv.outputs.as_slice()) else { continue };
        let (padding, k, stride, dilation) = match &conv.kind {
            OpKind::Conv2D(p) => (p.padding, dims.get(w.index()).and_then(|d| d.get(1..3)), p.stride, p.dilation),
            OpKind::DepthwiseConv2D(p) => (p.padding, dims.get(w.index()).and_then(|d| d.get(1..3)), p.stride, p.dilation),
            _ => continue,
        };
        // Only strided convolutions: there the PAD copies a large input for a small output. At
        // stride 1 the copy costs less than the kernels' border handling (a 3×3 depthwise with
        // the PAD's (1, 1) folded: +16 % float, +10 % int8, 1 thread, against PAD + VALID).
        if stride[0] < 2 && stride[1] < 2 {
            continue;
        }
        let (Some(&[k_h, k_w]), Some(p)) = (k, producer[t.index()]) else { continue };
        let Some(pad) = &ops[p] else { continue };
        if pad.kind != OpKind::Pad || pad.outputs.len() != 1 || uses[t.index()] != 1 || conv.inputs.iter().flatten().filter(|&&i| i == t).count() != 1 {
            continue;
        }
        let (Some(x), Some(paddings)) = (pad.input(crate::ops::data::INPUT), pad.input(crate::ops::data::PADDINGS)) else { continue };
        if [x, t, *out].iter().any(|id| dynamic.get(id.index()).copied().unwrap_or(true)) || g.operands[t.index()].is_variable {
            continue;
        }
        let (xo, to) = (&g.operands[x.index()], &g.operands[t.index()]);
        if xo.dtype != to.dtype || xo.quant != to.quant || !pad_value_is_zero(&g, pad, &g.operands[w.index()]) {
            continue;
        }
        // [[n0, n1], [top, bottom], [left, right], [c0, c1]], none negative, batch and channels unpadded.
        let Ok(pads) = g.const_ints(OpId::new(p), paddings) else { continue };
        let (Some(xd), Some(td)) = (dims.get(x.index()), dims.get(t.index())) else { continue };
        if pads.len() != 8 || xd.len() != 4 || td.len() != 4 || pads.iter().any(|&v| v < 0) || pads[0] != 0 || pads[1] != 0 || pads[6] != 0 || pads[7] != 0 {
            continue;
        }
        let extra = [pads[2] as usize, pads[3] as usize, pads[4] as usize, pads[5] as usize];
        // The convolution's own padding over the padded input, as amounts.
        let mut own = [0usize; 4];
        let mut fits = true;
        for a in 0..2 {
            let k = [k_h, k_w][a];
            let Some(win) = crate::infer::window_output(td[1 + a], k, stride[a], dilation[a], padding, a) else {
                fits = false;
                break;
            };
            let total = match padding {
                Padding::Valid => 0,
                Padding::Explicit(q) => q[2 * a].saturating_add(q[2 * a + 1]),
                Padding::Explicit3(_) => {
                    fits = false;
                    break;
                }
                Padding::Same => win.out.saturating_sub(1).saturating_mul(stride[a]).saturating_add((k - 1).saturating_mul(dilation[a]) + 1).saturating_sub(td[1 + a]),
            };
            own[2 * a] = win.pad_before;
            own[2 * a + 1] = total.saturating_sub(win.pad_before);
        }
        let folded = [0, 1, 2, 3].map(|i| own[i].saturating_add(extra[i]));
        // The folded window must give the same output over the unpadded input.
        let od = dims.get(out.index());
        let same_out = (0..2).all(|a| {
            let win = crate::infer::window_output(xd[1 + a], [k_h, k_w][a], stride[a], dilation[a], Padding::Explicit(folded), a);
            win.map(|w| w.out) == od.and_then(|d| d.get(1 + a).copied())
        });
        if !fits || !same_out {
            continue;
        }
        let Some(conv) = ops[c].as_mut() else { continue };
        match &mut conv.kind {
            OpKind::Conv2D(q) => q.padding = Padding::Explicit(folded),
            OpKind::DepthwiseConv2D(q) => q.padding = Padding::Explicit(folded),
            _ => continue,
        }
        conv.inputs[0] = Some(x);
        ops[p] = None;
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

/// Whether `pad`'s cells add nothing to a convolution with filter `w` (see [`fold_pads`]).
fn pad_value_is_zero(g: &Subgraph, pad: &crate::Operation, w: &crate::Operand) -> bool {
    let x = match pad.input(crate::ops::data::INPUT) {
        Some(x) => &g.operands[x.index()],
        None => return false,
    };
    let value = match pad.input(crate::ops::data::PAD_VALUE) {
        Some(v) => match &g.operands[v.index()].data {
            Some(d) => Some(d.bytes()),
            None => return false,
        },
        None => None,
    };
    match (x.dtype, &x.quant) {
        (DType::F32, crate::Quantization::None) => {
            let finite = match (&w.data, w.dtype) {
                (Some(d), DType::F32) => d.f32_all_finite(),
                _ => false,
            };
            finite && value.is_none_or(|b| b == 0f32.to_le_bytes())
        }
        (DType::U8 | DType::I8 | DType::I16, crate::Quantization::PerTensor { zero_point, .. }) => {
            let v = match (x.dtype, value) {
                (_, None) => *zero_point,
                (DType::U8, Some(&[b])) => i64::from(b),
                (DType::I8, Some(&[b])) => i64::from(b as i8),
                (DType::I16, Some(&[a, b])) => i64::from(i16::from_le_bytes([a, b])),
                _ => return false,
            };
            v == *zero_point && w.dtype != DType::F32
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, Conv2D, DepthwiseConv2D, Operand, OperandId, Operation, Padding, Pool2D, PoolKind, Quantization};

    /// A graph: x [1, 8, 8, c] → PAD(`pads`, `value`) → `consumer` (3×3 filter) → graph output.
    struct Built {
        g: Subgraph,
        x: OperandId,
        padded: OperandId,
    }

    fn konst(g: &mut Subgraph, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> OperandId {
        let mut o = Operand::new("const", dtype, dims);
        o.data = Some(ConstData::owned(bytes));
        g.add_operand(o)
    }

    fn pad_then(pads: [i32; 8], dtype: DType, quant: Quantization, value: Option<Vec<u8>>, consumer: OpKind, w_dtype: DType, w_value: f32) -> Built {
        let c = 2;
        let mut g = Subgraph::default();
        let mut x_op = Operand::new("x", dtype, &[1, 8, 8, c]);
        x_op.quant = quant.clone();
        let x = g.add_operand(x_op);
        g.inputs.push(x);
        let p = konst(&mut g, DType::I32, &[4, 2], pads.iter().flat_map(|v| v.to_le_bytes()).collect());
        let pd = [1, 8 + (pads[2] + pads[3]) as usize, 8 + (pads[4] + pads[5]) as usize, c];
        let mut t_op = Operand::new("padded", dtype, &pd);
        t_op.quant = quant.clone();
        let padded = g.add_operand(t_op);
        let v = value.map(|b| konst(&mut g, dtype, &[], b));
        g.add_op(Operation { kind: OpKind::Pad, inputs: vec![Some(x), Some(p), v], outputs: vec![padded] });
        let wd = match consumer {
            OpKind::DepthwiseConv2D(_) => [1, 3, 3, c],
            _ => [c, 3, 3, c],
        };
        let n: usize = wd.iter().product();
        let w_bytes = match w_dtype {
            DType::F32 => (0..n).flat_map(|_| w_value.to_le_bytes()).collect(),
            _ => vec![1u8; n * w_dtype.size()],
        };
        let w = konst(&mut g, w_dtype, &wd, w_bytes);
        let (s, k) = (2, 3);
        let out_dims = |len: usize, same: bool| if same { len.div_ceil(s) } else { (len - k) / s + 1 };
        let same = matches!(consumer, OpKind::Conv2D(Conv2D { padding: Padding::Same, .. }) | OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Same, .. }));
        let mut o = Operand::new("y", dtype, &[1, out_dims(pd[1], same), out_dims(pd[2], same), c]);
        o.quant = quant;
        let y = g.add_operand(o);
        let inputs = match consumer {
            OpKind::Pool2D(_) => vec![Some(padded)],
            _ => vec![Some(padded), Some(w), None],
        };
        g.add_op(Operation { kind: consumer, inputs, outputs: vec![y] });
        g.outputs.push(y);
        Built { g, x, padded }
    }

    fn run(g: &Subgraph) -> (Subgraph, Vec<OpId>) {
        let dims: Vec<Vec<usize>> = g.operands.iter().map(|o| o.default_dims.clone()).collect();
        let dynamic = vec![false; dims.len()];
        let origin = (0..g.ops.len()).map(OpId::new).collect();
        fold_pads(g.clone(), origin, &dims, &dynamic)
    }

    fn conv(padding: Padding) -> OpKind {
        OpKind::Conv2D(Conv2D { padding, stride: [2, 2], dilation: [1, 1], act: Activation::None })
    }

    fn depthwise(padding: Padding) -> OpKind {
        OpKind::DepthwiseConv2D(DepthwiseConv2D { padding, stride: [2, 2], dilation: [1, 1], depth_multiplier: 1, act: Activation::None })
    }

    /// x [5, 1, 1, 4] → CONV2D (1×1) → [5, 1, 1, 3] → RESHAPE → [1, 5, 3] → RELU → graph output
    /// (TOSA's FULLY_CONNECTED with its fused RELU); `read_mid` makes the convolution's output a
    /// graph output as well.
    fn conv_reshape_relu(read_mid: bool) -> (Subgraph, OperandId, OperandId) {
        let mut g = Subgraph::default();
        let x = g.add_operand(Operand::new("x", DType::F32, &[5, 1, 1, 4]));
        g.inputs.push(x);
        let w = konst(&mut g, DType::F32, &[3, 1, 1, 4], vec![0u8; 48]);
        let c = g.add_operand(Operand::new("c", DType::F32, &[5, 1, 1, 3]));
        let r = g.add_operand(Operand::new("r", DType::F32, &[1, 5, 3]));
        let y = g.add_operand(Operand::new("y", DType::F32, &[1, 5, 3]));
        let conv = OpKind::Conv2D(Conv2D { padding: Padding::Valid, stride: [1, 1], dilation: [1, 1], act: Activation::None });
        g.add_op(Operation { kind: conv, inputs: vec![Some(x), Some(w), None], outputs: vec![c] });
        g.add_op(Operation { kind: OpKind::Reshape { new_shape: Some(vec![1, 5, 3]) }, inputs: vec![Some(c)], outputs: vec![r] });
        g.add_op(Operation { kind: OpKind::Unary(crate::UnaryOp::Relu), inputs: vec![Some(r)], outputs: vec![y] });
        g.outputs.push(y);
        if read_mid {
            g.outputs.push(c);
        }
        (g, c, y)
    }

    #[test]
    fn relu_after_a_reshape_fuses_into_the_convolution_before_it() {
        let (g, c, y) = conv_reshape_relu(false);
        let (f, origin) = fuse_activations(g, (0..3).map(OpId::new).collect());
        assert_eq!(origin, vec![OpId::new(0), OpId::new(1)]);
        assert!(matches!(&f.ops[0].kind, OpKind::Conv2D(p) if p.act == Activation::Relu));
        assert_eq!((f.ops[0].outputs.as_slice(), f.ops[1].input(0), f.ops[1].outputs.as_slice()), (&[c][..], Some(c), &[y][..]));
        // The convolution's output read elsewhere: nothing moves.
        let (g, _, _) = conv_reshape_relu(true);
        let (f, _) = fuse_activations(g.clone(), (0..3).map(OpId::new).collect());
        assert_eq!(f.ops, g.ops);
    }

    const HW1: [i32; 8] = [0, 0, 1, 1, 1, 1, 0, 0];
    const AFTER1: [i32; 8] = [0, 0, 0, 1, 0, 1, 0, 0];

    #[test]
    fn float_pad_folds_into_valid_conv() {
        let b = pad_then(HW1, DType::F32, Quantization::None, None, conv(Padding::Valid), DType::F32, 0.5);
        let (g, origin) = run(&b.g);
        assert_eq!(g.ops.len(), 1);
        assert_eq!(origin, vec![OpId::new(1)]);
        assert_eq!(g.ops[0].input(0), Some(b.x));
        assert_eq!(g.ops[0].kind, conv(Padding::Explicit([1, 1, 1, 1])));
    }

    #[test]
    fn same_padding_becomes_its_amounts_for_the_padded_input() {
        // 8 → 9 after the PAD; SAME 3×3 stride 2 over 9 gives 5 outputs with 1 cell before and 1
        // after; with the PAD's (0, 1): (1, 2) over the 8 cells, still 5 outputs.
        let b = pad_then(AFTER1, DType::F32, Quantization::None, Some(0f32.to_le_bytes().to_vec()), depthwise(Padding::Same), DType::F32, 0.5);
        let (g, _) = run(&b.g);
        assert_eq!(g.ops.len(), 1);
        assert_eq!(g.ops[0].kind, depthwise(Padding::Explicit([1, 2, 1, 2])));
        assert_eq!(g.ops[0].input(0), Some(b.x));
    }

    #[test]
    fn quantized_pad_of_the_zero_point_folds() {
        let q = Quantization::PerTensor { scale: 0.1, zero_point: -3 };
        let b = pad_then(HW1, DType::I8, q.clone(), None, conv(Padding::Valid), DType::I8, 0.0);
        assert_eq!(run(&b.g).0.ops.len(), 1);
        let b = pad_then(HW1, DType::I8, q.clone(), Some(vec![(-3i8) as u8]), depthwise(Padding::Valid), DType::I8, 0.0);
        assert_eq!(run(&b.g).0.ops.len(), 1);
        // Another value than the zero point is a real value the taps add.
        let b = pad_then(HW1, DType::I8, q, Some(vec![0]), conv(Padding::Valid), DType::I8, 0.0);
        assert_eq!(run(&b.g).0.ops.len(), 2);
    }

    #[test]
    fn pads_that_are_not_skipped_taps_stay() {
        let kept = |b: Built| {
            let (g, _) = run(&b.g);
            assert_eq!(g.ops.len(), 2, "{:?}", g.ops);
            assert_eq!(g.ops[1].input(0), Some(b.padded));
        };
        // A float value other than +0, and -0.
        kept(pad_then(HW1, DType::F32, Quantization::None, Some(1f32.to_le_bytes().to_vec()), conv(Padding::Valid), DType::F32, 0.5));
        kept(pad_then(HW1, DType::F32, Quantization::None, Some((-0f32).to_le_bytes().to_vec()), conv(Padding::Valid), DType::F32, 0.5));
        // Batch or channels padded.
        kept(pad_then([1, 0, 1, 1, 1, 1, 0, 0], DType::F32, Quantization::None, None, conv(Padding::Valid), DType::F32, 0.5));
        kept(pad_then([0, 0, 1, 1, 1, 1, 0, 1], DType::F32, Quantization::None, None, depthwise(Padding::Valid), DType::F32, 0.5));
        // An infinite weight times a padded zero is NaN.
        kept(pad_then(HW1, DType::F32, Quantization::None, None, conv(Padding::Valid), DType::F32, f32::INFINITY));
        // Hybrid: float input, int8 weights.
        kept(pad_then(HW1, DType::F32, Quantization::None, None, conv(Padding::Valid), DType::I8, 0.0));
        // Pooling: a zero cell is not a skipped one.
        for kind in [PoolKind::Max, PoolKind::Average] {
            let pool = OpKind::Pool2D(Pool2D { kind, padding: Padding::Valid, stride: [2, 2], filter: [3, 3], act: Activation::None });
            kept(pad_then(HW1, DType::F32, Quantization::None, None, pool, DType::F32, 0.5));
        }
    }

    #[test]
    fn stride_1_convolutions_keep_their_pad() {
        let stride1 = OpKind::DepthwiseConv2D(DepthwiseConv2D { padding: Padding::Valid, stride: [1, 1], dilation: [1, 1], depth_multiplier: 1, act: Activation::None });
        let b = pad_then(HW1, DType::F32, Quantization::None, None, stride1, DType::F32, 0.5);
        assert_eq!(run(&b.g).0.ops.len(), 2);
    }

    #[test]
    fn a_padded_tensor_read_elsewhere_stays() {
        let mut b = pad_then(HW1, DType::F32, Quantization::None, None, conv(Padding::Valid), DType::F32, 0.5);
        b.g.outputs.push(b.padded);
        assert_eq!(run(&b.g).0.ops.len(), 2);
    }
}
