//! Plain reference kernels (float32, NHWC, no tricks): loops that follow TFLite's reference
//! kernels' definitions, written for clarity, never for speed.

/// A dense float32 tensor in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct T {
    pub dims: Vec<usize>,
    pub data: Vec<f32>,
}

impl T {
    /// A tensor from dims and data (lengths must agree).
    pub fn new(dims: &[usize], data: Vec<f32>) -> T {
        assert_eq!(dims.iter().product::<usize>(), data.len(), "dims {dims:?}");
        T { dims: dims.to_vec(), data }
    }

    /// Element at a 4-D NHWC index.
    fn at4(&self, n: usize, h: usize, w: usize, c: usize) -> f32 {
        let d = &self.dims;
        self.data[((n * d[1] + h) * d[2] + w) * d[3] + c]
    }

    /// Applies `f` to every element.
    pub fn map(&self, f: impl Fn(f32) -> f32) -> T {
        T { dims: self.dims.clone(), data: self.data.iter().map(|&v| f(v)).collect() }
    }
}

/// Row-major strides of `dims`.
fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// Calls `f` with every multi-dim index of `dims`, in row-major order.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    let total: usize = dims.iter().product();
    let mut idx = vec![0; dims.len()];
    for _ in 0..total {
        f(&idx);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// TFLite's padding rule for one spatial dim: (output size, cells of padding before).
pub fn window(input: usize, k: usize, stride: usize, dilation: usize, same: bool) -> (usize, usize) {
    let eff = (k - 1) * dilation + 1;
    if same {
        let out = input.div_ceil(stride);
        let total = ((out - 1) * stride + eff).saturating_sub(input);
        (out, total / 2)
    } else {
        ((input - eff) / stride + 1, 0)
    }
}

/// Window geometry of a conv/pool: stride, dilation, SAME or VALID.
#[derive(Clone, Copy, Debug)]
pub struct Geom {
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub same: bool,
}

/// A window op over NHWC `x` with a `k` window and `out_c` output channels: `cell(b, o, taps)`
/// gives output channel `o` of each output cell from its in-bounds taps `(ky, kx, y, x)`.
fn windowed(x: &T, k: [usize; 2], g: Geom, out_c: usize, mut cell: impl FnMut(usize, usize, &[(usize, usize, usize, usize)]) -> f32) -> T {
    let (n, ih, iw) = (x.dims[0], x.dims[1], x.dims[2]);
    let (oh, pt) = window(ih, k[0], g.stride[0], g.dilation[0], g.same);
    let (ow, pl) = window(iw, k[1], g.stride[1], g.dilation[1], g.same);
    let mut out = Vec::with_capacity(n * oh * ow * out_c);
    let mut taps = Vec::with_capacity(k[0] * k[1]);
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                taps.clear();
                for ky in 0..k[0] {
                    for kx in 0..k[1] {
                        let y = (oy * g.stride[0] + ky * g.dilation[0]).checked_sub(pt).filter(|&y| y < ih);
                        let xx = (ox * g.stride[1] + kx * g.dilation[1]).checked_sub(pl).filter(|&xx| xx < iw);
                        if let (Some(y), Some(xx)) = (y, xx) {
                            taps.push((ky, kx, y, xx));
                        }
                    }
                }
                out.extend((0..out_c).map(|o| cell(b, o, &taps)));
            }
        }
    }
    T::new(&[n, oh, ow, out_c], out)
}

/// CONV_2D: input NHWC, filter OHWI, optional bias, then `act`.
pub fn conv2d(x: &T, w: &T, bias: Option<&[f32]>, g: Geom, act: fn(f32) -> f32) -> T {
    windowed(x, [w.dims[1], w.dims[2]], g, w.dims[0], |b, o, taps| {
        let mut acc = bias.map_or(0.0, |v| v[o]);
        for &(ky, kx, y, xx) in taps {
            for c in 0..x.dims[3] {
                acc += x.at4(b, y, xx, c) * w.at4(o, ky, kx, c);
            }
        }
        act(acc)
    })
}

/// DEPTHWISE_CONV_2D: filter [1, KH, KW, C*M]; output channel `c*M + m` reads input channel `c`.
pub fn depthwise(x: &T, w: &T, bias: Option<&[f32]>, g: Geom, act: fn(f32) -> f32) -> T {
    let m = w.dims[3] / x.dims[3];
    windowed(x, [w.dims[1], w.dims[2]], g, w.dims[3], |b, o, taps| {
        act(taps.iter().fold(bias.map_or(0.0, |v| v[o]), |acc, &(ky, kx, y, xx)| acc + x.at4(b, y, xx, o / m) * w.at4(0, ky, kx, o)))
    })
}

/// FULLY_CONNECTED: rows of K from the input times weights [N, K]ᵀ plus bias. The output is
/// [rows, N], or the input's dims with the last replaced by N when `keep_num_dims`.
pub fn fully_connected(x: &T, w: &T, bias: Option<&[f32]>, keep_num_dims: bool) -> T {
    let (nout, k) = (w.dims[0], w.dims[1]);
    let rows = x.data.len() / k;
    let mut out = Vec::with_capacity(rows * nout);
    for r in 0..rows {
        for o in 0..nout {
            let dot: f32 = (0..k).map(|i| x.data[r * k + i] * w.data[o * k + i]).sum();
            out.push(dot + bias.map_or(0.0, |b| b[o]));
        }
    }
    let dims = if keep_num_dims { [&x.dims[..x.dims.len() - 1], &[nout]].concat() } else { vec![rows, nout] };
    T::new(&dims, out)
}

/// AVERAGE_POOL_2D (mean of the in-bounds cells) or MAX_POOL_2D.
pub fn pool(x: &T, filter: [usize; 2], g: Geom, max: bool) -> T {
    windowed(x, filter, Geom { dilation: [1, 1], ..g }, x.dims[3], |b, ch, taps| {
        let values = taps.iter().map(|&(_, _, y, xx)| x.at4(b, y, xx, ch));
        if max {
            values.fold(f32::NEG_INFINITY, f32::max)
        } else {
            values.sum::<f32>() / taps.len() as f32
        }
    })
}

/// NumPy-broadcast binary op.
pub fn binary(a: &T, b: &T, f: impl Fn(f32, f32) -> f32) -> T {
    let rank = a.dims.len().max(b.dims.len());
    let pad = |d: &[usize]| [vec![1; rank - d.len()], d.to_vec()].concat();
    let (da, db) = (pad(&a.dims), pad(&b.dims));
    let dims: Vec<usize> = da.iter().zip(&db).map(|(&x, &y)| x.max(y)).collect();
    let (sa, sb) = (strides(&da), strides(&db));
    let mut out = Vec::with_capacity(dims.iter().product());
    for_each_index(&dims, |idx| {
        let ia: usize = idx.iter().enumerate().map(|(d, &i)| if da[d] == 1 { 0 } else { i * sa[d] }).sum();
        let ib: usize = idx.iter().enumerate().map(|(d, &i)| if db[d] == 1 { 0 } else { i * sb[d] }).sum();
        out.push(f(a.data[ia], b.data[ib]));
    });
    T::new(&dims, out)
}

/// MEAN over `axes`, keeping them as 1s or dropping them.
pub fn mean(x: &T, axes: &[usize], keep_dims: bool) -> T {
    let kept: Vec<usize> = x.dims.iter().enumerate().map(|(d, &n)| if axes.contains(&d) { 1 } else { n }).collect();
    let mut sums = vec![0f64; kept.iter().product()];
    let ks = strides(&kept);
    let xs = strides(&x.dims);
    for_each_index(&x.dims, |idx| {
        let o: usize = idx.iter().enumerate().map(|(d, &i)| if axes.contains(&d) { 0 } else { i * ks[d] }).sum();
        let i: usize = idx.iter().zip(&xs).map(|(i, s)| i * s).sum();
        sums[o] += x.data[i] as f64;
    });
    let count: usize = axes.iter().map(|&a| x.dims[a]).product();
    let dims: Vec<usize> = if keep_dims { kept } else { x.dims.iter().enumerate().filter(|(d, _)| !axes.contains(d)).map(|(_, &n)| n).collect() };
    T::new(&dims, sums.iter().map(|&s| (s / count as f64) as f32).collect())
}

/// SOFTMAX over the last axis: exp(beta (x - max)) / sum.
pub fn softmax(x: &T, beta: f32) -> T {
    let last = *x.dims.last().expect("rank >= 1");
    let mut out = Vec::with_capacity(x.data.len());
    for row in x.data.chunks(last) {
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f64> = row.iter().map(|&v| ((beta * (v - m)) as f64).exp()).collect();
        let s: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| (v / s) as f32));
    }
    T::new(&x.dims, out)
}

/// CONCATENATION along `axis` (non-negative).
pub fn concat(xs: &[&T], axis: usize) -> T {
    let outer: usize = xs[0].dims[..axis].iter().product();
    let mut dims = xs[0].dims.clone();
    dims[axis] = xs.iter().map(|x| x.dims[axis]).sum();
    let mut out = Vec::with_capacity(dims.iter().product());
    for o in 0..outer {
        for x in xs {
            let chunk: usize = x.dims[axis..].iter().product();
            out.extend_from_slice(&x.data[o * chunk..(o + 1) * chunk]);
        }
    }
    T::new(&dims, out)
}

/// TRANSPOSE: output dim `d` is input dim `perm[d]`.
pub fn transpose(x: &T, perm: &[usize]) -> T {
    let dims: Vec<usize> = perm.iter().map(|&p| x.dims[p]).collect();
    let xs = strides(&x.dims);
    let mut out = Vec::with_capacity(x.data.len());
    for_each_index(&dims, |idx| out.push(x.data[idx.iter().zip(perm).map(|(&i, &p)| i * xs[p]).sum::<usize>()]));
    T::new(&dims, out)
}

/// How PAD-family ops fill the border.
#[derive(Clone, Copy, Debug)]
pub enum Fill {
    /// PAD / PADV2: a constant.
    Value(f32),
    /// MIRROR_PAD REFLECT: mirror without the edge cell.
    Reflect,
    /// MIRROR_PAD SYMMETRIC: mirror including the edge cell.
    Symmetric,
}

/// PAD / PADV2 / MIRROR_PAD with `pads[d] = [before, after]`.
pub fn pad(x: &T, pads: &[[usize; 2]], fill: Fill) -> T {
    let dims: Vec<usize> = x.dims.iter().zip(pads).map(|(&n, p)| n + p[0] + p[1]).collect();
    let xs = strides(&x.dims);
    let mut out = Vec::with_capacity(dims.iter().product());
    for_each_index(&dims, |idx| {
        let mut src = 0;
        for d in 0..dims.len() {
            let (n, i) = (x.dims[d] as isize, idx[d] as isize - pads[d][0] as isize);
            let j = match fill {
                _ if (0..n).contains(&i) => i,
                Fill::Value(v) => {
                    out.push(v);
                    return;
                }
                Fill::Reflect if i < 0 => -i,
                Fill::Reflect => 2 * (n - 1) - i,
                Fill::Symmetric if i < 0 => -i - 1,
                Fill::Symmetric => 2 * n - 1 - i,
            };
            src += j as usize * xs[d];
        }
        out.push(x.data[src]);
    });
    T::new(&dims, out)
}
