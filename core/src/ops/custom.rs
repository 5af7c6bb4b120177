//! Custom operators, resolved by name at prepare: any number of inputs and outputs, named by
//! their custom code. Their output shapes come from the backend that runs them (see
//! [`crate::Backend::output_shapes`]); without one, from the shapes the model declares.

use super::Shapes::Many;
use super::{spec, Spec};
use crate::OpKind;

/// The family's op: its custom name, any number of inputs and outputs, the declared shapes.
pub(super) fn ops(kind: &OpKind) -> Option<Spec<'_>> {
    match kind {
        OpKind::Custom { name, .. } => Some(spec(name, 0, None, None, Many(|cx| cx.declared_outputs()))),
        _ => None,
    }
}

