// An input and the output of 4-byte elements of any type (moved as bits).
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> O: array<u32>;
