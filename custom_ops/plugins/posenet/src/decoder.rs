//! Multi-person pose decoding (PersonLab, Papandreou et al. 2018) as Coral's posenet_decoder.cc
//! does it: local maxima of the keypoint heatmaps seed poses in decreasing score order; each seed
//! grows a pose along the skeleton's edges by following mid-range offsets, refined by short-range
//! offsets; seeds near an already-found pose's same keypoint are skipped (NMS); poses are then
//! rescored with soft keypoint NMS and sorted.
//!
//! All coordinates here are in heatmap cells ("block space"); [`decode`] scales the results to
//! pixels by `stride`. Scores are logits until the end. The arithmetic follows the C++ in float32,
//! including its quirks (the interpolation weight uses the unclamped coordinate), so results match
//! Coral's decoder. Backward edges read the second half of the mid offsets from edge 16 on, as in
//! libcoral (coral/pose_estimation/posenet_decoder.cc); the older copy in google-coral/edgetpu
//! tests `edge > 16` and so reads edge 16 (left eye to nose) from the wrong channels.
//!
//! [`instance_masks`] is BodyPix's extra: each heatmap cell goes to the pose whose keypoints its
//! long-range offsets point at.

/// Keypoints per pose (COCO order: nose, eyes, ears, shoulders, elbows, wrists, hips, knees, ankles).
pub const NUM_KEYPOINTS: usize = 17;
/// Skeleton edges in each direction.
pub const NUM_EDGES: usize = 16;

const NOSE: usize = 0;
const LEFT_EYE: usize = 1;
const RIGHT_EYE: usize = 2;
const LEFT_EAR: usize = 3;
const RIGHT_EAR: usize = 4;
const LEFT_SHOULDER: usize = 5;
const RIGHT_SHOULDER: usize = 6;
const LEFT_ELBOW: usize = 7;
const RIGHT_ELBOW: usize = 8;
const LEFT_WRIST: usize = 9;
const RIGHT_WRIST: usize = 10;
const LEFT_HIP: usize = 11;
const RIGHT_HIP: usize = 12;
const LEFT_KNEE: usize = 13;
const RIGHT_KNEE: usize = 14;
const LEFT_ANKLE: usize = 15;
const RIGHT_ANKLE: usize = 16;

/// The 16 forward edges (parent, child), then the same 16 backward. Edge k's mid offsets are
/// channels k (y) and 16 + k (x) for forward edges; backward ones are shifted by 16.
const EDGES: [(usize, usize); 2 * NUM_EDGES] = [
    (NOSE, LEFT_EYE),
    (LEFT_EYE, LEFT_EAR),
    (NOSE, RIGHT_EYE),
    (RIGHT_EYE, RIGHT_EAR),
    (NOSE, LEFT_SHOULDER),
    (LEFT_SHOULDER, LEFT_ELBOW),
    (LEFT_ELBOW, LEFT_WRIST),
    (LEFT_SHOULDER, LEFT_HIP),
    (LEFT_HIP, LEFT_KNEE),
    (LEFT_KNEE, LEFT_ANKLE),
    (NOSE, RIGHT_SHOULDER),
    (RIGHT_SHOULDER, RIGHT_ELBOW),
    (RIGHT_ELBOW, RIGHT_WRIST),
    (RIGHT_SHOULDER, RIGHT_HIP),
    (RIGHT_HIP, RIGHT_KNEE),
    (RIGHT_KNEE, RIGHT_ANKLE),
    (LEFT_EYE, NOSE),
    (LEFT_EAR, LEFT_EYE),
    (RIGHT_EYE, NOSE),
    (RIGHT_EAR, RIGHT_EYE),
    (LEFT_SHOULDER, NOSE),
    (LEFT_ELBOW, LEFT_SHOULDER),
    (LEFT_WRIST, LEFT_ELBOW),
    (LEFT_HIP, LEFT_SHOULDER),
    (LEFT_KNEE, LEFT_HIP),
    (LEFT_ANKLE, LEFT_KNEE),
    (RIGHT_SHOULDER, NOSE),
    (RIGHT_ELBOW, RIGHT_SHOULDER),
    (RIGHT_WRIST, RIGHT_ELBOW),
    (RIGHT_HIP, RIGHT_SHOULDER),
    (RIGHT_KNEE, RIGHT_HIP),
    (RIGHT_ANKLE, RIGHT_KNEE),
];

/// A position, y first as in the decoder's outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Row.
    pub y: f32,
    /// Column.
    pub x: f32,
}

#[derive(Clone, Copy, Debug)]
struct Keypoint {
    point: Point,
    id: usize,
    score: f32,
}

/// A max-heap by score with exactly the push/pop of libstdc++'s `std::priority_queue`, so that
/// keypoints of equal score (common with quantized heatmaps) come out in the same order as in
/// Coral's decoder.
struct Queue(Vec<Keypoint>);

impl Queue {
    fn less(a: &Keypoint, b: &Keypoint) -> bool {
        a.score < b.score
    }

    fn sift_up(v: &mut [Keypoint], mut hole: usize, top: usize, value: Keypoint) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if !Self::less(&v[parent], &value) {
                break;
            }
            v[hole] = v[parent];
            hole = parent;
        }
        v[hole] = value;
    }

    fn push(&mut self, k: Keypoint) {
        self.0.push(k);
        let n = self.0.len();
        Self::sift_up(&mut self.0, n - 1, 0, k);
    }

    fn pop(&mut self) -> Option<Keypoint> {
        let n = self.0.len();
        if n == 0 {
            return None;
        }
        let top = self.0[0];
        if n > 1 {
            // pop_heap: move the last element into the root's hole by `__adjust_heap`.
            let value = self.0[n - 1];
            self.0[n - 1] = top;
            let v = &mut self.0[..n - 1];
            let len = v.len();
            let mut hole = 0;
            let mut child = 0;
            while child < len.saturating_sub(1) / 2 {
                child = 2 * (child + 1);
                if Self::less(&v[child], &v[child - 1]) {
                    child -= 1;
                }
                v[hole] = v[child];
                hole = child;
            }
            if len.is_multiple_of(2) && len >= 2 && child == (len - 2) / 2 {
                child = 2 * (child + 1);
                v[hole] = v[child - 1];
                hole = child - 1;
            }
            Self::sift_up(v, hole, 0, value);
        }
        self.0.pop();
        Some(top)
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Log odds of a probability (the C++ computes in double and returns float).
fn logodds(x: f32) -> f32 {
    (-(1.0 / (x as f64 + 1e-6) - 1.0).ln()) as f32
}

/// A [H, W, C] tensor of float32.
#[derive(Clone, Copy)]
pub struct Map<'a> {
    /// The values, channels innermost.
    pub data: &'a [f32],
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels.
    pub channels: usize,
}

impl Map<'_> {
    /// Floor, ceiling and weight along one axis: the position is clamped to the map for the
    /// corners but the weight uses the unclamped coordinate, as the C++ does.
    fn lerp(x: f32, n: usize) -> (usize, usize, f32) {
        let p = x.clamp(0.0, n as f32 - 1.0);
        let lo = p.floor() as usize;
        let hi = p.ceil() as usize;
        (lo, hi, x - lo as f32)
    }

    /// Bilinear samples of channels `cs` at (y, x).
    fn sample<const N: usize>(&self, y: f32, x: f32, cs: [usize; N]) -> [f32; N] {
        let (y0, y1, ly) = Self::lerp(y, self.height);
        let (x0, x1, lx) = Self::lerp(x, self.width);
        let at = |yy: usize, xx: usize| (yy * self.width + xx) * self.channels;
        let (tl, tr, bl, br) = (at(y0, x0), at(y0, x1), at(y1, x0), at(y1, x1));
        let d = self.data;
        cs.map(|c| (1.0 - ly) * ((1.0 - lx) * d[tl + c] + lx * d[tr + c]) + ly * ((1.0 - lx) * d[bl + c] + lx * d[br + c]))
    }
}

/// Follows the mid-range offsets of `edge` from `source`, then refines towards keypoint `target`
/// with the short-range offsets `steps` times.
fn displaced(shorts: &Map<'_>, mids: &Map<'_>, source: Point, edge: usize, target: usize, steps: usize) -> Point {
    let (hmax, wmax) = (shorts.height as f32 - 1.0, shorts.width as f32 - 1.0);
    let [dy, dx] = mids.sample(source.y, source.x, [edge, NUM_EDGES + edge]);
    let mut y = (source.y + dy).clamp(0.0, hmax);
    let mut x = (source.x + dx).clamp(0.0, wmax);
    for _ in 0..steps {
        let [dy, dx] = shorts.sample(y, x, [target, NUM_KEYPOINTS + target]);
        y = (y + dy).clamp(0.0, hmax);
        x = (x + dx).clamp(0.0, wmax);
    }
    Point { y, x }
}

/// Children and edge ids of each keypoint, in edge order.
fn adjacency() -> Vec<Vec<(usize, usize)>> {
    let mut adj = vec![Vec::new(); NUM_KEYPOINTS];
    for (k, &(parent, child)) in EDGES.iter().enumerate() {
        adj[parent].push((child, k));
    }
    adj
}

/// Grows one pose from `root`; keypoint scores stay logits.
fn backtrack(scores: &Map<'_>, shorts: &Map<'_>, mids: &Map<'_>, root: Keypoint, adj: &[Vec<(usize, usize)>], steps: usize) -> ([Point; NUM_KEYPOINTS], [f32; NUM_KEYPOINTS]) {
    let mut points = [Point { y: -1.0, x: -1.0 }; NUM_KEYPOINTS];
    let mut logits = [-1e5f32; NUM_KEYPOINTS];
    let [root_score] = scores.sample(root.point.y, root.point.x, [root.id]);
    let mut queue = Queue(Vec::new());
    queue.push(Keypoint { score: root_score, ..root });
    let mut decoded = [false; NUM_KEYPOINTS];
    while let Some(current) = queue.pop() {
        if decoded[current.id] {
            continue;
        }
        points[current.id] = current.point;
        logits[current.id] = current.score;
        decoded[current.id] = true;
        for &(child, edge) in &adj[current.id] {
            if decoded[child] {
                continue;
            }
            // Mid offsets hold [fwd y][fwd x][bwd y][bwd x], 16 channels each.
            let edge = if edge >= NUM_EDGES { edge + NUM_EDGES } else { edge };
            let point = displaced(shorts, mids, current.point, edge, child, steps);
            let [score] = scores.sample(point.y, point.x, [child]);
            queue.push(Keypoint { point, id: child, score });
        }
    }
    (points, logits)
}

/// Local maxima (3x3 window) of every keypoint's heatmap at or above `threshold`, moved by
/// their short-range offsets.
fn seeds(scores: &Map<'_>, shorts: &Map<'_>, threshold: f32) -> Queue {
    const RADIUS: usize = 1;
    let (h, w, k) = (scores.height, scores.width, NUM_KEYPOINTS);
    let s = scores.data;
    let mut queue = Queue(Vec::new());
    for y in 0..h {
        for x in 0..w {
            for j in 0..k {
                let score = s[(y * w + x) * k + j];
                if score < threshold {
                    continue;
                }
                let mut local_max = true;
                'window: for yy in y.saturating_sub(RADIUS)..(y + RADIUS + 1).min(h) {
                    for xx in x.saturating_sub(RADIUS)..(x + RADIUS + 1).min(w) {
                        if s[(yy * w + xx) * k + j] > score {
                            local_max = false;
                            break 'window;
                        }
                    }
                }
                if local_max {
                    let o = (y * w + x) * 2 * k + j;
                    let dy = shorts.data[o];
                    let dx = shorts.data[o + k];
                    let point = Point { y: (y as f32 + dy).clamp(0.0, h as f32 - 1.0), x: (x as f32 + dx).clamp(0.0, w as f32 - 1.0) };
                    queue.push(Keypoint { point, id: j, score });
                }
            }
        }
    }
    queue
}

fn squared_distance(a: Point, b: Point) -> f32 {
    let dy = b.y - a.y;
    let dx = b.x - a.x;
    dy * dy + dx * dx
}

/// Indices of `scores` in decreasing order (stable for ties).
fn decreasing(scores: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    idx
}

/// One decoded pose, in pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct Pose {
    /// Keypoint positions (y, x) in input pixels.
    pub keypoints: [Point; NUM_KEYPOINTS],
    /// Keypoint scores in [0, 1].
    pub keypoint_scores: [f32; NUM_KEYPOINTS],
    /// The pose's score in [0, 1].
    pub score: f32,
}

/// Decoder settings (the op's options, with `nms_radius` already divided by `stride`).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Most poses returned.
    pub max_detections: usize,
    /// Keypoint and pose score threshold, a probability.
    pub score_threshold: f32,
    /// Short-offset refinement steps after following a mid offset (Coral uses 5).
    pub refinement_steps: usize,
    /// Keypoint NMS radius in heatmap cells.
    pub nms_radius: f32,
    /// Pixels per heatmap cell.
    pub stride: usize,
}

/// Decodes all poses from `scores` (logits, [H, W, 17]), `shorts` ([H, W, 34], in cells) and
/// `mids` ([H, W, 64], in cells). Poses come sorted by decreasing score.
pub fn decode(scores: &Map<'_>, shorts: &Map<'_>, mids: &Map<'_>, s: &Settings) -> Vec<Pose> {
    let min_logit = logodds(s.score_threshold);
    let mut queue = seeds(scores, shorts, min_logit);
    let adj = adjacency();
    let r2 = s.nms_radius * s.nms_radius;
    let mut poses: Vec<[Point; NUM_KEYPOINTS]> = Vec::new();
    let mut kp_scores: Vec<[f32; NUM_KEYPOINTS]> = Vec::new();
    let mut instance: Vec<f32> = Vec::new();
    while poses.len() < s.max_detections {
        let Some(root) = queue.pop() else { break };
        if poses.iter().any(|p| squared_distance(root.point, p[root.id]) <= r2) {
            continue;
        }
        let (points, logits) = backtrack(scores, shorts, mids, root, &adj, s.refinement_steps);
        let probs = logits.map(sigmoid);
        let score = decreasing(&probs).iter().map(|&k| probs[k]).sum::<f32>() / NUM_KEYPOINTS as f32;
        if score >= s.score_threshold {
            poses.push(points);
            kp_scores.push(probs);
            instance.push(score);
        }
    }
    // Soft keypoint NMS: a keypoint close to the same keypoint of a better pose no longer counts
    // towards this pose's score.
    let order = decreasing(&instance);
    for (i, &cur) in order.iter().enumerate() {
        let mut occluded = [false; NUM_KEYPOINTS];
        for &prev in &order[..i] {
            for (k, o) in occluded.iter_mut().enumerate() {
                if squared_distance(poses[cur][k], poses[prev][k]) <= r2 {
                    *o = true;
                }
            }
        }
        let total: f32 = decreasing(&kp_scores[cur]).iter().filter(|&&k| !occluded[k]).map(|&k| kp_scores[cur][k]).sum();
        instance[cur] = total / NUM_KEYPOINTS as f32;
    }
    let stride = s.stride as f32;
    decreasing(&instance)
        .into_iter()
        .take_while(|&i| instance[i] >= s.score_threshold)
        .map(|i| Pose {
            keypoints: poses[i].map(|p| Point { y: p.y * stride, x: p.x * stride }),
            keypoint_scores: kp_scores[i],
            score: instance[i],
        })
        .collect()
}

/// BodyPix instance masks: for each cell of the long-offset map `longs` ([H, W, 34], in cells),
/// follows the offsets towards every keypoint (3 steps) and marks the cell in the mask of the
/// pose (keypoints in pixels) nearest to where they lead, by summed squared distance. `masks` is
/// [max_detections, H, W]. As in libcoral, with no poses every cell lands in mask 0.
pub fn instance_masks(longs: &Map<'_>, poses: &[[Point; NUM_KEYPOINTS]], stride: usize, masks: &mut [f32]) {
    const STEPS: usize = 2;
    let (h, w) = (longs.height, longs.width);
    masks.fill(0.0);
    let stride = stride as f32;
    for y in 0..h {
        for x in 0..w {
            let embedding: Vec<Point> = (0..NUM_KEYPOINTS)
                .map(|k| {
                    let (mut py, mut px) = (y as f32, x as f32);
                    for _ in 0..=STEPS {
                        let [dy, dx] = longs.sample(py, px, [k, NUM_KEYPOINTS + k]);
                        py = (py + dy).clamp(0.0, h as f32 - 1.0);
                        px = (px + dx).clamp(0.0, w as f32 - 1.0);
                    }
                    Point { y: py * stride, x: px * stride }
                })
                .collect();
            // First minimum, as std::min_element; no poses gives index 0 (std::distance of end).
            let mut best = 0;
            let mut best_d = f32::INFINITY;
            for (i, pose) in poses.iter().enumerate() {
                let d: f32 = embedding.iter().zip(pose).map(|(&e, &p)| squared_distance(e, p)).sum();
                if d < best_d {
                    best_d = d;
                    best = i;
                }
            }
            if let Some(m) = masks.get_mut((best * h + y) * w + x) {
                *m = 1.0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_pops_in_score_order() {
        let mut q = Queue(Vec::new());
        let scores = [3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0, 5.0, 3.5];
        for (i, &s) in scores.iter().enumerate() {
            q.push(Keypoint { point: Point { y: 0.0, x: 0.0 }, id: i, score: s });
        }
        let mut got = Vec::new();
        while let Some(k) = q.pop() {
            got.push(k.score);
        }
        let mut want = scores.to_vec();
        want.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(got, want);
    }

    #[test]
    fn interpolation_uses_the_unclamped_weight() {
        let data = [0.0, 1.0, 2.0, 3.0];
        let m = Map { data: &data, height: 2, width: 2, channels: 1 };
        assert_eq!(m.sample(0.5, 0.5, [0]), [1.5]);
        // Past the edge the corners clamp but the weight keeps growing (as in Coral's decoder).
        let (lo, hi, w) = Map::lerp(1.5, 2);
        assert_eq!((lo, hi, w), (1, 1, 0.5));
    }

    #[test]
    fn logodds_inverts_sigmoid() {
        for p in [0.1f32, 0.5, 0.9] {
            assert!((sigmoid(logodds(p)) - p).abs() < 1e-5);
        }
    }
}
