//! Control flow: IF and WHILE call other subgraphs of the model (see [`crate::control`] for how
//! they run). Their output shapes come from the subgraphs they call; without them, from the
//! shapes the model declares.

use super::Shapes::Many;
use super::{spec, Spec};
use crate::{OpKind, SubgraphId};

slots!(
    CONDITION = 0: "Input slot of IF's bool condition.",
    BRANCH_INPUTS = 1: "Input slot of the first of IF's inputs passed on to the branch it calls.",
    LOOP_VARS = 0: "Input slot of the first of WHILE's loop variables (all its inputs)."
);

/// The family's ops: the name, arity and shape rule of each.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    Some(match kind {
        OpKind::If { .. } => spec("If", 1, None, None, Many(|cx| cx.declared_outputs())),
        OpKind::While { .. } => spec("While", 0, None, None, Many(|cx| cx.declared_outputs())),
        _ => return None,
    })
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
