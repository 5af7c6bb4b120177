// Reductions over any set of axes of a tensor of up to 6 dims. One output element per thread.
// OP: 0 mean, 1 sum, 2 max, 3 min, 4 product. Params: 0 outputs; 1 reduced elements per output;
// 2..8 input dims; 8..14 input strides; 14..20 1 where the axis is reduced.

override OP: u32 = 0u;

// Offset of index `i` over the dims whose reduced flag is `reduced` (the other dims at 0).
fn offset_over(i: u32, reduced: u32) -> u32 {
    var off = 0u;
    var rest = i;
    for (var d = 5i; d >= 0i; d--) {
        let k = u32(d);
        if (pu(14u + k) == reduced) {
            off += (rest % pu(2u + k)) * pu(8u + k);
            rest = rest / pu(2u + k);
        }
    }
    return off;
}

fn item(t: u32) {
    // Offset of the first input element of this output: kept dims from t, reduced dims at 0.
    let base = offset_over(t, 0u);
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
        let v = X[base + offset_over(r, 1u)];
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
