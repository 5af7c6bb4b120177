// Input, weights, bias and output of the weighted families (matmul, conv, depthwise).

// The weights' storage type: f32, or f16 where the adapter has it and the session asks for it
// (GPU_PRECISION=f16); the sums stay in f32.
alias WT = f32;

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> W: array<WT>;
@group(0) @binding(3) var<storage, read> BIAS: array<f32>;
@group(0) @binding(4) var<storage, read_write> O: array<f32>;
