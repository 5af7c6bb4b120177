// Permutes the dims of a tensor of up to 6 dims, 4-byte elements. Params: 0 outputs; 1..7
// output dims; 7..13 the input stride of each output dim.

fn item(t: u32) {
    O[t] = X[offsets6(t, 1u, 7u, 7u).x];
}
