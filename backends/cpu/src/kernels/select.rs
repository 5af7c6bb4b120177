//! Kernels whose output length depends on values: WHERE, UNIQUE and non-max suppression.
#![forbid(unsafe_code)]

use std::collections::HashMap;

use super::movement::strides;

/// WHERE: the coordinates (int64, row-major order) of every element for which `truth` holds.
pub fn where_coords(truth: impl Iterator<Item = bool>, dims: &[usize], out: &mut [i64]) {
    let st = strides(dims);
    let rank = dims.len();
    let mut k = 0;
    for (flat, t) in truth.enumerate() {
        if !t || rank == 0 {
            continue;
        }
        let mut rem = flat;
        for (d, s) in st.iter().enumerate() {
            if let Some(o) = out.get_mut(k * rank + d) {
                *o = (rem / s) as i64;
            }
            rem %= s;
        }
        k += 1;
    }
}

/// UNIQUE: for elements with hash keys `keys`, the position of each element's first occurrence
/// among the distinct values (`first`, in order of appearance) and each element's index into them.
pub fn unique(keys: &[u64]) -> (Vec<usize>, Vec<i64>) {
    let mut seen: HashMap<u64, i64> = HashMap::new();
    let mut first = Vec::new();
    let idx = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            *seen.entry(*k).or_insert_with(|| {
                first.push(i);
                first.len() as i64 - 1
            })
        })
        .collect();
    (first, idx)
}

/// IoU of boxes `i` and `j` (`[y1, x1, y2, x2]`, corners in either order); 0 when either box
/// has no area.
fn iou(boxes: &[f32], i: usize, j: usize) -> f32 {
    let b = |k: usize| {
        let v = &boxes[k * 4..k * 4 + 4];
        (v[0].min(v[2]), v[0].max(v[2]), v[1].min(v[3]), v[1].max(v[3]))
    };
    let (ay0, ay1, ax0, ax1) = b(i);
    let (by0, by1, bx0, bx1) = b(j);
    let (area_a, area_b) = ((ay1 - ay0) * (ax1 - ax0), (by1 - by0) * (bx1 - bx0));
    if area_a <= 0.0 || area_b <= 0.0 {
        return 0.0;
    }
    let ih = (ay1.min(by1) - ay0.max(by0)).max(0.0);
    let iw = (ax1.min(bx1) - ax0.max(bx0)).max(0.0);
    let inter = ih * iw;
    inter / (area_a + area_b - inter)
}

/// Greedy (soft) non-max suppression as TFLite's reference: candidates above `score_threshold`
/// are taken by descending score (ties: lowest index first); one overlapping a selected box by
/// `iou >= iou_threshold` is dropped, and with `sigma > 0` its score decays by
/// `exp(-0.5 / sigma * iou²)` per selected box instead, going back to the queue while it stays
/// above the threshold. Returns the selected (index, score) pairs, at most `max_out`.
pub fn non_max_suppression(boxes: &[f32], scores: &[f32], max_out: usize, iou_threshold: f32, score_threshold: f32, sigma: f32) -> Vec<(usize, f32)> {
    // (score, index, first selected box not yet compared against).
    let mut queue: Vec<(f32, usize, usize)> = scores.iter().enumerate().filter(|(_, &s)| s > score_threshold).map(|(i, &s)| (s, i, 0)).collect();
    let limit = queue.len().min(max_out);
    let scale = if sigma > 0.0 { -0.5 / sigma } else { 0.0 };
    let mut selected: Vec<(usize, f32)> = Vec::new();
    while selected.len() < limit && !queue.is_empty() {
        // The best candidate: highest score, lowest index among equals.
        let best = (0..queue.len()).fold(0, |b, k| if queue[k].0 > queue[b].0 || (queue[k].0 == queue[b].0 && queue[k].1 < queue[b].1) { k } else { b });
        let (mut score, index, begin) = queue.swap_remove(best);
        let original = score;
        let mut hard = false;
        for j in (begin..selected.len()).rev() {
            let o = iou(boxes, index, selected[j].0);
            if o >= iou_threshold {
                hard = true;
                break;
            }
            if sigma > 0.0 {
                score *= (scale * o * o).exp();
            }
            if score <= score_threshold {
                break;
            }
        }
        let begin = selected.len();
        if !hard {
            if score == original {
                selected.push((index, score));
            }
            // TFLite puts a selected box back too; the next look at it meets itself (IoU 1).
            if score > score_threshold {
                queue.push((score, index, begin));
            }
        }
    }
    selected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nms_drops_overlaps_and_keeps_order() {
        let boxes = [0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, 2.0, 1.0, 3.0];
        let got = non_max_suppression(&boxes, &[0.9, 0.8, 0.7], 3, 0.5, 0.0, 0.0);
        assert_eq!(got.iter().map(|p| p.0).collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn unique_keeps_first_appearance_order() {
        let (first, idx) = unique(&[5, 3, 5, 9, 3]);
        assert_eq!(first, vec![0, 1, 3]);
        assert_eq!(idx, vec![0, 1, 0, 2, 1]);
    }
}
