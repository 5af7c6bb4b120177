//! Min-of-N time and GFLOP/s of the float (depthwise) convolutions of MobileNetV2's hot shapes on one
//! thread, or on `THREADS` threads.
//! `cargo run --release -p nnrt-benches --example conv_shapes`
use nnrt_backend_cpu::kernels::conv::Conv2d;
use nnrt_backend_cpu::kernels::depthwise::depthwise_conv2d;
use nnrt_backend_cpu::kernels::Act;
use nnrt_benches::{data, square_conv, square_depthwise};
use std::time::Instant;

/// `len` values of `v` from its first 64-byte boundary (as the arena places tensors).
fn aligned(v: &[f32], len: usize) -> &[f32] {
    let off = v.as_ptr().align_offset(64).min(16);
    &v[off..off + len]
}

fn aligned_mut(v: &mut [f32], len: usize) -> &mut [f32] {
    let off = v.as_ptr().align_offset(64).min(16);
    &mut v[off..off + len]
}
fn main() {
    let threads: usize = std::env::var("THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let pool = nnrt_core::KernelPool::new(threads).expect("pool");
    pool.install(run);
}

fn run() {
    let shapes: &[(usize, usize, usize, usize, usize)] = &[
        (224, 3, 32, 3, 2),
        (32, 64, 64, 3, 1),
        (16, 128, 128, 3, 1),
        (112, 16, 96, 1, 1),
        (112, 32, 16, 1, 1),
        (56, 24, 144, 1, 1),
        (56, 144, 24, 1, 1),
        (28, 32, 192, 1, 1),
        (14, 96, 576, 1, 1),
        (14, 576, 96, 1, 1),
        (7, 320, 1280, 1, 1),
    ];
    for &(hw, ci, co, k, s) in shapes {
        let g = square_conv(hw, ci, co, k, s);
        let raw_x = data(g.input_len() + 16, 1);
        let x = aligned(&raw_x, g.input_len());
        let w = data(g.filter_len(), 2);
        let b = data(g.out_c, 3);
        let mut conv = Conv2d::new(g, &w, Some(&b), Act::RELU6);
        let mut raw_o = vec![0f32; g.output_len() + 16];
        let o = aligned_mut(&mut raw_o, g.output_len());
        let mut best = f64::MAX;
        for _ in 0..300 {
            let t = Instant::now();
            conv.run(x, o);
            best = best.min(t.elapsed().as_secs_f64());
        }
        let fl = 2.0 * g.output_len() as f64 * g.taps() as f64;
        println!("{hw:>3}x{hw:<3}x{ci:<4}->{co:<5} k{k} s{s}: {:8.1} us {:6.1} GF/s", best * 1e6, fl / best / 1e9);
    }
    for &(hw, ch, s) in &[(112usize, 32usize, 1usize), (112, 96, 2), (56, 144, 1), (56, 144, 2), (28, 192, 1), (14, 576, 1), (7, 960, 1)] {
        let geom = square_depthwise(hw, ch, s);
        let raw_in = data(geom.input_len() + 16, 1);
        let input = aligned(&raw_in, geom.input_len());
        let filter = data(geom.filter_len(), 2);
        let bias = data(ch, 3);
        let mut raw_out = vec![0f32; geom.output_len() + 16];
        let output = aligned_mut(&mut raw_out, geom.output_len());
        let mut best = f64::MAX;
        for _ in 0..300 {
            let t = Instant::now();
            depthwise_conv2d(&geom, input, &filter, Some(&bias), Act::RELU6, output);
            best = best.min(t.elapsed().as_secs_f64());
        }
        let fl = 2.0 * geom.output_len() as f64 * 9.0;
        println!("dw {hw:>3}x{hw:<3}x{ch:<4} s{s}: {:8.1} us {:6.1} GF/s", best * 1e6, fl / best / 1e9);
    }
}
