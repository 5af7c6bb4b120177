//! MediaPipe's `MaxPoolingWithArgmax2D` and `MaxUnpooling2D` over NHWC f32 (the SegNet-style
//! pooling of its hair and hand segmentation models, which LiteRT's XNNPACK delegate runs
//! natively).
//!
//! The pooling writes, next to each window's maximum, the maximum's position inside the window
//! as a float, `row * k_w + col + 0.1` (the 0.1 keeps the float-to-int conversion of the reader
//! exact). Windows are clipped to the input like MAX_POOL_2D's; among equal values the first in
//! row-major order wins. The unpooling zero-fills its output and writes each input value at the
//! position its index names inside the input pixel's window; positions outside the output are
//! skipped.
#![forbid(unsafe_code)]

use super::binary::clamp;
use super::pool::PoolGeom;
use super::Act;

/// The pooling window of output `o` along one axis: its origin (may be negative) and the
/// in-bounds offsets `[start, end)` inside the window.
fn window(o: usize, stride: usize, pad: usize, k: usize, len: usize) -> (isize, usize, usize) {
    let origin = (o * stride) as isize - pad as isize;
    let start = (-origin).clamp(0, k as isize) as usize;
    let end = (len as isize - origin).clamp(start as isize, k as isize) as usize;
    (origin, start, end)
}

/// Max pooling of `input` into `values`, with each maximum's window position in `indices`.
///
/// # Panics
/// When the slice lengths do not match `g`.
pub fn max_pool_argmax(g: &PoolGeom, act: Act, input: &[f32], values: &mut [f32], indices: &mut [f32]) {
    let c = g.channels;
    assert_eq!(input.len(), g.batch * g.in_h * g.in_w * c, "max_pool_argmax: input length");
    assert_eq!(values.len(), g.batch * g.out_h * g.out_w * c, "max_pool_argmax: output length");
    assert_eq!(indices.len(), values.len(), "max_pool_argmax: indices length");
    let mut best = vec![0usize; c];
    for b in 0..g.batch {
        let image = &input[b * g.in_h * g.in_w * c..][..g.in_h * g.in_w * c];
        for oy in 0..g.out_h {
            let (y0, ys, ye) = window(oy, g.stride_h, g.pad_top, g.k_h, g.in_h);
            for ox in 0..g.out_w {
                let (x0, xs, xe) = window(ox, g.stride_w, g.pad_left, g.k_w, g.in_w);
                let at = ((b * g.out_h + oy) * g.out_w + ox) * c;
                let (vals, idx) = (&mut values[at..at + c], &mut indices[at..at + c]);
                vals.fill(f32::MIN);
                best.fill(0);
                for fy in ys..ye {
                    let row = (y0 + fy as isize) as usize;
                    for fx in xs..xe {
                        let col = (x0 + fx as isize) as usize;
                        let px = &image[(row * g.in_w + col) * c..][..c];
                        let pos = fy * g.k_w + fx;
                        for ((v, bst), &x) in vals.iter_mut().zip(best.iter_mut()).zip(px) {
                            if x > *v {
                                *v = x;
                                *bst = pos;
                            }
                        }
                    }
                }
                for ((v, i), &bst) in vals.iter_mut().zip(idx.iter_mut()).zip(&best) {
                    *v = clamp(*v, act);
                    *i = bst as f32 + 0.1;
                }
            }
        }
    }
}

/// Unpooling of `input` (`[batch, out_h, out_w, channels]` of `g`, the pooled side) into `out`
/// (`[batch, in_h, in_w, channels]`, the full-size side) at the window positions in `indices`.
///
/// # Panics
/// When the slice lengths do not match `g`.
pub fn max_unpool(g: &PoolGeom, input: &[f32], indices: &[f32], out: &mut [f32]) {
    let c = g.channels;
    assert_eq!(input.len(), g.batch * g.out_h * g.out_w * c, "max_unpool: input length");
    assert_eq!(indices.len(), input.len(), "max_unpool: indices length");
    assert_eq!(out.len(), g.batch * g.in_h * g.in_w * c, "max_unpool: output length");
    out.fill(0.0);
    for b in 0..g.batch {
        for iy in 0..g.out_h {
            for ix in 0..g.out_w {
                let at = ((b * g.out_h + iy) * g.out_w + ix) * c;
                for (ch, (&v, &index)) in input[at..at + c].iter().zip(&indices[at..at + c]).enumerate() {
                    // The C++ kernel converts with truncation; NaN and out-of-range values name
                    // no position and are skipped.
                    if index.is_nan() || index.abs() >= i32::MAX as f32 {
                        continue;
                    }
                    // Truncating division, as C++'s `/` and `%`.
                    let index = index as i64;
                    let (fy, fx) = (index / g.k_w as i64, index % g.k_w as i64);
                    let oy = (iy * g.stride_h) as i64 - g.pad_top as i64 + fy;
                    let ox = (ix * g.stride_w) as i64 - g.pad_left as i64 + fx;
                    if (0..g.in_h as i64).contains(&oy) && (0..g.in_w as i64).contains(&ox) {
                        out[((b * g.in_h + oy as usize) * g.in_w + ox as usize) * c + ch] = v;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(in_hw: (usize, usize), out_hw: (usize, usize), k: usize, stride: usize, pad: (usize, usize), c: usize) -> PoolGeom {
        PoolGeom {
            batch: 1,
            in_h: in_hw.0,
            in_w: in_hw.1,
            channels: c,
            out_h: out_hw.0,
            out_w: out_hw.1,
            k_h: k,
            k_w: k,
            stride_h: stride,
            stride_w: stride,
            pad_top: pad.0,
            pad_left: pad.1,
        }
    }

    #[test]
    fn pooling_then_unpooling_keeps_each_window_maximum_in_place() {
        // 4x4, one channel, 2x2 windows stride 2.
        #[rustfmt::skip]
        let x = [
            1.0, 5.0,  2.0, 0.0,
            3.0, 4.0,  7.0, 7.0,
            -1.0, -2.0, 0.0, 0.0,
            -3.0, -0.5, 0.0, 9.0,
        ];
        let g = geom((4, 4), (2, 2), 2, 2, (0, 0), 1);
        let (mut v, mut i) = ([0.0; 4], [0.0; 4]);
        max_pool_argmax(&g, Act::NONE, &x, &mut v, &mut i);
        assert_eq!(v, [5.0, 7.0, -0.5, 9.0]);
        // Window positions: (0,1), first of the tied 7s at (1,0), (1,1), (1,1).
        assert_eq!(i, [1.1, 2.1, 3.1, 3.1]);
        let mut back = [f32::NAN; 16];
        max_unpool(&g, &v, &i, &mut back);
        #[rustfmt::skip]
        let want = [
            0.0, 5.0,  0.0, 0.0,
            0.0, 0.0,  7.0, 0.0,
            0.0, 0.0,  0.0, 0.0,
            0.0, -0.5, 0.0, 9.0,
        ];
        assert_eq!(back, want);
    }

    #[test]
    fn clipped_windows_count_positions_from_the_window_origin() {
        // 3x3 input, SAME 2x2 stride 2: output 2x2 with padding 0 before (total 1, after).
        // Pad one before instead to exercise a window starting in the padding.
        let x: Vec<f32> = (0..9).map(|v| v as f32).collect();
        let g = geom((3, 3), (2, 2), 2, 2, (1, 1), 1);
        let (mut v, mut i) = ([0.0; 4], [0.0; 4]);
        max_pool_argmax(&g, Act::RELU, &x, &mut v, &mut i);
        // Window (0,0) covers only input (0,0), at window position (1,1).
        assert_eq!(v, [0.0, 2.0, 6.0, 8.0]);
        assert_eq!(i, [3.1, 3.1, 3.1, 3.1]);
        let mut back = [0.0; 9];
        max_unpool(&g, &v, &i, &mut back);
        assert_eq!(back, [0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 6.0, 0.0, 8.0]);
    }

    #[test]
    fn indices_outside_the_output_are_skipped() {
        let g = geom((2, 2), (1, 1), 2, 2, (0, 0), 2);
        let mut out = [1.0; 8];
        max_unpool(&g, &[3.0, 4.0], &[7.0, f32::NAN], &mut out);
        assert_eq!(out, [0.0; 8]);
        max_unpool(&g, &[3.0, 4.0], &[-1.0, 2.9], &mut out);
        assert_eq!(out, [0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0]);
    }
}
