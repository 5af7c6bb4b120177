//! The tensor arena: one buffer holding every non-constant tensor at planned offsets, and safe
//! split borrows of it (inputs shared, outputs exclusive) for kernels.

use std::ops::Range;

use crate::{DType, OpId, OperandId, RunError};

/// A read-only view of a tensor.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    /// Element type.
    pub dtype: DType,
    /// Concrete dims.
    pub dims: &'a [usize],
    /// The bytes.
    pub bytes: &'a [u8],
}

/// A writable view of a tensor.
#[derive(Debug)]
pub struct TensorMut<'a> {
    /// Element type.
    pub dtype: DType,
    /// Concrete dims.
    pub dims: &'a [usize],
    /// The bytes.
    pub bytes: &'a mut [u8],
}

/// Reinterprets bytes as elements; fails (not panics) if size or alignment do not fit.
pub fn cast<T: bytemuck::Pod>(bytes: &[u8]) -> Result<&[T], String> {
    bytemuck::try_cast_slice(bytes).map_err(|e| format!("tensor bytes cannot be viewed as {}: {e:?}", std::any::type_name::<T>()))
}

/// Mutable twin of [`cast`].
pub fn cast_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [T], String> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| format!("tensor bytes cannot be viewed as {}: {e:?}", std::any::type_name::<T>()))
}

impl<'a> TensorRef<'a> {
    /// The elements as `T`.
    pub fn as_slice<T: bytemuck::Pod>(&self) -> Result<&'a [T], String> {
        cast(self.bytes)
    }
}

impl TensorMut<'_> {
    /// The elements as `T`.
    pub fn as_mut_slice<T: bytemuck::Pod>(&mut self) -> Result<&mut [T], String> {
        cast_mut(self.bytes)
    }
}

/// Holds every planned tensor. Offsets are multiples of 64 bytes in an 8-byte-aligned buffer.
#[derive(Debug, Default)]
pub struct TensorArena {
    buf: Vec<u64>,
    slots: Vec<Option<Range<usize>>>,
    dims: Vec<Vec<usize>>,
    dtypes: Vec<DType>,
}

impl TensorArena {
    /// An arena of `size` bytes with a byte range per planned operand (None for constants).
    pub fn new(size: usize, slots: Vec<Option<Range<usize>>>, dims: Vec<Vec<usize>>, dtypes: Vec<DType>) -> TensorArena {
        TensorArena { buf: vec![0u64; size.div_ceil(8)], slots, dims, dtypes }
    }

    /// Size of the buffer in bytes.
    pub fn size(&self) -> usize {
        self.buf.len() * 8
    }

    /// Concrete dims of operand `id`.
    pub fn dims(&self, id: OperandId) -> &[usize] {
        &self.dims[id.index()]
    }

    fn slot(&self, id: OperandId) -> Option<Range<usize>> {
        self.slots.get(id.index()).cloned().flatten()
    }

    /// The bytes of operand `id`, if it has a slot.
    pub fn bytes(&self, id: OperandId) -> Option<&[u8]> {
        let r = self.slot(id)?;
        Some(&bytemuck::cast_slice::<u64, u8>(&self.buf)[r])
    }

    /// The bytes of operand `id` for writing, if it has a slot.
    pub fn bytes_mut(&mut self, id: OperandId) -> Option<&mut [u8]> {
        let r = self.slot(id)?;
        Some(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.buf)[r])
    }

    /// Borrows `inputs` shared and `outputs` exclusively at once, for the kernel of op `op`.
    /// Fails if an output overlaps an input or another output (the planner never does that).
    pub fn split(&mut self, op: OpId, inputs: &[OperandId], outputs: &[OperandId]) -> Result<(Vec<TensorRef<'_>>, Vec<TensorMut<'_>>), RunError> {
        let fail = |reason: String| RunError::Kernel { op, kind: "arena".into(), reason };
        let range = |id: OperandId| self.slot(id).ok_or_else(|| fail(format!("operand {id} has no arena slot")));
        let mut outs: Vec<(usize, Range<usize>)> = Vec::with_capacity(outputs.len());
        for (k, &o) in outputs.iter().enumerate() {
            outs.push((k, range(o)?));
        }
        let in_ranges: Vec<Range<usize>> = inputs.iter().map(|&i| range(i)).collect::<Result<_, _>>()?;
        outs.sort_by_key(|(_, r)| r.start);
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.buf);
        let mut gaps: Vec<(usize, &[u8])> = Vec::with_capacity(outs.len() + 1);
        let mut out_slices: Vec<Option<&mut [u8]>> = (0..outputs.len()).map(|_| None).collect();
        let mut rest = bytes;
        let mut cursor = 0;
        for (k, r) in outs {
            if r.start < cursor {
                return Err(fail(format!("outputs overlap at byte {}", r.start)));
            }
            let (gap, tail) = std::mem::take(&mut rest).split_at_mut(r.start - cursor);
            let (o, tail) = tail.split_at_mut(r.len());
            gaps.push((cursor, gap));
            out_slices[k] = Some(o);
            rest = tail;
            cursor = r.end;
        }
        gaps.push((cursor, rest));
        let mut ins = Vec::with_capacity(inputs.len());
        for (&id, r) in inputs.iter().zip(in_ranges) {
            let (start, gap) = gaps
                .iter()
                .find(|(s, g)| r.start >= *s && r.end <= *s + g.len())
                .ok_or_else(|| fail(format!("input {id} overlaps an output")))?;
            ins.push(TensorRef { dtype: self.dtypes[id.index()], dims: &self.dims[id.index()], bytes: &gap[r.start - start..r.end - start] });
        }
        let outs = outputs
            .iter()
            .zip(out_slices)
            .map(|(&id, s)| TensorMut { dtype: self.dtypes[id.index()], dims: &self.dims[id.index()], bytes: s.unwrap_or_default() })
            .collect();
        Ok((ins, outs))
    }
}

/// A constant copied once, at compile, into 8-byte-aligned storage so kernels can view it as
/// typed elements whatever the alignment of the model file.
#[derive(Clone, Debug)]
pub struct AlignedConst {
    dtype: DType,
    dims: Vec<usize>,
    words: Vec<u64>,
    len: usize,
}

impl AlignedConst {
    /// Copies `bytes`.
    pub fn new(dtype: DType, dims: Vec<usize>, bytes: &[u8]) -> AlignedConst {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        AlignedConst { dtype, dims, words, len: bytes.len() }
    }

    /// A view of the constant.
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef { dtype: self.dtype, dims: &self.dims, bytes: &bytemuck::cast_slice::<u64, u8>(&self.words)[..self.len] }
    }
}

/// Where a kernel's input comes from at run time.
#[derive(Clone, Debug)]
pub enum InputSource {
    /// A tensor in the arena.
    Arena(OperandId),
    /// A constant the kernel reads as it is (not packed at compile).
    Const(AlignedConst),
}

impl InputSource {
    /// The source of operand `id` of `graph` with concrete `dims`: its constant data (copied,
    /// aligned) or its arena slot.
    pub fn of(graph: &crate::Subgraph, dims: &[usize], id: OperandId) -> InputSource {
        let o = graph.operand(id);
        match &o.data {
            Some(d) => InputSource::Const(AlignedConst::new(o.dtype, dims.to_vec(), d.bytes())),
            None => InputSource::Arena(id),
        }
    }
}

/// The run-time inputs and outputs of one compiled op.
#[derive(Clone, Debug)]
pub struct OpIo {
    /// The op, for errors.
    pub op: OpId,
    /// Inputs in the order the kernel reads them.
    pub inputs: Vec<InputSource>,
    /// Output operands.
    pub outputs: Vec<OperandId>,
    arena_inputs: Vec<OperandId>,
}

impl OpIo {
    /// Describes the inputs and outputs of `op`.
    pub fn new(op: OpId, inputs: Vec<InputSource>, outputs: Vec<OperandId>) -> OpIo {
        let arena_inputs = inputs
            .iter()
            .filter_map(|s| match s {
                InputSource::Arena(id) => Some(*id),
                InputSource::Const(_) => None,
            })
            .collect();
        OpIo { op, inputs, outputs, arena_inputs }
    }

    /// Views of the inputs (arena tensors and constants, in order) and the outputs.
    pub fn views<'a>(&'a self, arena: &'a mut TensorArena) -> Result<(Vec<TensorRef<'a>>, Vec<TensorMut<'a>>), RunError> {
        let (from_arena, outs) = arena.split(self.op, &self.arena_inputs, &self.outputs)?;
        let mut from_arena = from_arena.into_iter();
        let mut ins = Vec::with_capacity(self.inputs.len());
        for s in &self.inputs {
            match s {
                InputSource::Arena(_) => ins.extend(from_arena.next()),
                InputSource::Const(c) => ins.push(c.view()),
            }
        }
        Ok((ins, outs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_gives_disjoint_views() {
        let slots = vec![Some(0..16), Some(64..80), Some(128..144)];
        let dims = vec![vec![4], vec![4], vec![4]];
        let mut a = TensorArena::new(192, slots, dims, vec![DType::F32; 3]);
        a.bytes_mut(OperandId(0)).unwrap().copy_from_slice(&[1u8; 16]);
        let (ins, mut outs) = a.split(OpId(0), &[OperandId(0), OperandId(0), OperandId(2)], &[OperandId(1)]).unwrap();
        assert_eq!(ins[0].bytes, &[1u8; 16]);
        assert_eq!(ins[1].bytes, ins[0].bytes);
        outs[0].bytes.copy_from_slice(&[2u8; 16]);
        assert_eq!(a.bytes(OperandId(1)).unwrap(), &[2u8; 16]);
    }

    #[test]
    fn overlap_is_an_error_not_a_panic() {
        let slots = vec![Some(0..16), Some(8..24)];
        let mut a = TensorArena::new(64, slots, vec![vec![4], vec![4]], vec![DType::F32; 2]);
        assert!(a.split(OpId(0), &[OperandId(0)], &[OperandId(1)]).is_err());
    }
}
