// Shared by every nnrt shader: the parameter block, the 1-D thread index and fused activations.

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

// Linear thread index of a 1-D kernel dispatched as a 2-D grid of 64-wide workgroups.
fn linear(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * 64u;
}

// Position of NHWC element `t` of a [N, OH, OW, C] tensor as (n, y, x, c).
fn nhwc(t: u32, OH: u32, OW: u32, C: u32) -> vec4<u32> {
    let c = t % C;
    let r = t / C;
    return vec4<u32>(r / (OW * OH), (r / OW) % OH, r % OW, c);
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
