//! # nnrt-posenet-decoder
//!
//! An nnrt custom-op plugin (`libnnrt_posenet_decoder.so`) with Coral's `PosenetDecoderOp`, the
//! op at the end of Coral's PoseNet and BodyPix models (`*_decoder.tflite`), written from the
//! published semantics of google-coral/edgetpu src/cpp/posenet/posenet_decoder_op.cc and
//! posenet_decoder.cc.
//!
//! Inputs: keypoint heatmaps [1, H, W, 17] (logits), short-range offsets [1, H, W, 34] and
//! mid-range offsets [1, H, W, 64] (in pixels), each float32 or quantized uint8. Options: a
//! FlexBuffer map `max_detections`, `score_threshold`, `stride`, `nms_radius`. Outputs (float32):
//! keypoints [1, max_detections, 17, 2] as (y, x) in input pixels, keypoint scores
//! [1, max_detections, 17], pose scores [1, max_detections], and the number of poses found [1].
//! Slots past the pose count are zero. BodyPix models add a fourth input, long-range offsets
//! [1, H', W', 34], and a fifth output, instance masks [1, max_detections, H', W'] (1 where a
//! cell belongs to the pose). The model declares the outputs without shapes; the plugin's shape
//! function gives them at prepare. Backward edges follow libcoral's (fixed) channel layout; see
//! [`decoder`].
//!
//! Load it with `nnpackage_run --custom-op-lib target/release/libnnrt_posenet_decoder.so`.

#![deny(unsafe_code)]

pub mod decoder;

use decoder::{Map, Settings, NUM_EDGES, NUM_KEYPOINTS};
use nnrt_plugin_sdk::{export_plugin, flexbuffers, DType, Plugin, ShapeInput, Tensor, TensorMut};

/// The plugin's ops.
pub fn plugin() -> Plugin {
    Plugin::new("posenet").op_with_shape("PosenetDecoderOp", eval, shape)
}

export_plugin!(plugin);

/// The op's options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// Most poses returned.
    pub max_detections: usize,
    /// Score threshold (probability).
    pub score_threshold: f32,
    /// Pixels per heatmap cell.
    pub stride: usize,
    /// Keypoint NMS radius in pixels.
    pub nms_radius: f32,
}

/// Reads the FlexBuffer map of options.
pub fn options(bytes: &[u8]) -> Result<Options, String> {
    let m = flexbuffers::root(bytes)?.as_map()?;
    let max_detections = m.require("max_detections")?.as_i64()?;
    let stride = m.require("stride")?.as_i64()?;
    let max_detections = usize::try_from(max_detections).ok().filter(|&n| n > 0 && n <= 10_000).ok_or_else(|| format!("max_detections must be in 1..=10000, got {max_detections}"))?;
    let stride = usize::try_from(stride).ok().filter(|&s| s > 0).ok_or_else(|| format!("stride must be positive, got {stride}"))?;
    Ok(Options { max_detections, score_threshold: m.require("score_threshold")?.as_f32()?, stride, nms_radius: m.require("nms_radius")?.as_f32()? })
}

/// Output dims for `max_detections`, plus the masks' when there are long offsets of `longs` dims.
pub fn output_dims(max_detections: usize, longs: Option<&[usize]>) -> Vec<Vec<usize>> {
    let mut dims = vec![vec![1, max_detections, NUM_KEYPOINTS, 2], vec![1, max_detections, NUM_KEYPOINTS], vec![1, max_detections], vec![1]];
    if let Some(l) = longs {
        dims.push(vec![1, max_detections, l[1], l[2]]);
    }
    dims
}

/// Channels of each input: heatmaps, short, mid and (BodyPix) long offsets.
const CHANNELS: [usize; 4] = [NUM_KEYPOINTS, 2 * NUM_KEYPOINTS, 4 * NUM_EDGES, 2 * NUM_KEYPOINTS];

fn check_input(i: usize, dims: &[usize], channels: usize) -> Result<(), String> {
    if dims.len() != 4 || dims[0] != 1 || dims[3] != channels {
        return Err(format!("input {i} must have shape [1, H, W, {channels}], got {dims:?}"));
    }
    Ok(())
}

/// Shape function.
pub fn shape(ins: &[ShapeInput<'_>], opts: &[u8]) -> Result<Vec<Vec<usize>>, String> {
    if ins.len() != 3 && ins.len() != 4 {
        return Err(format!("PosenetDecoderOp takes 3 inputs (4 with BodyPix's long offsets), got {}", ins.len()));
    }
    for (i, t) in ins.iter().enumerate() {
        check_input(i, &t.dims, CHANNELS[i])?;
    }
    Ok(output_dims(options(opts)?.max_detections, ins.get(3).map(|t| t.dims.as_slice())))
}

/// Dequantizes (or copies) an input and multiplies it by `extra_scale`, as the op does before
/// decoding (offsets are divided by the stride to become heatmap cells).
fn to_float(t: &Tensor<'_>, extra_scale: f32) -> Result<Vec<f32>, String> {
    match (t.dtype, t.quant) {
        (DType::F32, _) => Ok(t.f32s()?.iter().map(|&v| v * extra_scale).collect()),
        (DType::U8, Some(q)) => {
            let zero = q.zero_point as f32;
            let scale = q.scale * extra_scale;
            Ok(t.bytes().iter().map(|&v| (v as f32 - zero) * scale).collect())
        }
        (DType::U8, None) => Err("a uint8 input has no quantization parameters".into()),
        (other, _) => Err(format!("inputs must be float32 or quantized uint8, got {other}")),
    }
}

/// Kernel.
pub fn eval(ins: &[Tensor<'_>], outs: &mut [TensorMut<'_>], opts: &[u8]) -> Result<(), String> {
    if !matches!((ins.len(), outs.len()), (3, 4) | (4, 5)) {
        return Err(format!("PosenetDecoderOp takes 3 inputs and 4 outputs (4 and 5 with BodyPix's masks), got {} and {}", ins.len(), outs.len()));
    }
    let o = options(opts)?;
    let channels = CHANNELS;
    for (i, t) in ins.iter().enumerate() {
        check_input(i, &t.dims, channels[i])?;
    }
    let (h, w) = (ins[0].dims[1], ins[0].dims[2]);
    if ins[1..3].iter().any(|t| t.dims[1] != h || t.dims[2] != w) {
        return Err(format!("inputs disagree on H, W: {:?}, {:?}, {:?}", ins[0].dims, ins[1].dims, ins[2].dims));
    }
    for (k, (out, want)) in outs.iter().zip(output_dims(o.max_detections, ins.get(3).map(|t| t.dims.as_slice()))).enumerate() {
        if out.dims != want || out.dtype != DType::F32 {
            return Err(format!("output {k} must be float32 {want:?}, got {} {:?}", out.dtype, out.dims));
        }
    }
    // The C++ computes 1.0 / stride in double and passes it on as a float.
    let inv_stride = (1.0 / o.stride as f64) as f32;
    let heat = to_float(&ins[0], 1.0)?;
    let shorts = to_float(&ins[1], inv_stride)?;
    let mids = to_float(&ins[2], inv_stride)?;
    let map = |data, c| Map { data, height: h, width: w, channels: c };
    let settings = Settings { max_detections: o.max_detections, score_threshold: o.score_threshold, refinement_steps: 5, nms_radius: o.nms_radius / o.stride as f32, stride: o.stride };
    let poses = decoder::decode(&map(&heat, channels[0]), &map(&shorts, channels[1]), &map(&mids, channels[2]), &settings);

    let (poses_out, masks_out) = outs.split_at_mut(4);
    let [kp, kp_scores, scores, count] = poses_out else { return Err("expected 4 pose outputs".into()) };
    let (kp, kp_scores, scores, count) = (kp.f32s_mut()?, kp_scores.f32s_mut()?, scores.f32s_mut()?, count.f32s_mut()?);
    kp.fill(0.0);
    kp_scores.fill(0.0);
    scores.fill(0.0);
    for (i, p) in poses.iter().enumerate() {
        for (k, pt) in p.keypoints.iter().enumerate() {
            kp[(i * NUM_KEYPOINTS + k) * 2] = pt.y;
            kp[(i * NUM_KEYPOINTS + k) * 2 + 1] = pt.x;
        }
        kp_scores[i * NUM_KEYPOINTS..(i + 1) * NUM_KEYPOINTS].copy_from_slice(&p.keypoint_scores);
        scores[i] = p.score;
    }
    count[0] = poses.len() as f32;
    if let (Some(longs), Some(masks)) = (ins.get(3), masks_out.first_mut()) {
        let data = to_float(longs, inv_stride)?;
        let longs = Map { data: &data, height: longs.dims[1], width: longs.dims[2], channels: channels[3] };
        let keypoints: Vec<_> = poses.iter().map(|p| p.keypoints).collect();
        decoder::instance_masks(&longs, &keypoints, o.stride, masks.f32s_mut()?);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
