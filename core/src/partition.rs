//! The partitioner: assigns each op to a backend the onert way, then groups contiguous ops of one
//! backend into partitions.
//!
//! Layers, later ones winning: the default backend (first of `BACKENDS`), `OP_BACKEND_ALLOPS`,
//! `OP_BACKEND_<OpName>`, `OP_BACKEND_MAP="index=backend;..."`. An op whose chosen backend does not
//! support it falls back through the backend list; the reason is kept for printing. A custom op
//! that a registered kernel (backend [`CUSTOM`]) implements starts there, before
//! `OP_BACKEND_ALLOPS`: a plugin the user loaded wins over a backend's built-in kernel of the same
//! name.

use crate::{Backend, CompileCtx, CompileError, OpId, OpKind, Support};

/// The backend index of IF/WHILE ops: they are run by the executor itself, which calls the
/// subgraphs they name (each prepared with the same backends).
pub const CONTROL: usize = usize::MAX;

/// The id of the backend that runs custom ops registered by plugins or through the API.
pub const CUSTOM: &str = "custom";

/// Where one op runs and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Index into the session's backend list.
    pub backend: usize,
    /// Why the op is not on the backend the configuration asked for (None when it is).
    pub fallback_reason: Option<String>,
}

/// A contiguous run of ops on one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Index into the session's backend list.
    pub backend: usize,
    /// The ops, in execution order.
    pub ops: Vec<OpId>,
}

fn find(backends: &[Box<dyn Backend>], name: &str, key: &str) -> Result<usize, CompileError> {
    backends.iter().position(|b| b.id() == name).ok_or_else(|| CompileError::Config {
        key: key.to_string(),
        value: name.to_string(),
        reason: format!(
            "no such backend is available (available: {})",
            backends.iter().map(|b| b.id()).collect::<Vec<_>>().join(", ")
        ),
    })
}

/// Assigns every op of `ctx.graph` to one of `backends` (in preference order).
pub fn assign(ctx: &CompileCtx, backends: &[Box<dyn Backend>]) -> Result<Vec<Assignment>, CompileError> {
    if backends.is_empty() {
        return Err(CompileError::Config { key: "BACKENDS".into(), value: String::new(), reason: "no backend is available".into() });
    }
    let cfg = ctx.config;
    let all = match cfg.get("OP_BACKEND_ALLOPS") {
        Some(v) if !v.trim().is_empty() => Some(find(backends, v.trim(), "OP_BACKEND_ALLOPS")?),
        _ => None,
    };
    let mut by_index = std::collections::HashMap::new();
    if let Some(map) = cfg.get("OP_BACKEND_MAP") {
        for entry in map.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let bad = |reason: &str| CompileError::Config { key: "OP_BACKEND_MAP".into(), value: map.to_string(), reason: reason.to_string() };
            let (idx, name) = entry.split_once('=').ok_or_else(|| bad("entries must be index=backend, separated by ';'"))?;
            let idx: usize = idx.trim().parse().map_err(|_| bad("an index is not a number"))?;
            by_index.insert(idx, find(backends, name.trim(), "OP_BACKEND_MAP")?);
        }
    }
    let mut out = Vec::with_capacity(ctx.graph.ops.len());
    let mut first_error = None;
    for (i, op) in ctx.graph.ops.iter().enumerate() {
        let id = OpId::new(i);
        if matches!(op.kind, OpKind::If { .. } | OpKind::While { .. }) {
            out.push(Assignment { backend: CONTROL, fallback_reason: None });
            continue;
        }
        let registered = match op.kind {
            OpKind::Custom { .. } => backends.iter().position(|b| b.id() == CUSTOM && matches!(b.supports(ctx, id), Support::Yes)),
            _ => None,
        };
        let mut wanted = registered.or(all).unwrap_or(0);
        if let Some(name) = cfg.get(&format!("OP_BACKEND_{}", op.kind.name())) {
            wanted = find(backends, name.trim(), &format!("OP_BACKEND_{}", op.kind.name()))?;
        }
        if let Some(&b) = ctx.origin.get(i).and_then(|o| by_index.get(&o.index())) {
            wanted = b;
        }
        let mut reasons = Vec::new();
        let order = std::iter::once(wanted).chain((0..backends.len()).filter(|&b| b != wanted));
        let mut chosen = None;
        for b in order {
            match backends[b].supports(ctx, id) {
                Support::Yes => {
                    chosen = Some(b);
                    break;
                }
                Support::No(why) => reasons.push(format!("{}: {why}", backends[b].id())),
            }
        }
        match chosen {
            Some(b) => out.push(Assignment { backend: b, fallback_reason: (b != wanted).then(|| reasons.join("; ")) }),
            None => {
                let e = match &op.kind {
                    OpKind::Custom { name, .. } => CompileError::CustomOpNotFound { op: id, name: name.clone() },
                    _ => CompileError::Unsupported { op: id, kind: op.kind.name().to_string(), reasons: reasons.join("; ") },
                };
                // A custom op without a kernel is the error users can act on (load a plugin), so
                // it wins over a builtin that no backend supports.
                if matches!(e, CompileError::CustomOpNotFound { .. }) {
                    return Err(e);
                }
                first_error.get_or_insert(e);
                out.push(Assignment { backend: 0, fallback_reason: None });
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(out)
}

/// Groups contiguous ops with the same backend.
pub fn partitions(assignments: &[Assignment]) -> Vec<Partition> {
    let mut parts: Vec<Partition> = Vec::new();
    for (i, a) in assignments.iter().enumerate() {
        match parts.last_mut() {
            Some(p) if p.backend == a.backend => p.ops.push(OpId::new(i)),
            _ => parts.push(Partition { backend: a.backend, ops: vec![OpId::new(i)] }),
        }
    }
    parts
}
