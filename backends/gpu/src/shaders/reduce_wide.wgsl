// Reductions with many elements per output (a global average pool, a mean over a whole
// image): one 64-thread workgroup per output, each thread folding every 64th element, then a
// tree over the workgroup, where `reduce`'s one thread per output walked them all in turn.
// OP: 0 mean, 1 sum, 2 max, 3 min, 4 product; the fused activation ACT applies to the result.
// Params: 0 outputs; 1 reduced elements per output; 2..20 as `reduce_index`.

override OP: u32 = 0u;

var<workgroup> part: array<f32, 64>;

fn start() -> f32 {
    switch OP {
        case 2u: { return -3.40282347e38; }
        case 3u: { return 3.40282347e38; }
        case 4u: { return 1.0; }
        default: { return 0.0; }
    }
}

fn fold(acc: f32, v: f32) -> f32 {
    switch OP {
        case 2u: { return select(acc, v, v > acc); }
        case 3u: { return select(acc, v, v < acc); }
        case 4u: { return acc * v; }
        default: { return acc + v; }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wid.x + wid.y * groups.x;
    let R = pu(1u);
    var acc = start();
    if (t < pu(0u)) {
        let base = offset_over(t, 0u);
        for (var r = lid; r < R; r += 64u) {
            acc = fold(acc, X[base + offset_over(r, 1u)]);
        }
    }
    part[lid] = acc;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            part[lid] = fold(part[lid], part[lid + s]);
        }
        workgroupBarrier();
    }
    if (lid == 0u && t < pu(0u)) {
        var v = part[0];
        if (OP == 0u) {
            v = v / f32(R);
        }
        O[t] = act(v);
    }
}
