//! COND_IF and WHILE_LOOP: the regions they name become the subgraphs of nnrt's `If` and
//! `While`. COND_IF's inputs are the condition then the branch inputs (the regions' block
//! inputs match them by position); WHILE_LOOP's inputs are the loop state, as many as its
//! outputs.

use nnrt_core::{LoadError, OpKind, SubgraphId};

use super::{BlockBuilder, Op};
use crate::generated::tosa;

fn region(b: &BlockBuilder<'_, '_>, name: Option<&str>, what: &str) -> Result<SubgraphId, LoadError> {
    let name = name.ok_or_else(|| b.err(format!("names no {what} region")))?;
    let id = b.regions.get(name).copied().ok_or_else(|| b.err(format!("its {what} region '{name}' does not exist")))?;
    if id.index() == 0 || id.index() == b.region.0 {
        return Err(b.err(format!("its {what} region '{name}' is the entry region or the region that calls it (recursion)")));
    }
    Ok(id)
}

pub(super) fn map(b: &mut BlockBuilder<'_, '_>, o: &Op<'_>) -> Result<(), LoadError> {
    let kind = if o.kind == tosa::Op::COND_IF {
        let a = o.attr(b, o.t.attribute_as_cond_if_attribute(), "CondIfAttribute")?;
        OpKind::If { then_branch: region(b, a.then_graph(), "then")?, else_branch: region(b, a.else_graph(), "else")? }
    } else {
        let a = o.attr(b, o.t.attribute_as_while_loop_attribute(), "WhileLoopAttribute")?;
        if o.inputs.len() != o.outputs.len() {
            return Err(b.err(format!("WHILE_LOOP has {} inputs and {} outputs; they must match", o.inputs.len(), o.outputs.len())));
        }
        OpKind::While { cond: region(b, a.cond_graph(), "cond")?, body: region(b, a.body_graph(), "body")? }
    };
    let ins = (0..o.inputs.len()).map(|i| o.input(b, i)).collect::<Result<Vec<_>, _>>()?;
    let outs = o.all_outputs(b)?;
    b.emit_all(kind, &ins, outs);
    Ok(())
}
