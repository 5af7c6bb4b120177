// NHWC 2-D convolution, any stride/dilation/padding (padding by bounds checks, no copies). Weights
// are read as TFLite stores them, [Cout][KH][KW][Cin]. Each thread computes 4 output channels of
// one pixel.
// Params: 0 threads; 1 N; 2 H; 3 W; 4 Cin; 5 OH; 6 OW; 7 Cout; 8 KH; 9 KW; 10 SH; 11 SW; 12 DH;
// 13 DW; 14 pad top; 15 pad left.

// The weights' storage type: f32, or f16 where the adapter has it and the session asks for it
// (GPU_PRECISION=f16); the sums stay in f32.
alias WT = f32;

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> W: array<WT>;
@group(0) @binding(3) var<storage, read> BIAS: array<f32>;
@group(0) @binding(4) var<storage, read_write> O: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let t = linear(gid, groups);
    if (t >= pu(0u)) {
        return;
    }
    let H = pu(2u);
    let Wd = pu(3u);
    let Cin = pu(4u);
    let OH = pu(5u);
    let OW = pu(6u);
    let Cout = pu(7u);
    let KH = pu(8u);
    let KW = pu(9u);
    let quads = (Cout + 3u) / 4u;
    let pos = nhwc(t, OH, OW, quads);
    let n = pos.x;
    let oy = pos.y;
    let ox = pos.z;
    let q = pos.w;
    let oc = q * 4u;
    let o1 = min(oc + 1u, Cout - 1u);
    let o2 = min(oc + 2u, Cout - 1u);
    let o3 = min(oc + 3u, Cout - 1u);
    var acc = vec4<f32>(BIAS[oc], BIAS[o1], BIAS[o2], BIAS[o3]);
    let per_oc = KH * KW * Cin;
    let w0 = oc * per_oc;
    let w1 = o1 * per_oc;
    let w2 = o2 * per_oc;
    let w3 = o3 * per_oc;
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
            let xb = ((n * H + u32(iy)) * Wd + u32(ix)) * Cin;
            let wb = (ky * KW + kx) * Cin;
            for (var c = 0u; c < Cin; c++) {
                let w = wb + c;
                acc += X[xb + c] * vec4<f32>(f32(W[w0 + w]), f32(W[w1 + w]), f32(W[w2 + w]), f32(W[w3 + w]));
            }
        }
    }
    let ob = ((n * OH + oy) * OW + ox) * Cout + oc;
    for (var j = 0u; j < 4u; j++) {
        if (oc + j < Cout) {
            O[ob + j] = act(acc[j]);
        }
    }
}
