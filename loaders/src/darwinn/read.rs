//! Reading the options map, the package, its MultiExecutable (by hand) and each executable
//! (verified on its own). Every offset the bytes give is checked before it is used.

use flatbuffers::{ForwardsUOffset, Vector, VerifierOptions};
use nnrt_plugin_sdk::flexbuffers;

use super::*;
use crate::generated::platforms::darwinn as fb;

fn options_err(reason: impl Into<String>) -> DarwinnError {
    DarwinnError::Options { reason: reason.into() }
}

fn package_err(reason: impl Into<String>) -> DarwinnError {
    DarwinnError::Package { reason: reason.into() }
}

fn verifier_options() -> VerifierOptions {
    VerifierOptions { max_tables: 10_000_000, max_depth: 64, max_apparent_size: 1 << 31, ..Default::default() }
}

/// `bytes` copied into an 8-aligned buffer (the package sits unaligned in the options).
fn aligned(bytes: &[u8]) -> Result<Vec<u64>, DarwinnError> {
    let words = bytes.len().div_ceil(8);
    let mut buf = Vec::new();
    buf.try_reserve_exact(words).map_err(|_| package_err(format!("cannot allocate {} bytes for the package", bytes.len())))?;
    buf.resize(words, 0u64);
    bytemuck::cast_slice_mut::<u64, u8>(&mut buf)[..bytes.len()].copy_from_slice(bytes);
    Ok(buf)
}

/// Reads an `edgetpu-custom-op`'s options: the FlexBuffer map and its packages.
pub fn read_options(options: &[u8]) -> Result<EdgeTpuOptions, DarwinnError> {
    let flex = |e: flexbuffers::Error| options_err(format!("{} (the options should be a FlexBuffer map whose key \"4\" holds the DWN1 package)", e.0));
    let map = flexbuffers::root(options).and_then(|r| r.as_map()).map_err(flex)?;
    let int = |key: &str| -> Result<Option<i64>, DarwinnError> {
        match map.get(key).map_err(flex)? {
            Some(v) => v.as_i64().map(Some).map_err(|e| options_err(format!("key \"{key}\": {}", e.0))),
            None => Ok(None),
        }
    };
    let version = int("1")?;
    let execution_preference = int("5")?;
    let chips = match map.get("6").map_err(flex)? {
        Some(v) => v.as_vector().and_then(|v| v.to_i64s()).map_err(|e| options_err(format!("key \"6\" (chips): {}", e.0)))?,
        None => Vec::new(),
    };
    let main = map.get("4").map_err(flex)?.ok_or_else(|| options_err("no key \"4\" (the DWN1 package); is this an Edge TPU model made by edgetpu_compiler?"))?;
    let package_offset = main.bytes_offset().map_err(|e| options_err(format!("key \"4\": {}", e.0)))?;
    let bytes = main.as_bytes().map_err(|e| options_err(format!("key \"4\": {}", e.0)))?;
    let mut packages = vec![read_package(bytes)?];
    if let Some(more) = map.get("7").map_err(flex)? {
        let more = more.as_vector().map_err(|e| options_err(format!("key \"7\" (further packages): {}", e.0)))?;
        for i in 0..more.len() {
            let p = more.get(i).and_then(|v| v.as_bytes()).map_err(|e| options_err(format!("key \"7\" package {i}: {}", e.0)))?;
            packages.push(read_package(p).map_err(|e| options_err(format!("key \"7\" package {i}: {e}")))?);
        }
    }
    Ok(EdgeTpuOptions { version, execution_preference, chips, package_offset, packages })
}

/// Reads a `DWN1` package (a bare `package.dwn`, or the bytes of key "4"), copying it to an
/// aligned buffer first.
pub fn read_package(bytes: &[u8]) -> Result<Package, DarwinnError> {
    read_package_depth(bytes, 0)
}

fn read_package_depth(bytes: &[u8], depth: usize) -> Result<Package, DarwinnError> {
    if bytes.get(4..8) != Some(IDENTIFIER.as_slice()) {
        let found = bytes.get(4..8).map(|b| format!("\"{}\"", b.escape_ascii())).unwrap_or_else(|| format!("only {} bytes", bytes.len()));
        return Err(package_err(format!("expected the identifier \"DWN1\" at bytes 4..8, found {found}")));
    }
    let buf = aligned(bytes)?;
    let bytes = &bytemuck::cast_slice::<u64, u8>(&buf)[..bytes.len()];
    let root = flatbuffers::root_with_opts::<fb::Package>(&verifier_options(), bytes).map_err(|e| package_err(format!("not a valid Package flatbuffer: {e}")))?;
    let me = root.serialized_multi_executable();
    let (multi_executable_offset, multi) = match me {
        Some(v) => (offset_in(bytes, v.bytes()), v.bytes()),
        None => (0, &[][..]),
    };
    let mut multi_chip_packages = Vec::new();
    for (i, sp) in root.multi_chip_package().iter().flatten().enumerate() {
        if depth > 0 {
            return Err(package_err("a multi-chip package nests another multi-chip package"));
        }
        let inner = sp.serialized_package().map(|v| v.bytes()).unwrap_or_default();
        multi_chip_packages.push(read_package_depth(inner, depth + 1).map_err(|e| package_err(format!("multi_chip_package {i}: {e}")))?);
    }
    let executables = if multi.is_empty() && !multi_chip_packages.is_empty() { Vec::new() } else { read_multi_executable(multi)? };
    let package = Package {
        size_bytes: bytes.len(),
        min_runtime_version: root.min_runtime_version(),
        multi_executable_bytes: multi.len(),
        multi_executable_offset,
        signature: bytes_of(root.signature()),
        keypair_version: root.keypair_version(),
        compiler_version: root.compiler_version().map(String::from),
        virtual_chip_id: root.virtual_chip_id(),
        multi_chip_packages,
        model_identifier: root.model_identifier().map(String::from),
        executables,
    };
    check::check_package(&package)?;
    Ok(package)
}

/// Where `inner` (a subslice of `outer`) starts in `outer`.
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

fn bytes_of(v: Option<Vector<'_, u8>>) -> Vec<u8> {
    v.map(|v| v.bytes().to_vec()).unwrap_or_default()
}

fn u32_at(buf: &[u8], at: usize, what: &str) -> Result<u32, DarwinnError> {
    at.checked_add(4)
        .and_then(|end| buf.get(at..end))
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| package_err(format!("MultiExecutable: {what} at byte {at} is past its end ({} bytes)", buf.len())))
}

fn u16_at(buf: &[u8], at: usize, what: &str) -> Result<u16, DarwinnError> {
    at.checked_add(2)
        .and_then(|end| buf.get(at..end))
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| package_err(format!("MultiExecutable: {what} at byte {at} is past its end ({} bytes)", buf.len())))
}

/// Reads the MultiExecutable by hand: the root table, its field 0 (a vector of strings), each
/// string's bytes as one executable. A flatbuffers verifier would reject the strings (they are
/// binary, not UTF-8), so every offset is checked here instead.
fn read_multi_executable(buf: &[u8]) -> Result<Vec<Executable>, DarwinnError> {
    let table = u32_at(buf, 0, "root offset")? as usize;
    let soffset = u32_at(buf, table, "root table")? as i32;
    let vtable = i64::try_from(table).ok().and_then(|t| t.checked_sub(i64::from(soffset))).and_then(|v| usize::try_from(v).ok());
    let vtable = vtable.ok_or_else(|| package_err("MultiExecutable: the root table's vtable is before the buffer"))?;
    let vtable_len = u16_at(buf, vtable, "vtable size")? as usize;
    if vtable_len < 4 || !vtable_len.is_multiple_of(2) {
        return Err(package_err(format!("MultiExecutable: vtable size {vtable_len} is invalid")));
    }
    let field = if vtable_len >= 6 { u16_at(buf, vtable + 4, "vtable entry")? as usize } else { 0 };
    if field == 0 {
        return Err(package_err("the MultiExecutable has no serialized_executables"));
    }
    let slot = table.checked_add(field).ok_or_else(|| package_err("MultiExecutable: field offset overflows"))?;
    let vec_at = slot.checked_add(u32_at(buf, slot, "serialized_executables offset")? as usize);
    let vec_at = vec_at.ok_or_else(|| package_err("MultiExecutable: vector offset overflows"))?;
    let count = u32_at(buf, vec_at, "serialized_executables length")? as usize;
    if count.checked_mul(4).and_then(|n| n.checked_add(vec_at + 4)).is_none_or(|end| end > buf.len()) {
        return Err(package_err(format!("MultiExecutable: {count} executables do not fit its {} bytes", buf.len())));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let slot = vec_at + 4 + 4 * i;
        let s_at = slot.checked_add(u32_at(buf, slot, "executable offset")? as usize).ok_or_else(|| package_err("MultiExecutable: offset overflows"))?;
        let len = u32_at(buf, s_at, "executable length")? as usize;
        let start = s_at + 4;
        let bytes = start.checked_add(len).and_then(|end| buf.get(start..end));
        let bytes = bytes.ok_or_else(|| package_err(format!("executable {i} ({len} bytes at byte {start}) runs past the MultiExecutable's {} bytes", buf.len())))?;
        let exe_err = |reason: String| DarwinnError::Executable { index: i, name: String::new(), reason };
        // The executables are flatbuffers with 64-bit fields: their start must be aligned (the
        // compiler aligns each to 4096 bytes).
        if start % 8 != 0 {
            return Err(exe_err(format!("starts at byte {start} of the MultiExecutable, which is not 8-aligned (the compiler aligns executables to 4096)")));
        }
        let root = flatbuffers::root_with_opts::<fb::Executable>(&verifier_options(), bytes).map_err(|e| exe_err(format!("not a valid Executable flatbuffer: {e}")))?;
        out.push(executable(root, start, len).map_err(exe_err)?);
    }
    Ok(out)
}

fn executable(e: fb::Executable<'_>, offset: usize, size_bytes: usize) -> Result<Executable, String> {
    let kind = match e.type_() {
        fb::ExecutableType::STAND_ALONE => ExecutableType::StandAlone,
        fb::ExecutableType::PARAMETER_CACHING => ExecutableType::ParameterCaching,
        fb::ExecutableType::EXECUTION_ONLY => ExecutableType::ExecutionOnly,
        other => return Err(format!("unknown executable type {} (known: STAND_ALONE, PARAMETER_CACHING, EXECUTION_ONLY)", other.0)),
    };
    let bitstreams = e
        .instruction_bitstreams()
        .iter()
        .flatten()
        .map(|b| InstructionBitstream {
            bitstream: bytes_of(b.bitstream()),
            field_offsets: b.field_offsets().iter().flatten().map(|f| FieldOffset { meta: f.meta().map(meta), offset_bit: f.offset_bit() }).collect(),
        })
        .collect();
    let layers = |v: Option<Vector<'_, ForwardsUOffset<fb::Layer<'_>>>>, what: &str| -> Result<Vec<Layer>, String> {
        v.iter().flatten().enumerate().map(|(i, l)| layer(l).map_err(|r| format!("{what} layer {i}: {r}"))).collect()
    };
    Ok(Executable {
        offset,
        size_bytes,
        version: e.version(),
        name: e.name().map(String::from),
        serialized_model: bytes_of(e.serialized_model()),
        batch_size: e.batch_size(),
        scratch_size_bytes: e.scratch_size_bytes(),
        instruction_bitstreams: bitstreams,
        parameters: bytes_of(e.parameters()),
        dma_hints: e.dma_hints().map(|h| DmaHints { hints: h.hints().iter().flatten().map(dma_hint).collect(), fully_deterministic: h.fully_deterministic() }),
        input_layers: layers(e.input_layers(), "input")?,
        output_layers: layers(e.output_layers(), "output")?,
        chip: e.chip().map(String::from),
        estimated_cycles: e.estimated_cycles(),
        used_narrow_memory_bytes_per_tile: e.used_narrow_memory_bytes_per_tile(),
        kind,
        parameter_caching_token: e.parameter_caching_token(),
        use_tpu_dram_for_parameters: e.use_tpu_dram_for_parameters(),
        estimated_cycles_64bit: e.estimated_cycles_64bit(),
    })
}

fn meta(m: fb::Meta<'_>) -> Meta {
    Meta { desc: m.desc().0, batch: m.batch(), name: m.name().map(String::from), position: m.position().0 }
}

fn dma_hint(h: fb::DmaHint<'_>) -> DmaHint {
    let hint = match h.any_hint_type() {
        fb::AnyHint::NONE => Hint::None,
        fb::AnyHint::DmaDescriptorHint => match h.any_hint_as_dma_descriptor_hint() {
            Some(d) => Hint::DmaDescriptor { meta: d.meta().map(meta), offset_in_bytes: d.offset_in_bytes(), size_in_bytes: d.size_in_bytes() },
            None => Hint::None,
        },
        fb::AnyHint::InstructionHint => {
            h.any_hint_as_instruction_hint().map_or(Hint::None, |i| Hint::Instruction { instruction_chunk_index: i.instruction_chunk_index() })
        }
        fb::AnyHint::InterruptHint => h.any_hint_as_interrupt_hint().map_or(Hint::None, |i| Hint::Interrupt { interrupt_type: i.type_().0 }),
        fb::AnyHint::FenceHint => Hint::Fence,
        other => Hint::Unknown(other.0),
    };
    DmaHint { direction: h.direction().0, hint }
}

fn ints(v: Option<Vector<'_, i32>>) -> Vec<i32> {
    v.map(|v| v.iter().collect()).unwrap_or_default()
}

fn ranges(s: Option<fb::TensorShape<'_>>) -> Option<Vec<(i32, i32)>> {
    s.map(|s| s.dimension().iter().flatten().map(|r| (r.start(), r.end())).collect())
}

fn layer(l: fb::Layer<'_>) -> Result<Layer, String> {
    let name = l.name().ok_or("it has no name")?.to_string();
    let data_type = DataType::from_value(l.data_type().0).ok_or_else(|| format!("'{name}' has unknown data type {}", l.data_type().0))?;
    let kind = match l.any_layer_type() {
        fb::AnyLayer::NONE => LayerKind::None,
        fb::AnyLayer::InputLayer => LayerKind::Input,
        fb::AnyLayer::OutputLayer => match l.any_layer_as_output_layer() {
            Some(o) => LayerKind::Output {
                layout: o.layout().map(|m| OutputLayout {
                    y_coordinate_to_linear_tile_id_map: ints(m.y_coordinate_to_linear_tile_id_map()),
                    x_coordinate_to_linear_tile_id_map: ints(m.x_coordinate_to_linear_tile_id_map()),
                    linearized_tile_byte_offset: ints(m.linearized_tile_byte_offset()),
                    x_coordinate_to_local_byte_offset: ints(m.x_coordinate_to_local_byte_offset()),
                    y_coordinate_to_local_y_offset: ints(m.y_coordinate_to_local_y_offset()),
                    x_coordinate_to_local_y_row_size: ints(m.x_coordinate_to_local_y_row_size()),
                }),
                data_type: o.data_type().0,
                shape_info: o.shape_info().map(|s| OutputShapeInfo {
                    slice_layout: s.slice_layout().iter().flatten().map(|t| SliceLayout { shape: ranges(t.shape()).unwrap_or_default(), stride: ints(t.stride()) }).collect(),
                    slice_offset: ints(s.slice_offset()),
                }),
            },
            None => LayerKind::None,
        },
        other => LayerKind::Unknown(other.0),
    };
    Ok(Layer {
        name,
        size_bytes: l.size_bytes(),
        y_dim: l.y_dim(),
        x_dim: l.x_dim(),
        z_dim: l.z_dim(),
        numerics: l.numerics().map(|n| Numerics { zero_point: n.zero_point(), dequantization_factor: n.dequantization_factor() }),
        data_type,
        kind,
        execution_count_per_inference: l.execution_count_per_inference(),
        cache_on_dram: l.cache_on_dram(),
        shape: ranges(l.shape()),
    })
}
