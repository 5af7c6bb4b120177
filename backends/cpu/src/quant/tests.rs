//! Property tests: every optimized integer kernel against its reference twin, bit for bit, over
//! random shapes, zero points, multipliers and activation clamps.

use proptest::prelude::*;

use super::binary::{QBinary, QBinaryOp};
use super::conv::{QConv, QFullyConnected};
use super::depthwise::QDepthwise;
use super::gemm::QLayout;
use super::reference::{self, ConvQuant};
use super::{QInt, QParams, Requant};
use crate::kernels::conv::ConvGeom;
use crate::kernels::depthwise::DepthwiseGeom;
use crate::simd::quant as sq;
use nnrt_core::Activation;

/// Deterministic pseudo-random integers in `lo..=hi` (the property inputs pick the seed).
fn fill(seed: u64, n: usize, lo: i32, hi: i32) -> Vec<i32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + ((s >> 33) % (hi - lo + 1) as u64) as i32
        })
        .collect()
}

fn cast<T: QInt>(v: &[i32]) -> Vec<T> {
    v.iter().map(|&x| T::sat(x)).collect()
}

fn quant(seed: u64, n: usize, in_zp: i32, out_zp: i32, w_zp: Vec<i32>, fixed: bool, act: (i32, i32)) -> ConvQuant {
    let mults = fill(seed ^ 7, n, 1 << 30, i32::MAX - 1);
    let shifts = fill(seed ^ 11, n, -14, 1);
    let requant = (0..n)
        .map(|c| if fixed { Requant::Fixed { multiplier: mults[c], shift: shifts[c] } } else { Requant::Float(mults[c] as f64 / 2f64.powi(31 - shifts[c])) })
        .collect();
    let bias = Some(fill(seed ^ 13, n, -20000, 20000).into_iter().map(|b| b as i64).collect());
    ConvQuant { in_zp, w_zp, out_zp, requant, act, bias, wide: false }
}

fn conv_case<TI: QInt, TW: QInt>(seed: u64, g: ConvGeom, layout: QLayout) -> Result<(), TestCaseError> {
    let (ti, tw) = (TI::MIN..=TI::MAX, TW::MIN..=TW::MAX);
    let input: Vec<TI> = cast(&fill(seed, g.input_len(), *ti.start(), *ti.end()));
    let filter: Vec<TW> = cast(&fill(seed ^ 3, g.out_c * g.taps(), *tw.start(), *tw.end()));
    let zp = fill(seed ^ 5, g.out_c + 2, *tw.start(), *tw.end());
    let w_zp = if TW::MIN < 0 { vec![0; g.out_c] } else { vec![zp[0]; g.out_c] };
    let lo = fill(seed ^ 17, 1, TI::MIN, (TI::MIN + TI::MAX) / 2)[0];
    let q = quant(seed, g.out_c, zp[1].clamp(TI::MIN, TI::MAX), zp[2].clamp(TI::MIN, TI::MAX), w_zp, true, (lo, TI::MAX));
    let mut want = vec![TI::default(); g.output_len()];
    reference::conv::<TI, TW, TI>(&g, &q, &input, &filter, &mut want);
    let mut got = vec![TI::default(); g.output_len()];
    QConv::with_layout::<TI, TW>(g, q, &filter, layout).run::<TI, TI>(&input, &mut got);
    let (got, want): (Vec<i32>, Vec<i32>) = (got.iter().map(|v| v.get()).collect(), want.iter().map(|v| v.get()).collect());
    prop_assert_eq!(got, want);
    Ok(())
}

/// `QFullyConnected` in both layouts against the reference on `x` (m×k) and `w` (n×k), bit for bit.
fn fc_matches<T: QInt + PartialEq + std::fmt::Debug>(m: usize, k: usize, n: usize, q: &ConvQuant, x: &[T], w: &[T]) -> Result<(), TestCaseError> {
    let mut want = vec![T::default(); m * n];
    reference::fully_connected::<T, T, T>(m, k, n, q, x, w, &mut want);
    for layout in [QLayout::Quad, QLayout::Pair] {
        let mut got = vec![T::default(); m * n];
        QFullyConnected::with_layout::<T, T>(n, k, q.clone(), w, layout).run::<T, T>(x, &mut got);
        prop_assert_eq!(&got, &want);
    }
    Ok(())
}

/// `QDepthwise` against the reference on `x` and `w`, bit for bit.
fn depthwise_matches<T: QInt + PartialEq + std::fmt::Debug>(d: DepthwiseGeom, q: ConvQuant, x: &[T], w: &[T]) -> Result<(), TestCaseError> {
    let mut want = vec![T::default(); d.output_len()];
    reference::depthwise::<T, T, T>(&d, &q, x, w, &mut want);
    let mut got = vec![T::default(); d.output_len()];
    QDepthwise::new::<T, T>(d, q, w).run::<T, T>(x, &mut got);
    prop_assert_eq!(got, want);
    Ok(())
}

fn geom() -> impl Strategy<Value = ConvGeom> {
    (1usize..3, 1usize..9, 1usize..9, 1usize..20, 1usize..40, 1usize..4, 1usize..4, 1usize..3, 1usize..3, 0usize..2, 0usize..2).prop_map(
        |(batch, in_h, in_w, in_c, out_c, k_h, k_w, stride, dil, pt, pl)| {
            let eff_h = (k_h - 1) * dil + 1;
            let eff_w = (k_w - 1) * dil + 1;
            let out_h = (in_h + 2 * pt).saturating_sub(eff_h) / stride + 1;
            let out_w = (in_w + 2 * pl).saturating_sub(eff_w) / stride + 1;
            ConvGeom {
                batch,
                in_h: in_h.max(eff_h),
                in_w: in_w.max(eff_w),
                in_c,
                out_h,
                out_w,
                out_c,
                k_h,
                k_w,
                stride_h: stride,
                stride_w: stride,
                dil_h: dil,
                dil_w: dil,
                pad_top: pt,
                pad_left: pl,
                groups: 1,
            }
        },
    )
}

/// Stems with few input channels (im2col rows of 16-byte stores that run into the next row):
/// images wide enough for runs across row blocks, odd sizes so that blocks end mid-run and the
/// last pixels meet the end of the input, every padding, 1..4 channels, with one and two threads.
#[test]
fn stem_convs_match_reference() {
    let mut seed = 1;
    for (in_hw, cin, k, stride, pad) in [(30, 3, 3, 2, 0), (31, 3, 3, 2, 1), (29, 1, 3, 1, 1), (33, 4, 3, 2, 1), (27, 2, 5, 2, 2), (40, 3, 2, 2, 0)] {
        let out = (in_hw + 2 * pad - k) / stride + 1;
        let g = ConvGeom {
            batch: 2,
            in_h: in_hw,
            in_w: in_hw + 1,
            in_c: cin,
            out_h: out,
            out_w: (in_hw + 1 + 2 * pad - k) / stride + 1,
            out_c: 17,
            k_h: k,
            k_w: k,
            stride_h: stride,
            stride_w: stride,
            dil_h: 1,
            dil_w: 1,
            pad_top: pad,
            pad_left: pad,
            groups: 1,
        };
        for threads in [1, 2] {
            let pool = nnrt_threads::KernelPool::new(threads).expect("pool");
            pool.install(|| {
                seed += 1;
                conv_case::<i8, i8>(seed, g, QLayout::Quad).expect("int8 stem");
                conv_case::<u8, u8>(seed, g, QLayout::Quad).expect("uint8 stem");
            });
        }
    }
}

/// A dynamic-range FULLY_CONNECTED through the packed GEMM against TFLite's loops
/// (`hybrid::fully_connected`, then the clamp), with a zero point and scale per row.
fn hybrid_fc_case(m: usize, k: usize, n: usize, seed: u64, per_channel: bool, with_bias: bool, layout: QLayout, threads: usize) -> Result<(), TestCaseError> {
    use super::hybrid::fully_connected;
    let x: Vec<i8> = cast(&fill(seed, m * k, -128, 127));
    let xu: Vec<u8> = x.iter().map(|&v| v as u8 ^ 0x80).collect();
    let offsets = fill(seed ^ 1, m, -128, 127);
    let scales: Vec<f32> = fill(seed ^ 2, m, 1, 1000).into_iter().map(|v| v as f32 * 1e-3).collect();
    let w: Vec<i8> = cast(&fill(seed ^ 3, n * k, -127, 127));
    let cs: Vec<f32> = fill(seed ^ 4, if per_channel { n } else { 1 }, 1, 1000).into_iter().map(|v| v as f32 * 1e-5).collect();
    let bias: Vec<f32> = fill(seed ^ 5, n, -100, 100).into_iter().map(|v| v as f32 * 0.01).collect();
    let bias = with_bias.then_some(&bias[..]);
    let clamp = if seed % 3 == 0 { (f32::NEG_INFINITY, f32::INFINITY) } else { (-0.75, 0.5) };
    // TFLite folds a per-tensor weight scale into the row scales first.
    let folded: Vec<f32> = scales.iter().map(|&s| if per_channel { s } else { s * cs[0] }).collect();
    let mut want = vec![0f32; m * n];
    fully_connected(m, k, n, &x, &offsets, &folded, &w, &cs, per_channel, bias, &mut want);
    want.iter_mut().for_each(|v| *v = v.max(clamp.0).min(clamp.1));
    let fc = super::conv::HybridFullyConnected::with_layout(n, k, &w, &cs, bias, clamp, layout).expect("shapes");
    let zx: Vec<i32> = offsets.iter().map(|&o| o + 128).collect();
    let mut got = vec![f32::NAN; m * n];
    nnrt_threads::KernelPool::new(threads).expect("pool").install(|| fc.run(&xu, &zx, &scales, &mut got));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    prop_assert_eq!(bits(&got), bits(&want), "m {} k {} n {} {:?}", m, k, n, layout);
    Ok(())
}

/// Larger dynamic-range FULLY_CONNECTED layers (a batch that splits across the pool, a wide
/// matrix-vector product) against TFLite's loops.
#[test]
fn hybrid_fully_connected_layers_match_reference() {
    for (i, &(m, k, n)) in [(1, 1280, 1000), (64, 256, 96), (37, 100, 33), (2, 7, 5)].iter().enumerate() {
        for layout in [QLayout::Quad, QLayout::Pair] {
            for threads in [1, 2] {
                hybrid_fc_case(m, k, n, 900 + i as u64, i % 2 == 0, i != 2, layout, threads).unwrap();
            }
        }
    }
}

/// Dynamic-range MobileNet layers (the 3-channel stem, 1×1 expansions and projections with
/// channel counts that are and are not multiples of 4 and 32) through `HybridConv` against
/// TFLite's loops, on one and two threads: large enough that the GEMM splits across the pool.
#[test]
fn hybrid_conv_layers_match_reference() {
    use super::hybrid::{conv_per_channel, FloatClamp};
    for (i, &(hw, cin, cout, k, stride)) in [(33, 3, 32, 3, 2), (28, 32, 144, 1, 1), (14, 96, 24, 1, 1), (14, 18, 40, 1, 1), (9, 160, 960, 1, 1)].iter().enumerate() {
        let out = (hw + 2 * (k / 2) - k) / stride + 1;
        let g = ConvGeom {
            batch: 1,
            in_h: hw,
            in_w: hw,
            in_c: cin,
            out_h: out,
            out_w: out,
            out_c: cout,
            k_h: k,
            k_w: k,
            stride_h: stride,
            stride_w: stride,
            dil_h: 1,
            dil_w: 1,
            pad_top: k / 2,
            pad_left: k / 2,
            groups: 1,
        };
        let seed = 77 + i as u64;
        let x: Vec<i8> = cast(&fill(seed, g.input_len(), -128, 127));
        let xu: Vec<u8> = x.iter().map(|&v| v as u8 ^ 0x80).collect();
        let offset = fill(seed ^ 1, 1, -128, 127)[0];
        let w: Vec<i8> = cast(&fill(seed ^ 2, g.out_c * g.taps(), -127, 127));
        let scales: Vec<f32> = fill(seed ^ 3, g.out_c, 1, 1000).into_iter().map(|v| v as f32 * 1e-5).collect();
        let bias: Vec<f32> = fill(seed ^ 4, g.out_c, -100, 100).into_iter().map(|v| v as f32 * 0.01).collect();
        let clamp = FloatClamp(0.0, 6.0);
        let mut want = vec![0f32; g.output_len()];
        conv_per_channel(&g, &x, &[offset], &[0.013], &w, &scales, Some(&bias), clamp, &mut want);
        for layout in [QLayout::Quad, QLayout::Pair] {
            let hc = super::conv::HybridConv::with_layout(g, &w, &scales, Some(&bias), (clamp.0, clamp.1), layout).expect("ungrouped");
            for threads in [1, 2] {
                let mut got = vec![0f32; g.output_len()];
                nnrt_threads::KernelPool::new(threads).expect("pool").install(|| hc.run(&xu, offset + 128, 0.013, &mut got));
                assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{g:?} {layout:?} {threads} threads");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn int8_conv_matches_reference(g in geom(), seed in any::<u64>()) {
        conv_case::<i8, i8>(seed, g, QLayout::Quad)?;
        conv_case::<i8, i8>(seed, g, QLayout::Pair)?;
    }

    #[test]
    fn uint8_conv_matches_reference(g in geom(), seed in any::<u64>()) {
        conv_case::<u8, u8>(seed, g, QLayout::Quad)?;
        conv_case::<u8, u8>(seed, g, QLayout::Pair)?;
    }

    #[test]
    fn fully_connected_matches_reference(m in 1usize..20, k in 1usize..70, n in 1usize..50, seed in any::<u64>(), unsigned in any::<bool>()) {
        if unsigned {
            let x: Vec<u8> = cast(&fill(seed, m * k, 0, 255));
            let w: Vec<u8> = cast(&fill(seed ^ 1, n * k, 0, 255));
            let zp = fill(seed ^ 2, 3, 0, 255);
            let q = quant(seed, n, zp[0], zp[1], vec![zp[2]; n], false, (0, 255));
            fc_matches(m, k, n, &q, &x, &w)?;
        } else {
            let x: Vec<i8> = cast(&fill(seed, m * k, -128, 127));
            let w: Vec<i8> = cast(&fill(seed ^ 1, n * k, -127, 127));
            let zp = fill(seed ^ 2, 2, -128, 127);
            let q = quant(seed, n, zp[0], zp[1], vec![0; n], false, (-128, 127));
            fc_matches(m, k, n, &q, &x, &w)?;
        }
    }

    #[test]
    fn depthwise_matches_reference(g in geom(), mult in 1usize..3, seed in any::<u64>(), unsigned in any::<bool>()) {
        let d = DepthwiseGeom::from_conv(&g, mult);
        let oc = d.out_c();
        if unsigned {
            let x: Vec<u8> = cast(&fill(seed, d.input_len(), 0, 255));
            let w: Vec<u8> = cast(&fill(seed ^ 1, d.filter_len(), 0, 255));
            let zp = fill(seed ^ 2, 3, 0, 255);
            let q = quant(seed, oc, zp[0], zp[1], vec![zp[2]; oc], true, (zp[1].min(40), 255));
            depthwise_matches(d, q, &x, &w)?;
        } else {
            let x: Vec<i8> = cast(&fill(seed, d.input_len(), -128, 127));
            let w: Vec<i8> = cast(&fill(seed ^ 1, d.filter_len(), -127, 127));
            let zp = fill(seed ^ 2, 2, -128, 127);
            let q = quant(seed, oc, zp[0], zp[1], vec![0; oc], true, (-128, 127));
            depthwise_matches(d, q, &x, &w)?;
        }
    }

    #[test]
    fn vnni_and_avx2_tiles_match_portable(kq in 1usize..40, seed in any::<u64>()) {
        let kp = kq * 4;
        let a: Vec<u8> = cast(&fill(seed, sq::MR_QUAD * kp, 0, 255));
        let b: Vec<i8> = cast(&fill(seed ^ 1, kp * 32, -128, 127));
        let (mut x, mut y) = (vec![0; sq::MR_QUAD * 32], vec![0; sq::MR_QUAD * 32]);
        sq::tile_quad(kp, &a, &b, &mut x);
        sq::tile_quad_portable(kp, &a, &b, &mut y);
        prop_assert_eq!(&x, &y);
        let p: Vec<i8> = cast(&fill(seed ^ 2, kp * 16, -128, 127));
        let (mut x, mut y) = (vec![0; sq::MR_QUAD * 16], vec![0; sq::MR_QUAD * 16]);
        sq::tile_pair(kp, &a, &p, &mut x);
        sq::tile_pair_portable(kp, &a, &p, &mut y);
        prop_assert_eq!(x, y);
    }

    #[test]
    fn vectorized_binary_matches_scalar(n in 1usize..200, seed in any::<u64>(), op in 0usize..3, s in proptest::collection::vec(0.001f32..0.2, 3)) {
        let zp = fill(seed ^ 9, 3, 0, 255);
        let k = [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul][op];
        let p = QBinary::new::<u8>(k, QParams { scale: s[0], zero_point: zp[0] }, QParams { scale: s[1], zero_point: zp[1] }, QParams { scale: s[2], zero_point: zp[2] }, Activation::Relu);
        let a: Vec<u8> = cast(&fill(seed, n, 0, 255));
        let b: Vec<u8> = cast(&fill(seed ^ 1, n, 0, 255));
        let mut got = vec![0u8; n];
        p.run::<u8, u8>(&a, &[n], &b, &[n], &mut got, &[n]);
        let want: Vec<u8> = a.iter().zip(&b).map(|(&x, &y)| p.apply(x as i32, y as i32) as u8).collect();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn hybrid_fully_connected_matches_reference(m in 1usize..20, k in 1usize..70, n in 1usize..50, seed in any::<u64>(), per_channel in any::<bool>(), with_bias in any::<bool>(), pair in any::<bool>()) {
        hybrid_fc_case(m, k, n, seed, per_channel, with_bias, if pair { QLayout::Pair } else { QLayout::Quad }, 1 + (seed % 2) as usize)?;
    }

    /// Dynamic-range convolutions run the packed GEMM / optimized depthwise with a zero point
    /// known only at run time; they must match TFLite's `HybridConvPerChannel` loops.
    #[test]
    fn hybrid_conv_and_depthwise_match_reference(g in geom(), seed in any::<u64>()) {
        use super::hybrid::{conv_per_channel, depthwise_per_channel, finish, FloatClamp};
        let g = ConvGeom { batch: 1, ..g };
        let x: Vec<i8> = cast(&fill(seed, g.input_len(), -128, 127));
        let offset = fill(seed ^ 1, 1, -128, 127)[0];
        let w: Vec<i8> = cast(&fill(seed ^ 2, g.out_c * g.taps(), -127, 127));
        let scales: Vec<f32> = fill(seed ^ 3, g.out_c, 1, 1000).into_iter().map(|v| v as f32 * 1e-5).collect();
        let bias: Vec<f32> = fill(seed ^ 4, g.out_c, -100, 100).into_iter().map(|v| v as f32 * 0.01).collect();
        let clamp = FloatClamp(-1.5, 1.5);
        let identity = ConvQuant::raw;
        let mut want = vec![0f32; g.output_len()];
        conv_per_channel(&g, &x, &[offset], &[0.02], &w, &scales, Some(&bias), clamp, &mut want);
        let mut acc = vec![0i32; g.output_len()];
        QConv::new::<i8, i8>(g, identity(g.out_c), &w).run_raw(&x, offset, &mut acc);
        let mut got = vec![0f32; g.output_len()];
        finish(&acc, &scales, 0.02, Some(&bias), clamp, false, &mut got);
        prop_assert_eq!(&got, &want);

        // The packed GEMM with the float epilogue in its tiles, on the unsigned bytes, with
        // both packings, with and without bias and clamp, on one and two threads.
        let xu: Vec<u8> = x.iter().map(|&v| v as u8 ^ 0x80).collect();
        let open = FloatClamp(f32::NEG_INFINITY, f32::INFINITY);
        for (i, (layout, b, c)) in [(QLayout::Quad, Some(&bias[..]), clamp), (QLayout::Pair, Some(&bias[..]), clamp), (QLayout::Quad, None, open), (QLayout::Pair, None, clamp)].into_iter().enumerate() {
            let mut want = vec![0f32; g.output_len()];
            conv_per_channel(&g, &x, &[offset], &[0.02], &w, &scales, b, c, &mut want);
            let hc = super::conv::HybridConv::with_layout(g, &w, &scales, b, (c.0, c.1), layout).expect("ungrouped");
            let mut got = vec![0f32; g.output_len()];
            let pool = nnrt_threads::KernelPool::new(1 + i % 2).expect("pool");
            pool.install(|| hc.run(&xu, offset + 128, 0.02, &mut got));
            prop_assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{:?} {:?}", layout, g);
        }

        let d = DepthwiseGeom { batch: 1, ..DepthwiseGeom::from_conv(&g, 1) };
        let wd: Vec<i8> = cast(&fill(seed ^ 5, d.filter_len(), -127, 127));
        let sd: Vec<f32> = fill(seed ^ 6, d.out_c(), 1, 1000).into_iter().map(|v| v as f32 * 1e-5).collect();
        let mut want = vec![0f32; d.output_len()];
        depthwise_per_channel(&d, &x, &[offset], &[0.02], &wd, &sd, None, clamp, &mut want);
        let mut acc = vec![0i32; d.output_len()];
        QDepthwise::new::<i8, i8>(d, identity(d.out_c()), &wd).run_raw(&x, offset, &mut acc);
        let mut got = vec![0f32; d.output_len()];
        finish(&acc, &sd, 0.02, None, clamp, true, &mut got);
        prop_assert_eq!(got, want);
    }
}

proptest! {
    #[test]
    fn simd_requant_row_matches_portable(acc in proptest::collection::vec(any::<i32>(), 1..70), seed in any::<u64>(), zp in -128i32..128) {
        let n = acc.len();
        let mults = fill(seed, n, 0, i32::MAX - 1);
        let shifts = fill(seed ^ 1, n, -31, 30);
        let bias = fill(seed ^ 2, n, -100000, 100000);
        let r = super::requant::ChannelRequant::new(mults.into_iter().zip(shifts));
        let (mut a, mut b) = (acc.clone(), acc);
        super::requant::requant_row_simd(&mut a, &bias, &r, 0, zp, -300, 300);
        super::requant::requant_row(&mut b, &bias, &r, 0, zp, -300, 300);
        prop_assert_eq!(a, b);
    }
}

fn tc_geom() -> impl Strategy<Value = crate::kernels::transpose_conv::TransposeConvGeom> {
    (1usize..3, 1usize..6, 1usize..6, 1usize..9, 1usize..9, 1usize..4, 1usize..4, 1usize..3, 0usize..2, 0usize..2).prop_map(
        |(batch, in_h, in_w, in_c, out_c, k_h, k_w, stride, pt, pl)| crate::kernels::transpose_conv::TransposeConvGeom {
            batch,
            in_h,
            in_w,
            in_c,
            out_h: ((in_h - 1) * stride + k_h).saturating_sub(pt * 2).max(1),
            out_w: ((in_w - 1) * stride + k_w).saturating_sub(pl * 2).max(1),
            out_c,
            k_h,
            k_w,
            stride_h: stride,
            stride_w: stride,
            pad_top: pt.min(k_h - 1),
            pad_left: pl.min(k_w - 1),
        },
    )
}

fn tc_case<TI: QInt, TW: QInt>(seed: u64, g: crate::kernels::transpose_conv::TransposeConvGeom, wide: bool) -> Result<(), TestCaseError> {
    let input: Vec<TI> = cast(&fill(seed, g.batch * g.in_h * g.in_w * g.in_c, TI::MIN, TI::MAX));
    let filter: Vec<TW> = cast(&fill(seed ^ 3, g.out_c * g.k_h * g.k_w * g.in_c, TW::MIN, TW::MAX));
    let zp = fill(seed ^ 5, 3, TI::MIN.max(-128), TI::MAX.min(127));
    let w_zp = if TW::MIN < 0 { vec![0; g.out_c] } else { vec![zp[0].clamp(0, 255); g.out_c] };
    let mut q = quant(seed, g.out_c, if wide { 0 } else { zp[1] }, if wide { 0 } else { zp[2] }, w_zp, true, (TI::MIN, TI::MAX));
    q.wide = wide;
    let n = g.batch * g.out_h * g.out_w * g.out_c;
    let (mut want, mut got) = (vec![TI::default(); n], vec![TI::default(); n]);
    reference::transpose_conv::<TI, TW, TI>(&g, &q, &input, &filter, &mut want);
    super::matmul::QTransposeConv::new::<TW>(g, q, &filter).run::<TI, TI>(&input, &mut got);
    prop_assert_eq!(got.iter().map(|v| v.get()).collect::<Vec<_>>(), want.iter().map(|v| v.get()).collect::<Vec<_>>());
    Ok(())
}

fn bmm_case<TX: QInt, TY: QInt>(seed: u64, x_dims: Vec<usize>, y_dims: Vec<usize>, adj: (bool, bool), constant: bool) -> Result<(), TestCaseError> {
    let g = crate::kernels::batch_matmul::MatMulGeom::new(&x_dims, &y_dims, adj.0, adj.1).map_err(TestCaseError::fail)?;
    let x: Vec<TX> = cast(&fill(seed, x_dims.iter().product(), TX::MIN, TX::MAX));
    let y: Vec<TY> = cast(&fill(seed ^ 9, y_dims.iter().product(), TY::MIN, TY::MAX));
    let wide = TX::MIN == i16::MIN as i32;
    let zp = fill(seed ^ 5, 3, -128, 127);
    let (zx, zy, zo) = if wide { (0, 0, 0) } else { (zp[0], zp[1], zp[2]) };
    let mut q = quant(seed, 1, zx, zo, vec![zy; g.n], true, (TX::MIN, TX::MAX));
    q.requant = vec![q.requant[0]; g.n];
    q.bias = None;
    q.wide = wide;
    let n = g.pairs.len() * g.m * g.n;
    let (mut want, mut got) = (vec![TX::default(); n], vec![TX::default(); n]);
    reference::batch_matmul::<TX, TY, TX>(&g, &q, &x, &y, &mut want);
    let mm = super::matmul::QBatchMatMul::new::<TX, TY>(g, q, constant.then_some(y.as_slice()));
    mm.run::<TX, TY, TX>(&x, if constant { &[] } else { &y }, &mut got);
    prop_assert_eq!(got.iter().map(|v| v.get()).collect::<Vec<_>>(), want.iter().map(|v| v.get()).collect::<Vec<_>>());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn transpose_conv_matches_reference(g in tc_geom(), seed in any::<u64>(), kind in 0usize..4) {
        match kind {
            0 => tc_case::<i8, i8>(seed, g, false)?,
            1 => tc_case::<u8, u8>(seed, g, false)?,
            2 => tc_case::<i16, i8>(seed, g, true)?,
            _ => tc_case::<i16, i8>(seed, g, false)?,
        }
    }

    #[test]
    fn batch_matmul_matches_reference(
        (m, k, n) in (1usize..7, 1usize..12, 1usize..7),
        (bx, by) in (1usize..4, 1usize..4),
        adj in any::<(bool, bool)>(),
        seed in any::<u64>(),
        kind in 0usize..3,
        constant in any::<bool>(),
    ) {
        // x: [bx, 2, m, k] against y: [by, 1, k, n] (leading dims broadcast where they are 1).
        let by = if by == bx { by } else { 1 };
        let x_dims = vec![bx, 2, if adj.0 { k } else { m }, if adj.0 { m } else { k }];
        let y_dims = vec![by, 1, if adj.1 { n } else { k }, if adj.1 { k } else { n }];
        match kind {
            0 => bmm_case::<i8, i8>(seed, x_dims, y_dims, adj, constant)?,
            1 => bmm_case::<i16, i16>(seed, x_dims, y_dims, adj, constant)?,
            _ => bmm_case::<i16, i8>(seed, x_dims, y_dims, adj, constant)?,
        }
    }

    #[test]
    fn prelu_identity_side_and_log_softmax_maximum(seed in any::<u64>(), s in proptest::collection::vec(0.0005f32..0.3, 3)) {
        // PRELU: for non-negative inputs it is the identity rescale ReluQ also computes.
        let (iq, aq, oq) = (QParams { scale: s[0], zero_point: 3 }, QParams { scale: s[1] / 30.0, zero_point: -2 }, QParams { scale: s[2], zero_point: -5 });
        let p = super::activation::PreluQ::new(iq, aq, oq);
        let r = super::activation::ReluQ::new::<i8>(iq, oq, (f32::NEG_INFINITY, f32::INFINITY));
        for (x, a) in fill(seed, 64, 3, 127).into_iter().zip(fill(seed ^ 1, 64, -128, 127)) {
            prop_assert_eq!(p.apply::<i8, i8>(x as i8, a as i8), r.apply::<i8>(x as i8));
        }
        // Log-softmax: the row maximum maps near the top of the range and nothing exceeds it.
        let l = super::log_softmax::LogSoftmaxQ::new(s[0]);
        let row: Vec<i8> = cast(&fill(seed ^ 2, 16, -128, 127));
        let mut out = vec![0i8; 16];
        l.run::<i8>(&row, 16, &mut out);
        let imax = (0..16).max_by_key(|&i| (row[i], std::cmp::Reverse(i))).unwrap_or(0);
        prop_assert!(out.iter().all(|&o| o <= out[imax]));
    }
}

/// The AVX-512 epilogue of the VNNI kernels against the scalar `MultiplyByQuantizedMultiplier`.
#[cfg(target_arch = "x86_64")]
mod simd_epilogue {
    use crate::quant::fixedpoint::mbqm;
    use crate::simd::quant::probe::{narrow_lanes, requant64_lanes};
    use crate::simd::quant::{LaneRequant, Narrow, VnniToken};

    /// `requant64` against the scalar `MultiplyByQuantizedMultiplier` on extreme and random
    /// accumulators, for right shifts 0..=31 and left shifts 0..=4 (multipliers in [2^30, 2^31)).
    #[test]
    fn requant64_is_mbqm() {
        if no_vnni() {
            return;
        }
        let mut next = xorshift(0x9e3779b97f4a7c15);
        let mut xs: Vec<i32> = vec![0, 1, -1, i32::MAX, i32::MIN, i32::MIN + 1, 1 << 30, -(1 << 30), (1 << 30) - 1, -(1 << 30) + 1];
        xs.extend((0..4000).map(|i| if i % 3 == 0 { (next() as i32) >> (next() % 31) } else { next() as i32 }));
        for shift in -31..=4 {
            for _ in 0..6 {
                let m = (1 << 30) + (next() % (1 << 30)) as i32;
                let cols: Vec<(i32, i32, (i32, i32))> = (0..16).map(|_| (0, 0, (m, shift))).collect();
                let lr = LaneRequant::new(cols, 16, (0, i32::MIN, i32::MAX));
                for chunk in xs.chunks(16) {
                    let mut lanes = [0i32; 16];
                    lanes[..chunk.len()].copy_from_slice(chunk);
                    let got = requant64_lanes(&lr, lanes).expect("AVX-512 VNNI");
                    for (i, &x) in lanes.iter().enumerate() {
                        assert_eq!(got[i], mbqm(x, m, shift), "x {x} m {m} shift {shift}");
                    }
                }
            }
        }
    }

    /// The shortened epilogues [`Narrow::of`] picks give the bytes of the full one,
    /// `clamp(mbqm(x) + zp, lo, hi)`, for ReLU-style ranges (the lower bound at the zero point,
    /// where negative products skip their correction), the int8 range (saturating narrow) and
    /// general ones, int8 and uint8, on every small accumulator and random large ones.
    #[test]
    fn narrow_shortcuts_match_the_full_epilogue() {
        if no_vnni() {
            return;
        }
        let mut next = xorshift(0x2545f4914f6cdd1d);
        let mut xs: Vec<i32> = (-4096..4096).collect();
        xs.extend((0..4096).map(|i| if i % 2 == 0 { (next() as i32) >> (next() % 31) } else { next() as i32 }));
        let ranges = [
            (-128, -128, 127, true),
            (5, -128, 127, true),
            (-3, -3, 127, true),
            (-128, -128, 20, true),
            (10, -100, 100, true),
            (0, 0, 255, false),
            (128, 0, 255, false),
            (3, 3, 200, false),
        ];
        for shift in [-20, -12, -9, -7, -5, -3, -1, 0, 1] {
            let m = (1 << 30) + (next() % (1 << 30)) as i32;
            let cols: Vec<(i32, i32, (i32, i32))> = (0..16).map(|_| (0, 0, (m, shift))).collect();
            for &(zp, lo, hi, signed) in &ranges {
                let lr = LaneRequant::new(cols.clone(), 16, (zp, lo, hi));
                let n = Narrow::of(lr.out, signed);
                assert_eq!(n.neg, zp > lo);
                for chunk in xs.chunks(16) {
                    let mut lanes = [0i32; 16];
                    lanes[..chunk.len()].copy_from_slice(chunk);
                    let got = narrow_lanes(&lr, lanes, n).expect("AVX-512 VNNI");
                    for (i, &x) in lanes.iter().enumerate() {
                        let want = (mbqm(x, m, shift) as i64 + zp as i64).clamp(lo as i64, hi as i64) as u8;
                        assert_eq!(got[i], want, "x {x} m {m} shift {shift} range {:?} {n:?}", (zp, lo, hi, signed));
                    }
                }
            }
        }
    }

    /// Whether this CPU lacks AVX-512 VNNI (the test then says it is skipped).
    fn no_vnni() -> bool {
        let none = VnniToken::new().is_none();
        if none {
            eprintln!("skipped: no AVX-512 VNNI on this CPU");
        }
        none
    }

    /// A xorshift64 stream from `seed`.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }
}

/// `QBinary::apply` over NumPy broadcasting, one output element at a time.
fn binary_ref<T: QInt>(p: &QBinary, a: &[T], a_dims: &[usize], b: &[T], b_dims: &[usize], out_dims: &[usize]) -> Vec<T> {
    let mut out = vec![T::default(); out_dims.iter().product()];
    crate::kernels::binary::broadcast_ref(a, a_dims, b, b_dims, &mut out, out_dims, |x: T, y: T| T::put(p.apply(x.get(), y.get())));
    out
}

/// The broadcast shapes of the element-wise models: the second operand's dims for [N, H, W, C].
fn broadcast_case(kind: usize, d: &[usize; 4]) -> Vec<usize> {
    match kind {
        0 => d.to_vec(),
        1 => vec![1],
        2 => vec![1, 1, 1, d[3]],
        3 => vec![d[0], d[1], d[2], 1],
        4 => vec![1, d[1], 1, d[3]],
        _ => vec![d[3]],
    }
}

fn check_broadcast<T: QInt + std::fmt::Debug + PartialEq>(k: QBinaryOp, s: &[f32], zp: &[i32], act: Activation, d: [usize; 4], kind: usize, swap: bool, seed: u64) -> Result<(), TestCaseError> {
    let q = |i: usize| QParams { scale: s[i], zero_point: zp[i] };
    let p = QBinary::new::<T>(k, q(0), q(1), q(2), act);
    let full: Vec<T> = cast(&fill(seed, d.iter().product(), T::MIN, T::MAX));
    let small_dims = broadcast_case(kind, &d);
    let small: Vec<T> = cast(&fill(seed ^ 5, small_dims.iter().product(), T::MIN, T::MAX));
    let ((a, a_dims), (b, b_dims)) = if swap { ((&small, &small_dims[..]), (&full, &d[..])) } else { ((&full, &d[..]), (&small, &small_dims[..])) };
    let mut got = vec![T::default(); full.len()];
    p.run::<T, T>(a, a_dims, b, b_dims, &mut got, &d);
    let want = binary_ref(&p, a, a_dims, b, b_dims, &d);
    prop_assert_eq!(&got, &want);
    if let Some(p2) = p.with_avx2_lanes() {
        got.fill(T::default());
        p2.run::<T, T>(a, a_dims, b, b_dims, &mut got, &d);
        prop_assert_eq!(&got, &want, "AVX2 lanes");
    }
    if let Some(t) = p.table2::<T, T>() {
        got.fill(T::default());
        p.run_table2::<T, T>(&t, a, a_dims, b, b_dims, &mut got, &d);
        prop_assert_eq!(&got, &want);
    }
    Ok(())
}

/// The 64 KiB table holds `apply` of every byte pair, for add, sub, mul and squared difference
/// with and without a fused activation, int8 and uint8.
#[test]
fn table2_is_apply_of_every_pair() {
    fn check<T: QInt>(k: QBinaryOp, s: [f32; 3], zp: [i32; 3], act: Activation) {
        let q = |i: usize| QParams { scale: s[i], zero_point: zp[i] };
        let p = QBinary::new::<T>(k, q(0), q(1), q(2), act);
        let t = p.table2::<T, T>().expect("one-byte types have a table");
        for (x, y) in (0..=255u8).flat_map(|x| (0..=255u8).map(move |y| (x, y))) {
            let want = T::put(p.apply(bytemuck::cast::<u8, T>(x).get(), bytemuck::cast::<u8, T>(y).get()));
            assert_eq!(t.0[(x as usize) << 8 | y as usize], bytemuck::cast::<T, u8>(want), "{k:?} {s:?} {zp:?} at ({x}, {y})");
        }
    }
    for k in [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul, QBinaryOp::SquaredDifference] {
        check::<i8>(k, [0.05, 0.031, 0.07], [-3, 10, -128], Activation::None);
        check::<i8>(k, [0.02, 0.02, 0.5], [0, -1, 5], Activation::Relu6);
        check::<u8>(k, [0.0078125, 0.1, 0.03], [128, 0, 255], Activation::Relu);
    }
}

/// The lanes' special steps on every pair: multipliers of exactly ½ (a plain shift) or 2^-k,
/// output multipliers of ½ and above (no rounding shift: the sign correction must not apply),
/// a multiplier rounded to zero, the benchmark models' scales.
#[test]
fn binary_lanes_special_multipliers_match_apply() {
    let cases: [[f32; 3]; 9] = [
        [1.0, 1.0, 1.0],
        [0.75, 1.0, 1.0],
        [1.0, 1.0, 3e-6],
        [0.5, 1.0, 1.5e-6],
        [0.05, 0.05, 0.08],
        [0.05, 0.0173, 0.08],
        [0.05, 0.025, 0.05],
        [0.2, 0.1, 1e-9],
        [1e-9, 0.1, 0.05],
    ];
    for s in cases {
        for k in [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul] {
            for act in [Activation::None, Activation::Relu6] {
                for zp in [[0, 0, 0], [-128, 127, 5], [127, -128, -128], [3, -2, 1]] {
                    check_every_pair::<i8>(k, &s, &zp, act).unwrap_or_else(|e| panic!("{k:?} {s:?} {zp:?}: {e}"));
                    let uzp = zp.map(|z| z + 128);
                    check_every_pair::<u8>(k, &s, &uzp, act).unwrap_or_else(|e| panic!("{k:?} {s:?} {uzp:?}: {e}"));
                }
            }
        }
    }
}

/// Every pair of 8-bit inputs through [`QBinary::run_lanes`] (where this CPU has the lanes)
/// against `apply`, on AVX2 as well where the lanes are AVX-512.
fn check_every_pair<T: QInt + std::fmt::Debug + PartialEq>(k: QBinaryOp, s: &[f32], zp: &[i32], act: Activation) -> Result<(), TestCaseError> {
    let q = |i: usize| QParams { scale: s[i], zero_point: zp[i] };
    let p = QBinary::new::<T>(k, q(0), q(1), q(2), act);
    if let Some(p2) = p.with_avx2_lanes() {
        check_pairs_on::<T>(&p2, k, s)?;
    }
    check_pairs_on::<T>(&p, k, s)
}

/// [`check_every_pair`] of one prepared op.
fn check_pairs_on<T: QInt + std::fmt::Debug + PartialEq>(p: &QBinary, k: QBinaryOp, s: &[f32]) -> Result<(), TestCaseError> {
    let byte = |i: usize| bytemuck::cast::<u8, T>(i as u8);
    let rows: Vec<T> = (0..65536).map(|i| byte(i >> 8)).collect();
    let cols: Vec<T> = (0..65536).map(|i| byte(i & 255)).collect();
    let per_row: Vec<T> = (0..256).map(byte).collect();
    let d = [256usize, 256];
    let mut got = vec![T::default(); 65536];
    // Same shapes, both orders.
    for (a, b) in [(&rows, &cols), (&cols, &rows)] {
        if !p.run_lanes::<T, T>(a, &d, b, &d, &mut got, &d) {
            // Without the lanes only CPUs lacking AVX2 or extreme parameters decline.
            prop_assert!(crate::simd::isa() < crate::simd::Isa::Avx2Fma || s.iter().any(|&v| !(0.001..=1.0).contains(&v)) || k == QBinaryOp::Mul);
            return Ok(());
        }
        prop_assert_eq!(&got, &binary_ref(p, a, &d, b, &d, &d));
    }
    // One value per row of 256, as the first or the second operand.
    for swap in [false, true] {
        let ((a, ad), (b, bd)) = if swap { ((&per_row, &[256usize, 1][..]), (&cols, &d[..])) } else { ((&cols, &d[..]), (&per_row, &[256usize, 1][..])) };
        prop_assert!(p.run_lanes::<T, T>(a, ad, b, bd, &mut got, &d));
        prop_assert_eq!(&got, &binary_ref(p, a, ad, b, bd, &d));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Quantized add/sub/mul over every broadcast (equal shapes, scalar, `[1,1,1,C]`, `[N,H,W,1]`,
    /// `[1,H,1,C]`, `[C]`, either side), sizes that reach the tables, the split across threads
    /// and vector tails, against `apply` element by element.
    #[test]
    fn binary_broadcasts_match_apply(
        d in (1usize..3, 1usize..24, 1usize..24, 1usize..40),
        kind in 0usize..6,
        swap in any::<bool>(),
        op in 0usize..3,
        seed in any::<u64>(),
        s in proptest::collection::vec(0.0005f32..0.3, 3),
        act in 0usize..3,
        signed in any::<bool>(),
    ) {
        let k = [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul][op];
        let act = [Activation::None, Activation::Relu, Activation::Relu6][act];
        let d = [d.0, d.1, d.2, d.3];
        if signed {
            let zp = fill(seed ^ 9, 3, -128, 127);
            check_broadcast::<i8>(k, &s, &zp, act, d, kind, swap, seed)?;
        } else {
            let zp = fill(seed ^ 9, 3, 0, 255);
            check_broadcast::<u8>(k, &s, &zp, act, d, kind, swap, seed)?;
        }
        // int16 (zero points 0): the general and the power-of-two paths.
        let pot = [0.5f32.powi(10), 0.5f32.powi(12), 0.5f32.powi(10)];
        check_broadcast::<i16>(k, &s, &[0, 0, 0], act, d, kind, swap, seed)?;
        check_broadcast::<i16>(k, &pot, &[0, 0, 0], act, d, kind, swap, seed)?;
    }

    /// Saturation edges: scales far apart and extreme zero points push most outputs to the ends.
    #[test]
    fn binary_broadcasts_saturate_like_apply(kind in 0usize..6, op in 0usize..3, seed in any::<u64>(), wide in any::<bool>()) {
        let k = [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul][op];
        let s = if wide { [0.9f32, 0.002, 0.001] } else { [0.001f32, 0.5, 0.004] };
        check_broadcast::<i8>(k, &s, &[-128, 127, 0], Activation::None, [1, 9, 17, 33], kind, seed % 2 == 0, seed)?;
        check_broadcast::<u8>(k, &s, &[0, 255, 128], Activation::Relu6, [2, 8, 16, 8], kind, seed % 2 == 1, seed)?;
    }

    /// The AVX-512 and AVX2 lanes of 8-bit add/sub/mul against `apply` on every pair of input bytes:
    /// same shapes, a value per row (`[256,256] op [256,1]`), either operand first, with
    /// scales from far apart to equal (a multiplier of exactly ½ or 2^-k), zero points across
    /// and at the ends of the range, and every activation.
    #[test]
    fn binary_lanes_match_apply_on_every_pair(
        op in 0usize..3,
        seed in any::<u64>(),
        s in proptest::collection::vec(prop_oneof![0.00001f32..10.0, Just(0.05f32), Just(0.1), Just(0.025), Just(0.2)], 3),
        act in 0usize..4,
        signed in any::<bool>(),
        zp_ends in any::<bool>(),
    ) {
        let k = [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul][op];
        let act = [Activation::None, Activation::Relu, Activation::Relu6, Activation::ReluN1To1][act];
        if signed {
            let zp = if zp_ends { vec![-128, 127, (seed % 256) as i32 - 128] } else { fill(seed ^ 9, 3, -128, 127) };
            check_every_pair::<i8>(k, &s, &zp, act)?;
        } else {
            let zp = if zp_ends { vec![0, 255, (seed % 256) as i32] } else { fill(seed ^ 9, 3, 0, 255) };
            check_every_pair::<u8>(k, &s, &zp, act)?;
        }
    }

    /// QUANTIZE, DEQUANTIZE and integer requantization (vectorized, split across threads)
    /// against their one-loop references.
    #[test]
    fn quantize_dequantize_match_reference(n in 1usize..20000, seed in any::<u64>(), scale in 0.0001f32..2.0, zp in -128i32..128) {
        use super::misc;
        let xs: Vec<f32> = fill(seed, n, -300_000, 300_000).iter().map(|&v| v as f32 * 0.01 * scale).chain([f32::NAN, 0.5 * scale, -0.5 * scale, 1e30]).collect();
        let q = QParams { scale, zero_point: zp };
        let (mut got, mut want) = (vec![0i8; xs.len()], vec![0i8; xs.len()]);
        misc::quantize(&xs, q, &mut got);
        misc::quantize_seq(&xs, q, &mut want);
        prop_assert_eq!(&got, &want);
        let (mut got16, mut want16) = (vec![0i16; xs.len()], vec![0i16; xs.len()]);
        misc::quantize(&xs, QParams { scale: scale * 0.01, zero_point: 0 }, &mut got16);
        misc::quantize_seq(&xs, QParams { scale: scale * 0.01, zero_point: 0 }, &mut want16);
        prop_assert_eq!(&got16, &want16);
        let (mut got8, mut want8) = (vec![0u8; xs.len()], vec![0u8; xs.len()]);
        misc::quantize(&xs, QParams { scale, zero_point: zp + 128 }, &mut got8);
        misc::quantize_seq(&xs, QParams { scale, zero_point: zp + 128 }, &mut want8);
        prop_assert_eq!(&got8, &want8);
        let (mut f, mut g) = (vec![0f32; got.len()], vec![0f32; got.len()]);
        misc::dequantize(&got, q, &mut f);
        misc::dequantize_seq(&got, q, &mut g);
        prop_assert_eq!(f.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), g.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        for out_q in [QParams { scale: scale * 1.7, zero_point: 3 }, QParams { scale, zero_point: zp.wrapping_add(128) }] {
            let r = misc::Requantize::new(q, out_q);
            let (mut a, mut b) = (vec![0u8; got.len()], vec![0u8; got.len()]);
            r.run(&got, &mut a);
            r.run_seq(&got, &mut b);
            prop_assert_eq!(a, b);
        }
    }
}

/// QUANTIZE's vector rounding and saturation at the edges: exact halves of either sign (away
/// from zero), values next to them, ±0, infinities, NaN, the int32 limits (wrapping with the
/// zero point, as the reference does), for every output type and lengths across the 16-lane
/// tail.
#[test]
fn quantize_edges_match_reference() {
    use super::misc;
    let mut xs = vec![0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 2_147_483_648.0, -2_147_483_648.0, 2_147_483_520.0, -2_147_483_904.0, 1e-40, -1e-40, 8_388_607.5, -8_388_607.5, 16_777_216.0];
    for k in -300..300 {
        let h = k as f32 + 0.5;
        xs.extend([h, f32::from_bits(h.to_bits() + 1), f32::from_bits(h.to_bits() - 1)]);
        // Values whose quotient by the scales below is (about) a half: x = h·scale and its
        // neighbours, where x·(1/scale) and x/scale may round differently.
        for scale in [0.1f32, 0.007_843_138, 0.023_529_412, 3.0] {
            let x = h * scale;
            xs.extend([x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits().wrapping_sub(1)), f32::from_bits(x.to_bits() + 2)]);
        }
    }
    for n in [1, 15, 16, 17, 33, xs.len()] {
        for (scale, zp) in [(1.0f32, 0), (1.0, 7), (0.5, -3), (0.25, 120), (3.0, 1), (0.1, 0), (0.007_843_138, -1), (0.023_529_412, 5), (1e-38, 0), (3e38, 0)] {
            let x = &xs[..n];
            let q = QParams { scale, zero_point: zp };
            fn check<T: QInt + PartialEq + std::fmt::Debug>(x: &[f32], q: QParams) {
                let (mut got, mut want) = (vec![T::default(); x.len()], vec![T::default(); x.len()]);
                misc::quantize(x, q, &mut got);
                misc::quantize_seq(x, q, &mut want);
                assert_eq!(got, want, "scale {} zp {}", q.scale, q.zero_point);
            }
            check::<i8>(x, q);
            check::<u8>(x, QParams { scale, zero_point: zp.abs() });
            check::<i16>(x, q);
            check::<i32>(x, q);
        }
    }
    // Each edge alone in a block of 64 ordinary values, at every position: the vector path
    // checks four vectors together, and one lane must send the whole block to the reference.
    let edges = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MAX, -f32::MAX, 2_147_483_648.0, -2_147_483_904.0, 2_146_435_072.0, -2_146_435_072.0, 8_388_607.5, -8_388_607.5, 12_582_912.0, -12_582_912.0, 16_777_216.0, 4_194_303.5, -4_194_304.5, 2.5, -2.5];
    for &e in &edges {
        for at in 0..64 {
            let mut x: Vec<f32> = (0..64).map(|i| (i as f32 - 31.7) * 0.37).collect();
            x[at] = e;
            // Zero points of both signs (the reference's int32 wraps one way or the other at the
            // limits), the largest the vector path takes.
            for (scale, zp) in [(1.0f32, 0), (0.5, -3), (1e-6, 0), (1.0, 5), (1e-6, -100), (1.0, 1 << 20), (2e-3, -(1 << 20))] {
                let q = QParams { scale, zero_point: zp };
                let (mut got, mut want) = (vec![0i8; 64], vec![0i8; 64]);
                misc::quantize(&x, q, &mut got);
                misc::quantize_seq(&x, q, &mut want);
                assert_eq!(got, want, "edge {e} at {at}, scale {scale}");
                let (mut got, mut want) = (vec![0i16; 64], vec![0i16; 64]);
                misc::quantize(&x, q, &mut got);
                misc::quantize_seq(&x, q, &mut want);
                assert_eq!(got, want, "edge {e} at {at}, scale {scale}");
            }
        }
    }
}

#[test]
fn double_requantization_lanes_round_like_the_scalar_path() {
    // Requant::Float's vector prefix against Requant::apply: ties (scale 1/2 on odd sums, both
    // signs), products past ±2^31, bias sums that wrap, and ordinary values.
    let scales = [0.5, -0.5, 0.25, 1.0 / 3.0, 3.7e-5, 1.0e9, 0.0078125];
    let mut acc = fill(3, 64, -2_000_000, 2_000_000);
    acc.extend([1, -1, 3, -3, 5, -5, i32::MAX, i32::MIN, 0, 7, -7, 1 << 30, -(1 << 30), 255, -255, 2]);
    let bias = fill(4, acc.len(), -1000, 1000);
    let mut bias = bias;
    bias[acc.len() - 9] = 10; // i32::MIN + 10 stays in range; i32::MAX + bias wraps below
    bias[acc.len() - 10] = 5;
    for (t, &s) in scales.iter().enumerate() {
        let sc: Vec<f64> = (0..acc.len()).map(|j| if j % 3 == 0 { s } else { s * (1.0 + j as f64 / 7.0) }).collect();
        for (zp, lo, hi) in [(0, -128, 127), (-7, -128, 127), (100, 0, 255), (3, -32768, 32767)] {
            let mut got = acc.clone();
            let done = sq::requant_float_prefix(&mut got, &bias, &sc, zp, lo, hi);
            for j in 0..done {
                let want = Requant::Float(sc[j]).apply(acc[j].wrapping_add(bias[j])).saturating_add(zp).clamp(lo, hi);
                assert_eq!(got[j], want, "scale {t} column {j}: acc {} bias {}", acc[j], bias[j]);
            }
        }
    }
}

#[test]
fn int8_softmax_rows_split_across_threads_bit_for_bit() {
    let s = super::softmax::Softmax8::new(1.0, 0.07);
    let x: Vec<i8> = cast(&fill(12, 64 * 100, -128, 127));
    let (mut one, mut two) = (vec![0i8; x.len()], vec![0i8; x.len()]);
    s.run::<i8, i8>(&x, 100, &mut one);
    nnrt_threads::KernelPool::new(2).unwrap().install(|| s.run::<i8, i8>(&x, 100, &mut two));
    assert_eq!(one, two);
    // Row 5 alone gives the same values as within the batch.
    let mut row = vec![0i8; 100];
    s.run::<i8, i8>(&x[500..600], 100, &mut row);
    assert_eq!(row, one[500..600]);
}

#[test]
fn last_axis_mean_equals_the_strided_sum_of_the_transpose() {
    // [rows, depth] over axis 1 (one run per output) against [depth, rows] over axis 0 (the row
    // by row accumulation): the same sums, so the same bytes.
    let (rows, depth) = (37, 300);
    let x: Vec<i8> = cast(&fill(21, rows * depth, -128, 127));
    let xt: Vec<i8> = (0..depth * rows).map(|i| x[(i % rows) * depth + i / rows]).collect();
    let (iq, oq) = (QParams { scale: 0.05, zero_point: -3 }, QParams { scale: 0.02, zero_point: 5 });
    for xnnpack in [false, true] {
        let (mut a, mut b) = (vec![0i8; rows], vec![0i8; rows]);
        super::misc::mean(&x, &[rows, depth], &[1], iq, oq, xnnpack, &mut a);
        super::misc::mean(&xt, &[depth, rows], &[0], iq, oq, xnnpack, &mut b);
        assert_eq!(a, b, "xnnpack: {xnnpack}");
    }
}
