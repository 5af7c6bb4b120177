// NHWC families (conv, depthwise, pool, resize) share params 1 N; 2 H; 3 W; 4 C (input
// channels); 5 OH; 6 OW.

// Position of element `t` of an [N, OH, OW, C] output as (n, y, x, c).
fn out_pos(t: u32, C: u32) -> vec4<u32> {
    let OH = pu(5u);
    let OW = pu(6u);
    let c = t % C;
    let r = t / C;
    return vec4<u32>(r / (OW * OH), (r / OW) % OH, r % OW, c);
}

// Offset of channel 0 of input pixel (n, y, x).
fn in_pixel(n: u32, y: u32, x: u32) -> u32 {
    return ((n * pu(2u) + y) * pu(3u) + x) * pu(4u);
}
