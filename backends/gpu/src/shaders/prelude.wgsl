// Shared by every nnrt shader: the parameter block and fused activations.

// Up to 64 parameters (u32, or f32 as bits) per dispatch, in one uniform block.
struct Params {
    d: array<vec4<u32>, 16>,
}

@group(0) @binding(0) var<uniform> P: Params;

fn pu(i: u32) -> u32 {
    return P.d[i >> 2u][i & 3u];
}

fn pf(i: u32) -> f32 {
    return bitcast<f32>(pu(i));
}

// Fused activation (TFLite's ActivationFunctionType): 0 none, 1 relu, 2 relu_n1_to_1, 3 relu6,
// 4 tanh. Clamps keep NaN as TFLite's min(max(x, lo), hi) does.
override ACT: u32 = 0u;

fn clamp_nan(x: f32, lo: f32, hi: f32) -> f32 {
    let a = select(x, lo, x < lo);
    return select(a, hi, a > hi);
}

fn tanh_safe(x: f32) -> f32 {
    let e = exp(-2.0 * abs(x));
    let t = (1.0 - e) / (1.0 + e);
    return select(t, -t, x < 0.0);
}

fn act(x: f32) -> f32 {
    switch ACT {
        case 1u: { return select(x, 0.0, x < 0.0); }
        case 2u: { return clamp_nan(x, -1.0, 1.0); }
        case 3u: { return clamp_nan(x, 0.0, 6.0); }
        case 4u: { return tanh_safe(x); }
        default: { return x; }
    }
}
