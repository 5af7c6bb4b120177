//! The context a shape rule sees: the op, its subgraph, the shapes known so far, and helpers
//! that read inputs and build errors naming the op and operand.

use std::cell::RefCell;

use crate::shape::fmt_dims;
use crate::{CompileError, DType, OpId, Operation, OperandId, Subgraph, TensorArena};

/// Where a rule finds its inputs' shapes, and the values of non-constant inputs.
#[derive(Clone, Copy)]
enum Known<'a> {
    /// At prepare: the shapes inferred so far (`None` where unknown) and the values of the
    /// small integer tensors computed from static shapes (see [`super::values`]).
    Prepare(&'a [Option<Vec<usize>>], &'a [Option<Vec<u8>>]),
    /// At run time: the tensors themselves.
    Run(&'a TensorArena),
}

/// What an inference rule sees: the op, its subgraph and the shapes known so far.
pub(crate) struct Cx<'a> {
    pub g: &'a Subgraph,
    pub id: OpId,
    pub op: &'a Operation,
    known: Known<'a>,
    /// Non-constant operands whose values the rule read (at run time).
    reads: RefCell<Vec<OperandId>>,
}

impl<'a> Cx<'a> {
    /// The context of op `id` at prepare, given the shapes inferred so far and the values known.
    pub fn at_prepare(g: &'a Subgraph, id: OpId, shapes: &'a [Option<Vec<usize>>], values: &'a [Option<Vec<u8>>]) -> Self {
        Cx { g, id, op: g.op(id), known: Known::Prepare(shapes, values), reads: RefCell::new(Vec::new()) }
    }

    /// The context of op `id` at run time, reading the tensors in `arena`.
    pub fn at_run(g: &'a Subgraph, id: OpId, arena: &'a TensorArena) -> Self {
        Cx { g, id, op: g.op(id), known: Known::Run(arena), reads: RefCell::new(Vec::new()) }
    }

    /// The non-constant operands whose values the rule read.
    pub fn into_reads(self) -> Vec<OperandId> {
        self.reads.into_inner()
    }

    fn kind(&self) -> String {
        self.op.kind.name().to_string()
    }

    /// An error about the op as a whole.
    pub fn err(&self, reason: impl Into<String>) -> CompileError {
        CompileError::InvalidOp { op: self.id, kind: self.kind(), reason: reason.into() }
    }

    /// An error about input `i`.
    pub fn input_err(&self, i: usize, reason: impl Into<String>) -> CompileError {
        let operand = self.op.input(i).unwrap_or(OperandId(u32::MAX));
        CompileError::InvalidOperand { op: self.id, kind: self.kind(), operand, reason: reason.into() }
    }

    /// The id of required input `i`.
    pub fn input_id(&self, i: usize) -> Result<OperandId, CompileError> {
        self.op.input(i).ok_or_else(|| self.err(format!("input {i} is required but absent")))
    }

    /// The shape of required input `i`.
    pub fn input(&self, i: usize) -> Result<&'a [usize], CompileError> {
        let id = self.input_id(i)?;
        let shape = match self.known {
            Known::Prepare(shapes, _) => shapes.get(id.index()).and_then(|s| s.as_deref()),
            Known::Run(arena) => arena.all_dims().get(id.index()).map(Vec::as_slice),
        };
        shape.ok_or_else(|| self.input_err(i, "its shape is not known when this op runs"))
    }

    /// The bytes of input `i` whose values decide the output shape: its constant data, or at run
    /// time the tensor's current contents. At prepare, a non-constant input whose value is not
    /// known from static shapes gives [`CompileError::ValueDependent`], which makes the outputs
    /// dynamic.
    pub fn value_bytes(&self, i: usize) -> Result<(OperandId, &'a [u8]), CompileError> {
        let id = self.input_id(i)?;
        if let Some(d) = &self.g.operand(id).data {
            return Ok((id, d.bytes()));
        }
        match self.known {
            Known::Prepare(_, values) => match values.get(id.index()).and_then(|v| v.as_deref()) {
                Some(bytes) => Ok((id, bytes)),
                None => Err(CompileError::ValueDependent { op: self.id, kind: self.kind(), operand: id }),
            },
            Known::Run(arena) => {
                let bytes = arena.bytes(id).ok_or_else(|| self.input_err(i, "its values are not in memory"))?;
                let mut reads = self.reads.borrow_mut();
                if !reads.contains(&id) {
                    reads.push(id);
                }
                Ok((id, bytes))
            }
        }
    }

    /// The shape of input `i` when present.
    pub fn opt_input(&self, i: usize) -> Result<Option<&'a [usize]>, CompileError> {
        match self.op.input(i) {
            Some(_) => self.input(i).map(Some),
            None => Ok(None),
        }
    }

    /// The type of required input `i`.
    pub fn dtype(&self, i: usize) -> Result<DType, CompileError> {
        Ok(self.g.operand(self.input_id(i)?).dtype)
    }

    /// The integer values of input `i`: a constant, or (at run time) a computed tensor.
    pub fn const_ints(&self, i: usize) -> Result<Vec<i64>, CompileError> {
        let (id, bytes) = self.value_bytes(i)?;
        match self.g.operand(id).dtype {
            DType::I32 => Ok(bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
            DType::I64 => Ok(bytes.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect()),
            other => Err(self.input_err(i, format!("must hold int32 or int64 values, not {other}"))),
        }
    }

    /// Checks that input `i` has `rank` dims.
    pub fn expect_rank(&self, i: usize, rank: usize) -> Result<&'a [usize], CompileError> {
        let s = self.input(i)?;
        if s.len() != rank {
            return Err(self.input_err(i, format!("expected rank {rank}, got shape {}", fmt_dims(s))));
        }
        Ok(s)
    }

    /// The type of output `k`.
    pub fn out_dtype(&self, k: usize) -> Result<DType, CompileError> {
        let id = self.op.outputs.get(k).ok_or_else(|| self.err(format!("output {k} is missing")))?;
        Ok(self.g.operand(*id).dtype)
    }

    /// An error about output `k`.
    pub fn out_err(&self, k: usize, reason: impl Into<String>) -> CompileError {
        let operand = self.op.outputs.get(k).copied().unwrap_or(OperandId(u32::MAX));
        CompileError::InvalidOperand { op: self.id, kind: self.kind(), operand, reason: reason.into() }
    }

    /// Checks that output `k` has type `want`.
    pub fn expect_out_dtype(&self, k: usize, want: DType) -> Result<(), CompileError> {
        let got = self.out_dtype(k)?;
        if got != want {
            return Err(self.out_err(k, format!("has type {got}; this op produces {want}")));
        }
        Ok(())
    }

    /// Checks that input `i` has one of the types in `allowed`.
    pub fn expect_dtype(&self, i: usize, allowed: &[DType]) -> Result<DType, CompileError> {
        let t = self.dtype(i)?;
        if !allowed.contains(&t) {
            let names: Vec<String> = allowed.iter().map(|d| d.to_string()).collect();
            return Err(self.input_err(i, format!("has type {t}; expected {}", names.join(" or "))));
        }
        Ok(t)
    }

    /// The single integer of constant input `i` (a scalar or a one-element tensor).
    pub fn const_scalar(&self, i: usize) -> Result<i64, CompileError> {
        let v = self.const_ints(i)?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(self.input_err(i, format!("must hold one integer, holds {}", v.len()))),
        }
    }

    /// The values of constant numeric input `i` as f64 (any integer or float type).
    pub fn const_f64s(&self, i: usize) -> Result<Vec<f64>, CompileError> {
        let (id, b) = self.value_bytes(i)?;
        Ok(match self.g.operand(id).dtype {
            DType::F32 => b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
            DType::I32 => b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect(),
            DType::I64 => b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f64).collect(),
            other => return Err(self.input_err(i, format!("has type {other}; expected float32, int32 or int64"))),
        })
    }

    /// Checks that the op has `n` outputs.
    pub fn expect_outputs(&self, n: usize) -> Result<(), CompileError> {
        if self.op.outputs.len() != n {
            return Err(self.err(format!("has {} outputs; its options ask for {n}", self.op.outputs.len())));
        }
        Ok(())
    }

    /// Normalizes a possibly negative axis for a tensor of `rank` dims.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize, CompileError> {
        let r = rank as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r.max(1) {
            return Err(self.err(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(a as usize)
    }

    /// Like [`Cx::axis`], for an op that reads the size of that dim: a scalar has no axis.
    pub fn dim_axis(&self, axis: i64, rank: usize) -> Result<usize, CompileError> {
        if rank == 0 {
            return Err(self.err(format!("axis {axis} names a dim, but the input is a scalar")));
        }
        self.axis(axis, rank)
    }

    /// Checks that output `k` has the type of input `i`.
    pub fn expect_out_like(&self, k: usize, i: usize) -> Result<DType, CompileError> {
        let t = self.dtype(i)?;
        if self.out_dtype(k)? != t {
            return Err(self.out_err(k, format!("has type {} but the input has {t}", self.out_dtype(k)?)));
        }
        Ok(t)
    }

    /// Checks that every output has the type of input `i` (data movement never converts).
    pub fn outputs_like(&self, i: usize) -> Result<DType, CompileError> {
        let t = self.dtype(i)?;
        for k in 0..self.op.outputs.len() {
            self.expect_out_like(k, i)?;
        }
        Ok(t)
    }

    /// The NumPy broadcast of shapes `a` and `b`, or an error naming both.
    pub fn broadcast(&self, a: &[usize], b: &[usize]) -> Result<Vec<usize>, CompileError> {
        crate::ops::elementwise::broadcast_shapes(a, b)
            .ok_or_else(|| self.err(format!("shapes {} and {} cannot be broadcast together", fmt_dims(a), fmt_dims(b))))
    }

    /// The one integer of constant input `i`, checked to be an int32/int64 tensor (an axis).
    pub fn const_axis(&self, i: usize) -> Result<i64, CompileError> {
        self.expect_dtype(i, crate::ops::INDEX_TYPES)?;
        self.const_scalar(i)
    }

    /// Whether input `i` is a constant (its values can be checked at prepare).
    pub fn is_const(&self, i: usize) -> bool {
        self.op.input(i).is_some_and(|id| self.g.operand(id).data.is_some())
    }

    /// The shapes the model declares for the op's outputs: the rule of ops whose outputs cannot
    /// be derived here (custom ops, control flow).
    pub fn declared_outputs(&self) -> Result<Vec<Vec<usize>>, CompileError> {
        self.op
            .outputs
            .iter()
            .map(|&o| {
                let operand = self.g.operand(o);
                operand.shape.concrete().ok_or_else(|| {
                    self.err(format!(
                        "output {o} has shape {} whose unknown dims cannot be inferred before running",
                        operand.shape
                    ))
                })
            })
            .collect()
    }

    /// The error for an op its family module does not list: an inconsistency inside nnrt
    /// (`OpKind::family` and the family's rule disagree), reported instead of a panic.
    pub fn unlisted(&self) -> CompileError {
        self.err(format!("internal error: the {:?} family has no shape rule for this op", self.op.kind.family()))
    }
}
