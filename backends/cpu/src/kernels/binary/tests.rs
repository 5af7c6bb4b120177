use super::*;
use proptest::prelude::*;

#[test]
fn small_broadcasts_skip_the_plan_with_the_plans_results() {
    use Quick::*;
    type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], Option<Quick>);
    let cases: &[Case] = &[
        (&[2, 3], &[2, 3], &[2, 3], Some(Same)),
        (&[], &[], &[], Some(Same)),
        (&[1], &[], &[1, 1], Some(Same)),
        (&[2, 64], &[], &[2, 64], Some(SplatB)),
        (&[1, 1], &[1, 2, 64], &[1, 2, 64], Some(SplatA)),
        (&[2, 256], &[256], &[2, 256], Some(RepeatB(256))),
        (&[1, 256], &[2, 256], &[2, 256], Some(RepeatA(256))),
        (&[3, 2, 16], &[2, 16], &[3, 2, 16], Some(RepeatB(32))),
        (&[2, 8], &[8], &[2, 8], None),
        (&[40, 20], &[20], &[40, 20], None),
        (&[2, 3], &[2, 1], &[2, 3], None),
        (&[3, 1], &[1, 3], &[3, 3], None),
        (&[64, 64], &[64, 64], &[64, 64], None),
        (&[0, 3], &[3], &[0, 3], None),
    ];
    for &(a_shape, b_shape, out_shape, want) in cases {
        let (na, nb, no) = (a_shape.iter().product::<usize>(), b_shape.iter().product::<usize>(), out_shape.iter().product::<usize>());
        assert_eq!(quick(a_shape, na, b_shape, nb, out_shape, no), want, "{a_shape:?} op {b_shape:?} -> {out_shape:?}");
        let a: Vec<i32> = (0..na as i32).map(|v| v * 7 + 1).collect();
        let b: Vec<i32> = (0..nb as i32).map(|v| 1000 * (v + 1)).collect();
        let f = |ra: Row<'_, i32>, rb: Row<'_, i32>, o: &mut [i32]| map_row(ra, rb, o, |x: i32, y: i32| x * 3 + y);
        let (mut got, mut plan) = (vec![0; no], vec![0; no]);
        broadcast_rows(&a, a_shape, &b, b_shape, &mut got, out_shape, f);
        broadcast_plan(&Plan::new(a_shape, b_shape, out_shape), &a, a_shape, &b, b_shape, &mut plan, f);
        assert_eq!(got, plan, "{a_shape:?} op {b_shape:?}");
        // Lengths that do not match the shapes never take the quick path.
        assert_eq!(quick(a_shape, na + 1, b_shape, nb, out_shape, no), None);
    }
}

#[test]
fn tile_repeats_the_row() {
    for n in 1..9usize {
        let row: Vec<u32> = (0..n as u32).map(|v| v * 7 + 1).collect();
        for len in [0, 1, n, n + 1, 2 * n - 1, 2 * n, 3 * n + 2, 2046] {
            let want: Vec<u32> = row.iter().copied().cycle().take(len).collect();
            assert_eq!(tile(&row, len), want, "row of {n}, {len} values");
        }
    }
}

const OPS: [BinaryOp; 10] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Pow,
    BinaryOp::SquaredDifference,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
    BinaryOp::FloorDiv,
    BinaryOp::FloorMod,
];

/// Bit equality that also accepts NaN against NaN.
fn same(x: f32, y: f32) -> bool {
    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
}

/// An output shape and two input shapes that broadcast to it (dropped leading dims, 1s).
fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    prop::collection::vec(1usize..6, 0..=5)
        .prop_flat_map(|out| {
            let r = out.len();
            (
                Just(out),
                0..=r,
                0..=r,
                prop::collection::vec(0u8..3, r),
                prop::collection::vec(0u8..3, r),
            )
        })
        .prop_map(|(out, da, db, ma, mb)| {
            let pick = |drop: usize, mask: &[u8]| -> Vec<usize> {
                (drop..out.len())
                    .map(|i| if mask[i] == 0 { 1 } else { out[i] })
                    .collect()
            };
            let (a, b) = (pick(da, &ma), pick(db, &mb));
            (out, a, b)
        })
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    crate::testdata::unit_values(n, seed).map(|u| (u - 0.5) * 8.0).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    // Both paths evaluate the same IEEE operations in the same order (SIMD div/sqrt are
    // correctly rounded), so the results must be bit-identical.
    #[test]
    fn f32_matches_ref((out_s, a_s, b_s) in shapes(), seed in any::<u64>(), op_i in 0usize..10, act_i in 0usize..3) {
        let op = OPS[op_i];
        let act = [Act::NONE, Act::RELU6, Act::RELU_N1_TO_1][act_i];
        let a = values(a_s.iter().product(), seed);
        let b = values(b_s.iter().product(), seed.wrapping_mul(31) ^ 7);
        let n: usize = out_s.iter().product();
        let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
        binary(op, &a, &a_s, &b, &b_s, &mut o1, &out_s, act);
        binary_ref(op, &a, &a_s, &b, &b_s, &mut o2, &out_s, act);
        for i in 0..n {
            prop_assert!(same(o1[i], o2[i]), "{op:?} {a_s:?} {b_s:?} -> {out_s:?} at {i}: {} vs {}", o1[i], o2[i]);
        }
    }

    // Integer ops are exact.
    #[test]
    fn int_matches_ref((out_s, a_s, b_s) in shapes(), seed in any::<u64>(), op_i in 0usize..10) {
        let op = OPS[op_i];
        let a: Vec<i32> = values(a_s.iter().product(), seed).iter().map(|v| (v * 4.0) as i32).collect();
        let b: Vec<i32> = values(b_s.iter().product(), seed ^ 99).iter().map(|v| (v * 4.0) as i32).collect();
        let n: usize = out_s.iter().product();
        let (mut o1, mut o2) = (vec![0; n], vec![0; n]);
        binary_i32(op, &a, &a_s, &b, &b_s, &mut o1, &out_s);
        broadcast_ref(&a, &a_s, &b, &b_s, &mut o2, &out_s, |x, y| op_int(op, x, y));
        prop_assert_eq!(&o1, &o2);
        let a64: Vec<i64> = a.iter().map(|&v| v as i64 * 1_000_003).collect();
        let b64: Vec<i64> = b.iter().map(|&v| v as i64).collect();
        let (mut p1, mut p2) = (vec![0; n], vec![0; n]);
        binary_i64(op, &a64, &a_s, &b64, &b_s, &mut p1, &out_s);
        broadcast_ref(&a64, &a_s, &b64, &b_s, &mut p2, &out_s, |x, y| op_int(op, x, y));
        prop_assert_eq!(&p1, &p2);
    }
}

/// `[N,H,W,C]` against the broadcasts the one-op models measure (same, scalar, inner
/// `[C]`, outer `[N,H,W,1]`, middle `[1,H,1,C]`) and others, either operand first, rows
/// long enough for the walking vector routine, on one thread and on two.
fn nhwc_broadcasts() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    (1usize..3, 1usize..9, 1usize..9, 1usize..70, 0usize..7, any::<bool>()).prop_map(|(n, h, w, c, kind, swap)| {
        let x = vec![n, h, w, c];
        let k = match kind {
            0 => x.clone(),
            1 => vec![1],
            2 => vec![1, 1, 1, c],
            3 => vec![n, h, w, 1],
            4 => vec![1, h, 1, c],
            5 => vec![n, 1, w, c],
            _ => vec![h, 1, 1],
        };
        let out = broadcast_shape(&x, &k).unwrap_or_else(|| x.clone());
        if swap { (out, k, x) } else { (out, x, k) }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn f32_walked_rows_match_ref((out_s, a_s, b_s) in nhwc_broadcasts(), seed in any::<u64>(), op_i in 0usize..10, act_i in 0usize..3, two in any::<bool>()) {
        let op = OPS[op_i];
        let act = [Act::NONE, Act::RELU6, Act::RELU_N1_TO_1][act_i];
        let mut a = values(a_s.iter().product(), seed);
        let b = values(b_s.iter().product(), seed.wrapping_mul(31) ^ 7);
        if let Some(v) = a.get_mut(3) {
            *v = f32::NAN;
        }
        let n: usize = out_s.iter().product();
        let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
        let pool = nnrt_threads::KernelPool::new(if two { 2 } else { 1 }).unwrap();
        pool.install(|| binary(op, &a, &a_s, &b, &b_s, &mut o1, &out_s, act));
        binary_ref(op, &a, &a_s, &b, &b_s, &mut o2, &out_s, act);
        for i in 0..n {
            prop_assert!(same(o1[i], o2[i]), "{op:?} {a_s:?} {b_s:?} -> {out_s:?} at {i}: {} vs {}", o1[i], o2[i]);
        }
    }
}

#[test]
fn large_shapes_split_across_threads() {
    for (a_s, b_s, out_s) in [
        (vec![300, 17, 64], vec![64], vec![300, 17, 64]),
        (vec![300, 17, 64], vec![300, 17, 64], vec![300, 17, 64]),
        (vec![300, 1, 64], vec![1, 17, 1], vec![300, 17, 64]),
        (vec![1], vec![70_001], vec![70_001]),
    ] {
        let a = values(a_s.iter().product(), 1);
        let b = values(b_s.iter().product(), 2);
        let n: usize = out_s.iter().product();
        let (mut o1, mut o2) = (vec![0.0; n], vec![0.0; n]);
        binary(
            BinaryOp::Sub,
            &a,
            &a_s,
            &b,
            &b_s,
            &mut o1,
            &out_s,
            Act::RELU,
        );
        binary_ref(
            BinaryOp::Sub,
            &a,
            &a_s,
            &b,
            &b_s,
            &mut o2,
            &out_s,
            Act::RELU,
        );
        assert!(
            o1.iter().zip(&o2).all(|(x, y)| same(*x, *y)),
            "{a_s:?} {b_s:?}"
        );
    }
}

#[test]
fn tflite_rules() {
    let f = |op, a: f32, b: f32| {
        let mut o = [0.0];
        binary(op, &[a], &[1], &[b], &[1], &mut o, &[1], Act::NONE);
        o[0]
    };
    assert_eq!(f(BinaryOp::FloorMod, -7.0, 3.0), 2.0);
    assert_eq!(f(BinaryOp::FloorMod, 7.0, -3.0), -2.0);
    assert_eq!(f(BinaryOp::FloorMod, 6.0, -3.0), 0.0);
    assert_eq!(f(BinaryOp::FloorDiv, -7.0, 2.0), -4.0);
    assert!(f(BinaryOp::Maximum, f32::NAN, 1.0) == 1.0);
    assert!(f(BinaryOp::Maximum, 1.0, f32::NAN).is_nan());
    // The fused clamp lets NaN through, like std::min(std::max(x, lo), hi).
    let mut o = [0.0];
    binary(
        BinaryOp::Add,
        &[f32::NAN],
        &[],
        &[1.0],
        &[],
        &mut o,
        &[],
        Act::RELU6,
    );
    assert!(o[0].is_nan());
    let g = |op, a: i32, b: i32| {
        let mut o = [0];
        binary_i32(op, &[a], &[1], &[b], &[1], &mut o, &[1]);
        o[0]
    };
    assert_eq!(g(BinaryOp::Div, -7, 2), -3);
    assert_eq!(g(BinaryOp::FloorDiv, -7, 2), -4);
    assert_eq!(g(BinaryOp::FloorMod, -7, 3), 2);
    assert_eq!(g(BinaryOp::FloorMod, 7, -3), -2);
    assert_eq!(g(BinaryOp::Pow, 3, 4), 81);
    assert_eq!(g(BinaryOp::Div, i32::MIN, -1), i32::MIN);
    assert_eq!(broadcast_shape(&[4, 1, 3], &[5, 1]), Some(vec![4, 5, 3]));
    assert_eq!(broadcast_shape(&[2, 3], &[4, 3]), None);
    assert_eq!(broadcast_shape(&[], &[2]), Some(vec![2]));
}
