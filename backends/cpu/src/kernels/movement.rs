//! Data movement with index arithmetic, for every element type: SLICE / STRIDED_SLICE (and
//! SPLIT / UNPACK through them), GATHER, GATHER_ND, TILE, REVERSE_V2, SPACE_TO_BATCH_ND,
//! BATCH_TO_SPACE_ND, ONE_HOT. Plain loops whose inner step is a contiguous run wherever the op
//! allows (these ops are memory-bound and rarely hot).
#![forbid(unsafe_code)]

use super::small::Small;

/// Row-major strides of `dims`.
pub(crate) fn strides(dims: &[usize]) -> Small<usize> {
    let mut s = Small::filled(dims.len(), 1);
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// Strided gather: `out[i₀, …] = input[start₀ + i₀·stride₀, …]` for `iₖ < count[k]`, over
/// `input` of dims `in_dims`. Runs with stride 1 along the last dim are copied whole.
///
/// # Panics
/// When an index falls outside `input` or `out` is not `Π count` long.
pub fn strided_copy<T: Copy>(input: &[T], in_dims: &[usize], start: &[i64], stride: &[i64], count: &[usize], out: &mut [T]) {
    let total: usize = count.iter().product();
    assert_eq!(out.len(), total, "strided_copy: output length");
    assert_eq!(input.len(), in_dims.iter().product::<usize>(), "strided_copy: input length");
    if total == 0 {
        return;
    }
    let k = in_dims.len();
    if k == 0 {
        out[0] = input[0];
        return;
    }
    let is = strides(in_dims);
    let last = k - 1;
    let n = count[last];
    let mut idx = Small::filled(last, 0usize);
    for row in out.chunks_exact_mut(n) {
        let base: i64 = (0..last).map(|d| (start[d] + idx[d] as i64 * stride[d]) * is[d] as i64).sum::<i64>() + start[last];
        if stride[last] == 1 {
            let b = base as usize;
            row.copy_from_slice(&input[b..b + n]);
        } else {
            for (j, o) in row.iter_mut().enumerate() {
                *o = input[(base + j as i64 * stride[last]) as usize];
            }
        }
        for d in (0..last).rev() {
            idx[d] += 1;
            if idx[d] < count[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// SPLIT / SPLIT_V / UNPACK: `input` viewed as `[outer, Σ sizes, inner]` is cut along the middle
/// dim into `outs[i]` of `[outer, sizes[i], inner]`.
///
/// # Panics
/// When the lengths do not match the views.
pub fn split<T: Copy>(input: &[T], outer: usize, sizes: &[usize], inner: usize, outs: &mut [&mut [T]]) {
    let row: usize = sizes.iter().sum::<usize>() * inner;
    assert_eq!(input.len(), outer * row, "split: input length");
    let mut at = 0;
    for (o, &s) in outs.iter_mut().zip(sizes) {
        let len = s * inner;
        assert_eq!(o.len(), outer * len, "split: output length");
        for (r, dst) in o.chunks_exact_mut(len.max(1)).enumerate().take(if len == 0 { 0 } else { outer }) {
            dst.copy_from_slice(&input[r * row + at..r * row + at + len]);
        }
        at += len;
    }
}

/// GATHER: `params` viewed as `[batch, outer, n, inner]`, `indices` as `[batch, m]`; `out[b, o,
/// j, :] = params[b, o, indices[b, j], :]`. An index outside `[0, n)` is an error (TFLite
/// fails the op).
pub fn gather<T: Copy>(params: &[T], batch: usize, outer: usize, n: usize, inner: usize, indices: &[i64], out: &mut [T]) -> Result<(), String> {
    let m = indices.len().checked_div(batch).unwrap_or(0);
    assert_eq!(params.len(), batch * outer * n * inner, "gather: params length");
    assert_eq!(out.len(), batch * outer * m * inner, "gather: output length");
    let mut dst = out.chunks_exact_mut(inner.max(1));
    for b in 0..batch {
        for o in 0..outer {
            for &i in &indices[b * m..(b + 1) * m] {
                if i < 0 || i as usize >= n {
                    return Err(format!("gather index {i} is out of range [0, {n})"));
                }
                let src = ((b * outer + o) * n + i as usize) * inner;
                if inner > 0 {
                    dst.next().expect("sized above").copy_from_slice(&params[src..src + inner]);
                }
            }
        }
    }
    Ok(())
}

/// GATHER_ND: each tuple of `k` indices (the last dim of `indices`) picks a slice of
/// `params[i₀, …, iₖ₋₁, …]`.
pub fn gather_nd<T: Copy>(params: &[T], params_dims: &[usize], indices: &[i64], k: usize, out: &mut [T]) -> Result<(), String> {
    let inner: usize = params_dims[k..].iter().product();
    let ps = strides(params_dims);
    let tuples = indices.len().checked_div(k).unwrap_or(out.len() / inner.max(1));
    assert_eq!(out.len(), tuples * inner, "gather_nd: output length");
    for t in 0..tuples {
        let mut off = 0;
        for d in 0..k {
            let i = indices[t * k + d];
            if i < 0 || i as usize >= params_dims[d] {
                return Err(format!("gather_nd index {i} is out of range [0, {}) in dim {d}", params_dims[d]));
            }
            off += i as usize * ps[d];
        }
        out[t * inner..(t + 1) * inner].copy_from_slice(&params[off..off + inner]);
    }
    Ok(())
}

/// TILE: `out[i₀, …] = input[i₀ mod d₀, …]` with `out` dims `dims[k] · multiples[k]`.
pub fn tile<T: Copy>(input: &[T], dims: &[usize], multiples: &[usize], out: &mut [T]) {
    let out_dims: Vec<usize> = dims.iter().zip(multiples).map(|(d, m)| d * m).collect();
    assert_eq!(out.len(), out_dims.iter().product::<usize>(), "tile: output length");
    if out.is_empty() {
        return;
    }
    if dims.is_empty() {
        out[0] = input[0];
        return;
    }
    // Build the innermost dim's tiled rows, then repeat whole blocks outward.
    fn go<T: Copy>(input: &[T], dims: &[usize], m: &[usize], out: &mut [T]) -> usize {
        let inner_in: usize = dims[1..].iter().product();
        let inner_out: usize = dims[1..].iter().zip(&m[1..]).map(|(d, k)| d * k).product();
        let mut written = 0;
        for i in 0..dims[0] {
            if dims.len() == 1 {
                out[written] = input[i];
                written += 1;
            } else {
                written += go(&input[i * inner_in..(i + 1) * inner_in], &dims[1..], &m[1..], &mut out[written..written + inner_out]);
            }
        }
        let block = written;
        for r in 1..m[0] {
            out.copy_within(0..block, r * block);
        }
        block * m[0]
    }
    go(input, dims, multiples, out);
}

/// REVERSE_V2: reverses `input` along every axis in `axes`.
pub fn reverse<T: Copy>(input: &[T], dims: &[usize], axes: &[usize], out: &mut [T]) {
    let k = dims.len();
    let count = dims.to_vec();
    let start: Vec<i64> = (0..k).map(|d| if axes.contains(&d) { dims[d] as i64 - 1 } else { 0 }).collect();
    let stride: Vec<i64> = (0..k).map(|d| if axes.contains(&d) { -1 } else { 1 }).collect();
    strided_copy(input, dims, &start, &stride, &count, out);
}

/// The geometry shared by SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND: the space-side tensor is
/// `[batch, spatial…, depth]`, the batch-side one `[batch · Π block, spatial / block…, depth]`.
#[derive(Clone, Debug)]
pub struct BlockGeom {
    /// Batch of the space-side tensor.
    pub batch: usize,
    /// Spatial dims of the space-side tensor (after padding for SPACE_TO_BATCH, before
    /// cropping for BATCH_TO_SPACE).
    pub spatial: Vec<usize>,
    /// Block size per spatial dim.
    pub block: Vec<usize>,
    /// Cells padded (SPACE_TO_BATCH) or cropped (BATCH_TO_SPACE) before each spatial dim.
    pub before: Vec<usize>,
    /// Size of each spatial dim of the unpadded / cropped space-side tensor.
    pub real: Vec<usize>,
    /// Elements per spatial position.
    pub depth: usize,
}

impl BlockGeom {
    /// Calls `f(batch_side_offset, space_side_offset_or_none)` for every batch-side position;
    /// `None` marks padding / cropped cells. TFLite's order: the block offset is the major part
    /// of the batch-side batch index.
    fn walk(&self, mut f: impl FnMut(usize, Option<usize>)) {
        let m = self.block.len();
        let inner: Vec<usize> = self.spatial.iter().zip(&self.block).map(|(s, b)| s / b).collect();
        let blocks: usize = self.block.iter().product();
        let positions: usize = inner.iter().product();
        let real_strides = strides(&self.real);
        let mut bo = 0;
        for blk in 0..blocks {
            // Mixed-radix block offset per spatial dim.
            let mut shift = vec![0; m];
            let mut r = blk;
            for d in (0..m).rev() {
                shift[d] = r % self.block[d];
                r /= self.block[d];
            }
            for b in 0..self.batch {
                for p in 0..positions {
                    let mut r = p;
                    let mut off = Some(0usize);
                    for d in (0..m).rev() {
                        let i = r % inner[d];
                        r /= inner[d];
                        let s = (i * self.block[d] + shift[d]) as i64 - self.before[d] as i64;
                        if s < 0 || s as usize >= self.real[d] {
                            off = None;
                        } else if let Some(o) = off.as_mut() {
                            *o += s as usize * real_strides[d];
                        }
                    }
                    let space = off.map(|o| (b * self.real.iter().product::<usize>() + o) * self.depth);
                    f(bo, space);
                    bo += self.depth;
                }
            }
        }
    }
}

/// SPACE_TO_BATCH_ND: `out` (batch side) from `input` (space side), padding with `pad`.
pub fn space_to_batch<T: Copy>(g: &BlockGeom, input: &[T], pad: T, out: &mut [T]) {
    let d = g.depth;
    g.walk(|o, i| match i {
        Some(i) => out[o..o + d].copy_from_slice(&input[i..i + d]),
        None => out[o..o + d].fill(pad),
    });
}

/// BATCH_TO_SPACE_ND: `out` (space side, cropped) from `input` (batch side).
pub fn batch_to_space<T: Copy>(g: &BlockGeom, input: &[T], out: &mut [T]) {
    let d = g.depth;
    g.walk(|i, o| {
        if let Some(o) = o {
            out[o..o + d].copy_from_slice(&input[i..i + d]);
        }
    });
}

/// ONE_HOT: `out` viewed as `[outer, depth, inner]` holds `on` where `indices[o, i] == d`, else
/// `off` (indices outside `[0, depth)` give a row of `off`).
pub fn one_hot<T: Copy>(indices: &[i64], outer: usize, depth: usize, inner: usize, on: T, off: T, out: &mut [T]) {
    assert_eq!(out.len(), outer * depth * inner, "one_hot: output length");
    for o in 0..outer {
        for d in 0..depth {
            for i in 0..inner {
                out[(o * depth + d) * inner + i] = if indices[o * inner + i] == d as i64 { on } else { off };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_copy_reverses_and_steps() {
        let x: Vec<i32> = (0..12).collect(); // [3, 4]
        let mut o = vec![0; 4];
        strided_copy(&x, &[3, 4], &[2, 3], &[-1, -2], &[2, 2], &mut o);
        assert_eq!(o, vec![11, 9, 7, 5]);
        let mut r = vec![0; 12];
        reverse(&x, &[3, 4], &[0], &mut r);
        assert_eq!(&r[..4], &[8, 9, 10, 11]);
    }

    #[test]
    fn tile_repeats_each_dim() {
        // [[1, 2], [3, 4]] tiled [2, 3] -> 4 rows of 6.
        let mut o = vec![0; 24];
        tile(&[1, 2, 3, 4], &[2, 2], &[2, 3], &mut o);
        assert_eq!(o[..6], [1, 2, 1, 2, 1, 2]);
        assert_eq!(o[6..12], [3, 4, 3, 4, 3, 4]);
        assert_eq!(o[12..], o[..12]);
        let mut e: Vec<i32> = vec![];
        tile(&[1, 2], &[2], &[0], &mut e);
    }

    #[test]
    fn gather_checks_indices() {
        let p = [1, 2, 3, 4, 5, 6]; // [3, 2]
        let mut o = [0; 4];
        gather(&p, 1, 1, 3, 2, &[2, 0], &mut o).unwrap();
        assert_eq!(o, [5, 6, 1, 2]);
        assert!(gather(&p, 1, 1, 3, 2, &[3, 0], &mut o).is_err());
        let mut o = [0; 2];
        gather_nd(&p, &[3, 2], &[1, 1, 2, 0], 2, &mut o).unwrap();
        assert_eq!(o, [4, 5]);
    }

    #[test]
    fn space_batch_round_trip() {
        // [1, 4, 4, 1] with block [2, 2]: TFLite's example gives batches of every other cell.
        let x: Vec<i32> = (1..=16).collect();
        let g = BlockGeom { batch: 1, spatial: vec![4, 4], block: vec![2, 2], before: vec![0, 0], real: vec![4, 4], depth: 1 };
        let mut o = vec![0; 16];
        space_to_batch(&g, &x, 0, &mut o);
        assert_eq!(&o[..4], &[1, 3, 9, 11]);
        assert_eq!(&o[4..8], &[2, 4, 10, 12]);
        let mut back = vec![0; 16];
        batch_to_space(&g, &o, &mut back);
        assert_eq!(back, x);
    }
}
