// Index walks over tensors of up to 6 dims (left-padded with 1s), outermost dim first.

// Offsets of element `i` of a tensor whose dims are params `dims`..`dims`+6, in two tensors
// whose strides per dim start at params `sa` and `sb` (0 where a dim is broadcast).
fn offsets6(i: u32, dims: u32, sa: u32, sb: u32) -> vec2<u32> {
    var o = vec2<u32>(0u, 0u);
    var rest = i;
    for (var d = 5i; d >= 0i; d--) {
        let k = u32(d);
        let c = rest % pu(dims + k);
        rest = rest / pu(dims + k);
        o += c * vec2<u32>(pu(sa + k), pu(sb + k));
    }
    return o;
}
