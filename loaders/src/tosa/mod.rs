//! TOSA flatbuffers (identifier `TOSA`, TOSA 1.0 and the 1.1 draft) into nnrt's IR; the
//! frontend of [`Format::Tosa`].
//!
//! Each region becomes one subgraph (in file order, so region 0 is the entry); a region's
//! single basic block gives its operands (tensors by name), inputs and outputs. COND_IF and
//! WHILE_LOOP name regions, which become the subgraphs of nnrt's `If` and `While`. Tensors are
//! channels-last as nnrt's kernels are, so no layout changes are needed. Constants (CONST
//! tensors' `data`) borrow from the memory-mapped file; shape operands (CONST_SHAPE) become
//! small int32 constants where an IR op needs them.

mod block;
mod container;
mod ops;

use std::collections::HashMap;

use nnrt_core::{Blob, LoadError, Model, OpKind, SubgraphId};

use crate::format::{Format, FormatInfo, Loaded};
use crate::import::UnsupportedOps;
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
    let mut by_name = HashMap::new();
    for (i, r) in regions.iter().enumerate() {
        let name = r.name().unwrap_or_default().to_string();
        if by_name.insert(name.clone(), SubgraphId::new(i)).is_some() {
            return Err(c.malformed(format!("two regions are named '{name}'")));
        }
    }
    let mut model = Model { source: path.to_string(), ..Model::default() };
    // Every operator of every region is tried, so that one error lists all that nnrt lacks.
    let mut unsupported = UnsupportedOps::new();
    for (ri, r) in regions.iter().enumerate() {
        let name = r.name().unwrap_or_default().to_string();
        let blocks = r.blocks().unwrap_or_default();
        if blocks.len() != 1 {
            return Err(c.malformed(format!("region '{name}' has {} basic blocks; nnrt reads regions of one block", blocks.len())));
        }
        let block = blocks.get(0);
        let mut b = BlockBuilder::new(&c, (ri, name), &block, &by_name)?;
        for (oi, t) in block.operators().unwrap_or_default().iter().enumerate() {
            let o = Op::new(t);
            b.at = (oi, o.name());
            if let Err(e) = ops::map(&mut b, &o) {
                unsupported.collect(e)?;
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
    unsupported.finish([])?;
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
    };
    Ok(Loaded { model, info })
}
