// Batched matrix product with bias and fused activation: O[b, m, n] = act(sum_k X[b, m, k] * W[b, k, n] + bias[n]).
// Serves FULLY_CONNECTED, BATCH_MATMUL and 1x1 convolutions. Each thread computes a 4x4 block of O
// (register blocking, no workgroup memory: barriers are slow on software adapters).
// Params: 0 M; 1 N; 2 K; 3 batch dim 0; 4 batch dim 1; 5,6 X strides of the batch dims; 7 X row
// stride; 8 X k stride; 9,10 W strides of the batch dims; 11 W k stride; 12 W column stride.

@compute @workgroup_size(8, 8, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let M = pu(0u);
    let N = pu(1u);
    let K = pu(2u);
    let n0 = gid.x * 4u;
    let m0 = gid.y * 4u;
    let bat = gid.z;
    if (n0 >= N || m0 >= M) {
        return;
    }
    let b0 = bat / pu(4u);
    let b1 = bat % pu(4u);
    let abase = b0 * pu(5u) + b1 * pu(6u);
    let bbase = b0 * pu(9u) + b1 * pu(10u);
    let sm = pu(7u);
    let sk = pu(8u);
    let bk = pu(11u);
    let bn = pu(12u);
    // Rows and columns past the edge read the last valid one and are not stored.
    let r0 = abase + min(m0, M - 1u) * sm;
    let r1 = abase + min(m0 + 1u, M - 1u) * sm;
    let r2 = abase + min(m0 + 2u, M - 1u) * sm;
    let r3 = abase + min(m0 + 3u, M - 1u) * sm;
    let c0 = bbase + min(n0, N - 1u) * bn;
    let c1 = bbase + min(n0 + 1u, N - 1u) * bn;
    let c2 = bbase + min(n0 + 2u, N - 1u) * bn;
    let c3 = bbase + min(n0 + 3u, N - 1u) * bn;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k = 0u; k < K; k++) {
        let ko = k * bk;
        let b = vec4<f32>(f32(W[c0 + ko]), f32(W[c1 + ko]), f32(W[c2 + ko]), f32(W[c3 + ko]));
        let ak = k * sk;
        acc0 += X[r0 + ak] * b;
        acc1 += X[r1 + ak] * b;
        acc2 += X[r2 + ak] * b;
        acc3 += X[r3 + ak] * b;
    }
    let bias = vec4<f32>(BIAS[min(n0, N - 1u)], BIAS[min(n0 + 1u, N - 1u)], BIAS[min(n0 + 2u, N - 1u)], BIAS[min(n0 + 3u, N - 1u)]);
    let cb = bat * M * N;
    var accs = array<vec4<f32>, 4>(acc0 + bias, acc1 + bias, acc2 + bias, acc3 + bias);
    for (var i = 0u; i < 4u; i++) {
        let m = m0 + i;
        if (m < M) {
            for (var j = 0u; j < 4u; j++) {
                if (n0 + j < N) {
                    O[cb + m * N + n0 + j] = act(accs[i][j]);
                }
            }
        }
    }
}
