//! The host side of running a DarwiNN executable, with no device involved: an input laid out
//! as the layer wants it (padded to `size_bytes`), an output re-laid out from the device's tiles
//! to plain YXZ, the sign-bit flip of the signed fixed-point types, and the layer numerics
//! (quantize a float input, dequantize an output into a float tensor).
//!
//! The output tiles (schema `OutputLayout`): element (y, x, z) of the output sits at
//! `tile_offset[y_tile[y] + x_tile[x]] + y_local[y] * row_size[x] + x_local[x] + z`, counted in
//! elements of the layer's type (bytes for the 8-bit types; the runtime scales by the element
//! size). An output with y = x = 1 is its first z elements as they are.

use half::{bf16, f16};

use super::{DataType, Layer, LayerKind, Numerics, OutputLayout};

fn at(v: &[i32], i: usize, what: &str) -> Result<i64, String> {
    v.get(i).map(|&n| i64::from(n)).ok_or_else(|| format!("{what} has {} entries, needs index {i}", v.len()))
}

/// The element offset of (y, x, 0) in the tiled output.
fn tiled_index(m: &OutputLayout, y: usize, x: usize) -> Result<i64, String> {
    let tile = at(&m.y_coordinate_to_linear_tile_id_map, y, "y_coordinate_to_linear_tile_id_map")?
        + at(&m.x_coordinate_to_linear_tile_id_map, x, "x_coordinate_to_linear_tile_id_map")?;
    let tile = usize::try_from(tile).map_err(|_| format!("tile id {tile} at y {y} x {x} is negative"))?;
    let base = at(&m.linearized_tile_byte_offset, tile, "linearized_tile_byte_offset")?;
    Ok(base
        + at(&m.y_coordinate_to_local_y_offset, y, "y_coordinate_to_local_y_offset")? * at(&m.x_coordinate_to_local_y_row_size, x, "x_coordinate_to_local_y_row_size")?
        + at(&m.x_coordinate_to_local_byte_offset, x, "x_coordinate_to_local_byte_offset")?)
}

fn dims(l: &Layer) -> Result<(usize, usize, usize), String> {
    let d = |v: i32, n: &str| usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| format!("{n} {v} must be positive"));
    let (y, x, z) = (d(l.y_dim, "y_dim")?, d(l.x_dim, "x_dim")?, d(l.z_dim, "z_dim")?);
    if l.actual_bytes().is_none() {
        return Err(format!("layer '{}' of {y}·{x}·{z} elements is too large", l.name));
    }
    Ok((y, x, z))
}

/// Byte range of `n` bytes at element offset `i` of width `dts`, when it is representable.
fn span(i: i64, dts: usize, n: usize) -> Option<std::ops::Range<usize>> {
    let from = usize::try_from(i).ok()?.checked_mul(dts)?;
    Some(from..from.checked_add(n)?)
}

/// Checks that the maps of `m` have an entry for every y and x of `l` and put every element
/// inside the layer's `size_bytes`; returns the bytes the tiles span.
pub fn check_layout(m: &OutputLayout, l: &Layer) -> Result<usize, String> {
    let (ys, xs, z) = dims(l)?;
    if ys == 1 && xs == 1 {
        return Ok(z * l.data_type.size());
    }
    for (name, v, n) in [
        ("y_coordinate_to_linear_tile_id_map", &m.y_coordinate_to_linear_tile_id_map, ys),
        ("y_coordinate_to_local_y_offset", &m.y_coordinate_to_local_y_offset, ys),
        ("x_coordinate_to_linear_tile_id_map", &m.x_coordinate_to_linear_tile_id_map, xs),
        ("x_coordinate_to_local_byte_offset", &m.x_coordinate_to_local_byte_offset, xs),
        ("x_coordinate_to_local_y_row_size", &m.x_coordinate_to_local_y_row_size, xs),
    ] {
        if v.len() != n {
            return Err(format!("output layout {name} has {} entries for a dimension of {n}", v.len()));
        }
    }
    let size = i64::from(l.size_bytes);
    let dts = l.data_type.size() as i64;
    let mut end = 0i64;
    for y in 0..ys {
        for x in 0..xs {
            let i = tiled_index(m, y, x)?;
            let last = (i + z as i64) * dts;
            if i < 0 || last > size {
                return Err(format!("output layout puts y {y} x {x} at elements {i}..{} of the layer's {size} bytes", i + z as i64));
            }
            end = end.max(last);
        }
    }
    Ok(end as usize)
}

/// Whether nnrt's host side handles layer `l` (one execution per inference, no output slices).
pub fn supported(l: &Layer) -> Result<(), String> {
    if l.execution_count_per_inference != 1 {
        return Err(format!("layer '{}' executes {} times per inference; nnrt handles 1", l.name, l.execution_count_per_inference));
    }
    if let LayerKind::Output { shape_info: Some(_), .. } = l.kind {
        return Err(format!("output layer '{}' describes its output as slices (shape_info), which nnrt does not re-lay out yet", l.name));
    }
    Ok(())
}

/// Re-lays out output `src` (the device's `size_bytes`, tiled) into `dst` (y·x·z elements, YXZ).
pub fn relayout(l: &Layer, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let (ys, xs, z) = dims(l)?;
    let dts = l.data_type.size();
    let z_bytes = z * dts;
    if dst.len() != ys * xs * z_bytes {
        return Err(format!("output buffer of {} bytes for {ys}·{xs}·{z_bytes}", dst.len()));
    }
    let short = |need: usize| format!("the device gave {} bytes for layer '{}', which needs {need}", src.len(), l.name);
    if ys == 1 && xs == 1 {
        dst.copy_from_slice(src.get(..z_bytes).ok_or_else(|| short(z_bytes))?);
        return Ok(());
    }
    let LayerKind::Output { layout: Some(m), .. } = &l.kind else {
        return Err(format!("output layer '{}' has y {ys} x {xs} but no layout", l.name));
    };
    for y in 0..ys {
        for x in 0..xs {
            let i = tiled_index(m, y, x)?;
            let at = span(i, dts, z_bytes).ok_or_else(|| format!("offset {i} at y {y} x {x} is out of range"))?;
            let end = at.end;
            let chunk = src.get(at).ok_or_else(|| short(end))?;
            let to = (y * xs + x) * z_bytes;
            dst[to..to + z_bytes].copy_from_slice(chunk);
        }
    }
    Ok(())
}

/// Flips the sign bit of every element of a signed fixed-point layer's buffer (the device's
/// representation and two's complement differ in that bit); other types are left alone.
pub fn flip_sign(dt: DataType, buf: &mut [u8]) {
    if !dt.sign_flipped() {
        return;
    }
    let n = dt.size();
    for e in buf.chunks_exact_mut(n) {
        e[n - 1] ^= 0x80;
    }
}

/// Lays out input `src` (y·x·z elements of the layer's type, YXZ) into `dst` (`size_bytes`):
/// the elements, zero padding, sign bits flipped for the signed types.
pub fn pack_input(l: &Layer, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let actual = l.actual_bytes().ok_or_else(|| format!("layer '{}' has no valid dims", l.name))?;
    if src.len() != actual || dst.len() < actual {
        return Err(format!("input layer '{}' takes {actual} bytes into {}, got {} into {}", l.name, l.size_bytes, src.len(), dst.len()));
    }
    dst[..actual].copy_from_slice(src);
    dst[actual..].fill(0);
    flip_sign(l.data_type, &mut dst[..actual]);
    Ok(())
}

fn scale(n: Option<Numerics>) -> (f32, i32) {
    n.map_or((1.0, 0), |n| (n.dequantization_factor, n.zero_point))
}

/// Quantizes float `values` to the layer's type with its numerics (round half away from zero,
/// saturating), little endian, two's complement for the signed types.
pub fn quantize(dt: DataType, n: Option<Numerics>, values: &[f32], dst: &mut [u8]) -> Result<(), String> {
    let (s, zp) = scale(n);
    let w = dt.size();
    if dst.len() != values.len() * w {
        return Err(format!("{} bytes for {} values of {}", dst.len(), values.len(), dt.name()));
    }
    if s == 0.0 && !matches!(dt, DataType::Single | DataType::Half | DataType::Bfloat) {
        return Err(format!("{} layer has dequantization factor 0", dt.name()));
    }
    let q = |v: f32, zp: i32, lo: f64, hi: f64| ((f64::from(v) / f64::from(s)).round() + f64::from(zp)).clamp(lo, hi) as i64;
    for (v, out) in values.iter().zip(dst.chunks_exact_mut(w)) {
        match dt {
            DataType::FixedPoint8 => out[0] = q(*v, zp, 0.0, 255.0) as u8,
            DataType::FixedPoint16 => out.copy_from_slice(&(q(*v, zp, 0.0, 65535.0) as u16).to_le_bytes()),
            DataType::SignedFixedPoint8 => out[0] = q(*v, 0, -128.0, 127.0) as i8 as u8,
            DataType::SignedFixedPoint16 => out.copy_from_slice(&(q(*v, 0, -32768.0, 32767.0) as i16).to_le_bytes()),
            DataType::SignedFixedPoint32 => out.copy_from_slice(&(q(*v, 0, f64::from(i32::MIN), f64::from(i32::MAX)) as i32).to_le_bytes()),
            DataType::Single => out.copy_from_slice(&v.to_le_bytes()),
            DataType::Half => out.copy_from_slice(&f16::from_f32(*v).to_le_bytes()),
            DataType::Bfloat => out.copy_from_slice(&bf16::from_f32(*v).to_le_bytes()),
        }
    }
    Ok(())
}

/// Dequantizes `src` (YXZ elements of the layer's type) into floats: unsigned types
/// `(q - zero_point) * scale`, signed ones `q * scale`, float types as they are.
pub fn dequantize(dt: DataType, n: Option<Numerics>, src: &[u8], dst: &mut [f32]) -> Result<(), String> {
    let (s, zp) = scale(n);
    let w = dt.size();
    if src.len() != dst.len() * w {
        return Err(format!("{} bytes for {} values of {}", src.len(), dst.len(), dt.name()));
    }
    for (b, out) in src.chunks_exact(w).zip(dst.iter_mut()) {
        *out = match dt {
            DataType::FixedPoint8 => (i64::from(b[0]) - i64::from(zp)) as f32 * s,
            DataType::FixedPoint16 => (i64::from(u16::from_le_bytes([b[0], b[1]])) - i64::from(zp)) as f32 * s,
            DataType::SignedFixedPoint8 => f32::from(b[0] as i8) * s,
            DataType::SignedFixedPoint16 => f32::from(i16::from_le_bytes([b[0], b[1]])) * s,
            DataType::SignedFixedPoint32 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32 * s,
            DataType::Single => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            DataType::Half => f16::from_le_bytes([b[0], b[1]]).to_f32(),
            DataType::Bfloat => bf16::from_le_bytes([b[0], b[1]]).to_f32(),
        };
    }
    Ok(())
}

/// Writes YXZ `plain` into the tile layout `l` describes (the device's side of
/// [`relayout`]; what a test driver does). `dst` is `size_bytes` long; padding is left as is.
pub fn tile(l: &Layer, plain: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let (ys, xs, z) = dims(l)?;
    let dts = l.data_type.size();
    let z_bytes = z * dts;
    if plain.len() != ys * xs * z_bytes {
        return Err(format!("{} bytes for {ys}·{xs}·{z_bytes}", plain.len()));
    }
    if ys == 1 && xs == 1 {
        dst.get_mut(..z_bytes).ok_or("output buffer too small")?.copy_from_slice(plain);
        return Ok(());
    }
    let LayerKind::Output { layout: Some(m), .. } = &l.kind else { return Err(format!("layer '{}' has no layout", l.name)) };
    for y in 0..ys {
        for x in 0..xs {
            let i = tiled_index(m, y, x)?;
            let at = span(i, dts, z_bytes).ok_or_else(|| format!("offset {i} at y {y} x {x} is out of range"))?;
            let from = (y * xs + x) * z_bytes;
            dst.get_mut(at).ok_or("output buffer too small")?.copy_from_slice(&plain[from..from + z_bytes]);
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
