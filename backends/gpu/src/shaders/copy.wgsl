// Copies a [outer, a, inner] block into [outer, a_out, inner] at offset `at` along the middle
// axis (one CONCATENATION input per dispatch). 4-byte elements; ACT applies to f32 data.
// Params: 0 elements of the input; 1 a; 2 inner; 3 a_out; 4 at.

fn item(i: u32) {
    let a = pu(1u);
    let inner = pu(2u);
    let j = i % inner;
    let r = i / inner;
    let k = r % a;
    let o = r / a;
    let dst = (o * pu(3u) + pu(4u) + k) * inner + j;
    if (ACT == 0u) {
        O[dst] = X[i];
    } else {
        O[dst] = bitcast<u32>(act(bitcast<f32>(X[i])));
    }
}
