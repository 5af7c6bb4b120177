//! TOSA flatbuffers (identifier `TOSA`, TOSA 1.0 and the 1.1 draft) into nnrt's IR; the
//! frontend of [`Format::Tosa`].
//!
//! Each basic block becomes one subgraph (in file order, so region 0's first block is the
//! entry); a block gives its operands (tensors by name), inputs and outputs. COND_IF and
//! WHILE_LOOP name regions (their first block) or blocks, which become the subgraphs of nnrt's
//! `If` and `While`. Tensors are
//! channels-last as nnrt's kernels are, so no layout changes are needed. Constants (CONST
//! tensors' `data`) borrow from the memory-mapped file; shape operands (CONST_SHAPE) become
//! small int32 constants where an IR op needs them.

mod block;
mod container;
mod ops;

use std::collections::HashMap;

use nnrt_core::{Blob, LoadError, Model, OpKind, SubgraphId};

use crate::format::{Format, FormatInfo, Loaded};
use block::BlockBuilder;
use container::Container;
use ops::{op_name, Op};

/// Loads a TOSA graph held in `blob`.
pub fn load(path: &str, blob: Blob) -> Result<Loaded, LoadError> {
    let c = Container::open(path, &blob)?;
    let regions = c.graph.regions().unwrap_or_default();
    if regions.is_empty() {
        return Err(c.malformed("the graph has no regions"));
    }
    // Every basic block is a subgraph, in file order (region 0's first block is the entry).
    // COND_IF / WHILE_LOOP name a region (its first block) or, failing that, a basic block
    // (the serialization library's layout: control-flow blocks inside the "main" region).
    let mut blocks = Vec::new();
    let mut by_name: HashMap<String, SubgraphId> = HashMap::new();
    let mut block_names: Vec<(String, SubgraphId)> = Vec::new();
    for r in regions.iter() {
        let rname = r.name().unwrap_or_default().to_string();
        let rblocks = r.blocks().unwrap_or_default();
        if rblocks.is_empty() {
            return Err(c.malformed(format!("region '{rname}' has no basic blocks")));
        }
        if by_name.insert(rname.clone(), SubgraphId::new(blocks.len())).is_some() {
            return Err(c.malformed(format!("two regions are named '{rname}'")));
        }
        for block in rblocks.iter() {
            let bname = block.name().unwrap_or_default().to_string();
            block_names.push((bname.clone(), SubgraphId::new(blocks.len())));
            let label = if bname.is_empty() || bname == rname { rname.clone() } else { format!("{rname}/{bname}") };
            blocks.push((label, block));
        }
    }
    for (n, id) in block_names {
        by_name.entry(n).or_insert(id);
    }
    let mut model = Model { source: path.to_string(), ..Model::default() };
    // Every operator of every block is tried, so that one error lists all that nnrt lacks.
    let mut unsupported: Vec<LoadError> = Vec::new();
    for (ri, (name, block)) in blocks.into_iter().enumerate() {
        let mut b = BlockBuilder::new(&c, (ri, name), &block, &by_name)?;
        for (oi, t) in block.operators().unwrap_or_default().iter().enumerate() {
            let o = Op::new(t);
            b.at = (oi, o.name());
            match ops::map(&mut b, &o) {
                Err(e @ LoadError::UnsupportedOp { .. }) => unsupported.push(e),
                Err(e) => return Err(e),
                Ok(()) => {}
            }
        }
        b.at = (0, String::new());
        let inputs = block.inputs().map(|v| v.iter().map(|n| b.tensor_id(n)).collect::<Result<Vec<_>, _>>()).transpose()?.unwrap_or_default();
        // A block input is fed by the caller (or the calling op) even where the file gives it
        // data (the conformance generator stores the test values there).
        for &id in &inputs {
            b.g.operands[id.index()].data = None;
        }
        b.g.inputs = inputs;
        let mut outputs = Vec::new();
        for n in block.outputs().unwrap_or_default().iter() {
            let mut id = b.tensor_id(n)?;
            if let Some((flag, initial)) = b.variables.get(&id).map(|v| (v.flag, v.initial)) {
                // A variable returned as it is: its value (or initial value) read at the end.
                let copy = b.temp(b.dtype(id), &b.dims(id));
                b.emit(OpKind::VariableRead, &[Some(id), Some(flag), initial], vec![copy]);
                outputs.push(copy);
                continue;
            }
            // A graph output must be an op's result: copy an input or a constant returned as it
            // is, and an operand returned twice.
            if b.g.inputs.contains(&id) || b.g.operand(id).data.is_some() || outputs.contains(&id) {
                let dims = b.dims(id);
                let copy = b.temp(b.dtype(id), &dims);
                b.emit_all(OpKind::Reshape { new_shape: Some(dims.iter().map(|&d| d as i32).collect()) }, &[id], vec![copy]);
                id = copy;
            }
            outputs.push(id);
        }
        b.g.outputs = outputs;
        model.subgraphs.push(b.g);
    }
    if let Some(e) = one_error(unsupported) {
        return Err(e);
    }
    check_no_recursion(&c, &model)?;
    let v = c.graph.version();
    let info = FormatInfo {
        format: Format::Tosa,
        schema_version: (v._major().max(0) as u32) * 100 + v._minor().max(0) as u32,
        description: c.graph.software_version().map(|s| {
            format!("TOSA {}.{}.{}{}, written by serialization library {}.{}.{}", v._major(), v._minor(), v._patch(), if v._draft() { " draft" } else { "" }, s._major(), s._minor(), s._micro())
        }),
        subgraphs: model.subgraphs.len(),
        signatures: 0,
        entry_operators: vec![(
            regions.get(0).name().unwrap_or_default().to_string(),
            regions.get(0).blocks().map(|bl| bl.get(0).operators().map(|o| o.iter().map(|o| op_name(o.op())).collect()).unwrap_or_default()).unwrap_or_default(),
        )],
        edgetpu: Vec::new(),
    };
    Ok(Loaded { model, info })
}

/// One error for every operator nnrt lacks: the first one's fields, and in its detail each
/// other operator with its element types (`OP (INT8 -> INT32)`), each combination once.
fn one_error(all: Vec<LoadError>) -> Option<LoadError> {
    let mut it = all.into_iter();
    let LoadError::UnsupportedOp { path, subgraph, index, op, mut detail } = it.next()? else { return None };
    // A converter's detail starts with " (TYPES; region ..., operator N)".
    let types = |d: &str| d.trim_start().strip_prefix('(').and_then(|r| r.split(';').next()).unwrap_or_default().to_string();
    let first = format!("{op} ({})", types(&detail));
    let mut others: Vec<String> = Vec::new();
    for e in it {
        if let LoadError::UnsupportedOp { op: o, detail: d, .. } = e {
            let what = format!("{o} ({})", types(&d));
            if what != first && !others.contains(&what) {
                others.push(what);
            }
        }
    }
    if !others.is_empty() {
        detail.push_str(&format!("; also unsupported: {}", others.join(", ")));
    }
    Some(LoadError::UnsupportedOp { path, subgraph, index, op, detail })
}

/// COND_IF / WHILE_LOOP must not reach the block that calls them, directly or through other
/// blocks: a cycle is refused naming the blocks on it.
fn check_no_recursion(c: &Container<'_>, model: &Model) -> Result<(), LoadError> {
    let calls = |g: &nnrt_core::Subgraph| -> Vec<usize> {
        g.ops
            .iter()
            .flat_map(|op| match op.kind {
                OpKind::If { then_branch, else_branch } => vec![then_branch.index(), else_branch.index()],
                OpKind::While { cond, body } => vec![cond.index(), body.index()],
                _ => Vec::new(),
            })
            .collect()
    };
    // Depth-first from every block, with the path on a stack (0 unvisited, 1 on the path, 2 done).
    let n = model.subgraphs.len();
    let mut state = vec![0u8; n];
    for start in 0..n {
        let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        stack.push((start, calls(&model.subgraphs[start])));
        while let Some((g, next)) = stack.last_mut() {
            let g = *g;
            match next.pop() {
                Some(t) if t >= n => return Err(c.malformed(format!("block '{}' calls block {t}, which does not exist", model.subgraphs[g].name))),
                Some(t) if state[t] == 1 => {
                    let path: Vec<&str> = stack.iter().map(|(s, _)| model.subgraphs[*s].name.as_str()).chain([model.subgraphs[t].name.as_str()]).collect();
                    return Err(c.malformed(format!("control flow is recursive: {}", path.join(" -> "))));
                }
                Some(t) if state[t] == 0 => {
                    state[t] = 1;
                    stack.push((t, calls(&model.subgraphs[t])));
                }
                Some(_) => {}
                None => {
                    state[g] = 2;
                    stack.pop();
                }
            }
        }
    }
    Ok(())
}
