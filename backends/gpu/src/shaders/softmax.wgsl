// Softmax (LOG = 0) or log-softmax (LOG = 1) over the last axis; one row per thread.
// Params: 0 rows; 1 row length; 2 beta (f32 bits).

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;

override LOG: u32 = 0u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let row = linear(gid, groups);
    if (row >= pu(0u)) {
        return;
    }
    let len = pu(1u);
    let beta = pf(2u);
    let b = row * len;
    var m = X[b];
    for (var i = 1u; i < len; i++) {
        m = max(m, X[b + i]);
    }
    var sum = 0.0;
    for (var i = 0u; i < len; i++) {
        sum += exp((X[b + i] - m) * beta);
    }
    if (LOG == 1u) {
        let ls = log(sum);
        for (var i = 0u; i < len; i++) {
            O[b + i] = (X[b + i] - m) * beta - ls;
        }
    } else {
        let inv = 1.0 / sum;
        for (var i = 0u; i < len; i++) {
            O[b + i] = exp((X[b + i] - m) * beta) * inv;
        }
    }
}
