//! The memory planner: gives every non-constant operand a byte range in one arena, reusing memory
//! between tensors whose lifetimes do not overlap (greedy by size, as TFLite's arena planner does).

use std::ops::Range;

use crate::shape::num_elements;
use crate::{CompileError, OperandId, Subgraph};

/// Arena offsets are multiples of this (a cache line; enough for any SIMD load).
pub const ALIGN: usize = 64;

/// Where each operand lives in the arena.
#[derive(Clone, Debug, Default)]
pub struct MemoryPlan {
    /// Byte range of each operand (None for constants and unused operands).
    pub slots: Vec<Option<Range<usize>>>,
    /// Total arena size in bytes.
    pub size: usize,
}

/// Plans `g` for the given concrete dims. Graph inputs, outputs and variable tensors live for the
/// whole run (callers set inputs before and read outputs after); the rest live from the op that
/// writes them to the last op that reads them.
pub fn plan(g: &Subgraph, dims: &[Vec<usize>]) -> Result<MemoryPlan, CompileError> {
    plan_static(g, dims, &[], &crate::PlanHints::default())
}

/// [`plan`] leaving out the operands marked in `dynamic` (their shapes are known only at run
/// time, so they get storage of their own then) and those `hints` elide, and keeping alive
/// what `hints` says fused steps read late.
pub fn plan_static(g: &Subgraph, dims: &[Vec<usize>], dynamic: &[bool], hints: &crate::PlanHints) -> Result<MemoryPlan, CompileError> {
    let n_ops = g.ops.len();
    let mut first = vec![usize::MAX; g.operands.len()];
    let mut last = vec![0usize; g.operands.len()];
    let whole = |first: &mut Vec<usize>, last: &mut Vec<usize>, id: OperandId| {
        first[id.index()] = 0;
        last[id.index()] = n_ops;
    };
    for &i in g.inputs.iter().chain(&g.outputs) {
        whole(&mut first, &mut last, i);
    }
    for (i, o) in g.operands.iter().enumerate() {
        if o.is_variable {
            whole(&mut first, &mut last, OperandId::new(i));
        }
    }
    for (t, op) in g.ops.iter().enumerate() {
        for &o in &op.outputs {
            first[o.index()] = first[o.index()].min(t);
            last[o.index()] = last[o.index()].max(t);
        }
        for &i in op.inputs.iter().flatten() {
            last[i.index()] = last[i.index()].max(t);
        }
    }
    for &(o, op) in &hints.keep_alive {
        if let Some(l) = last.get_mut(o.index()) {
            *l = (*l).max(op.index());
        }
    }
    for &o in &hints.elided {
        if let Some(f) = first.get_mut(o.index()) {
            *f = usize::MAX;
        }
    }
    let mut tensors: Vec<(usize, usize)> = Vec::new(); // (operand, bytes)
    for (i, o) in g.operands.iter().enumerate() {
        if o.is_const() || first[i] == usize::MAX || dynamic.get(i).copied().unwrap_or(false) {
            continue;
        }
        let bytes = num_elements(&dims[i])
            .and_then(|n| n.checked_mul(o.dtype.size()))
            .ok_or_else(|| CompileError::InvalidOperand {
                op: crate::OpId::new(0),
                kind: "plan".into(),
                operand: OperandId::new(i),
                reason: "tensor size overflows".into(),
            })?;
        tensors.push((i, bytes));
    }
    // Largest first; ties by first use keep the plan deterministic.
    tensors.sort_by(|a, b| b.1.cmp(&a.1).then(first[a.0].cmp(&first[b.0])).then(a.0.cmp(&b.0)));
    let mut placed: Vec<(usize, Range<usize>)> = Vec::new();
    let mut slots = vec![None; g.operands.len()];
    let mut size = 0;
    for (i, bytes) in tensors {
        let padded = bytes.div_ceil(ALIGN).max(1) * ALIGN;
        let mut live: Vec<&Range<usize>> = placed
            .iter()
            .filter(|(j, _)| first[*j] <= last[i] && first[i] <= last[*j])
            .map(|(_, r)| r)
            .collect();
        live.sort_by_key(|r| r.start);
        let mut offset = 0;
        for r in live {
            if offset + padded <= r.start {
                break;
            }
            offset = offset.max(r.end.div_ceil(ALIGN) * ALIGN);
        }
        slots[i] = Some(offset..offset + bytes);
        placed.push((i, offset..offset + padded));
        size = size.max(offset + padded);
    }
    Ok(MemoryPlan { slots, size })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, BinaryOp, DType, OpKind, Operand, Operation};

    /// x -> a -> b -> c -> y, a chain of adds: a and c can share memory, b cannot overlap either.
    #[test]
    fn chain_reuses_memory_without_overlap() {
        let mut g = Subgraph::default();
        let ids: Vec<_> = (0..5).map(|i| g.add_operand(Operand::new(format!("t{i}"), DType::F32, &[256]))).collect();
        for w in ids.windows(2) {
            g.add_op(Operation {
                kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::None },
                inputs: vec![Some(w[0]), Some(w[0])],
                outputs: vec![w[1]],
            });
        }
        g.inputs = vec![ids[0]];
        g.outputs = vec![ids[4]];
        let dims = vec![vec![256]; 5];
        let p = plan(&g, &dims).unwrap();
        let r = |i: usize| p.slots[i].clone().unwrap();
        let overlap = |a: Range<usize>, b: Range<usize>| a.start < b.end && b.start < a.end;
        // Each op's input and output must be disjoint; inputs/outputs of the graph never shared.
        for i in 0..4 {
            assert!(!overlap(r(i), r(i + 1)), "op {i} reads and writes the same bytes");
        }
        assert!(!overlap(r(0), r(4)));
        assert!(p.size < 5 * 1024, "no reuse: {} bytes", p.size);
    }

    /// x -> t1 -> t2 -> t3 -> y with ops 1 and 2 fused into one step at op 2's turn: t1 (read
    /// late) must not share memory with t3 (written then), and the elided t2 gets none.
    #[test]
    fn hints_keep_late_inputs_apart_and_drop_elided_tensors() {
        let mut g = Subgraph::default();
        let ids: Vec<_> = (0..5).map(|i| g.add_operand(Operand::new(format!("t{i}"), DType::F32, &[256]))).collect();
        for w in ids.windows(2) {
            g.add_op(Operation {
                kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::None },
                inputs: vec![Some(w[0]), Some(w[0])],
                outputs: vec![w[1]],
            });
        }
        g.inputs = vec![ids[0]];
        g.outputs = vec![ids[4]];
        let dims = vec![vec![256]; 5];
        let overlap = |a: Range<usize>, b: Range<usize>| a.start < b.end && b.start < a.end;
        let plain = plan(&g, &dims).unwrap();
        assert!(overlap(plain.slots[1].clone().unwrap(), plain.slots[3].clone().unwrap()), "without hints t1 and t3 share memory");
        let hints = crate::PlanHints { keep_alive: vec![(ids[1], crate::OpId::new(2))], elided: vec![ids[2]] };
        let p = plan_static(&g, &dims, &[], &hints).unwrap();
        assert!(!overlap(p.slots[1].clone().unwrap(), p.slots[3].clone().unwrap()));
        assert!(p.slots[2].is_none(), "the elided tensor has memory");
    }
}
