//! A 1×1 CONV_2D whose filter is mostly zeros, run as a sparse × dense product (XNNPACK's
//! sparse inference, on NHWC tensors).
//!
//! The output pixels are cut into tiles of `mr` (the kernel's width). Each tile's input rows
//! are transposed into a channel-major scratch (`in_c × mr`), the sparse kernel
//! ([`SparseRows::tile`]) computes `out_c × mr` sums from the nonzero weights alone, and those
//! are transposed back into the NHWC output. The two transposes cost `in_c + out_c` copies per
//! pixel against `nnz` multiply-adds, so the sparse path pays when the filter's density is low:
//! [`SparseConv1x1::try_new`] decides at prepare from the weights themselves (stored sparse in
//! the file and densified at load, or stored dense with their zeros).
//!
//! Each output is the dense kernel's multiply-add chain without its zero terms: the two agree
//! bit for bit on finite inputs (but for the sign of an exactly zero sum); an infinite or NaN
//! input channel reaches fewer outputs here (no `inf · 0`).
#![forbid(unsafe_code)]

use std::cell::RefCell;

use super::conv::ConvGeom;
use super::gemm::{residual_adder, Residual};
use super::Act;
use crate::simd::spmm::{self, SparseRows};
use crate::simd::{self, Isa};

/// Most nonzeros per weight for which a 1×1 convolution runs sparse, from the `density_sweep`
/// timing test (AVX-512, one thread, MobileNetV2's nine 1×1 shapes): sparse / dense time
/// 0.3–0.65 at density 0.2, 0.4–0.9 at 0.4, and up to 1.16 at 0.5.
pub const SPARSE_MAX_DENSITY: f64 = 0.4;

/// Fewest multiply-adds (`pixels × nnz`) a run splits across threads.
const PAR_MIN_MACS: usize = 1 << 16;

thread_local! {
    /// Per-thread tile scratch: the transposed input, then the tile's outputs.
    static SCRATCH: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// A prepared sparse 1×1 convolution (one group, stride 1, no padding).
#[derive(Debug)]
pub struct SparseConv1x1 {
    geom: ConvGeom,
    w: SparseRows,
    act: Act,
}

/// Whether at most [`SPARSE_MAX_DENSITY`] of `filter` is nonzero, counting in blocks and stopping once the
/// nonzeros pass the limit (a dense filter is decided after reading about 40 % of it; prepare
/// asks this of every 1×1 convolution, some more than once).
fn sparse_enough(filter: &[f32]) -> bool {
    let limit = (SPARSE_MAX_DENSITY * filter.len().max(1) as f64).floor() as usize;
    let mut nonzero = 0;
    for block in filter.chunks(4096) {
        nonzero += block.iter().filter(|&&v| v != 0.0).count();
        if nonzero > limit {
            return false;
        }
    }
    true
}

impl SparseConv1x1 {
    /// The sparse kernel for a CONV_2D of geometry `geom` with `filter` (OHWI) and `bias`, when
    /// it is a 1×1, stride-1, unpadded, one-group convolution whose filter holds at most
    /// [`SPARSE_MAX_DENSITY`] nonzeros (`NNRT_SPARSE=0` turns the sparse path off, `=1` takes
    /// it at any density, for A/B measurements). `None` otherwise: the dense kernel runs.
    pub fn try_new(geom: ConvGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> Option<SparseConv1x1> {
        if !Self::applies(&geom, filter) {
            return None;
        }
        Self::with_isa(simd::isa(), geom, filter, bias, act)
    }

    /// Whether [`SparseConv1x1::try_new`] takes this convolution (fused steps that would keep
    /// it dense step aside).
    pub fn applies(geom: &ConvGeom, filter: &[f32]) -> bool {
        let forced = match std::env::var("NNRT_SPARSE").ok().as_deref() {
            Some("0") => return false,
            Some("1") => true,
            _ => false,
        };
        geom.is_direct() && geom.groups == 1 && filter.len() >= geom.filter_len() && (forced || sparse_enough(&filter[..geom.filter_len()]))
    }

    /// As [`SparseConv1x1::try_new`] at any density, for the kernel of `isa` (tests compare
    /// instruction sets and the dense kernel). `None` when the geometry is not a direct 1×1
    /// convolution of one group, or `filter` / `bias` are too short.
    pub(crate) fn with_isa(isa: Isa, geom: ConvGeom, filter: &[f32], bias: Option<&[f32]>, act: Act) -> Option<SparseConv1x1> {
        if !geom.is_direct() || geom.groups != 1 {
            return None;
        }
        let w = SparseRows::new(isa, filter, geom.out_c, geom.in_c, bias)?;
        Some(SparseConv1x1 { geom, w, act })
    }

    /// The geometry this convolution was prepared for.
    pub fn geom(&self) -> &ConvGeom {
        &self.geom
    }

    /// Nonzero weights.
    pub fn nnz(&self) -> usize {
        self.w.nnz()
    }

    /// Computes `output` (NHWC, `geom.output_len()` values) from `input` (NHWC) on the current
    /// run's kernel pool, as [`Conv2d::run`](super::conv::Conv2d::run) does.
    ///
    /// # Panics
    /// If `input` or `output` are shorter than the geometry needs.
    pub fn run(&self, input: &[f32], output: &mut [f32]) {
        self.run_with(input, output, &|_, _, _| {});
    }

    /// [`SparseConv1x1::run`] followed by a residual ADD: `output = clamp(conv(input) + x,
    /// add_act)`, as [`Conv2d::run_add`](super::conv::Conv2d::run_add), bit-identical to the two
    /// ops.
    ///
    /// # Panics
    /// As [`SparseConv1x1::run`], or if `x` is shorter than the output.
    pub fn run_add(&self, input: &[f32], x: &[f32], add_act: Act, output: &mut [f32]) {
        self.run_add_residual(input, Residual::dense(x, self.geom.out_c), add_act, output)
    }

    /// [`SparseConv1x1::run_add`] with any [`Residual`] (a channel-padded shortcut).
    ///
    /// # Panics
    /// As [`SparseConv1x1::run_add`], or if `res` does not fit the output channels.
    pub fn run_add_residual(&self, input: &[f32], res: Residual<'_>, add_act: Act, output: &mut [f32]) {
        let g = self.geom;
        let m = g.batch * g.out_h * g.out_w;
        assert!(res.x.len() >= res.needs(m, g.out_c, g.out_c), "residual holds {} values, too few for {m} pixels", res.x.len());
        let add = residual_adder(res, add_act, g.out_c, g.out_c);
        self.run_with(input, output, &add);
    }

    /// The tiles of the output, split across the kernel pool; `then(r0, r1, rows)` runs on each
    /// band of output pixels `r0..r1` once it is written.
    fn run_with(&self, input: &[f32], output: &mut [f32], then: &(dyn Fn(usize, usize, &mut [f32]) + Sync)) {
        let g = self.geom;
        assert!(input.len() >= g.input_len(), "conv input holds {} values, needs {}", input.len(), g.input_len());
        assert!(output.len() >= g.output_len(), "conv output holds {} values, needs {}", output.len(), g.output_len());
        let m = g.batch * g.out_h * g.out_w;
        if m == 0 || g.out_c == 0 {
            return;
        }
        let (input, output) = (&input[..g.input_len()], &mut output[..g.output_len()]);
        let mr = self.w.mr();
        let threads = nnrt_threads::kernel_threads();
        if threads <= 1 || m * self.w.nnz() < PAR_MIN_MACS {
            self.band(input, 0, output);
            then(0, m, output);
            return;
        }
        // A few tasks per thread for balance, each a whole number of tiles.
        let tiles = m.div_ceil(mr);
        let per_task = tiles.div_ceil(4 * threads).max(1) * mr;
        nnrt_threads::par_chunks_mut(output, per_task * g.out_c, |t, band| {
            let r0 = t * per_task;
            self.band(input, r0, band);
            then(r0, r0 + band.len() / g.out_c, band);
        });
    }

    /// Output pixels `p0 ..` (as many as `out` holds rows of `out_c`), tile by tile.
    fn band(&self, input: &[f32], p0: usize, out: &mut [f32]) {
        let (in_c, out_c, mr) = (self.geom.in_c, self.geom.out_c, self.w.mr());
        let rows = self.w.rows();
        SCRATCH.with(|cell| {
            // A nested call (none today) would find the scratch borrowed: it gets its own.
            let mut fresh = (Vec::new(), Vec::new());
            let mut guard = cell.try_borrow_mut().ok();
            let s: &mut (Vec<f32>, Vec<f32>) = match guard.as_deref_mut() {
                Some(s) => s,
                None => &mut fresh,
            };
            let (xt, ot) = (&mut s.0, &mut s.1);
            if xt.len() < in_c * mr {
                xt.resize(in_c * mr, 0.0);
            }
            if ot.len() < rows * mr {
                ot.resize(rows * mr, 0.0);
            }
            for (t, out_tile) in out.chunks_mut(mr * out_c).enumerate() {
                let n = out_tile.len() / out_c;
                let x0 = (p0 + t * mr) * in_c;
                spmm::transpose(&input[x0..x0 + n * in_c], in_c, n, in_c, xt, mr);
                self.w.tile(xt, ot, self.act.min, self.act.max);
                spmm::transpose(ot, mr, out_c, n, out_tile, out_c);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::conv::Conv2d;
    use crate::kernels::gemm::tests::{isas, values};
    use proptest::prelude::*;

    fn geom(batch: usize, h: usize, w: usize, in_c: usize, out_c: usize) -> ConvGeom {
        ConvGeom {
            batch,
            in_h: h,
            in_w: w,
            in_c,
            out_h: h,
            out_w: w,
            out_c,
            k_h: 1,
            k_w: 1,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            pad_top: 0,
            pad_left: 0,
            groups: 1,
        }
    }

    /// A filter with about `density` of its values nonzero (seeded).
    fn sparse_filter(len: usize, density: f64, seed: u64) -> Vec<f32> {
        let keep = values(len, seed ^ 0x5eed);
        values(len, seed).into_iter().zip(keep).map(|(v, k)| if (k as f64 + 1.0) / 2.0 < density { v } else { 0.0 }).collect()
    }

    /// Equal bits, or both zeros (the sign of an exactly zero sum may differ: module docs).
    fn same(a: &[f32], b: &[f32], what: &str) {
        assert_eq!(a.len(), b.len());
        for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
            assert!(x.to_bits() == y.to_bits() || (x == 0.0 && y == 0.0), "{what}: element {i}: sparse {x}, dense {y}");
        }
    }

    /// The sparse kernel against the dense one of the same instruction set, bit for bit, on
    /// one and two threads, alone and with a residual ADD.
    fn check(g: ConvGeom, density: f64, with_bias: bool, act: Act, seed: u64) {
        let input = values(g.input_len(), seed);
        let filter = sparse_filter(g.filter_len(), density, seed + 1);
        let bias = with_bias.then(|| values(g.out_c, seed + 2));
        let resid = values(g.output_len(), seed + 3);
        for isa in isas() {
            let mut dense = Conv2d::with_isa(isa, g, &filter, bias.as_deref(), act);
            let mut want = vec![f32::NAN; g.output_len()];
            dense.run(&input, &mut want);
            let mut want_add = vec![f32::NAN; g.output_len()];
            dense.run_add(&input, &resid, Act::RELU6, &mut want_add);
            let sparse = SparseConv1x1::with_isa(isa, g, &filter, bias.as_deref(), act).expect("a 1x1 convolution");
            for threads in [1, 2] {
                let pool = nnrt_threads::KernelPool::new(threads).unwrap();
                let mut got = vec![f32::NAN; g.output_len()];
                pool.install(|| sparse.run(&input, &mut got));
                same(&got, &want, &format!("{isa:?} {threads} threads {g:?} density {density}"));
                let mut got_add = vec![f32::NAN; g.output_len()];
                pool.install(|| sparse.run_add(&input, &resid, Act::RELU6, &mut got_add));
                same(&got_add, &want_add, &format!("{isa:?} {threads} threads {g:?} + residual"));
            }
        }
    }

    #[test]
    fn odd_channels_match_dense_bit_for_bit() {
        for (i, &(b, h, w, ci, co)) in [(1, 7, 9, 37, 53), (2, 5, 3, 3, 1), (1, 1, 1, 1, 1), (1, 11, 13, 96, 24), (1, 4, 33, 161, 17)].iter().enumerate() {
            for (j, &d) in [0.0, 0.05, 0.2, 0.5, 1.0].iter().enumerate() {
                for (a, act) in [Act::NONE, Act::RELU, Act::RELU6].into_iter().enumerate() {
                    check(geom(b, h, w, ci, co), d, a != 1, act, (i * 100 + j * 10 + a) as u64);
                }
            }
        }
    }

    #[test]
    fn chosen_by_density_only_for_direct_1x1() {
        let g = geom(1, 4, 4, 64, 32);
        let w = sparse_filter(g.filter_len(), 0.1, 3);
        assert!(sparse_enough(&w));
        assert!(SparseConv1x1::try_new(g, &w, None, Act::NONE).is_some() || std::env::var("NNRT_SPARSE").as_deref() == Ok("0"));
        let dense = values(g.filter_len(), 4);
        assert!(SparseConv1x1::try_new(g, &dense, None, Act::NONE).is_none() || std::env::var("NNRT_SPARSE").as_deref() == Ok("1"));
        let strided = ConvGeom { stride_h: 2, out_h: 2, ..g };
        assert!(SparseConv1x1::try_new(strided, &w, None, Act::NONE).is_none());
        let grouped = ConvGeom { groups: 2, ..g };
        assert!(SparseConv1x1::with_isa(Isa::Scalar, grouped, &w, None, Act::NONE).is_none());
        assert!(SparseConv1x1::with_isa(Isa::Scalar, g, &w[..10], None, Act::NONE).is_none(), "a short filter is refused");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn sparse_matches_dense(batch in 1usize..3, h in 1usize..9, w in 1usize..40, in_c in 1usize..70, out_c in 1usize..70,
                                density in 0.0f64..1.0, with_bias: bool, act in prop_oneof![Just(Act::NONE), Just(Act::RELU), Just(Act::RELU6), Just(Act::RELU_N1_TO_1)], seed: u64) {
            check(geom(batch, h, w, in_c, out_c), density, with_bias, act, seed);
        }
    }

    /// Median seconds of `f` over 15 timed batches of about 0.05 s.
    fn time(mut f: impl FnMut()) -> f64 {
        let t0 = std::time::Instant::now();
        f();
        let reps = (0.05 / t0.elapsed().as_secs_f64().max(1e-6)).ceil() as usize;
        let mut ts: Vec<f64> = (0..15)
            .map(|_| {
                let t = std::time::Instant::now();
                (0..reps).for_each(|_| f());
                t.elapsed().as_secs_f64() / reps as f64
            })
            .collect();
        ts.sort_by(f64::total_cmp);
        ts[7]
    }

    /// Sparse over dense time of MobileNetV2's 1×1 shapes across densities, one thread
    /// (`cargo test --release -p nnrt-backend-cpu density_sweep -- --ignored --nocapture`):
    /// where the ratio crosses 1 sets [`SPARSE_MAX_DENSITY`].
    #[test]
    #[ignore = "timing; run by hand"]
    fn density_sweep() {
        let shapes = [(112, 32, 16), (112, 16, 96), (56, 24, 144), (56, 144, 24), (28, 192, 32), (14, 384, 64), (14, 576, 96), (7, 960, 160), (7, 320, 1280)];
        let densities = [0.1, 0.2, 0.3, 0.4, 0.5];
        println!("hw x in_c -> out_c: sparse / dense time at density {densities:?}");
        for (hw, ci, co) in shapes {
            let g = geom(1, hw, hw, ci, co);
            let input = values(g.input_len(), 1);
            let bias = values(co, 2);
            let mut out = vec![0.0; g.output_len()];
            let ratios: Vec<String> = densities
                .iter()
                .map(|&d| {
                    let w = sparse_filter(g.filter_len(), d, 3);
                    let mut dense = Conv2d::new(g, &w, Some(&bias), Act::RELU6);
                    let sparse = SparseConv1x1::with_isa(simd::isa(), g, &w, Some(&bias), Act::RELU6).unwrap();
                    let td = time(|| dense.run(&input, &mut out));
                    let ts = time(|| sparse.run(&input, &mut out));
                    format!("{:.2} ({:.0}/{:.0} us)", ts / td, ts * 1e6, td * 1e6)
                })
                .collect();
            println!("{hw}x{hw} x {ci} -> {co}: {}", ratios.join(" "));
        }
    }
}
