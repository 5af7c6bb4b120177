//! Decoder tests on synthetic network outputs: people with known keypoints, heatmaps that peak
//! at them, and offsets that point at them, so the decoded poses are known exactly.

use super::*;
use nnrt_plugin_sdk::flexbuffers::build::{map, Value};

const H: usize = 24;
const W: usize = 32;
const STRIDE: usize = 16;

/// A person: keypoint positions in heatmap cells (integers, so samples hit cells exactly) and
/// the logit of every keypoint's peak.
struct Person {
    cells: [(usize, usize); NUM_KEYPOINTS],
    logit: f32,
}

/// A standing figure whose top-left is at (y, x).
fn figure(y: usize, x: usize, logit: f32) -> Person {
    let rel = [(0, 2), (0, 1), (0, 3), (1, 0), (1, 4), (3, 1), (3, 3), (5, 0), (5, 4), (7, 0), (7, 4), (8, 1), (8, 3), (11, 1), (11, 3), (14, 1), (14, 3)];
    Person { cells: rel.map(|(dy, dx)| (y + dy, x + dx)), logit }
}

/// Network outputs for `people`: logits, short and mid offsets in pixels. Each cell's offsets
/// point at the person whose nose is nearest (by column), from anywhere.
fn outputs(people: &[Person]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut heat = vec![-8.0f32; H * W * NUM_KEYPOINTS];
    let mut shorts = vec![0f32; H * W * 2 * NUM_KEYPOINTS];
    let mut mids = vec![0f32; H * W * 4 * NUM_EDGES];
    for p in people {
        for (k, &(y, x)) in p.cells.iter().enumerate() {
            heat[(y * W + x) * NUM_KEYPOINTS + k] = p.logit;
        }
    }
    let owner = |x: usize| people.iter().min_by_key(|p| (p.cells[0].1 as isize - x as isize).abs()).expect("people");
    let edges: Vec<(usize, usize)> = decoder_edges();
    for y in 0..H {
        for x in 0..W {
            let p = owner(x);
            let cell = (y * W + x) as isize;
            for k in 0..NUM_KEYPOINTS {
                let (ty, tx) = p.cells[k];
                shorts[cell as usize * 2 * NUM_KEYPOINTS + k] = (ty as f32 - y as f32) * STRIDE as f32;
                shorts[cell as usize * 2 * NUM_KEYPOINTS + NUM_KEYPOINTS + k] = (tx as f32 - x as f32) * STRIDE as f32;
            }
            for (e, &(_, child)) in edges.iter().enumerate() {
                // Layout [fwd y][fwd x][bwd y][bwd x], 16 channels each.
                let (ty, tx) = p.cells[child];
                let (cy, cx) = if e < NUM_EDGES { (e, NUM_EDGES + e) } else { (NUM_EDGES + e, 2 * NUM_EDGES + e) };
                mids[cell as usize * 4 * NUM_EDGES + cy] = (ty as f32 - y as f32) * STRIDE as f32;
                mids[cell as usize * 4 * NUM_EDGES + cx] = (tx as f32 - x as f32) * STRIDE as f32;
            }
        }
    }
    (heat, shorts, mids)
}

/// The skeleton, (parent, child) per edge, forward then backward (as the decoder orders them).
fn decoder_edges() -> Vec<(usize, usize)> {
    let fwd = [(0, 1), (1, 3), (0, 2), (2, 4), (0, 5), (5, 7), (7, 9), (5, 11), (11, 13), (13, 15), (0, 6), (6, 8), (8, 10), (6, 12), (12, 14), (14, 16)];
    fwd.iter().copied().chain(fwd.iter().map(|&(a, b)| (b, a))).collect()
}

fn opts(max_detections: i64, threshold: f64, nms_radius: f64) -> Vec<u8> {
    map(&[
        ("max_detections", Value::Int(max_detections)),
        ("score_threshold", Value::Float(threshold)),
        ("stride", Value::Int(STRIDE as i64)),
        ("nms_radius", Value::Float(nms_radius)),
    ])
}

struct Out {
    keypoints: Vec<f32>,
    keypoint_scores: Vec<f32>,
    scores: Vec<f32>,
    count: f32,
}

/// Runs the op's kernel on float inputs.
fn run(people: &[Person], options: &[u8]) -> Result<Out, String> {
    let (heat, shorts, mids) = outputs(people);
    run_tensors(&[(heat, NUM_KEYPOINTS), (shorts, 2 * NUM_KEYPOINTS), (mids, 4 * NUM_EDGES)], None, options)
}

fn run_tensors(inputs: &[(Vec<f32>, usize); 3], quant: Option<nnrt_plugin_sdk::Quant>, options: &[u8]) -> Result<Out, String> {
    let max = super::options(options)?.max_detections;
    let stores: Vec<Vec<u32>> = inputs.iter().map(|(v, _)| v.iter().map(|f| f.to_bits()).collect()).collect();
    let quantized: Vec<Vec<u8>> = match quant {
        Some(q) => inputs.iter().map(|(v, _)| v.iter().map(|&f| ((f / q.scale).round() + q.zero_point as f32).clamp(0.0, 255.0) as u8).collect()).collect(),
        None => Vec::new(),
    };
    let ins: Vec<Tensor<'_>> = inputs
        .iter()
        .enumerate()
        .map(|(i, (_, c))| match quant {
            Some(q) => Tensor::new(DType::U8, vec![1, H, W, *c], Some(q), &quantized[i]),
            None => Tensor::new(DType::F32, vec![1, H, W, *c], None, bytemuck::cast_slice(&stores[i])),
        })
        .collect();
    let dims = output_dims(max, None);
    let mut bufs: Vec<Vec<u32>> = dims.iter().map(|d| vec![0x7fc0_0000; d.iter().product()]).collect();
    {
        let mut outs: Vec<TensorMut<'_>> = bufs.iter_mut().zip(&dims).map(|(b, d)| TensorMut::new(DType::F32, d.clone(), None, bytemuck::cast_slice_mut(b))).collect();
        eval(&ins, &mut outs, options)?;
    }
    let f = |b: &Vec<u32>| b.iter().map(|&v| f32::from_bits(v)).collect::<Vec<f32>>();
    Ok(Out { keypoints: f(&bufs[0]), keypoint_scores: f(&bufs[1]), scores: f(&bufs[2]), count: f(&bufs[3])[0] })
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

fn assert_pose(out: &Out, slot: usize, p: &Person) {
    for (k, &(y, x)) in p.cells.iter().enumerate() {
        let got = (out.keypoints[(slot * NUM_KEYPOINTS + k) * 2], out.keypoints[(slot * NUM_KEYPOINTS + k) * 2 + 1]);
        let want = ((y * STRIDE) as f32, (x * STRIDE) as f32);
        // Offsets point exactly at the keypoint cells, so positions are exact up to float rounding.
        assert!((got.0 - want.0).abs() < 1e-3 && (got.1 - want.1).abs() < 1e-3, "pose {slot} keypoint {k}: got {got:?}, want {want:?}");
        let s = out.keypoint_scores[slot * NUM_KEYPOINTS + k];
        assert!((s - sigmoid(p.logit)).abs() < 1e-5, "pose {slot} keypoint {k}: score {s}");
    }
    assert!((out.scores[slot] - sigmoid(p.logit)).abs() < 1e-5, "pose {slot}: score {}", out.scores[slot]);
}

#[test]
fn one_person_is_decoded_exactly() {
    let people = [figure(3, 10, 6.0)];
    let out = run(&people, &opts(10, 0.5, 20.0)).unwrap();
    assert_eq!(out.count, 1.0);
    assert_pose(&out, 0, &people[0]);
    // Unused slots are zero, not left as they were.
    assert!(out.scores[1..].iter().all(|&s| s == 0.0));
    assert!(out.keypoints[2 * NUM_KEYPOINTS..].iter().all(|&v| v == 0.0));
}

#[test]
fn two_people_come_out_by_score() {
    let people = [figure(2, 2, 3.0), figure(6, 22, 6.0)];
    let out = run(&people, &opts(10, 0.5, 20.0)).unwrap();
    assert_eq!(out.count, 2.0);
    assert_pose(&out, 0, &people[1]);
    assert_pose(&out, 1, &people[0]);
    // max_detections caps the count at the best pose.
    let out = run(&people, &opts(1, 0.5, 20.0)).unwrap();
    assert_eq!(out.count, 1.0);
    assert_pose(&out, 0, &people[1]);
}

#[test]
fn weak_poses_fall_below_the_threshold() {
    let out = run(&[figure(3, 10, -1.0)], &opts(10, 0.5, 20.0)).unwrap();
    assert_eq!(out.count, 0.0);
    assert!(out.scores.iter().all(|&s| s == 0.0));
}

#[test]
fn a_second_peak_near_a_found_keypoint_is_suppressed() {
    // A weaker second nose peak 2 cells from the first (outside the 3x3 local-maximum window)
    // seeds a root within the NMS radius (3 cells = 48 px) of the found pose's nose.
    let people = [figure(3, 10, 6.0)];
    let (mut heat, shorts, mids) = outputs(&people);
    heat[(3 * W + 14) * NUM_KEYPOINTS] = 5.0;
    let inputs = [(heat.clone(), NUM_KEYPOINTS), (shorts.clone(), 2 * NUM_KEYPOINTS), (mids.clone(), 4 * NUM_EDGES)];
    let out = run_tensors(&inputs, None, &opts(10, 0.5, 48.0)).unwrap();
    assert_eq!(out.count, 1.0);
    assert_pose(&out, 0, &people[0]);
}

#[test]
fn quantized_inputs_decode_like_float() {
    // Scale 0.25 with zero point 128 represents the synthetic values (-8 .. 6 logits, offsets
    // in multiples of 16 px) exactly, so the decoded poses are the same.
    let people = [figure(2, 2, 4.0), figure(6, 22, 6.0)];
    let (heat, shorts, mids) = outputs(&people);
    let q = nnrt_plugin_sdk::Quant { scale: 0.25, zero_point: 128 };
    let clamp_offsets = |v: Vec<f32>| v.into_iter().map(|f| f.clamp(-32.0, 31.75)).collect::<Vec<_>>();
    // Offsets are clamped to the quantized range; both runs see the same clamped values.
    let inputs = [(heat, NUM_KEYPOINTS), (clamp_offsets(shorts), 2 * NUM_KEYPOINTS), (clamp_offsets(mids), 4 * NUM_EDGES)];
    let float = run_tensors(&inputs, None, &opts(10, 0.5, 20.0)).unwrap();
    let quant = run_tensors(&inputs, Some(q), &opts(10, 0.5, 20.0)).unwrap();
    assert_eq!(float.count, quant.count);
    assert_eq!(float.keypoints, quant.keypoints);
    assert_eq!(float.scores, quant.scores);
}

#[test]
fn options_and_inputs_are_checked() {
    assert!(super::options(&[]).is_err());
    assert!(super::options(&map(&[("max_detections", Value::Int(10))])).unwrap_err().contains("stride"));
    assert!(super::options(&opts(0, 0.5, 20.0)).is_err());
    let good = opts(10, 0.5, 20.0);
    let shapes = |c: usize| ShapeInput { dtype: DType::F32, dims: vec![1, H, W, c], data: None };
    let dims = shape(&[shapes(17), shapes(34), shapes(64)], &good).unwrap();
    assert_eq!(dims, vec![vec![1, 10, 17, 2], vec![1, 10, 17], vec![1, 10], vec![1]]);
    assert!(shape(&[shapes(17), shapes(34), shapes(63)], &good).unwrap_err().contains("input 2"));
}

#[test]
fn bodypix_masks_give_each_cell_to_the_pose_it_points_at() {
    // Long offsets (in pixels) point from every cell at the keypoints of the person owning its
    // column, so the masks split the map at the midpoint between the two noses.
    let people = [figure(2, 2, 3.0), figure(6, 22, 6.0)];
    let (heat, shorts, mids) = outputs(&people);
    let owner = |x: usize| usize::from((x as isize - 4).abs() > (x as isize - 24).abs());
    let mut longs = vec![0f32; H * W * 2 * NUM_KEYPOINTS];
    for y in 0..H {
        for x in 0..W {
            for k in 0..NUM_KEYPOINTS {
                let (ty, tx) = people[owner(x)].cells[k];
                longs[(y * W + x) * 2 * NUM_KEYPOINTS + k] = (ty as f32 - y as f32) * STRIDE as f32;
                longs[(y * W + x) * 2 * NUM_KEYPOINTS + NUM_KEYPOINTS + k] = (tx as f32 - x as f32) * STRIDE as f32;
            }
        }
    }
    let stores: Vec<Vec<u32>> = [&heat, &shorts, &mids, &longs].iter().map(|v| v.iter().map(|f| f.to_bits()).collect()).collect();
    let channels = [NUM_KEYPOINTS, 2 * NUM_KEYPOINTS, 4 * NUM_EDGES, 2 * NUM_KEYPOINTS];
    let ins: Vec<Tensor<'_>> = stores.iter().zip(channels).map(|(s, c)| Tensor::new(DType::F32, vec![1, H, W, c], None, bytemuck::cast_slice(s))).collect();
    let dims = output_dims(2, Some(&[1, H, W, 34]));
    assert_eq!(dims[4], vec![1, 2, H, W]);
    let mut bufs: Vec<Vec<u32>> = dims.iter().map(|d| vec![0; d.iter().product()]).collect();
    {
        let mut outs: Vec<TensorMut<'_>> = bufs.iter_mut().zip(&dims).map(|(b, d)| TensorMut::new(DType::F32, d.clone(), None, bytemuck::cast_slice_mut(b))).collect();
        eval(&ins, &mut outs, &opts(2, 0.5, 20.0)).unwrap();
    }
    assert_eq!(f32::from_bits(bufs[3][0]), 2.0);
    let masks: Vec<f32> = bufs[4].iter().map(|&b| f32::from_bits(b)).collect();
    for y in 0..H {
        for x in 0..W {
            // Pose 0 is the stronger person (people[1]), pose 1 the other.
            let want = if owner(x) == 1 { (1.0, 0.0) } else { (0.0, 1.0) };
            assert_eq!((masks[y * W + x], masks[H * W + y * W + x]), want, "cell ({y}, {x})");
        }
    }
}
