use nnrt_backend_cpu::kernels::conv::Conv2d;
use nnrt_backend_cpu::kernels::Act;
use nnrt_benches::{data, square_conv};
use std::time::Instant;
fn main() {
    for &(hw, ci, co, k, s) in &[(224usize, 3usize, 32usize, 3usize, 2usize), (112, 16, 96, 1, 1), (56, 16, 96, 1, 1), (28, 16, 96, 1, 1)] {
        let g = square_conv(hw, ci, co, k, s);
        let x = data(g.input_len(), 1);
        let w = data(g.filter_len(), 2);
        let b = data(g.out_c, 3);
        let mut on = Conv2d::new(g, &w, Some(&b), Act::RELU6).with_implicit(true);
        let mut off = Conv2d::new(g, &w, Some(&b), Act::RELU6).with_implicit(false);
        let mut o1 = vec![0f32; g.output_len()];
        let mut o2 = vec![0f32; g.output_len()];
        let (mut t1, mut t2) = (f64::MAX, f64::MAX);
        for _ in 0..200 {
            let t = Instant::now(); on.run(&x, &mut o1); t1 = t1.min(t.elapsed().as_secs_f64());
            let t = Instant::now(); off.run(&x, &mut o2); t2 = t2.min(t.elapsed().as_secs_f64());
        }
        assert_eq!(o1, o2);
        let fl = 2.0 * g.output_len() as f64 * g.taps() as f64;
        println!("{hw}x{hw}x{ci}->{co} k{k} s{s}: implicit {:.1} us ({:.0} GF/s), im2col {:.1} us ({:.0} GF/s)", t1 * 1e6, fl / t1 / 1e9, t2 * 1e6, fl / t2 / 1e9);
    }
}
