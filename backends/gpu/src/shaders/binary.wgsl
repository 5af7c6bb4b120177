// Element-wise binary ops with NumPy broadcasting over up to 6 dims.
// Params: 0 n; 1..7 output dims; 7..13 strides of a; 13..19 strides of b (0 where broadcast).
// SAME = 1 when a, b and the output have one shape (no index arithmetic).

@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;

override OP: u32 = 0u;
override SAME: u32 = 0u;

fn pow_tflite(x: f32, y: f32) -> f32 {
    if (y == 0.0) {
        return 1.0;
    }
    let m = pow(abs(x), y);
    if (x >= 0.0) {
        return m;
    }
    if (floor(y) != y) {
        return bitcast<f32>(0x7fc00000u);
    }
    let odd = (abs(y) % 2.0) == 1.0;
    return select(m, -m, odd);
}

fn apply(a: f32, b: f32) -> f32 {
    switch OP {
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u: { return a / b; }
        case 4u: { return pow_tflite(a, b); }
        case 5u: { let d = a - b; return d * d; }
        case 6u: { return select(b, a, a > b); }
        case 7u: { return select(b, a, a < b); }
        case 8u: { return floor(a / b); }
        case 9u: {
            let m = a % b;
            return select(m, m + b, m != 0.0 && ((b < 0.0) != (m < 0.0)));
        }
        default: { return a; }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = linear(gid, groups);
    if (i >= pu(0u)) {
        return;
    }
    var ia = i;
    var ib = i;
    if (SAME == 0u) {
        ia = 0u;
        ib = 0u;
        var rest = i;
        for (var d = 5i; d >= 0i; d--) {
            let k = u32(d);
            let c = rest % pu(1u + k);
            rest = rest / pu(1u + k);
            ia += c * pu(7u + k);
            ib += c * pu(13u + k);
        }
    }
    O[i] = act(apply(A[ia], B[ib]));
}
