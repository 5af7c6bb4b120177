//! CUSTOM (name and option bytes), IF and WHILE (subgraph indices).

use nnrt_core::{LoadError, OpKind};

use super::{sub, OpRef, B};

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let (cx, si, oi, code, op) = (m.cx, m.si, m.oi, m.code, m.op);
    Ok(Some(match B(m.code.code) {
        B::CUSTOM => OpKind::Custom {
            name: code.custom.clone().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} is a custom op without a custom_code name")))?,
            options: op.custom_options().map(|v| v.bytes().to_vec()).unwrap_or_default(),
        },
        B::IF => {
            let o = op.builtin_options_as_if_options().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} (IF) has no IfOptions")))?;
            OpKind::If { then_branch: sub(cx, o.then_subgraph_index())?, else_branch: sub(cx, o.else_subgraph_index())? }
        }
        B::WHILE => {
            let o = op.builtin_options_as_while_options().ok_or_else(|| cx.malformed(format!("subgraph {si} op {oi} (WHILE) has no WhileOptions")))?;
            OpKind::While { cond: sub(cx, o.cond_subgraph_index())?, body: sub(cx, o.body_subgraph_index())? }
        }
        _ => return Ok(None),
    }))
}
