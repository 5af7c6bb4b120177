//! Quantization parameters of an operand.

/// How an operand's integers map to real numbers: `real = scale * (q - zero_point)`.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Quantization {
    /// Not quantized.
    #[default]
    None,
    /// One scale and zero point for the whole tensor.
    PerTensor {
        /// Real value of one step.
        scale: f32,
        /// Integer that represents real zero.
        zero_point: i64,
    },
    /// One scale and zero point per slice along `axis` (per-channel weights).
    PerAxis {
        /// Scale of each slice.
        scales: Vec<f32>,
        /// Zero point of each slice (same length as `scales`).
        zero_points: Vec<i64>,
        /// The dimension the slices run along.
        axis: usize,
    },
}

impl Quantization {
    /// Whether the operand carries quantization parameters.
    pub fn is_quantized(&self) -> bool {
        !matches!(self, Quantization::None)
    }
}
