// Softmax (LOG = 0) or log-softmax (LOG = 1) over the last axis; one row per thread.
// Params: 0 rows; 1 row length; 2 beta (f32 bits).

override LOG: u32 = 0u;

fn item(row: u32) {
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
