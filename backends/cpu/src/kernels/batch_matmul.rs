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
        PackedY((0..g.y_count).map(|i| pack_one(g, &y[i * g.k * g.n..(i + 1) * g.k * g.n])).collect())
    }
}

/// One y matrix as a GEMM right-hand side: stored `[n, k]` (adj_y) it is packed as weights are,
/// stored `[k, n]` its rows are copied into the panels.
fn pack_one(g: &MatMulGeom, mat: &[f32]) -> PackedB {
    if g.adj_y {
        PackedB::pack(g.n, g.k, mat)
    } else {
        PackedB::pack_kn(g.n, g.k, mat)
    }
}

/// The right-hand sides of [`batch_matmul`].
#[derive(Clone, Copy, Debug)]
pub enum Rhs<'a> {
    /// Packed once (a constant y).
    Packed(&'a PackedY),
    /// As stored: each output matrix packs its own y (attention's K and V).
    Raw(&'a [f32]),
}

/// `out = x @ y`. With at least as many output matrices as kernel threads (and a multiple of
/// them, or several per thread), each thread takes whole matrices (packing, transposing and
/// multiplying them on its own); otherwise the matrices go one after the other, each GEMM split
/// across the threads.
///
/// # Panics
/// When the slice lengths do not match `g`.
pub fn batch_matmul(g: &MatMulGeom, x: &[f32], y: Rhs<'_>, out: &mut [f32]) {
    let (m, k, n) = (g.m, g.k, g.n);
    let batches = g.pairs.len();
    assert_eq!(out.len(), batches * m * n, "batch_matmul: output length");
    assert!(x.len() >= g.pairs.iter().map(|&(xi, _)| (xi + 1) * m * k).max().unwrap_or(0), "batch_matmul: x length");
    if let Rhs::Raw(y) = y {
        assert!(y.len() >= g.y_count * k * n, "batch_matmul: y length");
    }
    if m * n == 0 {
        return;
    }
    let one = |b: usize, o: &mut [f32]| {
        let (xi, yi) = g.pairs[b];
        let a = &x[xi * m * k..(xi + 1) * m * k];
        let xt: Vec<f32>;
        let a = if g.adj_x {
            xt = transposed(a, k, m);
            &xt[..]
        } else {
            a
        };
        let own: PackedB;
        let bm = match y {
            Rhs::Packed(p) => &p.0[yi],
            Rhs::Raw(y) => {
                own = pack_one(g, &y[yi * k * n..(yi + 1) * k * n]);
                &own
            }
        };
        gemm(m, a, k, bm, None, Act::NONE, o, n);
    };
    for_each_matrix(out, m * n, one);
}

/// `a` (`rows × cols`, row-major) transposed: `cols × rows`.
pub(crate) fn transposed<T: Copy + Default>(a: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut t = vec![T::default(); rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = a[r * cols + c];
        }
    }
    t
}

/// Runs `one(b, matrix b of out)` for every output matrix of `size` values: whole matrices per
/// thread when there are at least as many as kernel threads (a multiple of them, or four per
/// thread), else one after the other (each free to split its own work across the threads).
pub(crate) fn for_each_matrix<T: Send>(out: &mut [T], size: usize, one: impl Fn(usize, &mut [T]) + Sync) {
    if size == 0 {
        return;
    }
    let (batches, threads) = (out.len() / size, nnrt_threads::kernel_threads());
    if threads > 1 && batches >= threads && (batches % threads == 0 || batches >= 4 * threads) {
        nnrt_threads::par_chunks_mut(out, size, one);
    } else {
        out.chunks_mut(size).enumerate().for_each(|(b, o)| one(b, o));
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
                             m in 1usize..7, k in 1usize..20, n in 1usize..40, adj_x in any::<bool>(), adj_y in any::<bool>(), seed in any::<u64>()) {
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
            batch_matmul(&g, &x, Rhs::Packed(&PackedY::pack(&g, &y)), &mut o1);
            batch_matmul_ref(&g, &x, &y, &mut o2);
            for (a, b) in o1.iter().zip(&o2) {
                prop_assert!((a - b).abs() <= 1e-5, "{a} vs {b}");
            }
            // y packed per run, on one thread and on two (whole matrices per thread, or each
            // GEMM split): the same bits as packed once.
            let pool = nnrt_threads::KernelPool::new(2).unwrap();
            for two in [false, true] {
                let mut o3 = vec![f32::NAN; total];
                let mut run = || batch_matmul(&g, &x, Rhs::Raw(&y), &mut o3);
                if two { pool.install(&mut run) } else { run() }
                prop_assert!(o3.iter().zip(&o1).all(|(a, b)| a.to_bits() == b.to_bits()), "raw y differs, two threads: {two}");
            }
        }
    }
}
