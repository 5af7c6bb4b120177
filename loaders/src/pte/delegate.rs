//! `DelegateCall`s: a lowered subgraph whose payload a backend decodes. nnrt reads the
//! delegates it knows into its own IR (`XnnpackBackend`, see [`super::xnnpack`]); any other id
//! fails with an error that names it.

use nnrt_core::LoadError;

use super::method::MethodBuilder;
use crate::generated::executorch_flatbuffer as et;

/// Imports delegate `d` (id `id`) called with value indices `args` (inputs, then outputs).
pub(crate) fn call(b: &mut MethodBuilder<'_, '_>, d: &et::BackendDelegate<'_>, id: &str, args: &[i64]) -> Result<(), LoadError> {
    match id {
        "XnnpackBackend" => {
            let r = d.processed().ok_or_else(|| b.err("the XNNPACK delegate has no payload reference"))?;
            let data = b.c.delegate_data(&r)?;
            super::xnnpack::call(b, data, args)
        }
        _ => Err(LoadError::UnsupportedOp {
            path: b.c.path.to_string(),
            subgraph: 0,
            index: b.at.0,
            op: format!("delegate {id}"),
            detail: format!(" (method '{}': nnrt reads the payloads of XnnpackBackend only; export the program without that partitioner, or with XnnpackPartitioner)", b.method),
        }),
    }
}
