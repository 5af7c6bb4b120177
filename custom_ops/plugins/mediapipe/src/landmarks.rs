//! `Landmarks2TransformMatrix` and `TransformLandmarks` (MediaPipe's
//! landmarks_to_transform_matrix.cc and transform_landmarks.cc, versions 1 and 2).
//!
//! `Landmarks2TransformMatrix` turns a set of 3-D landmarks into the 4x4 matrix ([1, 4, 4]) that
//! maps a crop around them back to the image: the crop is rotated so the line from the left to
//! the right rotation landmark is level, and sized to the bounding box of the `subset` landmarks.
//! Version 1 (input [1, 1, 1, 3N], options `input_hw`, `output_hw`, `dimensions`,
//! `landmarks_range`, `bbox_size_multiplier`, `left/right_rotation_idx`, `subset`) gives the
//! inverse transformation in relative coordinates; version 2 (input [1, N, 3], options
//! `subset_idxs`, `left/right_rotation_idx`, `target_rotation_radians`, `output_height/width`,
//! `scale_x/y`) gives the crop-to-image matrix in pixels. The version is told by `subset_idxs`.
//!
//! `TransformLandmarks` applies the first two rows of such a matrix to every landmark's (x, y)
//! and keeps z. Version 1: input [1, H, W, C] and options `dimensions`, `scale` (the translation
//! is multiplied by `scale`); version 2: input [1, N, C], dimensions = C, scale 1. The version is
//! told by the input's rank.
//!
//! Arithmetic follows the C++ (float32, with the few double-precision constants it has), so the
//! results match MediaPipe's to float rounding.

use nnrt_plugin_sdk::{flexbuffers, DType, ShapeInput, Tensor, TensorMut};

use crate::util::{expect_io, options_map};

/// A row-major 3x3 float matrix.
type Mat3 = [[f32; 3]; 3];
/// A row-major 4x4 float matrix.
type Mat4 = [[f32; 4]; 4];

fn mul3(a: &Mat3, b: &Mat3) -> Mat3 {
    let mut r = [[0f32; 3]; 3];
    for (i, row) in r.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            let mut sum = 0f32;
            for k in 0..3 {
                sum += a[i][k] * b[k][j];
            }
            *v = sum;
        }
    }
    r
}

fn mul4(a: &Mat4, b: &Mat4) -> Mat4 {
    let mut r = [[0f32; 4]; 4];
    for (i, row) in r.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            let mut sum = 0f32;
            for k in 0..4 {
                sum += a[i][k] * b[k][j];
            }
            *v = sum;
        }
    }
    r
}

fn mul3v(a: &Mat3, v: [f32; 3]) -> [f32; 3] {
    let mut r = [0f32; 3];
    for (i, out) in r.iter_mut().enumerate() {
        let mut sum = 0f32;
        for k in 0..3 {
            sum += a[i][k] * v[k];
        }
        *out = sum;
    }
    r
}

fn int(m: &flexbuffers::Map<'_>, key: &str) -> Result<i32, String> {
    Ok(m.require(key)?.as_i32()?)
}

fn float(m: &flexbuffers::Map<'_>, key: &str) -> Result<f32, String> {
    Ok(m.require(key)?.as_f32()?)
}

fn ints(m: &flexbuffers::Map<'_>, key: &str) -> Result<Vec<i64>, String> {
    Ok(m.require(key)?.as_vector()?.to_i64s()?)
}

/// Index pairs from a flat list; an odd last element pairs with itself (as MediaPipe parses it).
fn pairs(flat: &[i64], what: &str) -> Result<Vec<[usize; 2]>, String> {
    let idx = |v: i64| usize::try_from(v).map_err(|_| format!("{what} holds negative index {v}"));
    let mut out: Vec<[usize; 2]> = flat.chunks_exact(2).map(|c| Ok([idx(c[0])?, idx(c[1])?])).collect::<Result<_, String>>()?;
    if flat.len() % 2 == 1 {
        let last = idx(flat[flat.len() - 1])?;
        out.push([last, last]);
    }
    if out.is_empty() {
        return Err(format!("{what} is empty"));
    }
    Ok(out)
}

/// Reads landmark `i` (x, y, z) from packed xyz triples.
fn landmark(data: &[f32], i: usize) -> Result<[f32; 3], String> {
    data.get(3 * i..3 * i + 3).map(|s| [s[0], s[1], s[2]]).ok_or_else(|| format!("landmark index {i} is out of range ({} landmarks)", data.len() / 3))
}

/// Shape of `Landmarks2TransformMatrix`: always [1, 4, 4].
pub fn to_transform_matrix_shape(ins: &[ShapeInput<'_>], _options: &[u8]) -> Result<Vec<Vec<usize>>, String> {
    expect_io("Landmarks2TransformMatrix", ins.len(), 1, 1, 1)?;
    Ok(vec![vec![1, 4, 4]])
}

/// Kernel of `Landmarks2TransformMatrix`.
pub fn to_transform_matrix(ins: &[Tensor<'_>], outs: &mut [TensorMut<'_>], options: &[u8]) -> Result<(), String> {
    expect_io("Landmarks2TransformMatrix", ins.len(), outs.len(), 1, 1)?;
    let m = options_map(options)?;
    let landmarks = ins[0].f32s()?;
    let matrix = if m.contains("subset_idxs") { matrix_v2(&m, landmarks)? } else { matrix_v1(&m, &ins[0].dims, landmarks)? };
    let out = outs[0].f32s_mut()?;
    if out.len() != 16 {
        return Err(format!("the output must hold a 4x4 matrix, it has {} elements", out.len()));
    }
    out.copy_from_slice(&matrix);
    Ok(())
}

fn matrix_v1(m: &flexbuffers::Map<'_>, dims: &[usize], lm: &[f32]) -> Result<[f32; 16], String> {
    if dims.len() != 4 || dims[..3] != [1, 1, 1] {
        return Err(format!("version 1 takes landmarks of shape [1, 1, 1, 3N], got {dims:?}"));
    }
    let hw = |key: &str| -> Result<(f32, f32), String> {
        let v = ints(m, key)?;
        match v.as_slice() {
            [h, w] if *h > 0 && *w > 0 => Ok((*h as f32, *w as f32)),
            _ => Err(format!("{key} must be two positive ints, got {v:?}")),
        }
    };
    let (in_h, in_w) = hw("input_hw")?;
    let (out_h, out_w) = hw("output_hw")?;
    if int(m, "dimensions")? != 3 {
        return Err(format!("dimensions must be 3, got {}", int(m, "dimensions")?));
    }
    let range = int(m, "landmarks_range")?;
    if range <= 0 {
        return Err(format!("landmarks_range must be positive, got {range}"));
    }
    let range = range as f32;
    let multiplier = float(m, "bbox_size_multiplier")?;
    if multiplier == 0.0 {
        return Err("bbox_size_multiplier must not be 0".into());
    }
    let index = |key: &str| usize::try_from(int(m, key)?).map_err(|_| format!("{key} must not be negative"));
    let left = landmark(lm, index("left_rotation_idx")?)?;
    let right = landmark(lm, index("right_rotation_idx")?)?;
    let subset = pairs(&ints(m, "subset")?, "subset")?;

    let alpha = -((right[1] - left[1]) / (right[0] - left[0])).atan();
    let (sin_a, cos_a) = alpha.sin_cos();
    let mut max = [-100000f32, -100000f32];
    let mut min = [100000f32, 100000f32];
    for pair in &subset {
        for &i in pair {
            let p = landmark(lm, i)?;
            let r = [p[0] * cos_a - p[1] * sin_a, p[0] * sin_a + p[1] * cos_a];
            max = [max[0].max(r[0]), max[1].max(r[1])];
            min = [min[0].min(r[0]), min[1].min(r[1])];
        }
    }
    let bbox = [(max[0] - min[0]) * multiplier, (max[1] - min[1]) * multiplier];
    let scale: Mat3 = [[bbox[0] / range, 0.0, 0.0], [0.0, bbox[1] / range, 0.0], [0.0, 0.0, 1.0]];
    // The C++ divides by 2.0 (a double) and narrows back to float.
    let middle = [((max[0] + min[0]) as f64 / 2.0) as f32, ((max[1] + min[1]) as f64 / 2.0) as f32];
    let (sin_n, cos_n) = (-alpha).sin_cos();
    let rm = [middle[0] * cos_n - middle[1] * sin_n, middle[0] * sin_n + middle[1] * cos_n];
    let rel = |v: f32| ((v / range) as f64 * 2.0 - 1.0) as f32;
    let rotation: Mat3 = [[cos_n, -sin_n, rel(rm[0])], [sin_n, cos_n, rel(rm[1])], [0.0, 0.0, 1.0]];
    let to_relative: Mat3 = [
        [(2.0 / (out_w as f64 - 1.0)) as f32, 0.0, -1.0],
        [0.0, (2.0 / (out_h as f64 - 1.0)) as f32, -1.0],
        [0.0, 0.0, 1.0],
    ];
    let half = |v: f32| ((v as f64 - 1.0) / 2.0) as f32;
    let to_absolute: Mat3 = [[half(in_w), 0.0, half(in_w)], [0.0, half(in_h), half(in_h)], [0.0, 0.0, 1.0]];
    let itm = mul3(&mul3(&mul3(&to_absolute, &rotation), &scale), &to_relative);
    Ok([
        itm[0][0], itm[0][1], 0.0, itm[0][2], //
        itm[1][0], itm[1][1], 0.0, itm[1][2], //
        itm[2][0], itm[2][1], itm[2][2], 0.0, //
        0.0, 0.0, 0.0, 1.0,
    ])
}

fn matrix_v2(m: &flexbuffers::Map<'_>, lm: &[f32]) -> Result<[f32; 16], String> {
    let subset = pairs(&ints(m, "subset_idxs")?, "subset_idxs")?;
    let index = |key: &str| usize::try_from(int(m, key)?).map_err(|_| format!("{key} must not be negative"));
    let left = landmark(lm, index("left_rotation_idx")?)?;
    let right = landmark(lm, index("right_rotation_idx")?)?;
    let target = float(m, "target_rotation_radians")?;
    let (out_h, out_w) = (int(m, "output_height")?, int(m, "output_width")?);
    let (scale_x, scale_y) = (float(m, "scale_x")?, float(m, "scale_y")?);
    if out_h <= 0 || out_w <= 0 || scale_x <= 0.0 || scale_y <= 0.0 {
        return Err(format!("output_height/width and scale_x/y must be positive, got {out_h}, {out_w}, {scale_x}, {scale_y}"));
    }
    let rotation = target - (right[1] - left[1]).atan2(right[0] - left[0]);

    // Center and size of the subset's bounding box in the rotated frame.
    let (s, c) = rotation.sin_cos();
    let rot: Mat3 = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]];
    let (si, ci) = (-rotation).sin_cos();
    let rot_inv: Mat3 = [[ci, -si, 0.0], [si, ci, 0.0], [0.0, 0.0, 1.0]];
    let mut points = Vec::with_capacity(subset.len() * 2);
    for pair in &subset {
        for &i in pair {
            let p = landmark(lm, i)?;
            points.push(mul3v(&rot, [p[0], p[1], 1.0]));
        }
    }
    let (mut max, mut min) = (points[0], points[0]);
    for p in &points[1..] {
        max = [max[0].max(p[0]), max[1].max(p[1]), max[2]];
        min = [min[0].min(p[0]), min[1].min(p[1]), min[2]];
    }
    let (crop_w, crop_h) = (max[0] - min[0], max[1] - min[1]);
    let center = mul3v(&rot_inv, [(min[0] + max[0]) / 2.0, (min[1] + max[1]) / 2.0, min[2]]);

    let shift: Mat4 = [[1.0, 0.0, 0.0, center[0]], [0.0, 1.0, 0.0, center[1]], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let (sr, cr) = (-rotation).sin_cos();
    let rot4: Mat4 = [[cr, -sr, 0.0, 0.0], [sr, cr, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let sx = scale_x * crop_w / out_w as f32;
    let sy = scale_y * crop_h / out_h as f32;
    let scale: Mat4 = [[sx, 0.0, 0.0, 0.0], [0.0, sy, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let (hx, hy) = ((-(out_w as f64 / 2.0)) as f32, (-(out_h as f64 / 2.0)) as f32);
    let shift2: Mat4 = [[1.0, 0.0, 0.0, hx], [0.0, 1.0, 0.0, hy], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let identity: Mat4 = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let t = mul4(&mul4(&mul4(&mul4(&identity, &shift), &rot4), &scale), &shift2);
    let mut out = [0f32; 16];
    for (i, row) in t.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(row);
    }
    Ok(out)
}

/// Shape of `TransformLandmarks`: the landmarks' shape.
pub fn transform_shape(ins: &[ShapeInput<'_>], _options: &[u8]) -> Result<Vec<Vec<usize>>, String> {
    expect_io("TransformLandmarks", ins.len(), 1, 2, 1)?;
    Ok(vec![ins[0].dims.clone()])
}

fn dot(a: [f32; 4], b: [f32; 4]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
}

/// Kernel of `TransformLandmarks`.
pub fn transform(ins: &[Tensor<'_>], outs: &mut [TensorMut<'_>], options: &[u8]) -> Result<(), String> {
    expect_io("TransformLandmarks", ins.len(), outs.len(), 2, 1)?;
    if ins[1].dtype != DType::F32 || ins[1].len() < 8 {
        return Err(format!("the matrix must be float32 with at least 8 values, got {} {:?}", ins[1].dtype, ins[1].dims));
    }
    let dims = ins[0].dims.clone();
    let (dimensions, scale) = match dims.len() {
        4 => {
            let m = options_map(options)?;
            let d = m.get("dimensions")?.map(|v| v.as_i32()).transpose()?.unwrap_or(0);
            let s = m.get("scale")?.map(|v| v.as_f32()).transpose()?.unwrap_or(0.0);
            if s == 0.0 {
                return Err("version 1 needs a non-zero 'scale' option".into());
            }
            (d, s)
        }
        3 => (dims[2] as i32, 1.0),
        r => return Err(format!("landmarks must have rank 3 (version 2) or 4 (version 1), got rank {r}")),
    };
    if dimensions != 2 && dimensions != 3 {
        return Err(format!("landmarks must have 2 or 3 dimensions, got {dimensions}"));
    }
    let d = dimensions as usize;
    let channels = dims[dims.len() - 1];
    if !channels.is_multiple_of(d) {
        return Err(format!("the last dim ({channels}) is not a multiple of the landmark dimensions ({d})"));
    }
    if outs[0].dims != dims {
        return Err(format!("output has shape {:?}, expected {dims:?}", outs[0].dims));
    }
    let m = ins[1].f32s()?;
    let xt = [m[0], m[1], m[2], m[3] * scale];
    let yt = [m[4], m[5], m[6], m[7] * scale];
    let src = ins[0].f32s()?;
    let dst = outs[0].f32s_mut()?;
    // Every landmark of every (y, x) position; the last dim holds `channels / d` landmarks.
    for (s, o) in src.chunks_exact(channels).zip(dst.chunks_exact_mut(channels)) {
        for (l, ol) in s.chunks_exact(d).zip(o.chunks_exact_mut(d)) {
            let v = [l[0], l[1], 0.0, 1.0];
            ol[0] = dot(xt, v);
            ol[1] = dot(yt, v);
            if d == 3 {
                ol[2] = l[2];
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nnrt_plugin_sdk::flexbuffers::build::{map, Value};

    /// Runs `op` on float32 inputs; tensors live in `u32` storage so their bytes are 4-aligned.
    #[allow(clippy::type_complexity)]
    pub(crate) fn run(
        op: fn(&[Tensor<'_>], &mut [TensorMut<'_>], &[u8]) -> Result<(), String>,
        ins: &[(Vec<usize>, Vec<f32>)],
        out_dims: Vec<usize>,
        options: &[u8],
    ) -> Result<Vec<f32>, String> {
        let stores: Vec<Vec<u32>> = ins.iter().map(|(_, v)| v.iter().map(|f| f.to_bits()).collect()).collect();
        let tensors: Vec<Tensor<'_>> = ins.iter().zip(&stores).map(|((d, _), s)| Tensor::new(DType::F32, d.clone(), None, bytemuck::cast_slice(s))).collect();
        let mut out = vec![0u32; out_dims.iter().product()];
        op(&tensors, &mut [TensorMut::new(DType::F32, out_dims, None, bytemuck::cast_slice_mut(&mut out))], options)?;
        Ok(out.into_iter().map(f32::from_bits).collect())
    }

    #[test]
    fn transform_landmarks_v2_applies_the_matrix() {
        // Scale x by 2, y by 3, translate (10, 20); z is kept.
        let m = [2.0, 0.0, 0.0, 10.0, 0.0, 3.0, 0.0, 20.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let lm = vec![1.0, 2.0, 5.0, -1.0, 0.5, 7.0];
        let out = run(transform, &[(vec![1, 2, 3], lm), (vec![1, 4, 4], m.to_vec())], vec![1, 2, 3], &[]).unwrap();
        assert_eq!(out, vec![12.0, 26.0, 5.0, 8.0, 21.5, 7.0]);
    }

    #[test]
    fn transform_landmarks_v1_scales_the_translation() {
        let m = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let opts = map(&[("dimensions", Value::Int(2)), ("scale", Value::Float(10.0))]);
        let out = run(transform, &[(vec![1, 1, 1, 4], vec![1.0, 1.0, 2.0, 2.0]), (vec![1, 4, 4], m.to_vec())], vec![1, 1, 1, 4], &opts).unwrap();
        assert_eq!(out, vec![11.0, 21.0, 12.0, 22.0]);
    }

    #[test]
    fn transform_matrix_v2_of_a_level_square() {
        // Four landmarks at the corners of a 10x10 square centred on (50, 40); left/right
        // rotation landmarks level, so no rotation; output 20x20, scale 1.
        let lm = vec![45.0, 35.0, 0.0, 55.0, 35.0, 0.0, 45.0, 45.0, 0.0, 55.0, 45.0, 0.0];
        let opts = map(&[
            ("subset_idxs", Value::Ints(vec![0, 1, 2, 3])),
            ("left_rotation_idx", Value::Int(0)),
            ("right_rotation_idx", Value::Int(1)),
            ("target_rotation_radians", Value::Float(0.0)),
            ("output_height", Value::Int(20)),
            ("output_width", Value::Int(20)),
            ("scale_x", Value::Float(1.0)),
            ("scale_y", Value::Float(1.0)),
        ]);
        let t = run(to_transform_matrix, &[(vec![1, 4, 3], lm)], vec![1, 4, 4], &opts).unwrap();
        // Crop pixel (0, 0) maps to the box's corner (45, 35); (20, 20) to (55, 45).
        let apply = |x: f32, y: f32| (t[0] * x + t[1] * y + t[3], t[4] * x + t[5] * y + t[7]);
        let (x0, y0) = apply(0.0, 0.0);
        let (x1, y1) = apply(20.0, 20.0);
        assert!((x0 - 45.0).abs() < 1e-4 && (y0 - 35.0).abs() < 1e-4, "{x0} {y0}");
        assert!((x1 - 55.0).abs() < 1e-4 && (y1 - 45.0).abs() < 1e-4, "{x1} {y1}");
        assert_eq!(&t[12..], &[0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn bad_options_are_errors_not_panics() {
        let lm = vec![0.0; 12];
        assert!(run(to_transform_matrix, &[(vec![1, 4, 3], lm.clone())], vec![1, 4, 4], &[]).is_err());
        let opts = map(&[("subset_idxs", Value::Ints(vec![0, 9]))]);
        assert!(run(to_transform_matrix, &[(vec![1, 4, 3], lm)], vec![1, 4, 4], &opts).is_err());
    }
}
