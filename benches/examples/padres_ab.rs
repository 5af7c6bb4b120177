//! Alternated min-of-N time of a 1×1 convolution + the ADD of a channel-padded shortcut fused
//! (`Conv2d::run_add_residual`) against the three ops apart (CONV_2D, PAD, ADD), at BlazeFace's
//! block sizes, on one thread or `THREADS`.
//! `cargo run --release -p nnrt-benches --example padres_ab`
use nnrt_backend_cpu::kernels::binary::{binary, BinaryOp};
use nnrt_backend_cpu::kernels::conv::Conv2d;
use nnrt_backend_cpu::kernels::data::pad;
use nnrt_backend_cpu::kernels::gemm::Residual;
use nnrt_backend_cpu::kernels::Act;
use nnrt_benches::{data, square_conv};
use std::time::Instant;

fn main() {
    let threads: usize = std::env::var("THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let pool = nnrt_core::KernelPool::new(threads).expect("pool");
    pool.install(run);
}

fn run() {
    // (hw, conv in, shortcut channels, out channels)
    for &(hw, ci, cx, co) in &[(64usize, 24usize, 24usize, 28usize), (32, 28, 28, 32), (32, 32, 32, 36), (16, 42, 42, 48), (8, 88, 88, 96)] {
        let g = square_conv(hw, ci, co, 1, 1);
        let (w, b) = (data(co * ci, 1), data(co, 2));
        let (input, x) = (data(hw * hw * ci, 3), data(hw * hw * cx, 4));
        let mut conv = Conv2d::new(g, &w, Some(&b), Act::NONE);
        let (mut y, mut p, mut out, mut out2) = (vec![0f32; hw * hw * co], vec![0f32; hw * hw * co], vec![0f32; hw * hw * co], vec![0f32; hw * hw * co]);
        let shape = [1, hw, hw, co];
        let (mut ta, mut tb, mut tc, mut td) = (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..500 {
            let t = Instant::now();
            conv.run(&input, &mut y);
            pad(&x, &[1, hw, hw, cx], &[(0, 0), (0, 0), (0, 0), (0, co - cx)], 0.0, &mut p);
            binary(BinaryOp::Add, &p, &shape, &y, &shape, &mut out, &shape, Act::RELU);
            ta = ta.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            conv.run_add_residual(&input, Residual { x: &x, channels: cx, first: 0, fill: 0.0 }, Act::RELU, &mut out2);
            tb = tb.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            conv.run(&input, &mut y);
            tc = tc.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            conv.run_add(&input, &p, Act::RELU, &mut out2);
            td = td.min(t.elapsed().as_secs_f64());
        }
        assert!(out.iter().zip(&out2).all(|(a, b)| a.to_bits() == b.to_bits()), "fused step differs");
        println!("{hw:>3}x{hw:<3}x{ci:<3}->{co:<3} shortcut {cx:<3}: apart {:7.1} us  fused {:7.1} us  fused/apart {:.3}  (conv {:6.1}, conv+dense add {:6.1})", ta * 1e6, tb * 1e6, tb / ta, tc * 1e6, td * 1e6);
    }
}
