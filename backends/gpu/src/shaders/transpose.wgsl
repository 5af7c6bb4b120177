// Permutes the dims of a tensor of up to 6 dims, 4-byte elements. Params: 0 outputs; 1..7
// output dims; 7..13 the input stride of each output dim.

@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> O: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let t = linear(gid, groups);
    if (t >= pu(0u)) {
        return;
    }
    var rest = t;
    var src = 0u;
    for (var d = 5i; d >= 0i; d--) {
        let k = u32(d);
        src += (rest % pu(1u + k)) * pu(7u + k);
        rest = rest / pu(1u + k);
    }
    O[t] = X[src];
}
