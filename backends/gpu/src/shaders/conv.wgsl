// NHWC 2-D convolution, any stride/dilation/padding. Weights are read as TFLite stores them,
// [Cout][KH][KW][Cin]. Each thread computes 4 output channels of one pixel.
// Params: 0 threads; 1 N; 2 H; 3 W; 4 Cin; 5 OH; 6 OW; 7 Cout; 8 KH; 9 KW; 10 SH; 11 SW; 12 DH;
// 13 DW; 14 pad top; 15 pad left.

alias ACC = vec4<f32>;

// One kernel position: the Cin inputs of the pixel at `xb` times the weights of the 4 output
// channels whose filters start at `w`.
fn tap(acc0: ACC, xb: u32, k: u32, w: vec4<u32>) -> ACC {
    let Cin = pu(4u);
    var acc = acc0;
    let wb = k * Cin;
    for (var c = 0u; c < Cin; c++) {
        let i = wb + c;
        acc += X[xb + c] * vec4<f32>(f32(W[w.x + i]), f32(W[w.y + i]), f32(W[w.z + i]), f32(W[w.w + i]));
    }
    return acc;
}

fn item(t: u32) {
    let Cout = pu(7u);
    let pos = out_pos(t, (Cout + 3u) / 4u);
    let oc = pos.w * 4u;
    let o1 = min(oc + 1u, Cout - 1u);
    let o2 = min(oc + 2u, Cout - 1u);
    let o3 = min(oc + 3u, Cout - 1u);
    let bias = vec4<f32>(BIAS[oc], BIAS[o1], BIAS[o2], BIAS[o3]);
    let per_oc = pu(8u) * pu(9u) * pu(4u);
    let acc = window(bias, pos.x, pos.y, pos.z, vec4<u32>(oc, o1, o2, o3) * per_oc);
    let ob = ((pos.x * pu(5u) + pos.y) * pu(6u) + pos.z) * Cout + oc;
    for (var j = 0u; j < 4u; j++) {
        if (oc + j < Cout) {
            O[ob + j] = act(acc[j]);
        }
    }
}
