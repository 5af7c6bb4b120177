//! Custom operators, resolved by name at prepare: any number of inputs and outputs, named by
//! their custom code. Their output shapes come from the backend that runs them (see
//! [`crate::Backend::output_shapes`]); without one, from the shapes the model declares.

use super::{spec, Rules, Spec};
use crate::infer::Cx;
use crate::{CompileError, OpKind};

pub(crate) const RULES: Rules = Rules { spec: op_spec, infer };

fn op_spec(kind: &OpKind) -> Option<Spec<'_>> {
    match kind {
        OpKind::Custom { name, .. } => Some(spec(name, 0, None, None)),
        _ => None,
    }
}

fn infer(cx: &Cx) -> Result<Vec<Vec<usize>>, CompileError> {
    match &cx.op.kind {
        OpKind::Custom { .. } => cx.declared_outputs(),
        _ => Err(cx.unlisted()),
    }
}
