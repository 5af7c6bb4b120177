//! Image ops of NCHW programs: `convolution` (1-D and 2-D, groups, dilation, transposed),
//! pooling (`max_pool2d[_with_indices]`, `avg_pool2d`, `_adaptive_avg_pool2d`), inference batch
//! norm, and `upsample_{nearest,bilinear}2d`. Each reads its NCHW input through a transpose to
//! NHWC, runs nnrt's NHWC op and transposes the result back; a core pass cancels the transposes
//! that meet between two such ops.

use nnrt_core::{Activation, BinaryOp, Conv2D, DType, DepthwiseConv2D, LoadError, OpKind, OperandId, Padding, Pool2D, PoolKind, Resize, ResizeMode, TransposeConv};

use super::{binary, reshape, transpose, Convert, TO_NCHW, TO_NHWC};
use crate::pte::method::MethodBuilder;

pub(super) fn find(name: &str) -> Option<Convert> {
    Some(match name {
        "aten::convolution.out" => convolution,
        "aten::max_pool2d_with_indices.out" => |b, a| max_pool(b, a, true),
        "aten::max_pool2d.out" => |b, a| max_pool(b, a, false),
        "aten::avg_pool2d.out" => avg_pool,
        "aten::_adaptive_avg_pool2d.out" | "aten::adaptive_avg_pool2d.out" => adaptive_avg_pool,
        "aten::_native_batch_norm_legit_no_training.out" => batch_norm,
        "aten::upsample_nearest2d.vec_out" => |b, a| upsample(b, a, ResizeMode::Nearest),
        "aten::upsample_bilinear2d.vec_out" => |b, a| upsample(b, a, ResizeMode::Bilinear),
        _ => return None,
    })
}

/// A 2-element int list, a 1-element one repeated (PyTorch's `_pair`), or `default`.
fn pair(b: &MethodBuilder<'_, '_>, v: &[i64], what: &str, default: usize) -> Result<[usize; 2], LoadError> {
    // Bounded so that window arithmetic on declared sizes (< 2^31) cannot overflow.
    let ok = |x: i64| usize::try_from(x).ok().filter(|&x| x <= 1 << 24).ok_or_else(|| b.err(format!("{what} {v:?} holds a negative or huge value")));
    match v {
        [] => Ok([default, default]),
        [x] => Ok([ok(*x)?, ok(*x)?]),
        [h, w] => Ok([ok(*h)?, ok(*w)?]),
        _ => Err(b.err(format!("{what} {v:?} must have 1 or 2 values"))),
    }
}

/// The NHWC view of NCHW image `x` (rank 3 `[N, C, L]` becomes `[N, 1, L, C]`).
fn to_nhwc(b: &mut MethodBuilder<'_, '_>, x: OperandId) -> Result<(OperandId, bool), LoadError> {
    let d = b.dims(x);
    match d.len() {
        4 => Ok((super::as_nhwc(b, x), false)),
        3 => {
            let r = reshape(b, x, &[d[0], d[1], 1, d[2]]);
            Ok((transpose(b, r, &TO_NHWC), true))
        }
        n => Err(b.err(format!("the image has rank {n}; 2-D ops take [N, C, H, W] (or [N, C, L])"))),
    }
}

/// Writes NHWC `y` into NCHW out-argument `k` (rank 3 when `one_d`).
fn from_nhwc(b: &mut MethodBuilder<'_, '_>, y: OperandId, a: &[i64], k: usize, one_d: bool) -> Result<(), LoadError> {
    let out = b.out(a, k)?;
    if one_d {
        let t = transpose(b, y, &TO_NCHW);
        super::reshape_into(b, t, out);
    } else {
        // The NCHW result is transposed only if something reads it as NCHW.
        b.set_lazy(out, y);
    }
    Ok(())
}

/// `convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)`.
fn convolution(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let mut w = b.tensor(a, 1)?;
    let bias = b.opt_tensor(a, 2)?;
    let transposed = b.boolean(a, 6)?;
    let groups = usize::try_from(b.int(a, 8)?).ok().filter(|&g| g > 0).ok_or_else(|| b.err("groups must be positive"))?;
    let (xn, one_d) = to_nhwc(b, x)?;
    if one_d {
        let wd = b.dims(w);
        if wd.len() != 3 {
            return Err(b.err(format!("a 1-D convolution's weight {wd:?} must have rank 3")));
        }
        w = reshape(b, w, &[wd[0], wd[1], 1, wd[2]]);
    }
    let widen = |v: [usize; 2], fill: usize| if one_d { [fill, v[1]] } else { v };
    let stride = widen(pair(b, &b.ints(a, 3)?, "stride", 1)?, 1);
    let pad = widen(pair(b, &b.ints(a, 4)?, "padding", 0)?, 0);
    let dilation = widen(pair(b, &b.ints(a, 5)?, "dilation", 1)?, 1);
    let wd = b.dims(w);
    if wd.len() != 4 {
        return Err(b.err(format!("the weight {wd:?} must have rank 4 (OIHW)")));
    }
    let c_in = b.dims(xn)[3];
    let (y, y_dims) = if transposed {
        let op = widen(pair(b, &b.ints(a, 7)?, "output_padding", 0)?, 0);
        if dilation != [1, 1] {
            // A dilated transposed convolution is one with the zero-filled dense kernel.
            w = dilate_kernel(b, w, [2, 3], dilation).ok_or_else(|| b.err(format!("transposed convolution with dilation {dilation:?} needs constant weights of a reasonable size")))?;
        }
        let wd = b.dims(w);
        if b.g.operand(w).data.is_none() && groups > 1 {
            return Err(b.err("a grouped transposed convolution needs constant weights"));
        }
        // PyTorch's weight is [in, out/groups, kh, kw]; group j reads input channels and weight
        // rows j*in/g.. and writes output channels j*out/g..; TRANSPOSE_CONV's is [out, kh, kw, in].
        let per_in = wd[0] / groups;
        let per_out = wd[1];
        if per_in * groups != wd[0] || wd[0] != c_in {
            return Err(b.err(format!("the transposed weight {wd:?} with {groups} groups does not match the input's {c_in} channels")));
        }
        let xd = b.dims(xn);
        let oh = (xd[1].saturating_sub(1) * stride[0] + wd[2]).saturating_sub(2 * pad[0]) + op[0];
        let ow = (xd[2].saturating_sub(1) * stride[1] + wd[3]).saturating_sub(2 * pad[1]) + op[1];
        // The output shape decides the extent; output_padding beyond the padding adds rows and
        // columns that no input reaches (the bias alone), which the explicit padding cannot say.
        let padding = Padding::Explicit([pad[0], pad[0].saturating_sub(op[0]), pad[1], pad[1].saturating_sub(op[1])]);
        let mut parts = Vec::with_capacity(groups);
        for j in 0..groups {
            let wj = if groups == 1 { w } else { rows(b, w, j * per_in, per_in) };
            let wt = transpose(b, wj, &[1, 2, 3, 0]);
            let bj = match bias {
                Some(c) if groups > 1 => Some(rows(b, c, j * per_out, per_out)),
                other => other,
            };
            let xj = if groups == 1 { xn } else { channels(b, xn, j * per_in, per_in) };
            let dims = vec![xd[0], oh, ow, per_out];
            let shape = b.const_i32(&dims.iter().map(|&d| d as i32).collect::<Vec<_>>());
            let y = b.temp(b.dtype(xn), &dims);
            b.emit(OpKind::TransposeConv(TransposeConv { padding, stride, act: Activation::None }), vec![Some(shape), Some(wt), Some(xj), bj], vec![y]);
            parts.push(y);
        }
        let dims = vec![xd[0], oh, ow, per_out * groups];
        let y = if parts.len() == 1 {
            parts[0]
        } else {
            let y = b.temp(b.dtype(xn), &dims);
            b.emit_all(OpKind::Concatenation { axis: 3, act: Activation::None }, &parts, vec![y]);
            y
        };
        (y, dims)
    } else {
        let padding = Padding::Explicit([pad[0], pad[0], pad[1], pad[1]]);
        let xd = b.dims(xn);
        let window = |i: usize, k: usize| (xd[1 + i] + 2 * pad[i]).saturating_sub(dilation[i] * k.saturating_sub(1) + 1) / stride[i].max(1) + 1;
        let dims = vec![xd[0], window(0, wd[2]), window(1, wd[3]), wd[0]];
        let y = b.temp(b.dtype(xn), &dims);
        if groups > 1 && groups == c_in && wd[1] == 1 {
            // Depthwise: [O, 1, kh, kw] -> [1, kh, kw, O].
            let wt = transpose(b, w, &[1, 2, 3, 0]);
            let kind = OpKind::DepthwiseConv2D(DepthwiseConv2D { padding, stride, dilation, depth_multiplier: wd[0] / c_in, act: Activation::None });
            b.emit(kind, vec![Some(xn), Some(wt), bias], vec![y]);
        } else {
            if wd[1] * groups != c_in {
                return Err(b.err(format!("the weight {wd:?} with {groups} groups does not match the input's {c_in} channels")));
            }
            let wt = transpose(b, w, &TO_NHWC);
            b.emit(OpKind::Conv2D(Conv2D { padding, stride, dilation, act: Activation::None }), vec![Some(xn), Some(wt), bias], vec![y]);
        }
        (y, dims)
    };
    let _ = y_dims;
    from_nhwc(b, y, a, 9, one_d)
}

/// Output size of a pooling window (PyTorch's rule, with `ceil_mode`).
fn pooled(b: &MethodBuilder<'_, '_>, n: usize, k: usize, s: usize, p: usize, ceil: bool) -> Result<usize, LoadError> {
    let s = s.max(1);
    let span = (n + 2 * p).checked_sub(k).ok_or_else(|| b.err(format!("window {k} is larger than the padded input {}", n + 2 * p)))?;
    let mut out = if ceil { span.div_ceil(s) } else { span / s } + 1;
    // The last window must start inside the input or its left padding.
    if ceil && (out - 1) * s >= n + p {
        out -= 1;
    }
    Ok(out)
}

/// Pool parameters shared by max and average pooling: explicit padding that reproduces PyTorch's
/// output size, with the extra cells of `ceil_mode` at the bottom/right.
fn pool_geometry(b: &mut MethodBuilder<'_, '_>, xn: OperandId, k: [usize; 2], s: [usize; 2], p: [usize; 2], ceil: bool) -> Result<(Padding, Vec<usize>), LoadError> {
    let xd = b.dims(xn);
    let oh = pooled(b, xd[1], k[0], s[0], p[0], ceil)?;
    let ow = pooled(b, xd[2], k[1], s[1], p[1], ceil)?;
    let extra = |o: usize, n: usize, k: usize, s: usize, p: usize| ((o - 1) * s + k).saturating_sub(n + 2 * p);
    let padding = Padding::Explicit([p[0], p[0] + extra(oh, xd[1], k[0], s[0], p[0]), p[1], p[1] + extra(ow, xd[2], k[1], s[1], p[1])]);
    Ok((padding, vec![xd[0], oh, ow, xd[3]]))
}

/// `max_pool2d[_with_indices](self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)`.
fn max_pool(b: &mut MethodBuilder<'_, '_>, a: &[i64], with_indices: bool) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let k = pair(b, &b.ints(a, 1)?, "kernel_size", 1)?;
    let s = pair(b, &b.ints(a, 2)?, "stride", 0)?;
    let s = if s == [0, 0] { k } else { s };
    let p = pair(b, &b.ints(a, 3)?, "padding", 0)?;
    let d = pair(b, &b.ints(a, 4)?, "dilation", 1)?;
    let ceil = b.boolean(a, 5)?;
    if d != [1, 1] {
        return Err(b.err(format!("max pooling with dilation {d:?} is not supported")));
    }
    let (xn, one_d) = to_nhwc(b, x)?;
    let (padding, dims) = pool_geometry(b, xn, k, s, p, ceil)?;
    let y = b.temp(b.dtype(xn), &dims);
    b.emit_all(OpKind::Pool2D(Pool2D { kind: PoolKind::Max, padding, stride: s, filter: k, act: Activation::None }), &[xn], vec![y]);
    from_nhwc(b, y, a, 6, one_d)?;
    if with_indices && !one_d {
        // Computed only if something reads them (see `pool_indices`).
        let i = b.arg_index(a, 7)?;
        b.deferred.insert(i, crate::pte::method::Deferred::PoolIndices { x, k, s, p, ceil });
    }
    Ok(())
}

/// `avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)`.
fn avg_pool(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let k = pair(b, &b.ints(a, 1)?, "kernel_size", 1)?;
    let s = pair(b, &b.ints(a, 2)?, "stride", 0)?;
    let s = if s == [0, 0] { k } else { s };
    let p = pair(b, &b.ints(a, 3)?, "padding", 0)?;
    let ceil = b.boolean(a, 4)?;
    let include_pad = b.boolean(a, 5)?;
    let divisor = b.opt_int(a, 6)?;
    let (xn, one_d) = to_nhwc(b, x)?;
    let dt = b.dtype(xn);
    let (padding, dims) = pool_geometry(b, xn, k, s, p, ceil)?;
    let y = b.temp(dt, &dims);
    let has_pad = p != [0, 0] || matches!(padding, Padding::Explicit([_, bo, _, r]) if bo != p[0] || r != p[1]);
    if divisor.is_none() && (!include_pad || !has_pad) {
        // nnrt averages the in-bounds cells: count_include_pad=False, or nothing padded.
        b.emit_all(OpKind::Pool2D(Pool2D { kind: PoolKind::Average, padding, stride: s, filter: k, act: Activation::None }), &[xn], vec![y]);
    } else {
        // Sum over the window (average times the in-bounds count), then divide by PyTorch's
        // divisor: the override, or the window clipped to the padded input.
        let avg = b.temp(dt, &dims);
        b.emit_all(OpKind::Pool2D(Pool2D { kind: PoolKind::Average, padding, stride: s, filter: k, act: Activation::None }), &[xn], vec![avg]);
        let (Padding::Explicit([t, _, l, _]), xd) = (padding, b.dims(xn)) else { return Err(b.err("pool padding")) };
        // nnrt's average is over the in-bounds cells; rescale each output cell by
        // in-bounds count / PyTorch's divisor.
        b.budget(dims[1].checked_mul(dims[2]), "average pooling divisors")?;
        let mut counts = Vec::with_capacity(dims[1] * dims[2]);
        let mut divs = Vec::with_capacity(dims[1] * dims[2]);
        for oy in 0..dims[1] {
            for ox in 0..dims[2] {
                let y0 = (oy * s[0]) as i64 - t as i64;
                let x0 = (ox * s[1]) as i64 - l as i64;
                let clip = |v0: i64, kk: usize, n: usize, p: usize| {
                    let lo = v0.max(-(p as i64));
                    let hi = (v0 + kk as i64).min((n + p) as i64);
                    let inb = (v0.max(0)..(v0 + kk as i64).min(n as i64)).count();
                    ((hi - lo).max(0) as usize, inb)
                };
                let (ph, ih) = clip(y0, k[0], xd[1], p[0]);
                let (pw, iw) = clip(x0, k[1], xd[2], p[1]);
                counts.push((ih * iw) as f32);
                divs.push(match divisor {
                    Some(d) => d as f32,
                    None if include_pad => (ph * pw) as f32,
                    None => (ih * iw) as f32,
                });
            }
        }
        let scale: Vec<f32> = counts.iter().zip(&divs).map(|(c, d)| c / d).collect();
        let sc = b.const_f32(&[1, dims[1], dims[2], 1], &scale);
        let r = binary(b, BinaryOp::Mul, avg, sc);
        return from_nhwc(b, r, a, 7, one_d);
    }
    from_nhwc(b, y, a, 7, one_d)
}

/// `_adaptive_avg_pool2d(self, output_size)`: bins `[floor(i*n/o), ceil((i+1)*n/o))`. Equal
/// bins become one average pool; a 1x1 output a mean.
fn adaptive_avg_pool(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let o = pair(b, &b.ints(a, 1)?, "output_size", 1)?;
    let (xn, one_d) = to_nhwc(b, x)?;
    let xd = b.dims(xn);
    let dt = b.dtype(xn);
    let dims = vec![xd[0], o[0], o[1], xd[3]];
    let y = b.temp(dt, &dims);
    if o == [1, 1] {
        let axes = b.const_i32(&[1, 2]);
        b.emit_all(OpKind::Reduce { op: nnrt_core::ReduceOp::Mean, keep_dims: true }, &[xn, axes], vec![y]);
    } else if o[0] > 0 && o[1] > 0 && xd[1].is_multiple_of(o[0]) && xd[2].is_multiple_of(o[1]) {
        let k = [xd[1] / o[0], xd[2] / o[1]];
        b.emit_all(OpKind::Pool2D(Pool2D { kind: PoolKind::Average, padding: Padding::Valid, stride: k, filter: k, act: Activation::None }), &[xn], vec![y]);
    } else {
        // Unequal bins: out = A_h . X . A_w^T per channel, A's rows averaging each bin.
        let d = b.dims(x);
        if d.len() != 4 || o[0] == 0 || o[1] == 0 {
            return Err(b.err(format!("adaptive average pooling of {d:?} to {o:?}")));
        }
        let bins = |n: usize, m: usize| -> Vec<f32> {
            let mut w = vec![0f32; m * n];
            for i in 0..m {
                let (s, e) = (i * n / m, ((i + 1) * n).div_ceil(m));
                for j in s..e {
                    w[i * n + j] = 1.0 / (e - s) as f32;
                }
            }
            w
        };
        b.budget(d[2].checked_mul(o[0]), "adaptive pooling weights")?;
        b.budget(d[3].checked_mul(o[1]), "adaptive pooling weights")?;
        let ah = bins(d[2], o[0]);
        let aw = bins(d[3], o[1]);
        let aw_t: Vec<f32> = (0..d[3] * o[1]).map(|k| aw[(k % o[1]) * d[3] + k / o[1]]).collect();
        let awc = b.const_f32(&[d[3], o[1]], &aw_t);
        let ahc = b.const_f32(&[o[0], d[2]], &ah);
        let xf = b.cast(x, DType::F32);
        let t1 = b.temp(DType::F32, &[d[0], d[1], d[2], o[1]]);
        b.emit_all(OpKind::BatchMatMul { adj_x: false, adj_y: false }, &[xf, awc], vec![t1]);
        let out = b.out(a, 2)?;
        b.emit_all(OpKind::BatchMatMul { adj_x: false, adj_y: false }, &[ahc, t1], vec![out]);
        return Ok(());
    }
    from_nhwc(b, y, a, 2, one_d)
}

/// `_native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
/// momentum, eps)` -> (out, save_mean, save_invstd): `(x - mean) / sqrt(var + eps) * w + b`,
/// folded into one scale and shift per channel (dim 1).
fn batch_norm(b: &mut MethodBuilder<'_, '_>, a: &[i64]) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let w = b.opt_tensor(a, 1)?;
    let bias = b.opt_tensor(a, 2)?;
    let mean = b.tensor(a, 3)?;
    let var = b.tensor(a, 4)?;
    let eps = b.double(a, 6)?;
    let xd = b.dims(x);
    let c = *xd.get(1).ok_or_else(|| b.err("batch norm input needs a channel dim (dim 1)"))?;
    b.budget(Some(c), "batch norm statistics")?;
    let read = |b: &MethodBuilder<'_, '_>, id: Option<OperandId>, fill: f32, what: &str| -> Result<Vec<f32>, LoadError> {
        let Some(id) = id else { return Ok(vec![fill; c]) };
        let op = b.g.operand(id);
        let data = op.data.as_ref().filter(|_| op.dtype == DType::F32).ok_or_else(|| b.err(format!("batch norm {what} must be a float32 constant")))?;
        let v: Vec<f32> = data.bytes().chunks_exact(4).map(|q| f32::from_le_bytes([q[0], q[1], q[2], q[3]])).collect();
        if v.len() != c {
            return Err(b.err(format!("batch norm {what} has {} values for {c} channels", v.len())));
        }
        Ok(v)
    };
    let (wv, bv, mv, vv) = (read(b, w, 1.0, "weight")?, read(b, bias, 0.0, "bias")?, read(b, Some(mean), 0.0, "running mean")?, read(b, Some(var), 1.0, "running var")?);
    let scale: Vec<f32> = (0..c).map(|i| wv[i] / (vv[i] + eps as f32).sqrt()).collect();
    let shift: Vec<f32> = (0..c).map(|i| bv[i] - mv[i] * scale[i]).collect();
    let mut shape = vec![c];
    shape.extend(std::iter::repeat_n(1, xd.len().saturating_sub(2)));
    let sc = b.const_f32(&shape, &scale);
    let sh = b.const_f32(&shape, &shift);
    let xs = b.cast(x, DType::F32);
    let m = binary(b, BinaryOp::Mul, xs, sc);
    let r = binary(b, BinaryOp::Add, m, sh);
    let out = b.out(a, 7)?;
    super::copy_into(b, r, out);
    Ok(())
}

/// `upsample_*2d.vec(input, output_size?, [align_corners,] scale_factors?)`.
fn upsample(b: &mut MethodBuilder<'_, '_>, a: &[i64], mode: ResizeMode) -> Result<(), LoadError> {
    let x = b.tensor(a, 0)?;
    let (align, out_k) = match mode {
        ResizeMode::Bilinear => (b.boolean(a, 2)?, 4),
        _ => (false, 3),
    };
    // The out tensor's sizes are the result of output_size or scale_factors.
    let od = {
        let t = b.arg(a, out_k)?.val_as_tensor().ok_or_else(|| b.err("the out argument must be a Tensor"))?;
        t.sizes().map(|s| s.iter().map(|d| d.max(0) as usize).collect::<Vec<_>>()).unwrap_or_default()
    };
    if od.len() != 4 {
        return Err(b.err(format!("upsampling output {od:?} must have rank 4")));
    }
    let scales = if b.has(a, out_k - 1) { b.doubles(a, out_k - 1)? } else { Vec::new() };
    let (xn, _) = to_nhwc(b, x)?;
    let xd = b.dims(xn);
    // nnrt resizes by sizes; PyTorch samples with the given scale, the same when it is the
    // output/input ratio.
    if scales.iter().zip([xd[1], xd[2]]).zip([od[2], od[3]]).any(|((&s, i), o)| (o as f64 / i as f64 - s).abs() > 1e-9) {
        return Err(b.err(format!("upsampling by scale factors {scales:?} that are not output/input ratios is not supported")));
    }
    let size = b.const_i32(&[od[2] as i32, od[3] as i32]);
    let y = b.temp(b.dtype(xn), &[xd[0], od[2], od[3], xd[3]]);
    let half_pixel = !align && mode == ResizeMode::Bilinear;
    b.emit_all(OpKind::Resize(Resize { mode, align_corners: align, half_pixel_centers: half_pixel }), &[xn, size], vec![y]);
    from_nhwc(b, y, a, out_k, false)
}

/// Rows `start..start + n` (along dim 0) of constant `c`, as a new constant.
pub(crate) fn rows(b: &mut MethodBuilder<'_, '_>, c: OperandId, start: usize, n: usize) -> OperandId {
    let op = b.g.operand(c).clone();
    let mut dims = op.default_dims.clone();
    let total = dims.first().copied().unwrap_or(1).max(1);
    let bytes = op.data.as_ref().map(|d| d.bytes()).unwrap_or(&[]);
    let row = bytes.len() / total;
    let part = bytes.get(start * row..(start + n) * row).unwrap_or(&[]).to_vec();
    if let Some(d) = dims.first_mut() {
        *d = n;
    }
    b.constant(op.dtype, &dims, part)
}

/// Channels `start..start + n` of NHWC `x` (a SLICE along the last dim).
pub(crate) fn channels(b: &mut MethodBuilder<'_, '_>, x: OperandId, start: usize, n: usize) -> OperandId {
    let mut d = b.dims(x);
    let begin = [0, 0, 0, start as i32];
    let size = [d[0] as i32, d[1] as i32, d[2] as i32, n as i32];
    d[3] = n;
    let (bc, sc) = (b.const_i32(&begin), b.const_i32(&size));
    let y = b.temp(b.dtype(x), &d);
    b.emit_all(OpKind::Slice, &[x, bc, sc], vec![y]);
    y
}

/// Constant 4-D kernel `w` with `d - 1` zeros between taps along dims `hw` (its H and W): a
/// dilated kernel as a dense one, for ops without a dilation parameter. `None` if `w` is not a
/// constant or the result would be too large.
pub(crate) fn dilate_kernel(b: &mut MethodBuilder<'_, '_>, w: OperandId, hw: [usize; 2], d: [usize; 2]) -> Option<OperandId> {
    let op = b.g.operand(w).clone();
    let data = op.data.as_ref()?;
    let dims = op.default_dims.clone();
    if dims.len() != 4 || dims.contains(&0) {
        return None;
    }
    let es = op.dtype.size();
    let mut nd = dims.clone();
    for k in 0..2 {
        nd[hw[k]] = d[k].checked_mul(dims[hw[k]] - 1)?.checked_add(1)?;
    }
    let total = nd.iter().try_fold(es, |a, &x| a.checked_mul(x)).filter(|&n| n <= 1 << 28)?;
    let mut out = vec![0u8; total];
    let src = data.bytes();
    let strides = |ds: &[usize]| [ds[1] * ds[2] * ds[3], ds[2] * ds[3], ds[3], 1];
    let (ss, ds) = (strides(&dims), strides(&nd));
    for i0 in 0..dims[0] {
        for i1 in 0..dims[1] {
            for i2 in 0..dims[2] {
                for i3 in 0..dims[3] {
                    let mut o = [i0, i1, i2, i3];
                    for k in 0..2 {
                        o[hw[k]] *= d[k];
                    }
                    let s = (i0 * ss[0] + i1 * ss[1] + i2 * ss[2] + i3 * ss[3]) * es;
                    let t = (o[0] * ds[0] + o[1] * ds[1] + o[2] * ds[2] + o[3] * ds[3]) * es;
                    out[t..t + es].copy_from_slice(src.get(s..s + es)?);
                }
            }
        }
    }
    Some(b.constant(op.dtype, &nd, out))
}

/// The indices of max pooling NCHW `x` (PyTorch's: the flat `h * W + w` position of each
/// window's first maximum in its plane), as int64 into a new operand declared like value `vi`:
/// the window taps as strided slices of the input padded with -inf, ARG_MAX over the taps, then
/// the tap's offset added to each window's origin.
pub(crate) fn pool_indices(b: &mut MethodBuilder<'_, '_>, vi: i64, x: OperandId, k: [usize; 2], s: [usize; 2], p: [usize; 2], ceil: bool) -> Result<OperandId, LoadError> {
    let d = b.dims(x);
    if d.len() != 4 || b.dtype(x) != DType::F32 {
        return Err(b.err("max-pool indices of a non-float32 or non-4-D input are not supported"));
    }
    let (n, c, h, w) = (d[0], d[1], d[2], d[3]);
    let oh = pooled(b, h, k[0], s[0], p[0], ceil)?;
    let ow = pooled(b, w, k[1], s[1], p[1], ceil)?;
    let taps = k[0] * k[1];
    b.budget(taps.checked_mul(n * c * oh * ow), "max-pool index taps")?;
    // Pad so that every tap of every window is inside: -inf never wins.
    let ph = ((oh - 1) * s[0] + k[0]).saturating_sub(h + p[0]);
    let pw = ((ow - 1) * s[1] + k[1]).saturating_sub(w + p[1]);
    let pads = [0, 0, 0, 0, p[0] as i32, ph as i32, p[1] as i32, pw as i32];
    let pc = b.constant(DType::I32, &[4, 2], pads.iter().flat_map(|v| v.to_le_bytes()).collect());
    let ninf = b.const_f32(&[], &[f32::NEG_INFINITY]);
    let xp = b.temp(DType::F32, &[n, c, h + p[0] + ph, w + p[1] + pw]);
    b.emit_all(OpKind::Pad, &[x, pc, ninf], vec![xp]);
    let mut parts = Vec::with_capacity(taps);
    for ky in 0..k[0] {
        for kx in 0..k[1] {
            let begin = [0, 0, ky as i32, kx as i32];
            let end = [n as i32, c as i32, (ky + (oh - 1) * s[0] + 1) as i32, (kx + (ow - 1) * s[1] + 1) as i32];
            let strides = [1, 1, s[0] as i32, s[1] as i32];
            let (bc, ec, sc) = (b.const_i32(&begin), b.const_i32(&end), b.const_i32(&strides));
            let t = b.temp(DType::F32, &[n, c, oh, ow]);
            let sl = nnrt_core::StridedSlice { begin_mask: 0, end_mask: 0, ellipsis_mask: 0, new_axis_mask: 0, shrink_axis_mask: 0, offset: false };
            b.emit_all(OpKind::StridedSlice(sl), &[xp, bc, ec, sc], vec![t]);
            parts.push(reshape(b, t, &[1, n, c, oh, ow]));
        }
    }
    let stacked = b.temp(DType::F32, &[taps, n, c, oh, ow]);
    b.emit_all(OpKind::Concatenation { axis: 0, act: Activation::None }, &parts, vec![stacked]);
    let ax = b.const_i32_scalar(0);
    let j = b.temp(DType::I32, &[n, c, oh, ow]);
    b.emit_all(OpKind::ArgMinMax { max: true }, &[stacked, ax], vec![j]);
    // index = (oy*s0 - p0 + j / kw) * W + (ox*s1 - p1 + j % kw)
    let kw = b.const_i32_scalar(k[1] as i32);
    let ky = binary(b, BinaryOp::FloorDiv, j, kw);
    let kx = binary(b, BinaryOp::FloorMod, j, kw);
    let rows: Vec<i32> = (0..oh).map(|o| (o * s[0]) as i32 - p[0] as i32).collect();
    let cols: Vec<i32> = (0..ow).map(|o| (o * s[1]) as i32 - p[1] as i32).collect();
    let rc = b.constant(DType::I32, &[oh, 1], rows.iter().flat_map(|v| v.to_le_bytes()).collect());
    let cc = b.constant(DType::I32, &[1, ow], cols.iter().flat_map(|v| v.to_le_bytes()).collect());
    let row = binary(b, BinaryOp::Add, ky, rc);
    let wc = b.const_i32_scalar(w as i32);
    let row = binary(b, BinaryOp::Mul, row, wc);
    let col = binary(b, BinaryOp::Add, kx, cc);
    let idx = binary(b, BinaryOp::Add, row, col);
    let out = b.write(vi)?;
    super::copy_into(b, idx, out);
    Ok(out)
}
