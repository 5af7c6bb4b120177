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

fn item(i: u32) {
    var ia = i;
    var ib = i;
    if (SAME == 0u) {
        let o = offsets6(i, 1u, 7u, 13u);
        ia = o.x;
        ib = o.y;
    }
    O[i] = act(apply(A[ia], B[ib]));
}
