//! BATCH_MATMUL (float): `out[b] = op(x[b]) @ op(y[b])` where `op` transposes the last two dims
//! when `adj_x` / `adj_y` are set and the leading (batch) dims broadcast NumPy-style. The
//! optimized path packs each right-hand matrix once (at compile when it is constant) and runs
//! the GEMM; the reference twin is the triple loop.
#![forbid(unsafe_code)]

use super::gemm::{gemm, PackedB};
use super::movement::strides;
use super::Act;

/// Shapes of a batch matmul, resolved once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatMulGeom {
    /// Output batch dims (the broadcast of both inputs' leading dims).
    pub batch: Vec<usize>,
    /// Per output batch index, the x matrix and the y matrix it multiplies.
    pub pairs: Vec<(usize, usize)>,
    /// Rows of the result.
    pub m: usize,
    /// Inner size.
    pub k: usize,
    /// Columns of the result.
    pub n: usize,
    /// x is stored `[k, m]`.
    pub adj_x: bool,
    /// y is stored `[n, k]`.
    pub adj_y: bool,
    /// Matrices in y.
    pub y_count: usize,
}

impl MatMulGeom {
    /// Resolves x (`x_dims`) and y (`y_dims`), or says why they do not fit.
    pub fn new(x_dims: &[usize], y_dims: &[usize], adj_x: bool, adj_y: bool) -> Result<MatMulGeom, String> {
        let (xr, yr) = (x_dims.len(), y_dims.len());
        if xr < 2 || yr < 2 {
            return Err("batch matmul needs rank >= 2".into());
        }
        let (m, k) = if adj_x { (x_dims[xr - 1], x_dims[xr - 2]) } else { (x_dims[xr - 2], x_dims[xr - 1]) };
        let (ky, n) = if adj_y { (y_dims[yr - 1], y_dims[yr - 2]) } else { (y_dims[yr - 2], y_dims[yr - 1]) };
        if k != ky {
            return Err(format!("inner dims differ: {k} vs {ky}"));
        }
        let (xb, yb) = (&x_dims[..xr - 2], &y_dims[..yr - 2]);
        let rank = xb.len().max(yb.len());
        let pad = |s: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, rank - s.len()).chain(s.iter().copied()).collect() };
        let (xb, yb) = (pad(xb), pad(yb));
        let mut batch = Vec::with_capacity(rank);
        for (&a, &b) in xb.iter().zip(&yb) {
            batch.push(match (a, b) {
                _ if a == b => a,
                (1, _) => b,
                (_, 1) => a,
                _ => return Err(format!("batch dims {xb:?} and {yb:?} do not broadcast")),
            });
        }
        let (xs, ys) = (strides(&xb), strides(&yb));
        let total: usize = batch.iter().product();
        let mut pairs = Vec::with_capacity(total);
        let mut idx = vec![0usize; rank];
        for _ in 0..total {
            let xi = (0..rank).map(|d| if xb[d] == 1 { 0 } else { idx[d] * xs[d] }).sum();
            let yi = (0..rank).map(|d| if yb[d] == 1 { 0 } else { idx[d] * ys[d] }).sum();
            pairs.push((xi, yi));
            for d in (0..rank).rev() {
                idx[d] += 1;
                if idx[d] < batch[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Ok(MatMulGeom { batch, pairs, m, k, n, adj_x, adj_y, y_count: yb.iter().product() })
    }
}

/// The y matrices packed as GEMM right-hand sides.
#[derive(Debug)]
pub struct PackedY(Vec<PackedB>);

impl PackedY {
    /// Packs every matrix of `y`.
    pub fn pack(g: &MatMulGeom, y: &[f32]) -> PackedY {
        let (k, n) = (g.k, g.n);
        let mut rows = vec![0.0; n * k];
        PackedY(
            (0..g.y_count)
                .map(|i| {
                    let mat = &y[i * k * n..(i + 1) * k * n];
                    if g.adj_y {
                        PackedB::pack(n, k, mat)
                    } else {
                        // Stored [k, n]: the GEMM wants rows of k per output column.
                        for kk in 0..k {
                            for j in 0..n {
                                rows[j * k + kk] = mat[kk * n + j];
                            }
                        }
                        PackedB::pack(n, k, &rows)
                    }
                })
                .collect(),
        )
    }
}

/// `out = x @ y` with y already packed.
///
/// # Panics
/// When the slice lengths do not match `g`.
pub fn batch_matmul(g: &MatMulGeom, x: &[f32], y: &PackedY, out: &mut [f32]) {
    let (m, k, n) = (g.m, g.k, g.n);
    assert_eq!(out.len(), g.pairs.len() * m * n, "batch_matmul: output length");
    let mut xt = Vec::new();
    for (b, &(xi, yi)) in g.pairs.iter().enumerate() {
        let a = &x[xi * m * k..(xi + 1) * m * k];
        let a = if g.adj_x {
            xt.resize(m * k, 0.0);
            for kk in 0..k {
                for i in 0..m {
                    xt[i * k + kk] = a[kk * m + i];
                }
            }
            &xt[..]
        } else {
            a
        };
        gemm(m, a, k, &y.0[yi], None, Act::NONE, &mut out[b * m * n..(b + 1) * m * n], n);
    }
}

/// Reference twin of [`batch_matmul`]: one dot product per output element, summed in order.
pub fn batch_matmul_ref(g: &MatMulGeom, x: &[f32], y: &[f32], out: &mut [f32]) {
    let (m, k, n) = (g.m, g.k, g.n);
    for (b, &(xi, yi)) in g.pairs.iter().enumerate() {
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for kk in 0..k {
                    let a = if g.adj_x { x[xi * m * k + kk * m + i] } else { x[xi * m * k + i * k + kk] };
                    let w = if g.adj_y { y[yi * k * n + j * k + kk] } else { y[yi * k * n + kk * n + j] };
                    acc += a * w;
                }
                out[(b * m + i) * n + j] = acc;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        crate::testdata::unit_values(n, seed).map(|u| u - 0.5).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

        // Sums of at most 20 products of values in [-0.5, 0.5] in a different order: 1e-5.
        #[test]
        fn matches_reference(xb in prop::collection::vec(1usize..3, 0..3), yb_ones in prop::collection::vec(any::<bool>(), 0..3),
                             m in 1usize..7, k in 1usize..20, n in 1usize..7, adj_x in any::<bool>(), adj_y in any::<bool>(), seed in any::<u64>()) {
            let yb: Vec<usize> = xb.iter().zip(&yb_ones).map(|(&d, &one)| if one { 1 } else { d }).collect();
            let mut xd = xb.clone();
            xd.extend(if adj_x { [k, m] } else { [m, k] });
            let mut yd = yb.clone();
            yd.extend(if adj_y { [n, k] } else { [k, n] });
            let g = MatMulGeom::new(&xd, &yd, adj_x, adj_y).unwrap();
            let x = values(xd.iter().product(), seed);
            let y = values(yd.iter().product(), seed ^ 3);
            let total = g.pairs.len() * m * n;
            let (mut o1, mut o2) = (vec![0.0; total], vec![0.0; total]);
            batch_matmul(&g, &x, &PackedY::pack(&g, &y), &mut o1);
            batch_matmul_ref(&g, &x, &y, &mut o2);
            for (a, b) in o1.iter().zip(&o2) {
                prop_assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
            }
        }
    }
}
