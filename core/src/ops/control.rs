//! Control flow: IF and WHILE call other subgraphs of the model (see [`crate::control`] for how
//! they run). Their output shapes come from the subgraphs they call; without them, from the
//! shapes the model declares.

use super::{spec, Rules, Spec};
use crate::infer::Cx;
use crate::{CompileError, OpKind, SubgraphId};

/// Input slot of IF's bool condition.
pub const CONDITION: usize = 0;
/// Input slot of the first of IF's inputs passed on to the branch it calls.
pub const BRANCH_INPUTS: usize = 1;
/// Input slot of the first of WHILE's loop variables (all its inputs).
pub const LOOP_VARS: usize = 0;

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::If { .. } => spec("If", 1, None, None),
        OpKind::While { .. } => spec("While", 0, None, None),
        _ => return None,
    })
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    match &cx.op.kind {
        OpKind::If { .. } | OpKind::While { .. } => cx.declared_outputs(),
        _ => Err(cx.unlisted()),
    }
}

/// The subgraphs a control-flow op calls (IF: then, else; WHILE: condition, body); `None` for
/// other ops.
pub fn called_subgraphs(kind: &OpKind) -> Option<[SubgraphId; 2]> {
    match kind {
        OpKind::If { then_branch, else_branch } => Some([*then_branch, *else_branch]),
        OpKind::While { cond, body } => Some([*cond, *body]),
        _ => None,
    }
}
