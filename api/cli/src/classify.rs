//! `nnpackage_run --labels FILE --top N`: the best-scoring classes of a classifier's output,
//! with their labels and scores (dequantized when the output is quantized).

use anyhow::{bail, Context, Result};
use nnrt::{DType, Quantization, TensorInfo};

/// One class of the top list.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// Index along the output's last dimension.
    pub class: usize,
    /// Its score (dequantized for quantized outputs).
    pub score: f64,
}

/// Reads a label file: one label per line, line `i` naming class `i` (blank lines count).
pub fn read_labels(path: &str) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read labels {path}"))?;
    Ok(text.lines().map(|l| l.trim().to_string()).collect())
}

/// The scores of the first row of `data` (an output of `info`'s type and shape): its last
/// dimension is the classes. Quantized outputs are dequantized with their per-tensor parameters.
pub fn scores(info: &TensorInfo, data: &[u8]) -> Result<Vec<f64>> {
    let classes = *info.dims.last().with_context(|| format!("output '{}' is a scalar, not a list of class scores", info.name))?;
    let (scale, zero_point) = match &info.quant {
        Quantization::None => (1.0, 0.0),
        Quantization::PerTensor { scale, zero_point } => (f64::from(*scale), *zero_point as f64),
        Quantization::PerAxis { .. } => bail!("output '{}' is quantized per axis; --top needs per-tensor scores", info.name),
    };
    let size = info.dtype.size();
    let row = data.get(..classes * size).with_context(|| format!("output '{}' holds {} bytes, fewer than one row of {classes} classes", info.name, data.len()))?;
    let value = |b: &[u8]| -> Option<f64> {
        Some(match info.dtype {
            DType::F32 => f64::from(f32::from_le_bytes(b.try_into().ok()?)),
            DType::U8 => f64::from(b[0]),
            DType::I8 => f64::from(b[0] as i8),
            DType::I16 => f64::from(i16::from_le_bytes(b.try_into().ok()?)),
            DType::I32 => f64::from(i32::from_le_bytes(b.try_into().ok()?)),
            _ => return None,
        })
    };
    row.chunks_exact(size)
        .map(|b| value(b).map(|v| (v - zero_point) * scale))
        .collect::<Option<Vec<_>>>()
        .with_context(|| format!("output '{}' is {}; --top reads float32, uint8, int8, int16 or int32 scores", info.name, info.dtype))
}

/// The `k` best classes, highest score first; equal scores in class order.
pub fn top_k(scores: &[f64], k: usize) -> Vec<Ranked> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.into_iter().take(k).map(|class| Ranked { class, score: scores[class] }).collect()
}

/// The lines `nnpackage_run` prints: a heading, then `score  class  label` per class.
pub fn report(info: &TensorInfo, ranked: &[Ranked], labels: &[String]) -> Vec<String> {
    let mut lines = vec![format!("top {} of output 0 ('{}'):", ranked.len(), info.name)];
    for r in ranked {
        let label = labels.get(r.class).map(String::as_str).unwrap_or("(no label)");
        lines.push(format!("  {:.4}  {:4}  {label}", r.score, r.class));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(dtype: DType, dims: Vec<usize>, quant: Quantization) -> TensorInfo {
        TensorInfo { name: "probs".into(), dtype, signature: dims.iter().map(|&d| Some(d)).collect(), dims, quant }
    }

    #[test]
    fn quantized_scores_are_dequantized_and_ties_keep_class_order() {
        let i = info(DType::U8, vec![1, 4], Quantization::PerTensor { scale: 0.5, zero_point: 2 });
        let s = scores(&i, &[2, 10, 6, 10]).unwrap();
        assert_eq!(s, vec![0.0, 4.0, 2.0, 4.0]);
        let top = top_k(&s, 3);
        assert_eq!(top.iter().map(|r| r.class).collect::<Vec<_>>(), vec![1, 3, 2]);
        let lines = report(&i, &top, &["a".into(), "b".into()]);
        assert_eq!(lines[1], "  4.0000     1  b");
        assert_eq!(lines[2], "  4.0000     3  (no label)");
    }

    #[test]
    fn float_scores_of_the_first_row() {
        let i = info(DType::F32, vec![2, 2], Quantization::None);
        let data: Vec<u8> = [0.25f32, 0.75, 9.0, 9.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(scores(&i, &data).unwrap(), vec![0.25, 0.75]);
    }

    #[test]
    fn neg_outputs_that_are_not_class_scores() {
        assert!(scores(&info(DType::Bool, vec![1, 2], Quantization::None), &[0, 1]).is_err());
        assert!(scores(&info(DType::F32, vec![], Quantization::None), &[0; 4]).is_err());
        assert!(scores(&info(DType::F32, vec![1, 8], Quantization::None), &[0; 4]).is_err());
    }
}
