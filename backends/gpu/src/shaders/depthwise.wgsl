// NHWC depthwise convolution; weights [KH][KW][C * multiplier] as TFLite stores them. One output
// element per thread. Params: 0 threads; 1 N; 2 H; 3 W; 4 Cin; 5 OH; 6 OW; 7 Cout; 8 KH; 9 KW;
// 10 SH; 11 SW; 12 DH; 13 DW; 14 pad top; 15 pad left; 16 multiplier.

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
    let pos = nhwc(t, OH, OW, Cout);
    let n = pos.x;
    let oy = pos.y;
    let ox = pos.z;
    let oc = pos.w;
    let ic = oc / pu(16u);
    var acc = BIAS[oc];
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
            acc += X[((n * H + u32(iy)) * Wd + u32(ix)) * Cin + ic] * f32(W[(ky * KW + kx) * Cout + oc]);
        }
    }
    O[t] = act(acc);
}
