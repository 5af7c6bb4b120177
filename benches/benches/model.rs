//! End-to-end: the example model shipped in the repo (made by the project's own builder), run
//! through the public `Session` API on the CPU backend with 1 and 2 threads.

use criterion::{criterion_group, criterion_main, Criterion};
use nnrt::Session;

fn bench(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/models/tiny_mobilenet.tflite");
    let mut g = c.benchmark_group("model_tiny_mobilenet");
    for threads in [1usize, 2] {
        let mut s = Session::load(path).expect("the example model loads");
        s.set_threads(threads).expect("configurable before prepare");
        s.prepare().expect("prepares");
        let input = vec![0u8; s.input_info(0).expect("one input").byte_size()];
        s.set_input(0, &input).expect("input size matches");
        g.bench_function(format!("{threads}_threads"), |b| b.iter(|| s.run().expect("runs")));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
