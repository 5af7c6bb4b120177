//! `TransformTensorBilinear` (MediaPipe's transform_tensor_bilinear.cc): samples an image tensor
//! [1, H, W, C] at the positions a 4x4 matrix ([1, 4, 4], first two rows used) maps each output
//! pixel to, with bilinear interpolation; positions outside the image give 0. The output's shape
//! [1, OH, OW, C'] comes from the model (C' <= C channels are read).
//!
//! Version 2 (options `output_height`, `output_width`) corrects the matrix for pixel centres
//! (align corners): `T -> S * T * A` with A/S shifting by +/-0.5; version 1 (options `mode`,
//! `output_size`) uses the matrix as is. The version is told by the option keys.

use nnrt_plugin_sdk::{DType, Tensor, TensorMut};

use crate::util::{expect_io, options_map};

fn dot(a: [f32; 4], b: [f32; 4]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]
}

/// Kernel.
pub fn eval(ins: &[Tensor<'_>], outs: &mut [TensorMut<'_>], options: &[u8]) -> Result<(), String> {
    expect_io("TransformTensorBilinear", ins.len(), outs.len(), 2, 1)?;
    let m = options_map(options)?;
    let align_corners = if m.contains("output_size") {
        if let Some(mode) = m.get("mode")? {
            if mode.as_str()? != "bilinear" {
                return Err(format!("only bilinear interpolation is supported, got mode '{}'", mode.as_str()?));
            }
        }
        false
    } else {
        true
    };
    let (x, t) = (&ins[0], &ins[1]);
    if x.dims.len() != 4 || x.dtype != DType::F32 {
        return Err(format!("the input must be float32 [1, H, W, C], got {} {:?}", x.dtype, x.dims));
    }
    if t.dtype != DType::F32 || t.len() < 8 {
        return Err(format!("the matrix must be float32 with at least 8 values, got {} {:?}", t.dtype, t.dims));
    }
    let od = outs[0].dims.clone();
    if od.len() != 4 {
        return Err(format!("the output must have rank 4, got {od:?}"));
    }
    let (h, w, c) = (x.dims[1], x.dims[2], x.dims[3]);
    let (oh, ow, oc) = (od[1], od[2], od[3]);
    if oc > c {
        return Err(format!("the output has {oc} channels but the input only {c}"));
    }
    let m = t.f32s()?;
    let mut xt = [m[0], m[1], m[2], m[3]];
    let mut yt = [m[4], m[5], m[6], m[7]];
    if align_corners {
        // The C++ adds a double-precision correction to the float translation.
        xt[3] = (xt[3] as f64 + (xt[0] as f64 * 0.5 + xt[1] as f64 * 0.5 - 0.5)) as f32;
        yt[3] = (yt[3] as f64 + (yt[0] as f64 * 0.5 + yt[1] as f64 * 0.5 - 0.5)) as f32;
    }
    let src = x.f32s()?;
    let dst = outs[0].f32s_mut()?;
    let read = |yy: f32, xx: f32, z: usize| -> f32 {
        // Coordinates are already floored; out-of-image corners read as 0.
        if yy < 0.0 || xx < 0.0 || yy >= h as f32 || xx >= w as f32 {
            0.0
        } else {
            src[((yy as usize) * w + xx as usize) * c + z]
        }
    };
    for out_y in 0..oh {
        for out_x in 0..ow {
            let coord = [out_x as f32, out_y as f32, 0.0, 1.0];
            let (tx, ty) = (dot(xt, coord), dot(yt, coord));
            let outside = tx < 0.0 || tx > (w as f32 - 1.0) || ty < 0.0 || ty > (h as f32 - 1.0);
            let pixel = &mut dst[(out_y * ow + out_x) * oc..][..oc];
            if outside {
                pixel.fill(0.0);
                continue;
            }
            let (fy, fx) = (ty.floor(), tx.floor());
            let right = tx - fx;
            let lower = ty - fy;
            for (z, o) in pixel.iter_mut().enumerate() {
                let q11 = read(fy, fx, z);
                let q21 = read(fy, fx + 1.0, z);
                let q12 = read(fy + 1.0, fx, z);
                let q22 = read(fy + 1.0, fx + 1.0, z);
                // `1.0 - contrib` is a double in the C++: the blends are computed in double and
                // stored as float.
                let upper = ((1.0 - right as f64) * q11 as f64 + (right * q21) as f64) as f32;
                let below = ((1.0 - right as f64) * q12 as f64 + (right * q22) as f64) as f32;
                *o = ((lower * below) as f64 + (1.0 - lower as f64) * upper as f64) as f32;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::landmarks::tests::run;
    use nnrt_plugin_sdk::flexbuffers::build::{map, Value};

    #[test]
    fn identity_v1_copies_and_halves_interpolate() {
        let img: Vec<f32> = (0..9).map(|v| v as f32).collect();
        let v1 = map(&[("output_size", Value::Ints(vec![3, 3]))]);
        let id = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let out = run(eval, &[(vec![1, 3, 3, 1], img.clone()), (vec![1, 4, 4], id.to_vec())], vec![1, 3, 3, 1], &v1).unwrap();
        assert_eq!(out, img);
        // Shift by half a pixel in x: values between neighbours; the last column falls outside.
        let half = [1.0, 0.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let out = run(eval, &[(vec![1, 3, 3, 1], img.clone()), (vec![1, 4, 4], half.to_vec())], vec![1, 3, 3, 1], &v1).unwrap();
        assert_eq!(out, vec![0.5, 1.5, 0.0, 3.5, 4.5, 0.0, 6.5, 7.5, 0.0]);
        // Version 2 corrects for pixel centres: a 2x downscale samples between source pixels.
        let v2 = map(&[("output_height", Value::Int(1)), ("output_width", Value::Int(1))]);
        let down = [2.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let out = run(eval, &[(vec![1, 2, 2, 1], vec![0.0, 1.0, 2.0, 3.0]), (vec![1, 4, 4], down.to_vec())], vec![1, 1, 1, 1], &v2).unwrap();
        assert_eq!(out, vec![1.5]);
    }
}
