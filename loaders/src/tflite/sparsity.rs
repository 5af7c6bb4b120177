//! TFLite sparse tensors (`SparsityParameters`: a traversal order, an optional block map, and
//! per-level DENSE or SPARSE_CSR metadata) turned into dense constants at load, following
//! TFLite's `FormatConverter::SparseToDense`. Every index read from the file is checked, so a
//! corrupt sparse tensor is a load error, never a panic or an out-of-bounds write.

use crate::generated::tflite as t;

/// One traversal level.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Level {
    /// Every position `0..size` is stored.
    Dense(usize),
    /// Compressed: positions `indices[segments[p] .. segments[p + 1]]` under parent `p`.
    Csr {
        /// Start of each parent's run in `indices` (one more than the parents).
        segments: Vec<usize>,
        /// Position of each stored element in this level.
        indices: Vec<usize>,
    },
}

/// Sparsity metadata of one tensor, already read from the flatbuffer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sparsity {
    /// Order the levels are stored in: a permutation of the dims, then the block dims
    /// (`rank + j` for block `j`).
    pub traversal_order: Vec<usize>,
    /// The original dim each block dim subdivides.
    pub block_map: Vec<usize>,
    /// One entry per level of `traversal_order`.
    pub levels: Vec<Level>,
}

fn index_vector(kind: t::SparseIndexVector, m: &t::DimensionMetadata<'_>, segments: bool) -> Option<Vec<usize>> {
    let (i32v, u16v, u8v) = if segments {
        (m.array_segments_as_int_32_vector(), m.array_segments_as_uint_16_vector(), m.array_segments_as_uint_8_vector())
    } else {
        (m.array_indices_as_int_32_vector(), m.array_indices_as_uint_16_vector(), m.array_indices_as_uint_8_vector())
    };
    match kind {
        t::SparseIndexVector::Int32Vector => i32v?.values().map(|v| v.iter().map(|x| x.max(0) as usize).collect()),
        t::SparseIndexVector::Uint16Vector => u16v?.values().map(|v| v.iter().map(|x| x as usize).collect()),
        t::SparseIndexVector::Uint8Vector => u8v?.values().map(|v| v.iter().map(|x| x as usize).collect()),
        _ => None,
    }
}

/// Reads the metadata of a sparse tensor.
pub(crate) fn read(s: &t::SparsityParameters<'_>) -> Result<Sparsity, String> {
    let ints = |v: Option<flatbuffers::Vector<'_, i32>>, what: &str| -> Result<Vec<usize>, String> {
        v.map(|v| v.iter().map(|x| usize::try_from(x).map_err(|_| format!("negative {what} entry {x}"))).collect()).unwrap_or(Ok(Vec::new()))
    };
    let traversal_order = ints(s.traversal_order(), "traversal order")?;
    let block_map = ints(s.block_map(), "block map")?;
    let mut levels = Vec::new();
    for m in s.dim_metadata().iter().flatten() {
        levels.push(match m.format() {
            t::DimensionType::DENSE => Level::Dense(usize::try_from(m.dense_size()).map_err(|_| "negative dense size".to_string())?),
            t::DimensionType::SPARSE_CSR => Level::Csr {
                segments: index_vector(m.array_segments_type(), &m, true).ok_or("a CSR level has no segments")?,
                indices: index_vector(m.array_indices_type(), &m, false).ok_or("a CSR level has no indices")?,
            },
            other => return Err(format!("unknown dimension format {}", other.0)),
        });
    }
    Ok(Sparsity { traversal_order, block_map, levels })
}

/// The dense tensor of `shape` (elements of `elem` bytes) whose stored values are `values`.
pub(crate) fn densify(s: &Sparsity, shape: &[usize], elem: usize, values: &[u8]) -> Result<Vec<u8>, String> {
    let rank = shape.len();
    let n_levels = s.traversal_order.len();
    if s.levels.len() != n_levels || n_levels != rank + s.block_map.len() {
        return Err(format!("{} levels for a rank-{rank} tensor with {} blocked dims and a traversal order of {n_levels}", s.levels.len(), s.block_map.len()));
    }
    let mut seen = vec![false; n_levels];
    for &o in &s.traversal_order {
        if o >= n_levels || std::mem::replace(&mut seen[o], true) {
            return Err(format!("traversal order {:?} is not a permutation", s.traversal_order));
        }
    }
    if s.block_map.iter().any(|&d| d >= rank) {
        return Err(format!("block map {:?} names a dim the tensor does not have", s.block_map));
    }
    // Block sizes as TFLite derives them: the dense size of the level that stores block j.
    let mut block_size = vec![1usize; s.block_map.len()];
    for (j, bs) in block_size.iter_mut().enumerate() {
        let lvl = s.traversal_order.iter().position(|&o| o == rank + j).ok_or("a block dim is not traversed")?;
        *bs = match s.levels[lvl] {
            Level::Dense(n) if n > 0 => n,
            _ => return Err("block dims must be stored dense with a non-zero size".into()),
        };
    }
    let total: usize = shape.iter().product();
    let mut out = vec![0u8; total.checked_mul(elem).ok_or("tensor too large")?];
    let mut st = Walk { s, shape, elem, values, block_size, next: 0, out: &mut out, idx: vec![0; n_levels], orig: vec![0; rank] };
    st.level(0, 0)?;
    if st.next * elem != values.len() {
        return Err(format!("the metadata addresses {} values but the buffer holds {}", st.next, values.len() / elem.max(1)));
    }
    Ok(out)
}

struct Walk<'a> {
    s: &'a Sparsity,
    shape: &'a [usize],
    elem: usize,
    values: &'a [u8],
    block_size: Vec<usize>,
    next: usize,
    out: &'a mut Vec<u8>,
    idx: Vec<usize>,
    /// The stored value's index in the original dims: scratch, reused for every value (a new
    /// vector per value was three quarters of a sparse MobileNetV2's load).
    orig: Vec<usize>,
}

impl Walk<'_> {
    fn level(&mut self, level: usize, prev: usize) -> Result<(), String> {
        if level == self.idx.len() {
            return self.store();
        }
        match &self.s.levels[level] {
            Level::Dense(n) => {
                for i in 0..*n {
                    self.idx[level] = i;
                    self.level(level + 1, prev.checked_mul(*n).and_then(|p| p.checked_add(i)).ok_or("index overflow")?)?;
                }
            }
            Level::Csr { segments, indices } => {
                let (lo, hi) = match (segments.get(prev), segments.get(prev + 1)) {
                    (Some(&lo), Some(&hi)) if lo <= hi && hi <= indices.len() => (lo, hi),
                    _ => return Err(format!("CSR segments {segments:?} do not cover parent {prev}")),
                };
                for (i, &index) in indices.iter().enumerate().take(hi).skip(lo) {
                    self.idx[level] = index;
                    self.level(level + 1, i)?;
                }
            }
        }
        Ok(())
    }

    fn store(&mut self) -> Result<(), String> {
        let rank = self.shape.len();
        let orig = &mut self.orig;
        orig.fill(0);
        for (i, &o) in self.s.traversal_order.iter().enumerate().take(rank) {
            if o >= rank {
                return Err("the traversal order puts a block dim before an original dim".into());
            }
            orig[o] = self.idx[i];
        }
        for i in rank..self.idx.len() {
            let j = self.s.traversal_order[i].checked_sub(rank).ok_or("an original dim is traversed after the block dims")?;
            let d = self.s.block_map[j];
            orig[d] = orig[d] * self.block_size[j] + self.idx[i];
        }
        let mut flat = 0usize;
        for (d, &v) in orig.iter().enumerate() {
            if v >= self.shape[d] {
                return Err(format!("index {v} is outside dim {d} of size {}", self.shape[d]));
            }
            flat = flat * self.shape[d] + v;
        }
        let src = self.values.get(self.next * self.elem..(self.next + 1) * self.elem).ok_or("the buffer holds fewer values than the metadata addresses")?;
        self.out[flat * self.elem..(flat + 1) * self.elem].copy_from_slice(src);
        self.next += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: &[i8]) -> Vec<u8> {
        v.iter().map(|&x| x as u8).collect()
    }

    #[test]
    fn csr_rows_densify() {
        // [[6, 0, 9, 8], [0, 0, 0, 0], [5, 0, 0, 7]] with dim 0 dense and dim 1 CSR.
        let s = Sparsity {
            traversal_order: vec![0, 1],
            block_map: vec![],
            levels: vec![Level::Dense(3), Level::Csr { segments: vec![0, 3, 3, 5], indices: vec![0, 2, 3, 0, 3] }],
        };
        let d = densify(&s, &[3, 4], 1, &bytes(&[6, 9, 8, 5, 7])).unwrap();
        assert_eq!(d, bytes(&[6, 0, 9, 8, 0, 0, 0, 0, 5, 0, 0, 7]));
    }

    #[test]
    fn column_major_traversal_densifies() {
        // Same matrix stored by columns: dim 1 dense, dim 0 CSR.
        let s = Sparsity {
            traversal_order: vec![1, 0],
            block_map: vec![],
            levels: vec![Level::Dense(4), Level::Csr { segments: vec![0, 2, 2, 3, 5], indices: vec![0, 2, 0, 0, 2] }],
        };
        let d = densify(&s, &[3, 4], 1, &bytes(&[6, 5, 9, 8, 7])).unwrap();
        assert_eq!(d, bytes(&[6, 0, 9, 8, 0, 0, 0, 0, 5, 0, 0, 7]));
    }

    #[test]
    fn block_sparse_densifies() {
        // 4x4 in 2x2 blocks; blocks (0,0) and (1,1) are stored.
        let s = Sparsity {
            traversal_order: vec![0, 1, 2, 3],
            block_map: vec![0, 1],
            levels: vec![Level::Dense(2), Level::Csr { segments: vec![0, 1, 2], indices: vec![0, 1] }, Level::Dense(2), Level::Dense(2)],
        };
        let d = densify(&s, &[4, 4], 1, &bytes(&[1, 0, 2, 3, 4, 5, 0, 6])).unwrap();
        assert_eq!(d, bytes(&[1, 0, 0, 0, 2, 3, 0, 0, 0, 0, 4, 5, 0, 0, 0, 6]));
    }

    #[test]
    fn corrupt_metadata_is_an_error() {
        let s = Sparsity { traversal_order: vec![0, 1], block_map: vec![], levels: vec![Level::Dense(3), Level::Csr { segments: vec![0, 9], indices: vec![0] }] };
        assert!(densify(&s, &[3, 4], 1, &[1]).is_err());
        let s = Sparsity { traversal_order: vec![0, 1], block_map: vec![], levels: vec![Level::Dense(3), Level::Csr { segments: vec![0, 1, 1, 1], indices: vec![7] }] };
        assert!(densify(&s, &[3, 4], 1, &[1]).is_err());
        let s = Sparsity { traversal_order: vec![0, 0], block_map: vec![], levels: vec![Level::Dense(3), Level::Dense(4)] };
        assert!(densify(&s, &[3, 4], 1, &[0; 12]).is_err());
    }
}
