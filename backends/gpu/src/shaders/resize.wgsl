// NHWC resize as TFLite's reference kernels compute it. MODE 0 bilinear, 1 nearest; HALF = 1
// for half-pixel centres; ALIGN = 1 for aligned corners. Params: 0 outputs; 1 N; 2 H; 3 W; 4 C;
// 5 OH; 6 OW; 7 height scale (f32 bits); 8 width scale (f32 bits).

override MODE: u32 = 0u;
override HALF: u32 = 0u;
override ALIGN: u32 = 0u;

fn round_away(x: f32) -> f32 {
    return select(floor(x + 0.5), -floor(-x + 0.5), x < 0.0);
}

fn nearest(v: u32, scale: f32, size: u32) -> u32 {
    let off = select(0.0, 0.5, HALF == 1u);
    let s = (f32(v) + off) * scale;
    var r = i32(select(floor(s), round_away(s), ALIGN == 1u));
    r = min(r, i32(size) - 1i);
    if (HALF == 1u) {
        r = max(r, 0i);
    }
    return u32(r);
}

fn item(t: u32) {
    let H = pu(2u);
    let Wd = pu(3u);
    let pos = out_pos(t, pu(4u));
    let n = pos.x;
    let oy = pos.y;
    let ox = pos.z;
    let c = pos.w;
    let hs = pf(7u);
    let ws = pf(8u);
    if (MODE == 1u) {
        let y = nearest(oy, hs, H);
        let x = nearest(ox, ws, Wd);
        O[t] = X[in_pixel(n, y, x) + c];
        return;
    }
    var iy = f32(oy) * hs;
    var ix = f32(ox) * ws;
    if (HALF == 1u) {
        iy = (f32(oy) + 0.5) * hs - 0.5;
        ix = (f32(ox) + 0.5) * ws - 0.5;
    }
    let y0 = max(i32(floor(iy)), 0i);
    let y1 = min(i32(ceil(iy)), i32(H) - 1i);
    let x0 = max(i32(floor(ix)), 0i);
    let x1 = min(i32(ceil(ix)), i32(Wd) - 1i);
    let dy = iy - f32(y0);
    let dx = ix - f32(x0);
    let v00 = X[in_pixel(n, u32(y0), u32(x0)) + c];
    let v10 = X[in_pixel(n, u32(y1), u32(x0)) + c];
    let v01 = X[in_pixel(n, u32(y0), u32(x1)) + c];
    let v11 = X[in_pixel(n, u32(y1), u32(x1)) + c];
    O[t] = v00 * (1.0 - dy) * (1.0 - dx) + v10 * dy * (1.0 - dx) + v01 * (1.0 - dy) * dx + v11 * dy * dx;
}
