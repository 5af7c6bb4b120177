//! Activations: the RELU family, LEAKY_RELU, PRELU, ELU, HARD_SWISH, LOGISTIC, TANH, GELU.

use nnrt_core::{DType, OpKind, UnaryOp};
use nnrt_tests::reference::T;
use nnrt_tests::{f, rand, BuiltinOperator as Op, Case, Graph, Options, Tol, XorShift};

use crate::{tflite_unary, GPU_MATH};

nnrt_tests::replay_on_every_target!(ir_cases, prelu_cases, tflite_cases);

/// erf by its series (|x| < 3) or continued fraction: Abramowitz-Stegun 7.1.26 is not precise
/// enough for GELU's reference.
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let r = if z < 3.0 {
        let (mut term, mut sum, mut k) = (z, z, 0.0);
        loop {
            k += 1.0;
            term *= -z * z / k;
            let t = term / (2.0 * k + 1.0);
            sum += t;
            if t.abs() < 1e-17 {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        let mut fr = z;
        for k in (1..200).rev() {
            fr = z + (k as f64 * 0.5) / fr;
        }
        1.0 - (-z * z).exp() / std::f64::consts::PI.sqrt() / fr
    };
    r.copysign(x)
}

fn ir_cases() -> Vec<Case> {
    let x = rand(60, 21, -8.0, 8.0);
    type Fn1 = fn(f32) -> f32;
    let rows: [(UnaryOp, Fn1); 11] = [
        (UnaryOp::Relu, |v| v.max(0.0)),
        (UnaryOp::Relu6, |v| v.clamp(0.0, 6.0)),
        (UnaryOp::ReluN1To1, |v| v.clamp(-1.0, 1.0)),
        (UnaryOp::Relu0To1, |v| v.clamp(0.0, 1.0)),
        (UnaryOp::LeakyRelu(0.3), |v| if v > 0.0 { v } else { 0.3 * v }),
        (UnaryOp::Elu, |v| if v < 0.0 { v.exp_m1() } else { v }),
        (UnaryOp::HardSwish, |v| v * (v + 3.0).clamp(0.0, 6.0) / 6.0),
        (UnaryOp::Logistic, |v| 1.0 / (1.0 + (-v).exp())),
        (UnaryOp::Tanh, f32::tanh),
        (UnaryOp::Gelu { approximate: false }, |v| (0.5 * v as f64 * (1.0 + erf(v as f64 / std::f64::consts::SQRT_2))) as f32),
        (UnaryOp::Gelu { approximate: true }, |v| 0.5 * v * (1.0 + ((2.0 / std::f32::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())),
    ];
    let tol = Tol::new(4e-6, 4e-6, "vectorized exp/tanh/erf, and hard swish's three roundings, may differ by a few ulp");
    rows.into_iter()
        .map(|(op, want)| {
            let g = Graph::unary(OpKind::Unary(op), &[3, 20], f(&x), DType::F32);
            Case::new(format!("activation {op:?}"), &g).out_close(0, f(&x.iter().map(|&v| want(v)).collect::<Vec<_>>()), tol).gpu_tol(GPU_MATH)
        })
        .collect()
}

fn prelu_cases() -> Vec<Case> {
    let x = rand(2 * 3 * 4 * 5, 31, -2.0, 2.0);
    let mut cases = Vec::new();
    for ad in [vec![5], vec![1, 1, 5], vec![3, 1, 5], vec![1]] {
        let alpha = rand(ad.iter().product(), 32, -0.5, 1.5);
        let mut g = Graph::new();
        let xi = g.input(&[2, 3, 4, 5], f(&x));
        let ai = g.konst(&ad, f(&alpha));
        let y = g.out(DType::F32, &[2, 3, 4, 5]);
        g.op(OpKind::Prelu, &[Some(xi), Some(ai)], &[y]);
        let want: Vec<f32> = (0..x.len())
            .map(|k| {
                let (c, h) = (k % 5, (k / 20) % 3);
                let a = match ad.len() {
                    1 if ad[0] == 1 => alpha[0],
                    1 | 3 if ad[0] != 3 => alpha[c],
                    _ => alpha[h * 5 + c],
                };
                if x[k] >= 0.0 {
                    x[k]
                } else {
                    x[k] * a
                }
            })
            .collect();
        cases.push(Case::new(format!("prelu_broadcasts_alpha {ad:?}"), &g).out(0, f(&want)).no_gpu("no Prelu kernel"));
    }
    cases
}

/// Activations through the TFLite reader on [-8, 8) (every clamp and saturation point) with
/// exact values at the kinks.
fn tflite_case(name: &str, code: Op, options: Options, fun: impl Fn(f32) -> f32, tol: Tol) -> Case {
    let mut data = XorShift::new(180).fill(2 * 3 * 37, -8.0, 8.0);
    data[..9].copy_from_slice(&[-6.0, -3.0, -1.0, -0.0, 0.0, 1.0, 3.0, 6.0, 7.5]);
    let x = T::new(&[2, 3, 37], data);
    tflite_unary(name, &x, &x.map(fun), tol, |b, xi, y| {
        b.op(code, &[xi], &[y], options);
    })
    .gpu_tol(GPU_MATH)
}

fn tflite_cases() -> Vec<Case> {
    let transcendental = Tol::new(2e-6, 0.0, "vectorized exp/tanh are accurate to a few ulp of a result in [-1, 1]");
    vec![
        tflite_case("RELU", Op::RELU, Options::None, |v| v.max(0.0), Tol::EXACT),
        tflite_case("RELU6", Op::RELU6, Options::None, |v| v.clamp(0.0, 6.0), Tol::EXACT),
        tflite_case("RELU_N1_TO_1", Op::RELU_N1_TO_1, Options::None, |v| v.clamp(-1.0, 1.0), Tol::EXACT),
        tflite_case("LOGISTIC", Op::LOGISTIC, Options::None, |v| (1.0 / (1.0 + (-(v as f64)).exp())) as f32, transcendental),
        tflite_case("TANH", Op::TANH, Options::None, |v| (v as f64).tanh() as f32, transcendental),
        // x * relu6(x + 3) / 6: three roundings; 1 ulp of |x| ≤ 8 is ~1e-6.
        tflite_case("HARD_SWISH", Op::HARD_SWISH, Options::None, |v| v * (v + 3.0).clamp(0.0, 6.0) / 6.0, Tol::new(1e-6, 1e-6, "three roundings; 1 ulp of |x| <= 8 is ~1e-6")),
        tflite_case("LEAKY_RELU 0.3", Op::LEAKY_RELU, Options::LeakyRelu { alpha: 0.3 }, |v| if v >= 0.0 { v } else { 0.3 * v }, Tol::EXACT),
    ]
}
