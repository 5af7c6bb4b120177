//! The memory planner: gives every non-constant operand a byte range in one arena, reusing memory
//! between tensors whose lifetimes do not overlap (greedy by size, as TFLite's arena planner does).
//!
//! With two kernel threads a second layout is tried, [`plan_lanes`]: kernels split a tensor's
//! rows in halves (thread 0 the first), so a greedy plan, which lays a tensor over bytes that
//! earlier tensors of other sizes held, has each thread write lines the other core wrote last
//! (a cross-core transfer per line before the store). Centring every tensor on one of a few
//! fixed offsets keeps the bytes below each centre with thread 0 and those above with thread 1,
//! whatever tensor holds them.

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
    let live = Lifetimes::of(g, dims, dynamic, hints)?;
    Ok(plan_greedy(g.operands.len(), &live))
}

/// [`plan_static`] for a session running kernels on `threads` threads: with two, the
/// [`plan_lanes`] layout when it needs at most half again the greedy plan's memory. MobileNetV2
/// float at two threads: 2.81 → 2.68 ms (MobileNetV1 −1.5 %), arena 4.6 → 5.8 MB.
pub fn plan_for_threads(g: &Subgraph, dims: &[Vec<usize>], dynamic: &[bool], hints: &crate::PlanHints, threads: usize) -> Result<MemoryPlan, CompileError> {
    let live = Lifetimes::of(g, dims, dynamic, hints)?;
    let greedy = plan_greedy(g.operands.len(), &live);
    if threads == 2 {
        let lanes = plan_lanes(g.operands.len(), &live);
        if lanes.size <= greedy.size + greedy.size / 2 {
            return Ok(lanes);
        }
    }
    Ok(greedy)
}

/// The tensors to place, `(operand, bytes)`, and the first and last op of each operand.
struct Lifetimes {
    tensors: Vec<(usize, usize)>,
    first: Vec<usize>,
    last: Vec<usize>,
}

impl Lifetimes {
    fn of(g: &Subgraph, dims: &[Vec<usize>], dynamic: &[bool], hints: &crate::PlanHints) -> Result<Lifetimes, CompileError> {
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
        Ok(Lifetimes { tensors, first, last })
    }
}

/// Largest first, each at the lowest offset free during its lifetime.
fn plan_greedy(n: usize, live: &Lifetimes) -> MemoryPlan {
    let (first, last) = (&live.first, &live.last);
    let mut tensors = live.tensors.clone();
    // Largest first; ties by first use keep the plan deterministic.
    tensors.sort_by(|a, b| b.1.cmp(&a.1).then(first[a.0].cmp(&first[b.0])).then(a.0.cmp(&b.0)));
    let mut placed: Vec<(usize, Range<usize>)> = Vec::new();
    let mut slots = vec![None; n];
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
    MemoryPlan { slots, size }
}

/// Tensors in lanes, each lane a range of the arena around a centre: a tensor of `b` bytes
/// starts `⌈b/2⌉` (rounded up to [`ALIGN`]) below its lane's centre, so its first half lies
/// below it and its second half above. Tensors of one lane have disjoint lifetimes; taken in
/// order of first use, each goes to a free lane already wide enough (the narrowest), else the
/// widest free lane, else a new one.
fn plan_lanes(n: usize, live: &Lifetimes) -> MemoryPlan {
    let (first, last) = (&live.first, &live.last);
    let half = |bytes: usize| bytes.div_ceil(2).div_ceil(ALIGN).max(1) * ALIGN;
    let mut order = live.tensors.clone();
    order.sort_by_key(|&(i, _)| (first[i], i));
    // (half width, last op of the lane's latest tensor)
    let mut lanes: Vec<(usize, usize)> = Vec::new();
    let mut lane_of = vec![0; n];
    for &(i, bytes) in &order {
        let h = half(bytes);
        let free: Vec<usize> = (0..lanes.len()).filter(|&k| lanes[k].1 < first[i]).collect();
        let fits = free.iter().copied().filter(|&k| lanes[k].0 >= h).min_by_key(|&k| lanes[k].0);
        let k = match fits.or_else(|| free.iter().copied().max_by_key(|&k| lanes[k].0)) {
            Some(k) => k,
            None => {
                lanes.push((0, 0));
                lanes.len() - 1
            }
        };
        lanes[k] = (lanes[k].0.max(h), last[i]);
        lane_of[i] = k;
    }
    let mut centres = Vec::with_capacity(lanes.len());
    let mut size = 0;
    for &(h, _) in &lanes {
        centres.push(size + h);
        size += 2 * h;
    }
    let mut slots = vec![None; n];
    for &(i, bytes) in &live.tensors {
        let start = centres[lane_of[i]] - half(bytes);
        slots[i] = Some(start..start + bytes);
    }
    MemoryPlan { slots, size }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, BinaryOp, DType, OpKind, Operand, Operation};

    /// t0 -> t1 -> t2 -> t3 -> t4, a chain of adds of 256 floats each.
    fn chain() -> (Subgraph, Vec<OperandId>, Vec<Vec<usize>>) {
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
        (g, ids, vec![vec![256]; 5])
    }

    /// x -> a -> b -> c -> y, a chain of adds: a and c can share memory, b cannot overlap either.
    #[test]
    fn chain_reuses_memory_without_overlap() {
        let (g, _, dims) = chain();
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
        let (g, ids, dims) = chain();
        let overlap = |a: Range<usize>, b: Range<usize>| a.start < b.end && b.start < a.end;
        let plain = plan(&g, &dims).unwrap();
        assert!(overlap(plain.slots[1].clone().unwrap(), plain.slots[3].clone().unwrap()), "without hints t1 and t3 share memory");
        let hints = crate::PlanHints { keep_alive: vec![(ids[1], crate::OpId::new(2))], elided: vec![ids[2]] };
        let p = plan_static(&g, &dims, &[], &hints).unwrap();
        assert!(!overlap(p.slots[1].clone().unwrap(), p.slots[3].clone().unwrap()));
        assert!(p.slots[2].is_none(), "the elided tensor has memory");
    }

    /// Blocks of x -> a -> b -> add(x, b) of varying widths (a residual network): with two
    /// threads every tensor sits centred on its lane's centre, and no two tensors live at the
    /// same time share a byte; with one thread the greedy plan is used.
    #[test]
    fn lanes_centre_tensors_without_overlap() {
        let mut g = Subgraph::default();
        let mut dims = Vec::new();
        let mut add = |g: &mut Subgraph, n: usize| {
            dims.push(vec![n]);
            g.add_operand(Operand::new(format!("t{}", g.operands.len()), DType::F32, &[n]))
        };
        let bin = |g: &mut Subgraph, a, b, o| {
            g.add_op(Operation { kind: OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, inputs: vec![Some(a), Some(b)], outputs: vec![o] });
        };
        let x0 = add(&mut g, 100);
        g.inputs = vec![x0];
        let mut x = x0;
        for (k, &w) in [100usize, 300, 70, 1000, 10, 450].iter().enumerate() {
            let a = add(&mut g, w * 6);
            bin(&mut g, x, x, a);
            let b = add(&mut g, w + k);
            bin(&mut g, a, a, b);
            let y = add(&mut g, w + k);
            bin(&mut g, b, b, y);
            x = y;
        }
        g.outputs = vec![x];
        let hints = crate::PlanHints::default();
        let live = Lifetimes::of(&g, &dims, &[], &hints).unwrap();
        let p = plan_lanes(g.operands.len(), &live);
        let overlap = |a: &Range<usize>, b: &Range<usize>| a.start < b.end && b.start < a.end;
        let mut centres = std::collections::BTreeSet::new();
        for &(i, bytes) in &live.tensors {
            let r = p.slots[i].clone().unwrap();
            assert!(r.end <= p.size && r.start.is_multiple_of(ALIGN));
            centres.insert(r.start + bytes.div_ceil(2).div_ceil(ALIGN).max(1) * ALIGN);
            for &(j, _) in &live.tensors {
                let both = live.first[i] <= live.last[j] && live.first[j] <= live.last[i];
                if i != j && both {
                    assert!(!overlap(&r, p.slots[j].as_ref().unwrap()), "t{i} and t{j} are live together and share bytes");
                }
            }
        }
        assert!(centres.len() <= 4, "{} lanes for a residual chain", centres.len());
        let two = plan_for_threads(&g, &dims, &[], &hints, 2).unwrap();
        assert_eq!(two.slots, p.slots, "two threads take the lanes (within 1.5x of greedy here)");
        let one = plan_for_threads(&g, &dims, &[], &hints, 1).unwrap();
        assert_eq!(one.slots, plan_static(&g, &dims, &[], &hints).unwrap().slots);
    }
}
