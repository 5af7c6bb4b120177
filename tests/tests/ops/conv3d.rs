//! CONV_3D and CONV_3D_TRANSPOSE through the TFLite reader against their definitions (TFLite's
//! reference loops, written out here).

use nnrt_tests::{f, Act, BuiltinOperator as Op, Case, ModelBuilder, Options, Padding, TensorType, Tol, XorShift};

use crate::dims_i32;

nnrt_tests::replay_on_every_target!(conv3d_cases, transpose_cases);

/// Up to 3·3·3·3 products of values in [-2, 2], summed in another order.
const SUMS_3D: Tol = Tol::new(1e-4, 1e-4, "up to 81 products of values in [-2, 2], summed in another order");

/// `n` seeded values in [-2, 2] on a grid of 1/500.
fn vals(rng: &mut XorShift, n: usize) -> Vec<f32> {
    (0..n).map(|_| (rng.below(2001) as f32 - 1000.0) / 500.0).collect()
}

struct Conv3d {
    x: [usize; 5],
    k: [usize; 3],
    out_c: usize,
    stride: [usize; 3],
    dilation: [usize; 3],
    same: bool,
    relu6: bool,
}

/// `out[b, z, y, x, o] = act(bias[o] + Σ in[b, z·s + kd·r − pd, …, c] · w[kd, kh, kw, c, o])`
/// over taps inside the input, TFLite's SAME padding `max(0, (out − 1)·s + (k − 1)·r + 1 − in) / 2`.
fn definition(c: &Conv3d, x: &[f32], w: &[f32], bias: &[f32]) -> (Vec<usize>, Vec<f32>) {
    let [n, d, h, wd, ci] = c.x;
    let input = [d, h, wd];
    let mut out = [0; 3];
    let mut pad = [0; 3];
    for a in 0..3 {
        let eff = (c.k[a] - 1) * c.dilation[a] + 1;
        out[a] = if c.same { input[a].div_ceil(c.stride[a]) } else { (input[a] - eff) / c.stride[a] + 1 };
        pad[a] = if c.same { ((out[a] - 1) * c.stride[a] + eff).saturating_sub(input[a]) / 2 } else { 0 };
    }
    let co = c.out_c;
    let mut y = vec![0.0f32; n * out.iter().product::<usize>() * co];
    let at = |a: usize, o: usize, t: usize| (o * c.stride[a] + t * c.dilation[a]).checked_sub(pad[a]).filter(|&i| i < input[a]);
    for b in 0..n {
        for z in 0..out[0] {
            for yy in 0..out[1] {
                for xx in 0..out[2] {
                    for o in 0..co {
                        let mut s = 0.0f32;
                        for kd in 0..c.k[0] {
                            for kh in 0..c.k[1] {
                                for kw in 0..c.k[2] {
                                    let (Some(p), Some(q), Some(r)) = (at(0, z, kd), at(1, yy, kh), at(2, xx, kw)) else { continue };
                                    for ch in 0..ci {
                                        s += x[(((b * d + p) * h + q) * wd + r) * ci + ch] * w[(((kd * c.k[1] + kh) * c.k[2] + kw) * ci + ch) * co + o];
                                    }
                                }
                            }
                        }
                        let v = s + bias[o];
                        y[(((b * out[0] + z) * out[1] + yy) * out[2] + xx) * co + o] = if c.relu6 { v.clamp(0.0, 6.0) } else { v };
                    }
                }
            }
        }
    }
    (vec![n, out[0], out[1], out[2], co], y)
}

fn options(same: bool, stride: [usize; 3], dilation: [usize; 3], act: Act) -> Options {
    Options::Conv3D { padding: if same { Padding::SAME } else { Padding::VALID }, stride: stride.map(|v| v as i32), dilation: dilation.map(|v| v as i32), act }
}

fn conv3d(name: &str, c: Conv3d, seed: u64) -> Case {
    let mut rng = XorShift::new(seed);
    let ci = c.x[4];
    let x = vals(&mut rng, c.x.iter().product());
    let w = vals(&mut rng, c.k.iter().product::<usize>() * ci * c.out_c);
    let bias = vals(&mut rng, c.out_c);
    let (out_dims, want) = definition(&c, &x, &w, &bias);
    let mut b = ModelBuilder::new();
    let xi = b.input("x", TensorType::FLOAT32, &dims_i32(&c.x));
    let wi = b.constant_f32("w", &dims_i32(&[c.k[0], c.k[1], c.k[2], ci, c.out_c]), &w);
    let bi = b.constant_f32("b", &[c.out_c as i32], &bias);
    let yi = b.tensor("y", TensorType::FLOAT32, &dims_i32(&out_dims));
    b.op(Op::CONV_3D, &[xi, wi, bi], &[yi], options(c.same, c.stride, c.dilation, if c.relu6 { Act::RELU6 } else { Act::NONE }));
    b.output(yi);
    Case::tflite(name, &b, vec![f(&x)]).dims(0, &out_dims).out_close(0, f(&want), SUMS_3D).no_gpu("no Conv3D kernel")
}

fn conv3d_cases() -> Vec<Case> {
    let mut b = ModelBuilder::new();
    let xi = b.input("x", TensorType::FLOAT32, &[1, 3, 3, 3, 2]);
    let wi = b.constant_f32("w", &[1, 1, 1, 3, 4], &[0.5; 12]);
    let yi = b.tensor("y", TensorType::FLOAT32, &[1, 3, 3, 3, 4]);
    b.op(Op::CONV_3D, &[xi, wi], &[yi], options(true, [1; 3], [1; 3], Act::NONE));
    b.output(yi);
    vec![
        conv3d("same padding stride one", Conv3d { x: [1, 4, 5, 6, 3], k: [3, 3, 3], out_c: 4, stride: [1; 3], dilation: [1; 3], same: true, relu6: false }, 1),
        conv3d("valid padding with strides and relu6", Conv3d { x: [2, 5, 7, 6, 2], k: [2, 3, 2], out_c: 3, stride: [2, 1, 2], dilation: [1; 3], same: false, relu6: true }, 2),
        conv3d("same padding with dilation and stride", Conv3d { x: [1, 6, 6, 5, 3], k: [3, 2, 3], out_c: 2, stride: [1, 2, 2], dilation: [2, 1, 2], same: true, relu6: false }, 3),
        Case::tflite("neg_a_filter_with_other_input_channels", &b, vec![]).prepare_error(&["Conv3D", "channels"]),
    ]
}

/// CONV_3D_TRANSPOSE on `x` `[n, d, h, w, ci]` into `out` dims, by the definition: each input
/// value times each filter tap `[kd, kh, kw, co, ci]` lands on output
/// `(z·s + kd·r − pad, …)`, with the padding of a convolution from the output back to the input.
#[allow(clippy::too_many_arguments)]
fn transpose_definition(x: &[f32], xd: [usize; 5], w: &[f32], k: [usize; 3], bias: &[f32], out: [usize; 5], stride: [usize; 3], dil: [usize; 3], same: bool) -> Vec<f32> {
    let co = out[4];
    let mut pad = [0usize; 3];
    for a in 0..3 {
        if same {
            let eff = (k[a] - 1) * dil[a] + 1;
            let o = out[1 + a].div_ceil(stride[a]);
            pad[a] = ((o - 1) * stride[a] + eff).saturating_sub(out[1 + a]) / 2;
        }
    }
    let mut y = vec![0.0f32; out.iter().product()];
    for b in 0..xd[0] {
        for z in 0..xd[1] {
            for yy in 0..xd[2] {
                for xx in 0..xd[3] {
                    for c in 0..xd[4] {
                        let v = x[(((b * xd[1] + z) * xd[2] + yy) * xd[3] + xx) * xd[4] + c];
                        for kd in 0..k[0] {
                            for kh in 0..k[1] {
                                for kw in 0..k[2] {
                                    let pos = [z * stride[0] + kd * dil[0], yy * stride[1] + kh * dil[1], xx * stride[2] + kw * dil[2]];
                                    let p: Vec<Option<usize>> = (0..3).map(|a| pos[a].checked_sub(pad[a]).filter(|&q| q < out[1 + a])).collect();
                                    let (Some(d), Some(h), Some(ww)) = (p[0], p[1], p[2]) else { continue };
                                    for o in 0..co {
                                        y[(((b * out[1] + d) * out[2] + h) * out[3] + ww) * co + o] += v * w[(((kd * k[1] + kh) * k[2] + kw) * co + o) * xd[4] + c];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for px in y.chunks_exact_mut(co) {
        for (o, v) in px.iter_mut().enumerate() {
            *v += bias[o];
        }
    }
    y
}

fn transpose_cases() -> Vec<Case> {
    // (input, kernel, output, stride, dilation, SAME)
    type Row = ([usize; 5], [usize; 3], [usize; 5], [usize; 3], [usize; 3], bool);
    let rows: [Row; 2] = [
        ([1, 3, 4, 2, 3], [3, 3, 2], [1, 6, 8, 4, 2], [2, 2, 2], [1, 1, 1], true),
        ([2, 2, 3, 3, 2], [2, 2, 2], [2, 4, 5, 5, 3], [1, 1, 1], [2, 2, 2], false),
    ];
    let mut cases = Vec::new();
    for (k_case, (xd, k, od, stride, dil, same)) in rows.into_iter().enumerate() {
        let mut rng = XorShift::new(k_case as u64 + 9);
        let x = vals(&mut rng, xd.iter().product());
        let w = vals(&mut rng, k.iter().product::<usize>() * od[4] * xd[4]);
        let bias = vals(&mut rng, od[4]);
        let want = transpose_definition(&x, xd, &w, k, &bias, od, stride, dil, same);
        let mut b = ModelBuilder::new();
        let shape = b.constant_i32("output_shape", &[5], &dims_i32(&od));
        let wi = b.constant_f32("w", &dims_i32(&[k[0], k[1], k[2], od[4], xd[4]]), &w);
        let xi = b.input("x", TensorType::FLOAT32, &dims_i32(&xd));
        let bi = b.constant_f32("b", &[od[4] as i32], &bias);
        let yi = b.tensor("y", TensorType::FLOAT32, &dims_i32(&od));
        b.op(Op::CONV_3D_TRANSPOSE, &[shape, wi, xi, bi], &[yi], options(same, stride, dil, Act::NONE));
        b.output(yi);
        let case = Case::tflite(format!("transposed 3d convolution case {k_case}"), &b, vec![f(&x)]).dims(0, &od).out_close(0, f(&want), SUMS_3D);
        cases.push(case.no_gpu("no Conv3DTranspose kernel"));
    }
    cases
}
