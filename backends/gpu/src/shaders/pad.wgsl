// Constant padding of up to 6 dims, 4-byte elements. Params: 0 outputs; 1..7 output dims;
// 7..13 input dims; 13..19 cells before, per dim; 19 the pad value (bits).

fn item(t: u32) {
    var rest = t;
    var src = 0u;
    var stride = 1u;
    var inside = true;
    for (var d = 5i; d >= 0i; d--) {
        let k = u32(d);
        let c = i32(rest % pu(1u + k)) - i32(pu(13u + k));
        rest = rest / pu(1u + k);
        let n = pu(7u + k);
        if (c < 0i || c >= i32(n)) {
            inside = false;
        } else {
            src += u32(c) * stride;
        }
        stride *= n;
    }
    O[t] = select(pu(19u), X[src], inside);
}
