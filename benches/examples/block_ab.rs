//! Alternated min-of-N time of MobileNetV2's fused inverted-residual blocks (expansion,
//! depthwise, projection, residual: `ExpandDepthwise::with_projection`) against the expansion +
//! depthwise pair followed by the projection's GEMM (and the ADD), on one thread or `THREADS`.
//! `cargo run --release -p nnrt-benches --example block_ab`
use nnrt_backend_cpu::kernels::conv::Conv2d;
use nnrt_backend_cpu::kernels::depthwise::depthwise_conv2d;
use nnrt_backend_cpu::kernels::expand_dw::ExpandDepthwise;
use nnrt_backend_cpu::kernels::Act;
use nnrt_benches::{data, square_conv, square_depthwise};
use std::time::Instant;

fn main() {
    let threads: usize = std::env::var("THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let pool = nnrt_core::KernelPool::new(threads).expect("pool");
    pool.install(run);
}

fn run() {
    // (hw, in_c, mid, out_c, stride, residual)
    for &(hw, c0, c1, c2, s, residual) in &[(112usize, 16usize, 96usize, 24usize, 2usize, false), (56, 24, 144, 24, 1, true), (56, 24, 144, 32, 2, false), (28, 32, 192, 32, 1, true), (28, 32, 192, 64, 2, false), (14, 64, 384, 64, 1, true), (14, 96, 576, 96, 1, true), (14, 96, 576, 160, 2, false), (7, 160, 960, 160, 1, true)] {
        let g = square_depthwise(hw, c1, s);
        let (w1, b1, f, b2) = (data(c1 * c0, 1), data(c1, 2), data(9 * c1, 3), data(c1, 4));
        let (w3, b3) = (data(c2 * c1, 5), data(c2, 6));
        let x = data(hw * hw * c0, 7);
        let pair = ExpandDepthwise::new(c0, &w1, Some(&b1), Act::RELU6, g, &f, Some(&b2), Act::RELU6);
        let block = ExpandDepthwise::new(c0, &w1, Some(&b1), Act::RELU6, g, &f, Some(&b2), Act::RELU6).with_projection(c2, &w3, Some(&b3), Act::NONE, residual.then_some(Act::NONE));
        let mut proj = Conv2d::new(square_conv(g.out_h, c1, c2, 1, 1), &w3, Some(&b3), Act::NONE);
        let mut expand = Conv2d::new(square_conv(hw, c0, c1, 1, 1), &w1, Some(&b1), Act::RELU6);
        let mut ex = vec![0f32; hw * hw * c1];
        let r = data(g.out_h * g.out_w * c2, 8);
        let (mut mid, mut out, mut out2) = (vec![0f32; g.output_len()], vec![0f32; g.out_h * g.out_w * c2], vec![0f32; g.out_h * g.out_w * c2]);
        let (mut ta, mut tb, mut tc) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..300 {
            let t = Instant::now();
            pair.run(&x, &mut mid);
            if residual {
                proj.run_add(&mid, &r, Act::NONE, &mut out);
            } else {
                proj.run(&mid, &mut out);
            }
            ta = ta.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            if residual {
                block.run_add(&x, &r, &mut out2);
            } else {
                block.run(&x, &mut out2);
            }
            tb = tb.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            expand.run(&x, &mut ex);
            depthwise_conv2d(&g, &ex, &f, Some(&b2), Act::RELU6, &mut mid);
            if residual {
                proj.run_add(&mid, &r, Act::NONE, &mut out);
            } else {
                proj.run(&mid, &mut out);
            }
            tc = tc.min(t.elapsed().as_secs_f64());
        }
        assert!(out.iter().zip(&out2).all(|(a, b)| a.to_bits() == b.to_bits()), "fused block differs");
        println!("{hw:>3}x{hw:<3}x{c0:<3}->{c1:<4}->{c2:<3} s{s} residual={residual:<5}: ops apart {:7.1} us  pair+project {:7.1} us  block {:7.1} us  block/pair {:.3} block/apart {:.3}", tc * 1e6, ta * 1e6, tb * 1e6, tb / ta, tb / tc);
    }
}
