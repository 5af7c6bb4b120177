//! Shapes whose dimensions may be unknown until run time.

use std::fmt;

/// One dimension of a declared shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A size fixed by the model.
    Known(usize),
    /// A size set by the caller or computed at run time (`-1` in a TFLite shape signature).
    Unknown,
}

/// A declared shape: its rank is known, some dimensions may not be.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<Dim>);

impl Shape {
    /// A shape whose every dimension is known.
    pub fn fixed(dims: &[usize]) -> Shape {
        Shape(dims.iter().map(|&d| Dim::Known(d)).collect())
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// The dimensions when all are known.
    pub fn concrete(&self) -> Option<Vec<usize>> {
        self.0
            .iter()
            .map(|d| match d {
                Dim::Known(n) => Some(*n),
                Dim::Unknown => None,
            })
            .collect()
    }

    /// Whether some dimension is unknown.
    pub fn is_dynamic(&self) -> bool {
        self.0.contains(&Dim::Unknown)
    }

    /// Whether `dims` fits this shape: same rank and equal wherever a dimension is known.
    pub fn admits(&self, dims: &[usize]) -> bool {
        dims.len() == self.0.len()
            && self.0.iter().zip(dims).all(|(d, &n)| match d {
                Dim::Known(k) => *k == n,
                Dim::Unknown => true,
            })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match d {
                Dim::Known(n) => write!(f, "{n}")?,
                Dim::Unknown => f.write_str("?")?,
            }
        }
        f.write_str("]")
    }
}

/// Number of elements of a concrete shape (1 for a scalar). `None` on overflow.
pub fn num_elements(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Formats concrete dimensions as `[1,224,224,3]`.
pub fn fmt_dims(dims: &[usize]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(","))
}
