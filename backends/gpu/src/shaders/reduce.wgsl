// Reductions over any set of axes of a tensor of up to 6 dims. One output element per thread.
// OP: 0 mean, 1 sum, 2 max, 3 min, 4 product. Params: 0 outputs; 1 reduced elements per output;
// 2..8 input dims; 8..14 input strides; 14..20 1 where the axis is reduced.

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;

override OP: u32 = 0u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let t = linear(gid, groups);
    if (t >= pu(0u)) {
        return;
    }
    // Offset of the first input element of this output: kept dims from t, reduced dims at 0.
    var base = 0u;
    var rest = t;
    for (var d = 5i; d >= 0i; d--) {
        let k = u32(d);
        if (pu(14u + k) == 0u) {
            base += (rest % pu(2u + k)) * pu(8u + k);
            rest = rest / pu(2u + k);
        }
    }
    let R = pu(1u);
    var acc = 0.0;
    if (OP == 2u) {
        acc = -3.40282347e38;
    } else if (OP == 3u) {
        acc = 3.40282347e38;
    } else if (OP == 4u) {
        acc = 1.0;
    }
    for (var r = 0u; r < R; r++) {
        var off = base;
        var q = r;
        for (var d = 5i; d >= 0i; d--) {
            let k = u32(d);
            if (pu(14u + k) == 1u) {
                off += (q % pu(2u + k)) * pu(8u + k);
                q = q / pu(2u + k);
            }
        }
        let v = X[off];
        switch OP {
            case 2u: { acc = select(acc, v, v > acc); }
            case 3u: { acc = select(acc, v, v < acc); }
            case 4u: { acc *= v; }
            default: { acc += v; }
        }
    }
    if (OP == 0u) {
        acc = acc / f32(R);
    }
    O[t] = acc;
}
