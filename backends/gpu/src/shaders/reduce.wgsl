// Reductions over any set of axes of a tensor of up to 6 dims. One output element per thread
// (`reduce_wide` takes outputs of many elements).
// OP: 0 mean, 1 sum, 2 max, 3 min, 4 product. Params: 0 outputs; 1 reduced elements per output;
// 2..8 input dims; 8..14 input strides; 14..20 1 where the axis is reduced.

override OP: u32 = 0u;

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
