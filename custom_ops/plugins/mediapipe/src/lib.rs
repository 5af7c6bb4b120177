//! # nnrt-mediapipe-ops
//!
//! An nnrt custom-op plugin (`libnnrt_mediapipe_ops.so`) with the TFLite custom ops MediaPipe's
//! models use, written from their published semantics (mediapipe/util/tflite/operations/ in
//! google-ai-edge/mediapipe):
//!
//! | op | used by | file |
//! |---|---|---|
//! | `Convolution2DTransposeBias` | selfie segmentation, hair segmentation | [`transpose_conv_bias`] |
//! | `Landmarks2TransformMatrix` | face landmark with attention | [`landmarks`] |
//! | `TransformLandmarks` | face landmark with attention | [`landmarks`] |
//! | `TransformTensorBilinear` | face landmark with attention | [`transform_tensor`] |
//!
//! The IR keeps a custom op's name and options but not its TFLite version, so where MediaPipe has
//! two versions of an op, the version is told apart by what differs between them: the input rank
//! or the option keys (each module says which).
//!
//! Load it with `nnpackage_run --custom-op-lib target/release/libnnrt_mediapipe_ops.so`. The CPU
//! backend also has a built-in `Convolution2DTransposeBias` (as LiteRT's XNNPACK delegate does);
//! a loaded plugin's kernel takes precedence over it.

#![deny(unsafe_code)]

pub mod landmarks;
pub mod transform_tensor;
pub mod transpose_conv_bias;

use nnrt_plugin_sdk::{export_plugin, Plugin};

/// The plugin's ops.
pub fn plugin() -> Plugin {
    Plugin::new("mediapipe")
        .op_with_shape("Convolution2DTransposeBias", transpose_conv_bias::eval, transpose_conv_bias::shape)
        .op_with_shape("Landmarks2TransformMatrix", landmarks::to_transform_matrix, landmarks::to_transform_matrix_shape)
        .op_with_shape("TransformLandmarks", landmarks::transform, landmarks::transform_shape)
        .op("TransformTensorBilinear", transform_tensor::eval)
}

export_plugin!(plugin);

/// Helpers shared by the ops.
pub(crate) mod util {
    use nnrt_plugin_sdk::flexbuffers;

    /// The options as a FlexBuffer map.
    pub fn options_map(options: &[u8]) -> Result<flexbuffers::Map<'_>, String> {
        Ok(flexbuffers::root(options)?.as_map()?)
    }

    /// Fails unless there are `n` inputs and `m` outputs.
    pub fn expect_io(op: &str, ins: usize, outs: usize, n: usize, m: usize) -> Result<(), String> {
        if ins != n || outs != m {
            return Err(format!("{op} takes {n} inputs and {m} outputs, got {ins} and {outs}"));
        }
        Ok(())
    }
}
