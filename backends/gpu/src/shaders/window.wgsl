// The window of a 2-D convolution, params 8 KH; 9 KW; 10 SH; 11 SW; 12 DH; 13 DW; 14 pad top;
// 15 pad left (padding by bounds checks, no copies). The family defines the accumulator type
// `ACC` and `fn tap(acc: ACC, pixel: u32, k: u32, sel: vec4<u32>) -> ACC`.

// Folds `tap` over the kernel positions k = ky * KW + kx of output pixel (n, oy, ox) that fall
// inside the input, row by row, starting from `acc0`; `pixel` is the input pixel's offset.
fn window(acc0: ACC, n: u32, oy: u32, ox: u32, sel: vec4<u32>) -> ACC {
    let H = pu(2u);
    let Wd = pu(3u);
    let KH = pu(8u);
    let KW = pu(9u);
    var acc = acc0;
    let iy0 = i32(oy * pu(10u)) - i32(pu(14u));
    let ix0 = i32(ox * pu(11u)) - i32(pu(15u));
    for (var ky = 0u; ky < KH; ky++) {
        let iy = iy0 + i32(ky * pu(12u));
        if (iy < 0i || iy >= i32(H)) {
            continue;
        }
        for (var kx = 0u; kx < KW; kx++) {
            let ix = ix0 + i32(kx * pu(13u));
            if (ix < 0i || ix >= i32(Wd)) {
                continue;
            }
            acc = tap(acc, in_pixel(n, u32(iy), u32(ix)), ky * KW + kx, sel);
        }
    }
    return acc;
}
