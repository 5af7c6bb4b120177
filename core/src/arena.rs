//! The tensor arena: one buffer holding every non-constant tensor at planned offsets, and safe
//! split borrows of it (inputs shared, outputs exclusive) for kernels.

use std::ops::Range;

use crate::{CompileError, DType, OpId, OperandId, RunError, Seq};

/// The input views a step's kernel gets: up to 8 in place.
pub type InputViews<'a> = Seq<TensorRef<'a>, 8>;
/// The output views a step's kernel gets: up to 4 in place.
pub type OutputViews<'a> = Seq<TensorMut<'a>, 4>;

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

/// An empty float32 view: what an unused place of [`InputViews`] holds.
impl Default for TensorRef<'_> {
    fn default() -> Self {
        TensorRef { dtype: DType::F32, dims: &[], bytes: &[] }
    }
}

/// An empty float32 view: what an unused place of [`OutputViews`] holds.
impl Default for TensorMut<'_> {
    fn default() -> Self {
        TensorMut { dtype: DType::F32, dims: &[], bytes: &mut [] }
    }
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

/// Holds every planned tensor. Offsets are multiples of 64 bytes from a 64-byte-aligned start in
/// the buffer, so every tensor begins on a cache line: a 64-byte vector load that straddles two
/// lines costs two (depthwise convolutions measured 1.7x slower from an 8-byte-aligned start).
///
/// Tensors whose shapes are known only at run time (dynamic tensors) live outside that buffer,
/// each in storage of its own that [`TensorArena::resize`] grows when a run needs more and never
/// shrinks, so memory stays flat over repeated runs.
#[derive(Debug, Default)]
pub struct TensorArena {
    buf: Vec<u64>,
    slots: Vec<Option<Range<usize>>>,
    dims: Vec<Vec<usize>>,
    dtypes: Vec<DType>,
    /// For each operand, its index in `owned`, or `NOT_DYNAMIC`.
    dyn_index: Vec<u32>,
    /// Storage of the dynamic tensors.
    owned: Vec<Owned>,
    /// The most bytes the buffer and the dynamic tensors may hold together (`MEMORY_LIMIT`).
    limit: u64,
}

const NOT_DYNAMIC: u32 = u32::MAX;

/// Storage of one dynamic tensor: `len` bytes in use from the first 64-byte boundary of
/// 8-byte-aligned words (which hold 64 bytes more than the largest `len` so far).
#[derive(Debug, Default)]
struct Owned {
    words: Vec<u64>,
    len: usize,
}

/// Bytes from the start of `words` to its first 64-byte boundary.
fn line_offset(words: &[u64]) -> usize {
    (64 - words.as_ptr() as usize % 64) % 64
}

impl Owned {
    fn bytes(&self) -> &[u8] {
        let off = line_offset(&self.words);
        &bytemuck::cast_slice::<u64, u8>(&self.words)[off..off + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        let off = line_offset(&self.words);
        &mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.words)[off..off + self.len]
    }
}

impl TensorArena {
    /// An arena of `size` bytes with a byte range per planned operand (None for constants), with
    /// no memory limit. Aborts the process if the memory cannot be had: for tests and tools whose
    /// sizes are fixed; sessions use [`TensorArena::try_new`].
    pub fn new(size: usize, slots: Vec<Option<Range<usize>>>, dims: Vec<Vec<usize>>, dtypes: Vec<DType>) -> TensorArena {
        let buf = vec![0u64; size.div_ceil(8) + 8];
        TensorArena::with_buffer(buf, slots, dims, dtypes, u64::MAX)
    }

    /// An arena of `size` bytes whose buffer and dynamic tensors together may hold at most
    /// `limit` bytes: an error (never an abort) when `size` is over it or the host cannot give it.
    pub fn try_new(size: usize, slots: Vec<Option<Range<usize>>>, dims: Vec<Vec<usize>>, dtypes: Vec<DType>, limit: u64) -> Result<TensorArena, CompileError> {
        let words = size.div_ceil(8) + 8;
        let what = || "the tensor arena".to_string();
        if words as u64 * 8 > limit {
            return Err(CompileError::OutOfMemory { what: what(), bytes: size as u64, reason: over_limit(limit) });
        }
        // Zeroed by the allocator (fresh pages from the system are zero already): the arena's
        // pages are first touched by the kernels that write them, not all at prepare.
        let buf = bytemuck::allocation::try_zeroed_vec::<u64>(words)
            .map_err(|()| CompileError::OutOfMemory { what: what(), bytes: size as u64, reason: "the allocation failed".into() })?;
        Ok(TensorArena::with_buffer(buf, slots, dims, dtypes, limit))
    }

    fn with_buffer(buf: Vec<u64>, slots: Vec<Option<Range<usize>>>, dims: Vec<Vec<usize>>, dtypes: Vec<DType>, limit: u64) -> TensorArena {
        let dyn_index = vec![NOT_DYNAMIC; dims.len()];
        // 64 bytes more than planned, and every slot moved to start from the first line boundary
        // (the buffer is never reallocated).
        let off = line_offset(&buf);
        let slots = slots.into_iter().map(|s| s.map(|r| r.start + off..r.end + off)).collect();
        TensorArena { buf, slots, dims, dtypes, dyn_index, owned: Vec::new(), limit }
    }

    /// Makes operand `id` dynamic: it gets storage of its own (sized for its current dims) and
    /// [`TensorArena::resize`] may change its dims. Called at prepare for tensors without a slot.
    pub fn make_dynamic(&mut self, id: OperandId) {
        let i = id.index();
        if i >= self.dims.len() || self.dyn_index[i] != NOT_DYNAMIC {
            return;
        }
        self.slots[i] = None;
        self.dyn_index[i] = self.owned.len() as u32;
        self.owned.push(Owned::default());
        let dims = self.dims[i].clone();
        // Cannot fail: the tensor was just made dynamic, and its dims were planned once already.
        let _ = self.resize(OpId::new(0), id, &dims);
    }

    /// Whether operand `id` is dynamic.
    pub fn is_dynamic(&self, id: OperandId) -> bool {
        self.dyn_index.get(id.index()).is_some_and(|&d| d != NOT_DYNAMIC)
    }

    /// Sets the dims of dynamic tensor `id`, output of op `op`, growing its storage when it needs
    /// more bytes than any earlier run (it never shrinks). Fails for a tensor planned in the
    /// static buffer.
    pub fn resize(&mut self, op: OpId, id: OperandId, dims: &[usize]) -> Result<(), RunError> {
        let fail = |reason: String| RunError::Kernel { op, kind: "arena".into(), reason };
        let d = match self.dyn_index.get(id.index()) {
            Some(&d) if d != NOT_DYNAMIC => d as usize,
            _ => return Err(fail(format!("operand {id} has a static shape and cannot be resized to {}", crate::shape::fmt_dims(dims)))),
        };
        let oom = |bytes: u64, reason: String| RunError::OutOfMemory { op, operand: id, shape: crate::shape::fmt_dims(dims), bytes, reason };
        let len = crate::shape::num_elements(dims)
            .and_then(|n| n.checked_mul(self.dtypes[id.index()].size()))
            .ok_or_else(|| oom(u64::MAX, "more than this machine can address".into()))?;
        let words = len.div_ceil(8) + 8;
        let held = self.owned[d].words.len();
        if held < words {
            // Sizes come from run-time values: fail with an error, not an abort, when the
            // memory cannot be had or is over the session's limit.
            let total = (self.size() + self.dynamic_size()) as u64 + (words - held) as u64 * 8;
            if total > self.limit {
                return Err(oom(len as u64, over_limit(self.limit)));
            }
            let o = &mut self.owned[d];
            o.words.try_reserve_exact(words - held).map_err(|e| oom(len as u64, format!("the allocation failed: {e}")))?;
            o.words.resize(words, 0);
        }
        let o = &mut self.owned[d];
        o.len = len;
        if self.dims[id.index()] != dims {
            self.dims[id.index()] = dims.to_vec();
        }
        Ok(())
    }

    /// Concrete dims of every operand, indexed by id (dynamic ones as of their last resize).
    pub fn all_dims(&self) -> &[Vec<usize>] {
        &self.dims
    }

    /// Bytes held by dynamic tensors (their storage as grown so far).
    pub fn dynamic_size(&self) -> usize {
        self.owned.iter().map(|o| o.words.len() * 8).sum()
    }

    /// Size of the buffer in bytes (what was planned, and the line of slack that aligns it).
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

    /// The bytes of operand `id`, if it has a slot or is dynamic.
    pub fn bytes(&self, id: OperandId) -> Option<&[u8]> {
        match self.slot(id) {
            Some(r) => Some(&bytemuck::cast_slice::<u64, u8>(&self.buf)[r]),
            None => self.owned_index(id).map(|d| self.owned[d].bytes()),
        }
    }

    /// The bytes of operand `id` for writing, if it has a slot or is dynamic.
    pub fn bytes_mut(&mut self, id: OperandId) -> Option<&mut [u8]> {
        match self.slot(id) {
            Some(r) => Some(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut self.buf)[r]),
            None => self.owned_index(id).map(|d| self.owned[d].bytes_mut()),
        }
    }

    fn owned_index(&self, id: OperandId) -> Option<usize> {
        self.dyn_index.get(id.index()).filter(|&&d| d != NOT_DYNAMIC).map(|&d| d as usize)
    }

    /// [`TensorArena::split`] for the common step: one output and no dynamic tensors in the
    /// arena, with the inputs given as sources (constants viewed where they are). No allocation
    /// (the views are in place) where `split` makes about six: on graphs of many tiny ops
    /// (TOSA's integer softmax) those were a third of the run.
    fn split_one<'a>(&'a mut self, op: OpId, inputs: &'a [InputSource], out: OperandId, ins: &mut InputViews<'a>, outs: &mut OutputViews<'a>) -> Result<(), RunError> {
        let fail = |reason: String| RunError::Kernel { op, kind: "arena".into(), reason };
        let TensorArena { buf, slots, dims, dtypes, .. } = self;
        let range = |id: OperandId| slots.get(id.index()).cloned().flatten().ok_or_else(|| fail(format!("operand {id} has no arena slot")));
        let meta = |id: OperandId| dtypes.get(id.index()).copied().zip(dims.get(id.index())).ok_or_else(|| fail(format!("operand {id} is not in the arena")));
        let r = range(out)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        if r.start > r.end || r.end > bytes.len() {
            return Err(fail(format!("output {out} lies outside the arena")));
        }
        let (head, rest) = bytes.split_at_mut(r.start);
        let (o, tail) = rest.split_at_mut(r.end - r.start);
        let (head, tail): (&[u8], &[u8]) = (head, tail);
        for s in inputs {
            match s {
                InputSource::Arena(id) => {
                    let i = range(*id)?;
                    let b = if i.end <= r.start {
                        head.get(i)
                    } else if i.start >= r.end {
                        tail.get(i.start - r.end..i.end - r.end)
                    } else {
                        return Err(fail(format!("input {id} overlaps an output")));
                    };
                    let (dtype, dims) = meta(*id)?;
                    ins.push(TensorRef { dtype, dims, bytes: b.ok_or_else(|| fail(format!("input {id} lies outside the arena")))? });
                }
                InputSource::Const(c) => ins.push(c.view()),
            }
        }
        let (dtype, dims) = meta(out)?;
        outs.push(TensorMut { dtype, dims, bytes: o });
        Ok(())
    }

    /// Borrows `inputs` shared and `outputs` exclusively at once, for the kernel of op `op`.
    /// Fails if an output overlaps an input or another output (the planner never does that).
    pub fn split(&mut self, op: OpId, inputs: &[OperandId], outputs: &[OperandId]) -> Result<(InputViews<'_>, OutputViews<'_>), RunError> {
        let fail = |reason: String| RunError::Kernel { op, kind: "arena".into(), reason };
        let TensorArena { buf, slots, dims, dtypes, dyn_index, owned, .. } = self;
        let has_dynamic = !owned.is_empty();
        let dynamic = |id: OperandId| -> Option<usize> {
            if !has_dynamic {
                return None;
            }
            dyn_index.get(id.index()).filter(|&&d| d != NOT_DYNAMIC).map(|&d| d as usize)
        };
        let range = |id: OperandId| slots.get(id.index()).cloned().flatten().ok_or_else(|| fail(format!("operand {id} has no arena slot")));
        let mut outs: Seq<(usize, Range<usize>), 4> = Seq::new();
        for (k, &o) in outputs.iter().enumerate() {
            if dynamic(o).is_none() {
                outs.push((k, range(o)?));
            }
        }
        let in_ranges: Seq<Option<Range<usize>>, 8> =
            inputs.iter().map(|&i| if dynamic(i).is_some() { Ok(None) } else { range(i).map(Some) }).collect::<Result<_, _>>()?;
        outs.sort_by_key(|(_, r)| r.start);
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let mut gaps: Seq<(usize, &[u8]), 5> = Seq::new();
        let mut out_slices: Seq<Option<&mut [u8]>, 4> = (0..outputs.len()).map(|_| None).collect();
        let mut rest = bytes;
        let mut cursor = 0;
        for (k, r) in outs.iter().cloned() {
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
        // Only ops touching dynamic tensors pay for this.
        let mut in_slices: Vec<Option<&[u8]>> = if has_dynamic { vec![None; inputs.len()] } else { Vec::new() };
        if has_dynamic {
            // Dynamic tensors each have storage of their own: hand out one borrow per storage,
            // walking `owned` once in index order.
            let mut wants: Vec<(usize, Option<usize>, Vec<usize>)> = Vec::new();
            for (k, &o) in outputs.iter().enumerate() {
                if let Some(d) = dynamic(o) {
                    if wants.iter().any(|w| w.0 == d) {
                        return Err(fail(format!("output {o} is written twice")));
                    }
                    wants.push((d, Some(k), Vec::new()));
                }
            }
            for (j, &i) in inputs.iter().enumerate() {
                if let Some(d) = dynamic(i) {
                    match wants.iter_mut().find(|w| w.0 == d) {
                        Some((_, Some(_), _)) => return Err(fail(format!("input {i} is also an output"))),
                        Some((_, None, readers)) => readers.push(j),
                        None => wants.push((d, None, vec![j])),
                    }
                }
            }
            wants.sort_by_key(|w| w.0);
            let mut storage = owned.iter_mut();
            let mut next = 0;
            for (d, writer, readers) in wants {
                let o = storage.nth(d - next).ok_or_else(|| fail(format!("dynamic storage {d} is missing")))?;
                next = d + 1;
                match writer {
                    Some(k) => out_slices[k] = Some(o.bytes_mut()),
                    None => {
                        let o: &Owned = o;
                        for j in readers {
                            in_slices[j] = Some(o.bytes());
                        }
                    }
                }
            }
        }
        let mut ins = InputViews::new();
        for (j, (&id, r)) in inputs.iter().zip(in_ranges.iter().cloned()).enumerate() {
            let bytes = match (r, in_slices.get(j).copied().flatten()) {
                (_, Some(b)) => b,
                (Some(r), None) => {
                    let (start, gap) = gaps
                        .iter()
                        .find(|(s, g)| r.start >= *s && r.end <= *s + g.len())
                        .ok_or_else(|| fail(format!("input {id} overlaps an output")))?;
                    &gap[r.start - start..r.end - start]
                }
                (None, None) => return Err(fail(format!("input {id} has no storage"))),
            };
            ins.push(TensorRef { dtype: dtypes[id.index()], dims: &dims[id.index()], bytes });
        }
        let outs = outputs
            .iter()
            .zip(out_slices.iter_mut())
            .map(|(&id, s)| TensorMut { dtype: dtypes[id.index()], dims: &dims[id.index()], bytes: s.take().unwrap_or_default() })
            .collect();
        Ok((ins, outs))
    }
}

/// The reason given when a size is over the session's memory limit.
pub(crate) fn over_limit(limit: u64) -> String {
    format!("over the session's memory limit of {limit} bytes (raise MEMORY_LIMIT if the host has the memory)")
}

/// Checks, before anything is allocated for them, that every tensor of `dims` has a size that
/// fits in memory and that they add up to at most `limit` bytes (the arena may overlap them,
/// but no plan is smaller than the largest one, and kernels size their scratch from them).
pub fn check_tensor_sizes(dims: &[Vec<usize>], dtypes: &[DType], limit: u64) -> Result<(), CompileError> {
    for (i, (d, t)) in dims.iter().zip(dtypes).enumerate() {
        let bytes = crate::shape::num_elements(d).and_then(|n| n.checked_mul(t.size())).map(|b| b as u64);
        if bytes.is_none_or(|b| b > limit) {
            let reason = match bytes {
                None => "more than this machine can address".to_string(),
                Some(_) => over_limit(limit),
            };
            let what = format!("tensor {} of shape {}", OperandId::new(i), crate::shape::fmt_dims(d));
            return Err(CompileError::OutOfMemory { what, bytes: bytes.unwrap_or(u64::MAX), reason });
        }
    }
    Ok(())
}

/// A constant copied once, at compile, to a 64-byte boundary so kernels can view it as typed
/// elements (and load whole cache lines) whatever the alignment of the model file.
#[derive(Debug)]
pub struct AlignedConst {
    dtype: DType,
    dims: Vec<usize>,
    words: Vec<u64>,
    /// Bytes from the start of `words` to the data (its first 64-byte boundary).
    off: usize,
    len: usize,
}

impl AlignedConst {
    /// Copies `bytes`.
    pub fn new(dtype: DType, dims: Vec<usize>, bytes: &[u8]) -> AlignedConst {
        let mut words = vec![0u64; bytes.len().div_ceil(8) + 8];
        let off = line_offset(&words);
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[off..off + bytes.len()].copy_from_slice(bytes);
        AlignedConst { dtype, dims, words, off, len: bytes.len() }
    }

    /// A view of the constant.
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef { dtype: self.dtype, dims: &self.dims, bytes: &bytemuck::cast_slice::<u64, u8>(&self.words)[self.off..self.off + self.len] }
    }
}

impl Clone for AlignedConst {
    /// A fresh copy, aligned in its own storage (a copied `Vec` may start elsewhere in a line).
    fn clone(&self) -> Self {
        AlignedConst::new(self.dtype, self.dims.clone(), self.view().bytes)
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
            // Float16 weights not widened yet are widened into the copy alone.
            Some(d) => match d.widen_unkept() {
                Some(values) => InputSource::Const(AlignedConst::new(o.dtype, dims.to_vec(), bytemuck::cast_slice(&values))),
                None => InputSource::Const(AlignedConst::new(o.dtype, dims.to_vec(), d.bytes())),
            },
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
    /// `(k, dims)`: input `k` is viewed with these dims instead of its own (see
    /// [`OpIo::with_dims`]).
    in_dims: Vec<(usize, Vec<usize>)>,
    /// The same for outputs.
    out_dims: Vec<(usize, Vec<usize>)>,
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
        OpIo { op, inputs, outputs, arena_inputs, in_dims: Vec::new(), out_dims: Vec::new() }
    }

    /// Views input `k` of each `(k, dims)` of `ins` (and output `k` of `outs`) with `dims`
    /// instead of the tensor's own: a RESHAPE absorbed into the step that reads or writes the
    /// same bytes under the other shape. The caller makes sure the two shapes hold the same
    /// number of elements of the same type.
    pub fn with_dims(mut self, ins: Vec<(usize, Vec<usize>)>, outs: Vec<(usize, Vec<usize>)>) -> OpIo {
        self.in_dims = ins;
        self.out_dims = outs;
        self
    }

    /// Views of the inputs (arena tensors and constants, in order) and the outputs.
    pub fn views<'a>(&'a self, arena: &'a mut TensorArena) -> Result<(InputViews<'a>, OutputViews<'a>), RunError> {
        let (mut ins, mut outs) = (InputViews::new(), OutputViews::new());
        self.views_into(arena, &mut ins, &mut outs)?;
        Ok((ins, outs))
    }

    /// [`OpIo::views`] appended to the caller's (empty) lists: what a step does on every run,
    /// where returning the lists by value cost a copy of them per call level.
    pub fn views_into<'a>(&'a self, arena: &'a mut TensorArena, ins: &mut InputViews<'a>, outs: &mut OutputViews<'a>) -> Result<(), RunError> {
        self.split(arena, ins, outs)?;
        for (k, d) in &self.in_dims {
            if let Some(t) = ins.get_mut(*k) {
                t.dims = d;
            }
        }
        for (k, d) in &self.out_dims {
            if let Some(t) = outs.get_mut(*k) {
                t.dims = d;
            }
        }
        Ok(())
    }

    fn split<'a>(&'a self, arena: &'a mut TensorArena, ins: &mut InputViews<'a>, outs: &mut OutputViews<'a>) -> Result<(), RunError> {
        if let ([out], true) = (self.outputs.as_slice(), arena.owned.is_empty()) {
            return arena.split_one(self.op, &self.inputs, *out, ins, outs);
        }
        let (from_arena, mut written) = arena.split(self.op, &self.arena_inputs, &self.outputs)?;
        let mut from_arena = from_arena.iter();
        for s in &self.inputs {
            match s {
                InputSource::Arena(_) => {
                    if let Some(&t) = from_arena.next() {
                        ins.push(t);
                    }
                }
                InputSource::Const(c) => ins.push(c.view()),
            }
        }
        written.iter_mut().for_each(|t| outs.push(std::mem::take(t)));
        Ok(())
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
    fn dynamic_tensors_resize_and_split_with_static_ones() {
        // %0 static input, %1 dynamic output, %2 dynamic input of a later op.
        let slots = vec![Some(0..16), None, None];
        let mut a = TensorArena::new(64, slots, vec![vec![4], vec![1], vec![1]], vec![DType::F32; 3]);
        a.make_dynamic(OperandId(1));
        a.make_dynamic(OperandId(2));
        assert!(a.is_dynamic(OperandId(1)) && !a.is_dynamic(OperandId(0)));
        a.resize(OpId(0), OperandId(1), &[2, 3]).unwrap();
        a.resize(OpId(0), OperandId(2), &[0, 3]).unwrap();
        a.bytes_mut(OperandId(0)).unwrap().copy_from_slice(&[1u8; 16]);
        let (ins, mut outs) = a.split(OpId(0), &[OperandId(0), OperandId(2), OperandId(0)], &[OperandId(1)]).unwrap();
        assert_eq!((ins[0].bytes, ins[1].bytes.len(), ins[2].bytes), (&[1u8; 16][..], 0, &[1u8; 16][..]));
        assert_eq!((outs[0].dims, outs[0].bytes.len()), (&[2, 3][..], 24));
        outs[0].bytes.fill(7);
        assert_eq!(a.bytes(OperandId(1)).unwrap(), &[7u8; 24]);
        // Shrinking keeps the storage (memory stays flat over runs); growing extends it.
        a.resize(OpId(0), OperandId(1), &[1]).unwrap();
        assert_eq!((a.dims(OperandId(1)), a.bytes(OperandId(1)).unwrap().len()), (&[1][..], 4));
        let kept = a.dynamic_size();
        a.resize(OpId(0), OperandId(1), &[2, 2]).unwrap();
        assert_eq!(a.dynamic_size(), kept);
        a.resize(OpId(0), OperandId(1), &[100]).unwrap();
        assert!(a.dynamic_size() >= kept + 400 - 24);
    }

    #[test]
    fn dynamic_misuse_is_an_error_not_a_panic() {
        let mut a = TensorArena::new(64, vec![Some(0..16), None], vec![vec![4], vec![4]], vec![DType::F32; 2]);
        a.make_dynamic(OperandId(1));
        assert!(a.resize(OpId(3), OperandId(0), &[8]).is_err(), "a static tensor cannot be resized");
        assert!(a.split(OpId(0), &[OperandId(1)], &[OperandId(1)]).is_err(), "input and output share storage");
        assert!(a.split(OpId(0), &[], &[OperandId(1), OperandId(1)]).is_err(), "one output written twice");
        let huge = [usize::MAX / 2, 4];
        assert!(a.resize(OpId(0), OperandId(1), &huge).is_err(), "overflowing shapes are refused");
    }

    #[test]
    fn one_output_views_match_split() {
        // %0 before the output, %2 after it, a constant between; %1 the output.
        let slots = vec![Some(0..16), Some(64..80), Some(128..144)];
        let mut a = TensorArena::new(192, slots, vec![vec![4]; 3], vec![DType::F32; 3]);
        a.bytes_mut(OperandId(0)).unwrap().copy_from_slice(&[1u8; 16]);
        a.bytes_mut(OperandId(2)).unwrap().copy_from_slice(&[3u8; 16]);
        let k = InputSource::Const(AlignedConst::new(DType::I8, vec![2], &[9, 8]));
        let io = OpIo::new(OpId(0), vec![InputSource::Arena(OperandId(2)), k, InputSource::Arena(OperandId(0))], vec![OperandId(1)]);
        let (ins, mut outs) = io.views(&mut a).unwrap();
        assert_eq!((ins[0].bytes, ins[1].bytes, ins[2].bytes), (&[3u8; 16][..], &[9u8, 8][..], &[1u8; 16][..]));
        assert_eq!((ins[1].dtype, ins[1].dims), (DType::I8, &[2usize][..]));
        outs[0].bytes.copy_from_slice(&[2u8; 16]);
        assert_eq!(a.bytes(OperandId(1)).unwrap(), &[2u8; 16]);
        // An input sharing the output's bytes, or one with no slot, is an error.
        let io = OpIo::new(OpId(0), vec![InputSource::Arena(OperandId(1))], vec![OperandId(1)]);
        assert!(io.views(&mut a).is_err());
        let io = OpIo::new(OpId(0), vec![InputSource::Arena(OperandId(7))], vec![OperandId(1)]);
        assert!(io.views(&mut a).is_err());
    }

    #[test]
    fn overlap_is_an_error_not_a_panic() {
        let slots = vec![Some(0..16), Some(8..24)];
        let mut a = TensorArena::new(64, slots, vec![vec![4], vec![4]], vec![DType::F32; 2]);
        assert!(a.split(OpId(0), &[OperandId(0)], &[OperandId(1)]).is_err());
    }
}
