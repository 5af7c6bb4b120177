//! RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR in every coordinate mode.

use nnrt_core::{OpKind, Resize, ResizeMode};
use nnrt_tests::{f, i, Case, Graph, Tol, V};

use crate::{noise, GPU_SUMS};

nnrt_tests::replay_on_every_target!(resize_cases);

fn resize_model(mode: ResizeMode, align_corners: bool, half_pixel_centers: bool, x: (&[usize], V), size: [i32; 2]) -> Graph {
    let mut g = Graph::new();
    let dtype = x.1.dtype();
    let od = [x.0[0], size[0] as usize, size[1] as usize, *x.0.last().expect("rank >= 1")];
    let xi = g.input(x.0, x.1);
    let s = g.ints(&size);
    let y = g.out(dtype, &od);
    g.op(OpKind::Resize(Resize { mode, align_corners, half_pixel_centers }), &[Some(xi), Some(s)], &[y]);
    g
}

fn resize_cases() -> Vec<Case> {
    let tol = Tol::new(1e-6, 0.0, "an interpolation of values below 16 rounds twice");
    let x = || (&[1usize, 2, 2, 1][..], f(&[3.0, 6.0, 9.0, 12.0]));
    // TFLite resize_bilinear_test: 2x2 -> 3x3.
    let g = resize_model(ResizeMode::Bilinear, false, false, x(), [3, 3]);
    let mut cases = vec![Case::new("bilinear", &g).out_close(0, f(&[3.0, 5.0, 6.0, 7.0, 9.0, 10.0, 9.0, 11.0, 12.0]), tol)];
    let g = resize_model(ResizeMode::Bilinear, true, false, x(), [3, 3]);
    cases.push(Case::new("bilinear align_corners", &g).out_close(0, f(&[3.0, 4.5, 6.0, 6.0, 7.5, 9.0, 9.0, 10.5, 12.0]), tol));
    let g = resize_model(ResizeMode::Bilinear, false, true, x(), [4, 4]);
    let half_pixel = Case::new("bilinear half_pixel", &g).out_part(0, 0..4, f(&[3.0, 3.75, 5.25, 6.0]), tol).out_part(0, 4..8, f(&[4.5, 5.25, 6.75, 7.5]), tol);
    cases.push(half_pixel);
    let g = resize_model(ResizeMode::Bilinear, true, true, x(), [4, 4]);
    cases.push(Case::new("neg_bilinear_align_corners_and_half_pixel", &g).prepare_error(&["ResizeBilinear", "align_corners and half_pixel_centers"]));
    let x = i(&[1, 2, 3, 4]); // [1, 1, 4, 1]
    for (ac, hp, want) in [(false, false, [1, 1, 2, 3, 3, 4]), (true, false, [1, 2, 2, 3, 3, 4]), (false, true, [1, 2, 2, 3, 4, 4])] {
        let g = resize_model(ResizeMode::Nearest, ac, hp, (&[1, 1, 4, 1], x.clone()), [1, 6]);
        let name = format!("nearest int32 align_corners {ac} half_pixel {hp}");
        cases.push(Case::new(name, &g).out(0, i(&want)).no_gpu("no int kernels (gpu kernels compute in float32)"));
    }
    let g = resize_model(ResizeMode::Nearest, false, false, (&[1, 4, 1], x), [1, 6]);
    cases.push(Case::new("neg_nearest_rank_3", &g).prepare_error(&["ResizeNearestNeighbor", "rank 4"]));
    let mut cases: Vec<Case> = cases.into_iter().map(|c| c.gpu_tol(GPU_SUMS)).collect();
    let modes = [
        (ResizeMode::Bilinear, false, false),
        (ResizeMode::Bilinear, true, false),
        (ResizeMode::Bilinear, false, true),
        (ResizeMode::Nearest, false, false),
        (ResizeMode::Nearest, true, false),
        (ResizeMode::Nearest, false, true),
    ];
    for (k, (mode, align_corners, half_pixel_centers)) in modes.into_iter().enumerate() {
        for (x, out) in [([1, 4, 5, 3], [7, 9]), ([2, 6, 6, 2], [3, 4])] {
            let g = resize_model(mode, align_corners, half_pixel_centers, (&x, noise(&x, 140 + k as u64)), out);
            let tol = if mode == ResizeMode::Nearest { Tol::EXACT } else { GPU_SUMS };
            cases.push(Case::new(format!("gpu {mode:?} align {align_corners} half {half_pixel_centers} to {out:?}"), &g).same_as_cpu(tol));
        }
    }
    cases
}
