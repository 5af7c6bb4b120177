// NHWC depthwise convolution; weights [KH][KW][C * multiplier] as TFLite stores them. One output
// element per thread. Params: 0 threads; 1 N; 2 H; 3 W; 4 Cin; 5 OH; 6 OW; 7 Cout; 8 KH; 9 KW;
// 10 SH; 11 SW; 12 DH; 13 DW; 14 pad top; 15 pad left; 16 multiplier.

alias ACC = f32;

// One kernel position: input channel `ch.x` of the pixel at `xb` times output channel `ch.y`'s weight.
fn tap(acc: ACC, xb: u32, k: u32, ch: vec4<u32>) -> ACC {
    return acc + X[xb + ch.x] * f32(W[k * pu(7u) + ch.y]);
}

fn item(t: u32) {
    let pos = out_pos(t, pu(7u));
    let oc = pos.w;
    let ic = oc / pu(16u);
    O[t] = act(window(BIAS[oc], pos.x, pos.y, pos.z, vec4<u32>(ic, oc, 0u, 0u)));
}
