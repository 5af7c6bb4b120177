//! Element-wise binary ops: NumPy broadcasting up to 6-D, fused activation.

use nnrt_core::{BinaryOp, OpKind};

use super::cx::{act_code, no_kernel, numel, pad6, strides, u, words, Cx, R};
use super::{Lowered, Registry};

/// The family's ops.
pub(super) fn register(r: &mut Registry) {
    r.ops(&["Add", "Sub", "Mul", "Div", "Pow", "SquaredDifference", "Maximum", "Minimum", "FloorDiv", "FloorMod"], binary);
}

fn binary(cx: &mut Cx, kind: &OpKind) -> R<Lowered> {
    let &OpKind::Binary { op, act } = kind else { return no_kernel(kind) };
    let (a, b, o) = cx.f32_pair(["input 0", "input 1"])?;
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
    params.extend(words(&o6)?);
    params.extend(bstrides(&ad)?);
    params.extend(bstrides(&bd)?);
    let (ab, bb, ob) = (cx.buf(a)?, cx.buf(b)?, cx.buf(o)?);
    let groups = cx.grid(numel(&od))?;
    Ok(Lowered::Dispatches(vec![cx.dispatch("binary", vec![("ACT", act), ("OP", code), ("SAME", same)], params, vec![ab, bb, ob], groups)?]))
}
