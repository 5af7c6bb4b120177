// NHWC pooling over in-bounds cells (TFLite: average divides by the count of cells inside).
// KIND: 0 average, 1 max, 2 L2. Params: 0 threads; 1 N; 2 H; 3 W; 4 C; 5 OH; 6 OW; 7 FH; 8 FW;
// 9 SH; 10 SW; 11 pad top; 12 pad left.

override KIND: u32 = 0u;

fn item(t: u32) {
    let H = i32(pu(2u));
    let Wd = i32(pu(3u));
    let pos = out_pos(t, pu(4u));
    let n = pos.x;
    let oy = pos.y;
    let ox = pos.z;
    let c = pos.w;
    let y0 = i32(oy * pu(9u)) - i32(pu(11u));
    let x0 = i32(ox * pu(10u)) - i32(pu(12u));
    let ys = max(y0, 0i);
    let ye = min(y0 + i32(pu(7u)), H);
    let xs = max(x0, 0i);
    let xe = min(x0 + i32(pu(8u)), Wd);
    var acc = 0.0;
    if (KIND == 1u) {
        acc = -3.40282347e38;
    }
    for (var y = ys; y < ye; y++) {
        for (var x = xs; x < xe; x++) {
            let v = X[in_pixel(n, u32(y), u32(x)) + c];
            if (KIND == 1u) {
                acc = select(acc, v, v > acc);
            } else if (KIND == 2u) {
                acc += v * v;
            } else {
                acc += v;
            }
        }
    }
    let count = f32(max(ye - ys, 0i) * max(xe - xs, 0i));
    if (KIND == 0u) {
        acc = acc / count;
    } else if (KIND == 2u) {
        acc = sqrt(acc / count);
    }
    O[t] = act(acc);
}
