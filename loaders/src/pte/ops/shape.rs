//! Data movement and creation: the view copies (`view`, `unsqueeze`, `squeeze`, `_unsafe_view`),
//! `permute`, `transpose`, `t`, `expand`, `cat`, `stack`, `slice`, `select`, `split`,
//! `unbind`, `repeat`, `flip`, `constant_pad_nd`, `index_select`, `pixel_shuffle`, and the
//! constants `full`, `full_like`, `scalar_tensor`, `arange`. A view copy is a RESHAPE to the
//! sizes the program declares for its result.

use nnrt_core::{DType, LoadError, OpKind, OperandId, StridedSlice};

use super::{copy_into, reshape, transpose, transpose_into, Convert};
use crate::pte::method::{MethodBuilder, Scalar};

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::view_copy.out" | "aten::_unsafe_view.out" | "aten::unsqueeze_copy.out" | "aten::reshape.out" => |b, a| view(b, a, 2),
        "aten::as_strided_copy.out" => as_strided,
        "aten::squeeze_copy.dim_out" | "aten::squeeze_copy.dims_out" => |b, a| view(b, a, 2),
        "aten::squeeze_copy.out" => |b, a| view(b, a, 1),
        "aten::permute_copy.out" => permute,
        "aten::transpose_copy.int_out" => transpose_dims,
        "aten::t_copy.out" => t_copy,
        "aten::expand_copy.out" => expand,
        "aten::cat.out" => cat,
        "aten::stack.out" => stack,
        "aten::slice_copy.Tensor_out" => slice,
        "aten::slice_scatter.out" => slice_scatter,
        "aten::select_copy.int_out" => select,
        "aten::split_copy.Tensor_out" => |b, a| split(b, a, false),
        "aten::split_with_sizes_copy.out" => |b, a| split(b, a, true),
        "aten::unbind_copy.int_out" => unbind,
        "aten::repeat.out" => repeat,
        "aten::flip.out" => flip,
        "aten::constant_pad_nd.out" => constant_pad,
        "aten::index_select.out" => index_select,
        "aten::index.Tensor_out" => index_tensor,
        "aten::gather.out" => gather,
        "aten::pixel_shuffle.out" => pixel_shuffle,
        "aten::full.out" => full,
        "aten::full_like.out" => full_like,
        "aten::scalar_tensor.out" => scalar_tensor,
        "aten::arange.start_out" => arange,
        "aten::sym_size.int" => sym_size,
        "executorch_prim::et_view.default" => et_view,
        _ => return None,
    })
}

/// A copy of the input with the out tensor's sizes (`out_k` is the out argument).
fn view(b: &mut MethodBuilder<'_, '_>, a: &[i64], out_k: usize) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let out = b.out(a, out_k)?;
    let (n_in, n_out) = (b.dims(x).iter().product::<usize>(), b.dims(out).iter().product::<usize>());
    if n_in != n_out && !b.g.operand(out).shape.is_dynamic() {
        return Err(b.err(format!("a view of {:?} as {:?} changes the element count", b.dims(x), b.dims(out))));
    }
    copy_into(b, x, out);
    Ok(())
}

fn perm_of(b: &MethodBuilder<'_, '_>, dims: &[i64], rank: usize) -> Result<Vec<usize>, LoadError> {
    let p = dims.iter().map(|&d| b.axis(d, rank)).collect::<Result<Vec<_>, _>>()?;
    let mut seen = p.clone();
    seen.sort_unstable();
    if p.len() != rank || seen.iter().enumerate().any(|(i, &d)| i != d) {
        return Err(b.err(format!("dims {dims:?} are not a permutation of {rank} dims")));
    }
    Ok(p)
}

/// `permute_copy(self, dims)`: a constant is permuted once here.
fn permute(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let dims = b.ints(a, 1)?;
    let p = perm_of(b, &dims, b.dims(x).len())?;
    if let (Some(t), true) = (b.twin(x), p == super::TO_NHWC) {
        // NCHW -> NHWC of an operand that has its NHWC form already.
        return b.bind(b.arg_index(a, 2)?, t);
    }
    if b.g.operand(x).data.is_some() {
        let t = transpose(b, x, &p);
        return b.bind(b.arg_index(a, 2)?, t);
    }
    let out = b.out(a, 2)?;
    transpose_into(b, x, &p, out);
    Ok(())
}

fn transpose_dims(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let (d0, d1) = (b.axis(b.int(a, 1)?, rank)?, b.axis(b.int(a, 2)?, rank)?);
    let mut p: Vec<usize> = (0..rank).collect();
    if rank > 0 {
        p.swap(d0, d1);
    }
    if b.g.operand(x).data.is_some() {
        let t = transpose(b, x, &p);
        return b.bind(b.arg_index(a, 3)?, t);
    }
    let out = b.out(a, 3)?;
    transpose_into(b, x, &p, out);
    Ok(())
}

fn t_copy(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    if rank < 2 {
        let out = b.out(a, 1)?;
        copy_into(b, x, out);
        return Ok(());
    }
    if b.g.operand(x).data.is_some() {
        let t = transpose(b, x, &[1, 0]);
        return b.bind(b.arg_index(a, 1)?, t);
    }
    let out = b.out(a, 1)?;
    transpose_into(b, x, &[1, 0], out);
    Ok(())
}

/// `expand_copy(self, size, implicit)`: BROADCAST_TO the out tensor's sizes.
fn expand(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let out = b.out(a, 3)?;
    let dims = b.dims(out);
    let shape = b.const_i32(&dims.iter().map(|&d| d as i32).collect::<Vec<_>>());
    b.emit_all(OpKind::BroadcastTo, &[x, shape], vec![out]);
    Ok(())
}

/// `cat(tensors, dim)`: empty 1-D tensors (`torch.tensor([])`) are skipped as PyTorch does.
fn cat(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let xs = b.tensors(a, 0)?;
    let out = b.out(a, 2)?;
    let rank = b.dims(out).len();
    let axis = b.axis(b.int(a, 1)?, rank)?;
    let dt = b.dtype(out);
    let xs: Vec<OperandId> = xs.into_iter().filter(|&x| b.dims(x) != [0]).collect::<Vec<_>>();
    let xs: Vec<OperandId> = xs.into_iter().map(|x| b.cast(x, dt)).collect();
    if xs.len() == 1 {
        copy_into(b, xs[0], out);
        return Ok(());
    }
    b.emit_all(OpKind::Concatenation { axis: axis as i32, act: nnrt_core::Activation::None }, &xs, vec![out]);
    Ok(())
}

/// `stack(tensors, dim)`: PACK.
fn stack(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let xs = b.tensors(a, 0)?;
    let out = b.out(a, 2)?;
    let axis = b.axis(b.int(a, 1)?, b.dims(out).len())?;
    let count = xs.len();
    b.emit_all(OpKind::Pack { axis: axis as i32, count }, &xs, vec![out]);
    Ok(())
}

/// STRIDED_SLICE of `x` along `dim` from `start` to `end` by `step` into `out`.
fn slice_into(b: &mut MethodBuilder<'_, '_>, x: OperandId, dim: usize, start: i64, end: i64, step: i64, out: OperandId) {
    let rank = b.dims(x).len();
    let mut begin = vec![0i32; rank];
    let mut stop: Vec<i32> = b.dims(x).iter().map(|&d| d as i32).collect();
    let mut strides = vec![1i32; rank];
    begin[dim] = start as i32;
    stop[dim] = end as i32;
    strides[dim] = step as i32;
    let (bc, ec, sc) = (b.const_i32(&begin), b.const_i32(&stop), b.const_i32(&strides));
    let p = StridedSlice { begin_mask: 0, end_mask: 0, ellipsis_mask: 0, new_axis_mask: 0, shrink_axis_mask: 0, offset: false };
    b.emit_all(OpKind::StridedSlice(p), &[x, bc, ec, sc], vec![out]);
}

/// PyTorch's clamping of a slice bound to `[0, n]`.
fn clamp_bound(v: i64, n: usize) -> i64 {
    let n = n as i64;
    let v = if v < 0 { v + n } else { v };
    v.clamp(0, n)
}

/// `slice_copy.Tensor(self, dim, start?, end?, step)`.
fn slice(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let xd = b.dims(x);
    let dim = b.dim_of(b.int(a, 1)?, xd.len())?;
    let n = xd[dim];
    let start = clamp_bound(b.opt_int(a, 2)?.unwrap_or(0), n);
    let end = clamp_bound(b.opt_int(a, 3)?.unwrap_or(n as i64), n).max(start);
    let step = b.int(a, 4)?;
    if step <= 0 {
        return Err(b.err(format!("slice step {step} must be positive")));
    }
    let out = b.out(a, 5)?;
    slice_into(b, x, dim, start, end, step, out);
    Ok(())
}

/// `slice_scatter(self, src, dim=0, start=None, end=None, step=1)`: `self` with
/// `self[start:end:step]` along `dim` replaced by `src`. Step 1 concatenates the kept parts of
/// `self` around `src`; a larger step gathers from `self` and `src` concatenated.
fn slice_scatter(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let src = b.tensor(a, 1)?;
    let xd = b.dims(x);
    let dim = b.dim_of(b.int(a, 2)?, xd.len())?;
    let n = xd[dim];
    let start = clamp_bound(b.opt_int(a, 3)?.unwrap_or(0), n);
    let end = clamp_bound(b.opt_int(a, 4)?.unwrap_or(n as i64), n).max(start);
    let step = b.int(a, 5)?;
    if step <= 0 {
        return Err(b.err(format!("slice step {step} must be positive")));
    }
    let m = ((end - start) + step - 1) / step;
    let mut want = xd.clone();
    want[dim] = m as usize;
    if b.dims(src) != want {
        return Err(b.err(format!("src has shape {:?}; the slice [{start}:{end}:{step}] of dim {dim} of {xd:?} is {want:?}", b.dims(src))));
    }
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    let src = b.cast(src, b.dtype(x));
    let part = |b: &mut MethodBuilder<'_, '_>, lo: i64, hi: i64| {
        let mut d = xd.clone();
        d[dim] = (hi - lo) as usize;
        let t = b.temp(b.dtype(x), &d);
        slice_into(b, x, dim, lo, hi, 1, t);
        t
    };
    let cat = |b: &mut MethodBuilder<'_, '_>, parts: Vec<OperandId>, into: OperandId| {
        if parts.len() == 1 {
            copy_into(b, parts[0], into);
        } else {
            b.emit_all(OpKind::Concatenation { axis: dim as i32, act: nnrt_core::Activation::None }, &parts, vec![into]);
        }
    };
    if step == 1 || m == 0 {
        let mut parts = Vec::new();
        if start > 0 {
            parts.push(part(b, 0, start));
        }
        if m > 0 {
            parts.push(src);
        }
        if end < n as i64 {
            parts.push(part(b, end, n as i64));
        }
        if parts.is_empty() {
            parts.push(x);
        }
        cat(b, parts, out);
        return Ok(());
    }
    let mut both = xd.clone();
    both[dim] = n + m as usize;
    let joined = b.temp(b.dtype(x), &both);
    cat(b, vec![x, src], joined);
    let index: Vec<i32> = (0..n as i64)
        .map(|i| if i >= start && i < end && (i - start) % step == 0 { (n as i64 + (i - start) / step) as i32 } else { i as i32 })
        .collect();
    let i = b.const_i32(&index);
    b.emit_all(OpKind::Gather { axis: dim as i32, batch_dims: 0 }, &[joined, i], vec![out]);
    Ok(())
}

/// `select_copy.int(self, dim, index)`: one index, the dim dropped.
fn select(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let xd = b.dims(x);
    let dim = b.dim_of(b.int(a, 1)?, xd.len())?;
    let i = b.int(a, 2)?;
    let n = xd[dim] as i64;
    let idx = if i < 0 { i + n } else { i };
    if idx < 0 || idx >= n {
        return Err(b.err(format!("index {i} is out of range for dim {dim} of size {n}")));
    }
    let mut kept = xd.clone();
    kept[dim] = 1;
    let t = b.temp(b.dtype(x), &kept);
    slice_into(b, x, dim, idx, idx + 1, 1, t);
    let out = b.out(a, 3)?;
    copy_into(b, t, out);
    Ok(())
}

/// `split_copy.Tensor(self, split_size, dim)` / `split_with_sizes_copy(self, split_sizes, dim)`:
/// each part a slice, written into the out list's tensors.
fn split(b: &mut MethodBuilder<'_, '_>, a: &[i64], with_sizes: bool) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let xd = b.dims(x);
    let dim = b.dim_of(b.int(a, 2)?, xd.len())?;
    let n = xd[dim] as i64;
    let sizes: Vec<i64> = if with_sizes {
        b.ints(a, 1)?
    } else {
        let s = b.int(a, 1)?;
        if s <= 0 {
            return Err(b.err(format!("split size {s} must be positive")));
        }
        (0..n).step_by(s as usize).map(|o| s.min(n - o)).collect()
    };
    if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != n {
        return Err(b.err(format!("split sizes {sizes:?} do not add up to {n}")));
    }
    let outs = b.list_items(a, 3)?;
    if outs.len() != sizes.len() {
        return Err(b.err(format!("{} parts but {} out tensors", sizes.len(), outs.len())));
    }
    let mut start = 0;
    for (&s, &o) in sizes.iter().zip(&outs) {
        let out = b.write(o)?;
        slice_into(b, x, dim, start, start + s, 1, out);
        start += s;
    }
    Ok(())
}

/// `unbind_copy.int(self, dim)`: UNPACK into the out list's tensors.
fn unbind(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let xd = b.dims(x);
    let dim = b.dim_of(b.int(a, 1)?, xd.len())?;
    let outs = b.list_items(a, 2)?;
    if outs.len() != xd[dim] {
        return Err(b.err(format!("{} out tensors for dim {dim} of size {}", outs.len(), xd[dim])));
    }
    let ids = outs.iter().map(|&o| b.write(o)).collect::<Result<Vec<_>, _>>()?;
    b.emit_all(OpKind::Unpack { axis: dim as i32, num: ids.len() }, &[x], ids);
    Ok(())
}

/// `repeat(self, repeats)`: TILE, after padding the input's rank with leading 1s.
fn repeat(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let mut x = b.tensor(a, 0)?;
    let reps = b.ints(a, 1)?;
    let xd = b.dims(x);
    if reps.len() < xd.len() || reps.iter().any(|&r| r < 0) {
        return Err(b.err(format!("repeats {reps:?} must be non-negative, at least one per dim of {xd:?}")));
    }
    if reps.len() > xd.len() {
        let mut d = vec![1; reps.len() - xd.len()];
        d.extend(&xd);
        x = reshape(b, x, &d);
    }
    let m = b.const_i32(&reps.iter().map(|&r| r as i32).collect::<Vec<_>>());
    let out = b.out(a, 2)?;
    b.emit_all(OpKind::Tile, &[x, m], vec![out]);
    Ok(())
}

/// `flip(self, dims)`: REVERSE_V2.
fn flip(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let dims = b.ints(a, 1)?;
    let ax = super::axes(b, &dims, b.dims(x).len())?;
    let out = b.out(a, 2)?;
    if ax.is_empty() {
        copy_into(b, x, out);
        return Ok(());
    }
    let c = b.const_i32(&ax.iter().map(|&d| d as i32).collect::<Vec<_>>());
    b.emit_all(OpKind::ReverseV2, &[x, c], vec![out]);
    Ok(())
}

/// `constant_pad_nd(self, pad, value)`: `pad` lists (before, after) pairs from the last dim
/// backwards; negative amounts crop.
fn constant_pad(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let pad = b.ints(a, 1)?;
    let value = b.scalar(a, 2)?;
    let xd = b.dims(x);
    let rank = xd.len();
    if pad.len() % 2 != 0 || pad.len() / 2 > rank {
        return Err(b.err(format!("pad {pad:?} must hold (before, after) pairs for at most {rank} dims")));
    }
    if pad.iter().any(|&p| p < 0) {
        return Err(b.err(format!("negative padding {pad:?} (cropping) is not supported")));
    }
    let mut pairs = vec![0i32; rank * 2];
    for (k, ch) in pad.chunks(2).enumerate() {
        let d = rank - 1 - k;
        pairs[2 * d] = ch[0] as i32;
        pairs[2 * d + 1] = ch[1] as i32;
    }
    let p = b.constant(DType::I32, &[rank, 2], pairs.iter().flat_map(|v| v.to_le_bytes()).collect());
    let v = b.const_scalar(b.dtype(x), value)?;
    let out = b.out(a, 3)?;
    b.emit_all(OpKind::Pad, &[x, p, v], vec![out]);
    Ok(())
}

/// `as_strided_copy(self, size, stride, storage_offset=None)`: element `idx` of the result is
/// element `storage_offset + Σ idx[k]·stride[k]` of `self`'s contiguous storage. A result that
/// reads the storage in order is a reshape; any other is a GATHER with constant indices.
fn as_strided(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let sizes = b.ints(a, 1)?;
    let strides = b.ints(a, 2)?;
    let offset = b.opt_int(a, 3)?.unwrap_or(0);
    if sizes.len() != strides.len() || sizes.iter().chain(&strides).any(|&v| v < 0) || offset < 0 {
        return Err(b.err(format!("size {sizes:?}, stride {strides:?} and storage offset {offset} do not describe a view")));
    }
    let n_in = b.dims(x).iter().product::<usize>() as i64;
    let dims: Vec<usize> = sizes.iter().map(|&v| v as usize).collect();
    let n = b.budget(dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)), "as_strided's indices")?;
    let mut index = Vec::with_capacity(n);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        let at = offset + idx.iter().zip(&strides).map(|(&i, &s)| i as i64 * s).sum::<i64>();
        if !(0..n_in).contains(&at) {
            return Err(b.err(format!("reads element {at} of a tensor of {n_in} (size {sizes:?}, stride {strides:?}, offset {offset})")));
        }
        index.push(at as i32);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    if n as i64 == n_in && index.iter().enumerate().all(|(i, &v)| v as usize == i) {
        b.reshape_op(x, out);
        return Ok(());
    }
    let flat = b.temp(b.dtype(x), &[n_in as usize]);
    b.reshape_op(x, flat);
    let i = b.constant(DType::I32, &dims, index.iter().flat_map(|v| v.to_le_bytes()).collect());
    b.emit_all(OpKind::Gather { axis: 0, batch_dims: 0 }, &[flat, i], vec![out]);
    Ok(())
}

/// `index_select(self, dim, index)`: GATHER along `dim`.
fn index_select(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let dim = b.dim_of(b.int(a, 1)?, b.dims(x).len())?;
    let i = b.tensor(a, 2)?;
    let out = b.out(a, 3)?;
    b.emit_all(OpKind::Gather { axis: dim as i32, batch_dims: 0 }, &[x, i], vec![out]);
    Ok(())
}

/// `pixel_shuffle(self, r)`: `[N, C*r*r, H, W]` -> `[N, C, H*r, W*r]`, channel `c*r*r + i*r + j`
/// going to row offset `i`, column offset `j`.
fn pixel_shuffle(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let r = usize::try_from(b.int(a, 1)?).ok().filter(|&r| r > 0 && r <= 1 << 16).ok_or_else(|| b.err("upscale factor must be in 1..=65536"))?;
    let d = b.dims(x);
    if d.len() != 4 || !d[1].is_multiple_of(r * r) {
        return Err(b.err(format!("pixel_shuffle of {d:?} by {r}: channels must divide by {}", r * r)));
    }
    let c = d[1] / (r * r);
    let t = reshape(b, x, &[d[0], c, r, r, d[2], d[3]]);
    let p = transpose(b, t, &[0, 1, 4, 2, 5, 3]);
    let out = b.out(a, 2)?;
    copy_into(b, p, out);
    Ok(())
}

/// A constant of the out tensor's type and sizes filled with `value`, bound to out-argument `k`.
fn filled(b: &mut MethodBuilder<'_, '_>, a: &[i64], k: usize, value: Scalar) -> Result<(), LoadError> {
    let out = b.out(a, k)?;
    let dims = b.dims(out);
    let dt = b.dtype(out);
    let one = b.const_scalar(dt, value)?;
    let shape = b.const_i32(&dims.iter().map(|&d| d as i32).collect::<Vec<_>>());
    let one = reshape(b, one, &vec![1; dims.len()]);
    b.emit_all(OpKind::BroadcastTo, &[one, shape], vec![out]);
    Ok(())
}

/// `full(size, fill_value)`.
fn full(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let v = b.scalar(a, 1)?;
    filled(b, a, 2, v)
}

/// `full_like(self, fill_value, dtype?, layout?, device?, pin_memory?, memory_format?)`.
fn full_like(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let v = b.scalar(a, 1)?;
    let k = b.last_out(a)?;
    filled(b, a, k, v)
}

/// `scalar_tensor(s)`.
fn scalar_tensor(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let v = b.scalar(a, 0)?;
    let k = b.last_out(a)?;
    let out = b.out(a, k)?;
    let c = b.const_scalar(b.dtype(out), v)?;
    copy_into(b, c, out);
    Ok(())
}

/// `arange.start(start, end, step)`: a constant of `ceil((end - start) / step)` values.
fn arange(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let (s, e, st) = (b.scalar(a, 0)?.as_f64(), b.scalar(a, 1)?.as_f64(), b.scalar(a, 2)?.as_f64());
    if st == 0.0 || !((e - s) / st).is_finite() {
        return Err(b.err(format!("arange({s}, {e}, {st}) has a zero or invalid step")));
    }
    let n = ((e - s) / st).ceil().max(0.0);
    let n = b.budget((n < 1e18).then_some(n as usize), "arange")?;
    let out = b.out(a, 3)?;
    if b.dims(out) != [n] {
        return Err(b.err(format!("arange({s}, {e}, {st}) has {n} values but its out tensor is {:?}", b.dims(out))));
    }
    let dt = b.dtype(out);
    let mut bytes = Vec::new();
    for i in 0..n {
        let v = s + i as f64 * st;
        match dt {
            DType::F32 => bytes.extend((v as f32).to_le_bytes()),
            DType::I64 => bytes.extend((v as i64).to_le_bytes()),
            DType::I32 => bytes.extend((v as i32).to_le_bytes()),
            other => return Err(b.err(format!("arange into {other} is not supported"))),
        }
    }
    let c = b.constant(dt, &[n], bytes);
    copy_into(b, c, out);
    Ok(())
}

/// `index.Tensor(self, indices: Tensor?[])` with one index tensor (the others absent): GATHER
/// along that dim. Several index tensors (advanced indexing) are not supported.
fn index_tensor(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let v = b.arg(a, 1)?;
    let list = v.val_as_optional_tensor_list().ok_or_else(|| b.err("argument 1 must be an OptionalTensorList"))?;
    let items: Vec<i64> = list.items().map(|l| l.iter().map(i64::from).collect()).unwrap_or_default();
    let present: Vec<(usize, i64)> = items.iter().enumerate().filter(|(_, &i)| i >= 0 && b.value(i).is_ok_and(|v| v.val_as_tensor().is_some())).map(|(k, &i)| (k, i)).collect();
    let [(dim, idx)] = present[..] else {
        return Err(b.err(format!("indexing with {} index tensors is not supported (one is)", present.len())));
    };
    let i = b.read(idx)?;
    if b.dtype(i) == DType::Bool {
        return Err(b.err("indexing with a boolean mask is not supported"));
    }
    let out = b.out(a, 2)?;
    b.emit_all(OpKind::Gather { axis: dim as i32, batch_dims: 0 }, &[x, i], vec![out]);
    Ok(())
}

/// `gather(self, dim, index, sparse_grad)`: `out[i..] = self[i.. with dim replaced by
/// index[i..]]`, as GATHER_ND on coordinates built from `index` and constant iotas.
fn gather(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let rank = b.dims(x).len();
    let dim = b.axis(b.int(a, 1)?, rank)?;
    let i = b.tensor(a, 2)?;
    let id = b.dims(i);
    if id.len() != rank {
        return Err(b.err(format!("gather index {id:?} must have the input's rank {rank}")));
    }
    let n = b.budget(id.iter().try_fold(1usize, |p, &d| p.checked_mul(d)).and_then(|n| n.checked_mul(rank)), "gather coordinates")?;
    let _ = n;
    let mut col = id.clone();
    col.push(1);
    let mut parts = Vec::with_capacity(rank);
    for d in 0..rank {
        if d == dim {
            let c = b.cast(i, DType::I32);
            parts.push(reshape(b, c, &col));
            continue;
        }
        // Coordinate d of every element of the index tensor.
        let count: usize = id.iter().product();
        let inner: usize = id[d + 1..].iter().product();
        let v: Vec<i32> = (0..count).map(|k| ((k / inner.max(1)) % id[d].max(1)) as i32).collect();
        parts.push(b.constant(DType::I32, &col, v.iter().flat_map(|x| x.to_le_bytes()).collect()));
    }
    let mut cd = id.clone();
    cd.push(rank);
    let coords = b.temp(DType::I32, &cd);
    b.emit_all(OpKind::Concatenation { axis: rank as i32, act: nnrt_core::Activation::None }, &parts, vec![coords]);
    let out = b.out(a, 4)?;
    b.emit_all(OpKind::GatherNd, &[x, coords], vec![out]);
    Ok(())
}

/// `sym_size.int(self, dim) -> SymInt`: a fixed size is known at load (a loop over it is
/// unrolled); a size known only at run time is marked so that a view taking it reshapes by
/// the run-time shape, and any other use is refused.
fn sym_size(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let d = b.axis(b.int(a, 1)?, b.dims(x).len())?;
    let out = b.arg_index(a, 2)?;
    if b.value(out)?.val_as_int().is_none() {
        return Err(b.err("sym_size's result must be an Int value"));
    }
    let size = match b.g.operand(x).shape.0.get(d) {
        Some(nnrt_core::Dim::Known(n)) => Some(super::super::method::Scalar::Int(*n as i64)),
        _ => None,
    };
    b.set_scalar(out, size)?;
    if size.is_none() {
        b.sym_src.insert(out, (x, d));
    }
    Ok(())
}

/// `et_view(self, size)`: a view whose sizes may hold run-time sizes. With one run-time size it
/// becomes -1 and a -1 of the list is resolved from the input's fixed dims.
fn et_view(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let sizes = b.sizes(a, 1)?;
    let items = b.list_ints(a, 1)?;
    let out = b.out(a, 2)?;
    let dynamic = sizes.iter().filter(|s| s.is_none()).count();
    if dynamic == 0 {
        copy_into(b, x, out);
        return Ok(());
    }
    // Sizes computed from run-time sizes: the shape is computed at run time.
    if items.iter().any(|i| b.derived.contains_key(i)) {
        let parts = items.iter().map(|&i| super::prim::size_operand(b, i)).collect::<Result<Vec<_>, _>>()?;
        let shape = b.temp(DType::I32, &[parts.len()]);
        b.emit_all(OpKind::Concatenation { axis: 0, act: nnrt_core::Activation::None }, &parts, vec![shape]);
        b.emit_all(OpKind::Reshape { new_shape: None }, &[x, shape], vec![out]);
        return Ok(());
    }
    if let Some(i) = items.iter().find(|&&i| b.symbolic.contains(&i) && !b.sym_src.contains_key(&i)) {
        return Err(b.err(format!("a view takes value {i}, a scalar known only at run time that nnrt does not compute there")));
    }
    if dynamic > 1 {
        return Err(b.err(format!("a view with {dynamic} run-time sizes is not supported (one is)")));
    }
    // The input's fixed elements: its dims not declared dynamic.
    let xs = b.g.operand(x).shape.clone();
    let fixed: usize = xs.0.iter().zip(b.dims(x)).map(|(d, n)| if *d == nnrt_core::Dim::Unknown { 1 } else { n }).product();
    let fixed = if xs.0.iter().all(|d| *d == nnrt_core::Dim::Unknown) { b.dims(x).iter().skip(1).product() } else { fixed };
    let known: i64 = sizes.iter().flatten().filter(|&&s| s >= 0).product();
    let ns: Vec<i32> = sizes
        .iter()
        .map(|s| match s {
            None => -1,
            Some(-1) => (fixed as i64 / known.max(1)) as i32,
            Some(n) => *n as i32,
        })
        .collect();
    let shape = b.const_i32(&ns);
    b.emit_all(OpKind::Reshape { new_shape: Some(ns) }, &[x, shape], vec![out]);
    Ok(())
}
