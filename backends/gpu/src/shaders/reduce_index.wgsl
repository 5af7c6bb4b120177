// Element offsets of the reductions (`reduce`, `reduce_wide`). Params: 2..8 input dims; 8..14
// input strides; 14..20 1 where the axis is reduced.

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
