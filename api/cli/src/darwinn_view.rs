//! How `nnrt-inspect` shows Edge TPU ops and DarwiNN packages: JSON objects whose keys are the
//! schema's own names, and a few readable lines.

use nnrt::darwinn::{Executable, Layer, LayerKind, Package};
use nnrt::EdgeTpuOp;
use serde_json::{json, Value};

fn layer_json(l: &Layer) -> Value {
    let (zero_point, factor) = l.numerics.map_or((Value::Null, Value::Null), |n| (json!(n.zero_point), json!(f64::from(n.dequantization_factor))));
    let mut v = json!({
        "name": l.name,
        "y_dim": l.y_dim,
        "x_dim": l.x_dim,
        "z_dim": l.z_dim,
        "data_type": l.data_type.name(),
        "zero_point": zero_point,
        "dequantization_factor": factor,
        "size_bytes": l.size_bytes,
        "execution_count_per_inference": l.execution_count_per_inference,
        "cache_on_dram": l.cache_on_dram,
        "shape": l.shape.as_ref().map(|s| s.iter().map(|&(a, b)| json!([a, b])).collect::<Vec<_>>()),
    });
    if let LayerKind::Output { layout, shape_info, .. } = &l.kind {
        v["layout"] = layout.as_ref().map_or(Value::Null, |m| {
            json!({
                "y_coordinate_to_linear_tile_id_map": m.y_coordinate_to_linear_tile_id_map,
                "x_coordinate_to_linear_tile_id_map": m.x_coordinate_to_linear_tile_id_map,
                "linearized_tile_byte_offset": m.linearized_tile_byte_offset,
                "x_coordinate_to_local_byte_offset": m.x_coordinate_to_local_byte_offset,
                "y_coordinate_to_local_y_offset": m.y_coordinate_to_local_y_offset,
                "x_coordinate_to_local_y_row_size": m.x_coordinate_to_local_y_row_size,
            })
        });
        v["shape_info_slices"] = json!(shape_info.as_ref().map(|s| s.slice_offset.len()));
    }
    v
}

fn executable_json(e: &Executable) -> Value {
    json!({
        "type": e.kind.name(),
        "name": e.name,
        "version": e.version,
        "chip": e.chip,
        "batch_size": e.batch_size,
        "parameter_caching_token": e.parameter_caching_token,
        "parameters_bytes": e.parameters.len(),
        "scratch_size_bytes": e.scratch_size_bytes,
        "bitstream_bytes": e.instruction_bitstreams.iter().map(|b| b.bitstream.len()).collect::<Vec<_>>(),
        "field_offsets": e.instruction_bitstreams.iter().map(|b| b.field_offsets.len()).collect::<Vec<_>>(),
        "serialized_model_bytes": e.serialized_model.len(),
        "used_narrow_memory_bytes_per_tile": e.used_narrow_memory_bytes_per_tile,
        "estimated_cycles": e.estimated_cycles,
        "estimated_cycles_64bit": e.estimated_cycles_64bit,
        "use_tpu_dram_for_parameters": e.use_tpu_dram_for_parameters,
        "dma_hints": e.dma_hints.as_ref().map(|h| json!({"hints": h.hints.len(), "fully_deterministic": h.fully_deterministic})),
        "offset_in_multi_executable": e.offset,
        "size_bytes": e.size_bytes,
        "input_layers": e.input_layers.iter().map(layer_json).collect::<Vec<_>>(),
        "output_layers": e.output_layers.iter().map(layer_json).collect::<Vec<_>>(),
    })
}

/// A package as JSON, with the schema's field names.
pub fn package_json(p: &Package) -> Value {
    json!({
        "size_bytes": p.size_bytes,
        "min_runtime_version": p.min_runtime_version,
        "compiler_version": p.compiler_version,
        "keypair_version": p.keypair_version,
        "virtual_chip_id": p.virtual_chip_id,
        "signature_bytes": p.signature.len(),
        "model_identifier": p.model_identifier,
        "serialized_multi_executable_bytes": p.multi_executable_bytes,
        "serialized_multi_executable_offset": p.multi_executable_offset,
        "multi_chip_package": p.multi_chip_packages.iter().map(package_json).collect::<Vec<_>>(),
        "executables": p.executables.iter().map(executable_json).collect::<Vec<_>>(),
    })
}

/// An Edge TPU op as JSON: where it is, its tensors, its options and packages.
pub fn op_json(op: &EdgeTpuOp) -> Value {
    json!({
        "subgraph": op.subgraph,
        "op_index": op.op,
        "op_inputs": op.inputs,
        "op_outputs": op.outputs,
        "custom_options_bytes": op.options_bytes,
        "version": op.options.version,
        "execution_preference": op.options.execution_preference,
        "chips": op.options.chips,
        "package_offset_in_custom_options": op.options.package_offset,
        "packages": op.options.packages.iter().map(package_json).collect::<Vec<_>>(),
    })
}

fn layer_line(what: &str, l: &Layer) -> String {
    let numerics = l.numerics.map(|n| format!(" zp {} scale {}", n.zero_point, n.dequantization_factor)).unwrap_or_default();
    let tiles = match &l.kind {
        LayerKind::Output { layout: Some(m), .. } => format!(", {} tiles", m.linearized_tile_byte_offset.len()),
        _ => String::new(),
    };
    format!("{what} '{}' {}x{}x{} {}{numerics} ({} B{tiles})", l.name, l.y_dim, l.x_dim, l.z_dim, l.data_type.name(), l.size_bytes)
}

/// A package in a few lines, each prefixed by `indent`.
pub fn package_text(p: &Package, indent: &str) -> Vec<String> {
    let mut out = vec![format!(
        "{indent}package DWN1 {} B, min runtime version {}, compiler '{}', {} executable{}",
        p.size_bytes,
        p.min_runtime_version,
        p.compiler_version.as_deref().unwrap_or(""),
        p.executables.len(),
        if p.executables.len() == 1 { "" } else { "s" }
    )];
    for (i, e) in p.executables.iter().enumerate() {
        let bits: Vec<String> = e.instruction_bitstreams.iter().map(|b| b.bitstream.len().to_string()).collect();
        out.push(format!(
            "{indent}  executable {i}: {} '{}' chip {} batch {} caching token {}: parameters {} B, scratch {} B, bitstreams [{}] B",
            e.kind.name(),
            e.name.as_deref().unwrap_or(""),
            e.chip.as_deref().unwrap_or("?"),
            e.batch_size,
            e.parameter_caching_token,
            e.parameters.len(),
            e.scratch_size_bytes,
            bits.join(", ")
        ));
        out.extend(e.input_layers.iter().map(|l| format!("{indent}    {}", layer_line("input ", l))));
        out.extend(e.output_layers.iter().map(|l| format!("{indent}    {}", layer_line("output", l))));
    }
    for (i, m) in p.multi_chip_packages.iter().enumerate() {
        out.push(format!("{indent}  multi-chip package {i}:"));
        out.extend(package_text(m, &format!("{indent}    ")));
    }
    out
}

/// An Edge TPU op in a few lines.
pub fn op_text(op: &EdgeTpuOp) -> Vec<String> {
    let mut out = vec![format!(
        "edgetpu-custom-op (subgraph {}, op {}): options {} B, chips {:?}, {} package{}",
        op.subgraph,
        op.op,
        op.options_bytes,
        op.options.chips,
        op.options.packages.len(),
        if op.options.packages.len() == 1 { "" } else { "s" }
    )];
    for p in &op.options.packages {
        out.extend(package_text(p, "  "));
    }
    out
}
