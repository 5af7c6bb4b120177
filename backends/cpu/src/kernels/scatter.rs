//! Kernels that write values at computed positions: SCATTER_ND, SPARSE_TO_DENSE,
//! DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP and the segment reductions. Index values come from
//! tensors, so each is checked and a bad one is an error, never a panic.
#![forbid(unsafe_code)]

use super::movement::strides;

/// The flat offset of index tuple `ix` into `dims[..ix.len()]` (in units of `inner`), or an
/// error naming the tuple when it is out of range.
fn offset(ix: &[i64], dims: &[usize], what: &str) -> Result<usize, String> {
    let mut off = 0usize;
    for (k, &i) in ix.iter().enumerate() {
        if i < 0 || i as usize >= dims[k] {
            return Err(format!("{what} {ix:?} is out of bounds for dims {dims:?}"));
        }
        off = off * dims[k] + i as usize;
    }
    Ok(off)
}

/// SCATTER_ND: `out` (dims `out_dims`) = zeros, plus each slice of `updates` added (`add`) at
/// its index tuple (the rows of `indices`, `k` coordinates each).
pub fn scatter_nd<T: Copy + Default>(indices: &[i64], k: usize, updates: &[T], out_dims: &[usize], out: &mut [T], add: impl Fn(T, T) -> T) -> Result<(), String> {
    out.fill(T::default());
    let slice: usize = out_dims[k.min(out_dims.len())..].iter().product();
    let n = if k == 0 { updates.len().checked_div(slice) } else { indices.len().checked_div(k) }.unwrap_or(0);
    for i in 0..n {
        let base = offset(&indices[i * k..(i + 1) * k], out_dims, "ScatterNd index")? * slice;
        let src = &updates[i * slice..(i + 1) * slice];
        for (o, &u) in out[base..base + slice].iter_mut().zip(src) {
            *o = add(*o, u);
        }
    }
    Ok(())
}

/// SPARSE_TO_DENSE: `out` filled with `default`, then `values[i]` (or `values[0]` when
/// `scalar`) at each index tuple (`k` coordinates). Later duplicates win.
pub fn sparse_to_dense<T: Copy>(indices: &[i64], k: usize, values: &[T], scalar: bool, default: T, out_dims: &[usize], out: &mut [T]) -> Result<(), String> {
    out.fill(default);
    let n = indices.len().checked_div(k).unwrap_or(0);
    for i in 0..n {
        let at = offset(&indices[i * k..(i + 1) * k], out_dims, "SparseToDense index")?;
        let v = if scalar { values.first() } else { values.get(i) };
        out[at] = *v.ok_or("SparseToDense has fewer values than indices")?;
    }
    Ok(())
}

/// DYNAMIC_UPDATE_SLICE: `out` = `input` with `update` written from `start` (each clamped to
/// `[0, dims[d] - update_dims[d]]`, as TFLite does).
pub fn dynamic_update_slice<T: Copy>(input: &[T], dims: &[usize], update: &[T], update_dims: &[usize], start: &[i64], out: &mut [T]) {
    out.copy_from_slice(input);
    if update.is_empty() {
        return;
    }
    let rank = dims.len();
    let begin: Vec<usize> = (0..rank).map(|d| start[d].clamp(0, (dims[d] - update_dims[d]) as i64) as usize).collect();
    let st = strides(dims);
    let inner = update_dims.last().copied().unwrap_or(1);
    let mut idx = vec![0usize; rank.saturating_sub(1)];
    for row in update.chunks_exact(inner.max(1)) {
        let mut at: usize = idx.iter().enumerate().map(|(d, &i)| (begin[d] + i) * st[d]).sum();
        if rank > 0 {
            at += begin[rank - 1];
        }
        out[at..at + row.len()].copy_from_slice(row);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < update_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// EMBEDDING_LOOKUP: row `lookup[i]` of `table` (`rows` rows of `row` elements) into row `i`.
pub fn embedding_lookup<T: Copy>(lookup: &[i32], table: &[T], rows: usize, row: usize, out: &mut [T]) -> Result<(), String> {
    for (i, &ix) in lookup.iter().enumerate() {
        if ix < 0 || ix as usize >= rows {
            return Err(format!("EmbeddingLookup index {ix} is out of bounds [0, {rows})"));
        }
        let src = ix as usize * row;
        out[i * row..(i + 1) * row].copy_from_slice(&table[src..src + row]);
    }
    Ok(())
}

/// EMBEDDING_LOOKUP of an 8-bit table into float32: `q * scale` with the row's scale
/// (`scales` holds one per tensor or one per row). TFLite reads the bytes as int8 whatever
/// the table's declared signedness, and so does this.
pub fn embedding_lookup_dequant(lookup: &[i32], table: &[u8], rows: usize, row: usize, scales: &[f32], out: &mut [f32]) -> Result<(), String> {
    for (i, &ix) in lookup.iter().enumerate() {
        if ix < 0 || ix as usize >= rows {
            return Err(format!("EmbeddingLookup index {ix} is out of bounds [0, {rows})"));
        }
        let s = if scales.len() > 1 { scales[ix as usize] } else { scales[0] };
        let src = &table[ix as usize * row..(ix as usize + 1) * row];
        for (o, &q) in out[i * row..(i + 1) * row].iter_mut().zip(src) {
            *o = q as i8 as f32 * s;
        }
    }
    Ok(())
}

/// A value type of the segment reductions.
pub trait SegmentValue: Copy {
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// The lowest finite value (an empty segment's maximum, as `numeric_limits::lowest`).
    const LOWEST: Self;
    /// The highest finite value (an empty segment's minimum).
    const HIGHEST: Self;
    /// a + b (wrapping for integers).
    fn add(self, b: Self) -> Self;
    /// a * b (wrapping for integers).
    fn mul(self, b: Self) -> Self;
    /// Whether a < b.
    fn lt(self, b: Self) -> bool;
}

impl SegmentValue for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    const LOWEST: f32 = f32::MIN;
    const HIGHEST: f32 = f32::MAX;
    fn add(self, b: f32) -> f32 {
        self + b
    }
    fn mul(self, b: f32) -> f32 {
        self * b
    }
    fn lt(self, b: f32) -> bool {
        self < b
    }
}

impl SegmentValue for i32 {
    const ZERO: i32 = 0;
    const ONE: i32 = 1;
    const LOWEST: i32 = i32::MIN;
    const HIGHEST: i32 = i32::MAX;
    fn add(self, b: i32) -> i32 {
        self.wrapping_add(b)
    }
    fn mul(self, b: i32) -> i32 {
        self.wrapping_mul(b)
    }
    fn lt(self, b: i32) -> bool {
        self < b
    }
}

/// How a segment reduction starts and combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Sum.
    Sum,
    /// Maximum (`std::max`: keeps the current value unless it is less than the new one).
    Max,
    /// Minimum (`std::min`: keeps the current value unless the new one is less).
    Min,
    /// Product.
    Prod,
}

/// Reduces the `inner`-element slices of `data` into the `out.len() / inner` rows of `out` by
/// segment id (`ids`, one per slice). Negative ids drop their slice; ids past the output are an
/// error.
pub fn segment_reduce<T: SegmentValue>(data: &[T], ids: &[i32], inner: usize, how: Combine, out: &mut [T]) -> Result<(), String> {
    out.fill(match how {
        Combine::Sum => T::ZERO,
        Combine::Prod => T::ONE,
        Combine::Max => T::LOWEST,
        Combine::Min => T::HIGHEST,
    });
    let segments = out.len().checked_div(inner).unwrap_or(0);
    for (s, &id) in ids.iter().enumerate() {
        if id < 0 {
            continue;
        }
        if id as usize >= segments {
            return Err(format!("segment id {id} is not below the {segments} output segments"));
        }
        let o = &mut out[id as usize * inner..(id as usize + 1) * inner];
        for (o, &x) in o.iter_mut().zip(&data[s * inner..(s + 1) * inner]) {
            *o = match how {
                Combine::Sum => o.add(x),
                Combine::Prod => o.mul(x),
                Combine::Max => {
                    if o.lt(x) {
                        x
                    } else {
                        *o
                    }
                }
                Combine::Min => {
                    if x.lt(*o) {
                        x
                    } else {
                        *o
                    }
                }
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_nd_adds_duplicates_and_refuses_bad_indices() {
        let mut out = [0f32; 4];
        scatter_nd(&[1, 3, 1], 1, &[1.0, 2.0, 3.0], &[4], &mut out, |a, b| a + b).unwrap();
        assert_eq!(out, [0.0, 4.0, 0.0, 2.0]);
        assert!(scatter_nd(&[4], 1, &[1.0], &[4], &mut out, |a, b| a + b).is_err());
    }

    #[test]
    fn dynamic_update_slice_clamps_the_start() {
        let mut out = [0; 6];
        dynamic_update_slice(&[1, 2, 3, 4, 5, 6], &[2, 3], &[8, 9], &[1, 2], &[5, 7], &mut out);
        assert_eq!(out, [1, 2, 3, 4, 8, 9]);
    }

    #[test]
    fn empty_segments_take_the_identity() {
        let mut out = [0i32; 3];
        segment_reduce(&[5, 7], &[0, 0], 1, Combine::Max, &mut out).unwrap();
        assert_eq!(out, [7, i32::MIN, i32::MIN]);
        segment_reduce(&[5, 7], &[2, -1], 1, Combine::Prod, &mut out).unwrap();
        assert_eq!(out, [1, 1, 5]);
    }
}
