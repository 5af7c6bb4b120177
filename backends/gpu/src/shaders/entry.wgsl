// Entry point of the 1-D kernels: one thread per item, params[0] items, dispatched as a 2-D grid
// of 64-wide workgroups. The family defines `fn item(t: u32)`.

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let t = gid.x + gid.y * groups.x * 64u;
    if (t >= pu(0u)) {
        return;
    }
    item(t);
}
