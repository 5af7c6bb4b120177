//! Helpers every format reader uses to build the IR: the operand table (by index and by name),
//! constants borrowed from the model file, and one error listing every unsupported op.

use std::collections::HashMap;

use nnrt_core::{Blob, ConstData, LoadError, Operand, OperandId};

/// The operands of one subgraph as a reader creates them, found by the file's index or name.
#[derive(Debug, Default)]
pub struct OperandTable {
    operands: Vec<Operand>,
    by_name: HashMap<String, OperandId>,
}

impl OperandTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an operand; its id is its position. A later operand with the same name shadows an
    /// earlier one in [`OperandTable::by_name`] (formats that name tensors keep names unique).
    pub fn push(&mut self, operand: Operand) -> OperandId {
        let id = OperandId::new(self.operands.len());
        self.by_name.insert(operand.name.clone(), id);
        self.operands.push(operand);
        id
    }

    /// How many operands there are.
    pub fn len(&self) -> usize {
        self.operands.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.operands.is_empty()
    }

    /// The operand at a file's (possibly negative or out-of-range) index, `None` when there is
    /// no such operand.
    pub fn by_index(&self, index: i64) -> Option<OperandId> {
        usize::try_from(index).ok().filter(|&i| i < self.operands.len()).map(OperandId::new)
    }

    /// The operand named `name`.
    pub fn by_name(&self, name: &str) -> Option<OperandId> {
        self.by_name.get(name).copied()
    }

    /// The operand `id` (an id this table handed out).
    pub fn get(&self, id: OperandId) -> &Operand {
        &self.operands[id.index()]
    }

    /// The operand `id`, to change (e.g. to give it constant data).
    pub fn get_mut(&mut self, id: OperandId) -> &mut Operand {
        &mut self.operands[id.index()]
    }

    /// The operands, in id order, for the IR subgraph.
    pub fn into_operands(self) -> Vec<Operand> {
        self.operands
    }
}

/// Constant data inside a model file's blob, borrowed (a memory map stays mapped; nothing is
/// copied).
#[derive(Clone, Copy)]
pub struct Constants<'a> {
    blob: &'a Blob,
    base: usize,
}

impl<'a> Constants<'a> {
    /// Constants of the file held in `blob`.
    pub fn new(blob: &'a Blob) -> Self {
        let base = (**blob).as_ref().as_ptr() as usize;
        Self { blob, base }
    }

    /// The constant whose bytes are `bytes`, a slice a reader took out of the blob's bytes;
    /// `None` when the slice is not inside the blob.
    pub fn slice(&self, bytes: &[u8]) -> Option<ConstData> {
        let offset = (bytes.as_ptr() as usize).wrapping_sub(self.base);
        ConstData::borrowed(self.blob.clone(), offset, bytes.len())
    }

    /// The constant at `offset..offset + len` of the file; `None` when that lies outside it.
    pub fn range(&self, offset: usize, len: usize) -> Option<ConstData> {
        ConstData::borrowed(self.blob.clone(), offset, len)
    }
}

/// Every op of a model the reader could not map, collected so that one error names them all
/// instead of the first alone.
#[derive(Debug, Default)]
pub struct UnsupportedOps {
    errors: Vec<LoadError>,
}

impl UnsupportedOps {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `error` if it is a [`LoadError::UnsupportedOp`] and returns `Ok`; any other error
    /// is handed back, for the reader to stop on.
    pub fn collect(&mut self, error: LoadError) -> Result<(), LoadError> {
        match error {
            LoadError::UnsupportedOp { .. } => {
                self.errors.push(error);
                Ok(())
            }
            other => Err(other),
        }
    }

    /// `Ok` when every op was supported; otherwise one [`LoadError::UnsupportedOp`]: the first
    /// op's fields, with the other unsupported op names and the model's `custom_ops` (in file
    /// order, repeats next to each other dropped) in its detail.
    pub fn finish<'c>(self, custom_ops: impl IntoIterator<Item = &'c str>) -> Result<(), LoadError> {
        let mut all = self.errors.into_iter();
        let Some(LoadError::UnsupportedOp { path, subgraph, index, op, mut detail }) = all.next() else {
            return Ok(());
        };
        let mut names: Vec<String> = Vec::new();
        for e in all {
            if let LoadError::UnsupportedOp { op: o, .. } = e {
                if o != op && !names.contains(&o) {
                    names.push(o);
                }
            }
        }
        if !names.is_empty() {
            detail.push_str(&format!("; also unsupported: {}", names.join(", ")));
        }
        let mut customs: Vec<&str> = custom_ops.into_iter().collect();
        customs.dedup();
        if !customs.is_empty() {
            detail.push_str(&format!("; the model also uses custom ops {}", customs.join(", ")));
        }
        Err(LoadError::UnsupportedOp { path, subgraph, index, op, detail })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use nnrt_core::DType;

    use super::*;

    fn unsupported(index: usize, op: &str) -> LoadError {
        LoadError::UnsupportedOp { path: "m".into(), subgraph: 0, index, op: op.into(), detail: String::new() }
    }

    #[test]
    fn every_unsupported_op_is_named_in_one_error() {
        let mut ops = UnsupportedOps::new();
        for (i, op) in ["DILATE", "BITCAST", "DILATE", "STABLEHLO_ADD"].into_iter().enumerate() {
            ops.collect(unsupported(i, op)).expect("collected");
        }
        let err = ops.finish(["a", "a", "b"]).unwrap_err();
        let LoadError::UnsupportedOp { index, op, detail, .. } = &err else { panic!("{err:?}") };
        assert_eq!((*index, op.as_str()), (0, "DILATE"));
        assert_eq!(detail, "; also unsupported: BITCAST, STABLEHLO_ADD; the model also uses custom ops a, b");
        assert!(UnsupportedOps::new().finish(["a"]).is_ok());
    }

    #[test]
    fn other_errors_are_handed_back() {
        let mut ops = UnsupportedOps::new();
        let bad = LoadError::Malformed { path: "m".into(), format: "TFLite", reason: "x".into() };
        assert!(matches!(ops.collect(bad), Err(LoadError::Malformed { .. })));
        assert!(ops.finish([]).is_ok());
    }

    #[test]
    fn operands_by_index_and_name() {
        let mut t = OperandTable::new();
        let a = t.push(Operand::new("a", DType::F32, &[2]));
        let b = t.push(Operand::new("b", DType::I32, &[1]));
        assert_eq!((t.by_index(0), t.by_index(1), t.by_index(2), t.by_index(-1)), (Some(a), Some(b), None, None));
        assert_eq!((t.by_name("b"), t.by_name("c")), (Some(b), None));
        t.get_mut(a).default_dims = vec![3];
        assert_eq!(t.get(a).default_dims, vec![3]);
        assert_eq!(t.len(), 2);
        assert_eq!(t.into_operands().len(), 2);
    }

    #[test]
    fn constants_borrow_from_the_blob() {
        let blob: Blob = Arc::new((0u8..16).collect::<Vec<u8>>());
        let c = Constants::new(&blob);
        let bytes = (*blob).as_ref();
        let k = c.slice(&bytes[4..8]).expect("inside");
        assert_eq!(k.bytes(), &[4, 5, 6, 7]);
        assert!(k.shares_blob_with(&blob));
        assert_eq!(c.range(12, 4).expect("inside").bytes(), &[12, 13, 14, 15]);
        assert!(c.range(12, 5).is_none());
        assert!(c.slice(&[1, 2, 3]).is_none());
    }
}
