//! `DelegateCall`s: a lowered subgraph whose payload a backend decodes. nnrt reads the
//! delegates it knows into its own IR (today: none yet); any other id fails with an error that
//! names it.

use nnrt_core::LoadError;

use super::method::MethodBuilder;
use crate::generated::executorch_flatbuffer as et;

/// Imports delegate `d` (id `id`) called with value indices `args` (inputs, then outputs).
pub(crate) fn call(b: &mut MethodBuilder<'_, '_>, _d: &et::BackendDelegate<'_>, id: &str, _args: &[i64]) -> Result<(), LoadError> {
    Err(LoadError::UnsupportedOp {
        path: b.c.path.to_string(),
        subgraph: 0,
        index: b.at.0,
        op: format!("delegate {id}"),
        detail: format!(" (method '{}': nnrt cannot read this backend's payload; export the program without that partitioner)", b.method),
    })
}
