//! Quantized TRANSPOSE_CONV and BATCH_MATMUL. Both repack their right-hand side once with the
//! zero point already subtracted, so the inner loops are dot products over contiguous `i32`
//! rows; the sums are exact in `i64` and finished by [`ConvQuant::finish`] (which truncates to
//! TFLite's wrapping int32 accumulator unless the op accumulates in 64 bits). An 8-bit batch
//! matmul instead runs the integer GEMM of FULLY_CONNECTED ([`qgemm`], VNNI where the CPU has
//! it), each right-hand matrix packed as weights (at prepare when constant, else per run). Their
//! reference twins are [`super::reference::transpose_conv`] and [`super::reference::batch_matmul`].


use super::gemm::{best_layout, input_shift, qgemm, QEpilogue, QPackedB, RowsSource};
use super::reference::ConvQuant;
use super::QInt;
use crate::kernels::batch_matmul::{for_each_matrix, transposed, MatMulGeom};
use crate::kernels::transpose_conv::TransposeConvGeom;

#[inline(always)]
fn dot(a: &[i32], b: &[i32]) -> i64 {
    a.iter().zip(b).map(|(&x, &y)| x as i64 * y as i64).sum()
}

/// A quantized transposed convolution with its filter repacked as `[k_h · k_w · out_c, in_c]`.
#[derive(Clone, Debug)]
pub struct QTransposeConv {
    g: TransposeConvGeom,
    q: ConvQuant,
    packed: Vec<i32>,
}

impl QTransposeConv {
    /// Packs `filter` (`[out_c, k_h, k_w, in_c]`) minus each channel's zero point.
    pub fn new<TW: QInt>(g: TransposeConvGeom, q: ConvQuant, filter: &[TW]) -> QTransposeConv {
        let mut packed = vec![0i32; g.k_h * g.k_w * g.out_c * g.in_c];
        for oc in 0..g.out_c {
            for t in 0..g.k_h * g.k_w {
                for ic in 0..g.in_c {
                    packed[(t * g.out_c + oc) * g.in_c + ic] = filter[(oc * g.k_h * g.k_w + t) * g.in_c + ic].get() - q.w_zp[oc];
                }
            }
        }
        QTransposeConv { g, q, packed }
    }

    /// Runs on one NHWC input; images are independent and run in parallel.
    pub fn run<TI: QInt, TO: QInt>(&self, input: &[TI], out: &mut [TO]) {
        let g = &self.g;
        let (in_img, out_img) = (g.in_h * g.in_w * g.in_c, g.out_h * g.out_w * g.out_c);
        if in_img == 0 || out_img == 0 {
            return;
        }
        nnrt_threads::par_chunks_mut(out, out_img, |i, o| self.image(&input[i * in_img..(i + 1) * in_img], o));
    }

    fn image<TI: QInt, TO: QInt>(&self, x: &[TI], out: &mut [TO]) {
        let g = &self.g;
        let mut acc = vec![0i64; out.len()];
        let mut pixel = vec![0i32; g.in_c];
        for iy in 0..g.in_h {
            for ix in 0..g.in_w {
                let src = &x[(iy * g.in_w + ix) * g.in_c..][..g.in_c];
                for (p, v) in pixel.iter_mut().zip(src) {
                    *p = v.get() - self.q.in_zp;
                }
                for ky in 0..g.k_h {
                    let oy = (iy * g.stride_h + ky) as isize - g.pad_top as isize;
                    if oy < 0 || oy >= g.out_h as isize {
                        continue;
                    }
                    for kx in 0..g.k_w {
                        let ox = (ix * g.stride_w + kx) as isize - g.pad_left as isize;
                        if ox < 0 || ox >= g.out_w as isize {
                            continue;
                        }
                        let rows = &self.packed[(ky * g.k_w + kx) * g.out_c * g.in_c..][..g.out_c * g.in_c];
                        let dst = &mut acc[(oy as usize * g.out_w + ox as usize) * g.out_c..][..g.out_c];
                        for (a, w) in dst.iter_mut().zip(rows.chunks_exact(g.in_c.max(1))) {
                            *a += dot(&pixel, w);
                        }
                    }
                }
            }
        }
        for (i, (o, &a)) in out.iter_mut().zip(&acc).enumerate() {
            *o = TO::put(self.q.finish(i % g.out_c, a));
        }
    }
}

impl QBatchMatMul {
    /// [`QBatchMatMul::run`] on the integer GEMM: with at least as many output matrices as
    /// kernel threads (a multiple, or four per thread) each thread takes whole matrices (packing
    /// y and transposing x on its own), else the matrices go in turn, each GEMM split.
    fn run_gemm<TX: QInt, TY: QInt, TO: QInt>(&self, x: &[TX], y: &[TY], out: &mut [TO]) {
        let (m, k, n) = (self.g.m, self.g.k, self.g.n);
        let zx_shifted = self.q.in_zp + input_shift::<TX>();
        let batches = self.g.pairs.len();
        let one = |b: usize, o: &mut [TO]| {
            let (xi, yi) = self.g.pairs[b];
            let xm = &x[xi * m * k..(xi + 1) * m * k];
            let xt: Vec<TX>;
            let xm = if self.g.adj_x {
                xt = transposed(xm, k, m);
                &xt[..]
            } else {
                xm
            };
            let own;
            let (bp, ep) = match &self.fast {
                // Packed at prepare, for x's type (`new`).
                Some(v) => (&v[yi].0, &v[yi].1),
                None => {
                    own = self.gemm_rhs_for(yi, y, zx_shifted);
                    (&own.0, &own.1)
                }
            };
            qgemm(m, &RowsSource { data: xm, k }, bp, ep, o, n, 0);
        };
        for_each_matrix(&mut out[..batches * m * n], m * n, one);
    }
}

/// A quantized batch matmul; `q.in_zp` is x's zero point and `q.w_zp[j]` y's.
#[derive(Clone, Debug)]
pub struct QBatchMatMul {
    g: MatMulGeom,
    q: ConvQuant,
    /// y's matrices as `[n, k]` rows minus the zero point, when y is constant.
    packed: Option<Vec<i32>>,
    /// 8-bit operands (and no 64-bit accumulation): the integer GEMM's packing and epilogue of
    /// each y matrix, when y is constant.
    fast: Option<Vec<(QPackedB, QEpilogue)>>,
}

impl QBatchMatMul {
    /// Prepares the op for x of type `TX`; a constant `y` is packed now.
    pub fn new<TX: QInt, TY: QInt>(g: MatMulGeom, q: ConvQuant, y: Option<&[TY]>) -> QBatchMatMul {
        let mut m = QBatchMatMul { g, q, packed: None, fast: None };
        if TX::MAX - TX::MIN == 255 && m.eight_bit::<TY>() {
            let zx_shifted = m.q.in_zp + input_shift::<TX>();
            m.fast = y.map(|y| (0..m.g.y_count).map(|i| m.gemm_rhs_for(i, y, zx_shifted)).collect());
        } else {
            m.packed = y.map(|y| m.pack(y));
        }
        m
    }

    /// Whether the integer GEMM takes this op: 8-bit y (x is checked at run) and 32-bit sums.
    fn eight_bit<TY: QInt>(&self) -> bool {
        TY::MAX - TY::MIN == 255 && !self.q.wide
    }

    /// y matrix `i` packed as the GEMM's weights (`[n, k]` rows: y itself when stored
    /// transposed, else its transpose) with the epilogue folding the zero points (x's in the
    /// unsigned-byte domain, `zx_shifted`) and the requantization.
    fn gemm_rhs_for<TY: QInt>(&self, i: usize, y: &[TY], zx_shifted: i32) -> (QPackedB, QEpilogue) {
        let (k, n) = (self.g.k, self.g.n);
        let mat = &y[i * n * k..(i + 1) * n * k];
        let b = if self.g.adj_y {
            QPackedB::pack(best_layout(), n, k, mat, &self.q.w_zp)
        } else {
            QPackedB::pack(best_layout(), n, k, &transposed(mat, k, n), &self.q.w_zp)
        };
        let ep = QEpilogue::new(&b, &self.q, zx_shifted);
        (b, ep)
    }

    fn pack<TY: QInt>(&self, y: &[TY]) -> Vec<i32> {
        let (k, n) = (self.g.k, self.g.n);
        let mut p = vec![0i32; self.g.y_count * n * k];
        for (dst, src) in p.chunks_exact_mut((n * k).max(1)).zip(y.chunks_exact((n * k).max(1))) {
            for j in 0..n {
                for d in 0..k {
                    let v = if self.g.adj_y { src[j * k + d] } else { src[d * n + j] };
                    dst[j * k + d] = v.get() - self.q.w_zp[j];
                }
            }
        }
        p
    }

    /// `out = x @ y` per batch; `y` is read only when it was not packed at prepare.
    pub fn run<TX: QInt, TY: QInt, TO: QInt>(&self, x: &[TX], y: &[TY], out: &mut [TO]) {
        let (m, k, n) = (self.g.m, self.g.k, self.g.n);
        if m * n == 0 {
            return;
        }
        if TX::MAX - TX::MIN == 255 && self.eight_bit::<TY>() {
            return self.run_gemm(x, y, out);
        }
        let local;
        let packed = match &self.packed {
            Some(p) => p,
            None => {
                local = self.pack(y);
                &local
            }
        };
        let used = (self.g.pairs.len() * m * n).min(out.len());
        let out = &mut out[..used];
        nnrt_threads::par_chunks_mut(out, m * n, |t, o| {
            let (xi, yi) = self.g.pairs[t];
            let xm = &x[xi * m * k..(xi + 1) * m * k];
            let ym = &packed[yi * n * k..(yi + 1) * n * k];
            let mut row = vec![0i32; k];
            for i in 0..m {
                for (d, r) in row.iter_mut().enumerate() {
                    *r = if self.g.adj_x { xm[d * m + i] } else { xm[i * k + d] }.get() - self.q.in_zp;
                }
                for (j, o) in o[i * n..(i + 1) * n].iter_mut().enumerate() {
                    let acc = if k == 0 { 0 } else { dot(&row, &ym[j * k..(j + 1) * k]) };
                    *o = TO::put(self.q.finish(j, acc));
                }
            }
        });
    }
}
