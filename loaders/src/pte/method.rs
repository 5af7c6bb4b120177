//! One execution plan (a method) into one IR subgraph: its values become operands as
//! instructions read and write them, each `KernelCall` through its operator's converter.
//!
//! Values are renamed as they are written (a tensor written twice becomes two operands), so the
//! subgraph is in SSA form whatever the program's memory plan shares. `MoveCall` rebinds a
//! value; `FreeCall` releases nothing here (the arena plan does that); `JumpFalseCall` is followed
//! when its condition is known at load — a constant, or a scalar the `executorch_prim` operators
//! computed there, so a `torch.map` / `torch.scan` loop is unrolled, within a bound on the
//! instructions run — and a forward jump on a bool tensor is an if/else (`torch.cond`); any other
//! condition is refused.

use std::collections::{HashMap, HashSet};

use flatbuffers::{ForwardsUOffset, Vector};

use nnrt_core::{DType, Dim, LoadError, Operand, OperandId, OpKind, Operation, Shape, Subgraph};

use super::container::Container;
use super::ops;
use crate::generated::executorch_flatbuffer as et;

/// A Scalar argument as the program stores it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Int(i) => i as f64,
            Scalar::Double(d) => d,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

/// The ExecuTorch scalar type `t` as an nnrt element type.
pub(crate) fn dtype_of(t: et::ScalarType) -> Option<DType> {
    Some(match t {
        et::ScalarType::BYTE | et::ScalarType::QUINT8 => DType::U8,
        et::ScalarType::CHAR | et::ScalarType::QINT8 => DType::I8,
        et::ScalarType::SHORT => DType::I16,
        et::ScalarType::INT | et::ScalarType::QINT32 => DType::I32,
        et::ScalarType::LONG => DType::I64,
        et::ScalarType::HALF => DType::F16,
        et::ScalarType::FLOAT => DType::F32,
        et::ScalarType::BOOL => DType::Bool,
        _ => return None,
    })
}

/// A result an op leaves for later, computed when a later instruction or the method's outputs
/// read it.
#[derive(Clone, Debug)]
pub(crate) enum Deferred {
    /// `max_pool2d_with_indices`' indices: of NCHW input `x`, window `k`, stride `s`, padding
    /// `p`, `ceil_mode`.
    PoolIndices { x: OperandId, k: [usize; 2], s: [usize; 2], p: [usize; 2], ceil: bool },
    /// The scale or zero point `choose_qparams` chose for float tensor `x` (quantized range
    /// `qmin..=qmax`, per row of the last `row_dims` dims, or per tensor when 0): only a
    /// quantize of `x` and its dequantize may read them.
    QParams { x: OperandId, qmin: i32, qmax: i32, row_dims: usize },
    /// `x` quantized with the [`Deferred::QParams`] chosen for it: only a dequantize may read it.
    DynQuantized { x: OperandId, qmin: i32, qmax: i32, row_dims: usize },
    /// The rows `et_copy_index` wrote so far (a `torch.map` / `torch.scan` loop's stacked
    /// output), stacked along a new first dim when read.
    Stack(Vec<OperandId>),
}

/// ExecuTorch's name of a scalar type number, for errors.
pub(crate) fn scalar_type_name(t: et::ScalarType) -> String {
    t.variant_name().map(str::to_string).unwrap_or_else(|| format!("scalar type {}", t.0))
}

fn kind_name(v: &et::EValue<'_>) -> &'static str {
    v.val_type().variant_name().unwrap_or("unknown kind")
}

/// Builds the subgraph of one method.
pub(crate) struct MethodBuilder<'c, 'a> {
    pub c: &'c Container<'a>,
    /// The method's name, for errors.
    pub method: String,
    values: Vector<'a, ForwardsUOffset<et::EValue<'a>>>,
    bound: Vec<Option<OperandId>>,
    pub g: Subgraph,
    /// The last write to each planned place (memory id, offset): its operand and byte size. A
    /// tensor that no instruction writes but that is planned at the same place is a view of it
    /// (ExecuTorch removes view copies whose result it can place over their input).
    memory: HashMap<(u32, u64), (OperandId, usize)>,
    /// NHWC twins of 4-D NCHW operands: an image op's NHWC result stands for its NCHW out
    /// tensor, and the transpose back is emitted only when an op reads the NCHW form
    /// ([`MethodBuilder::emit`]); NHWC readers and layout-blind elementwise ops use the twin.
    twin: HashMap<OperandId, OperandId>,
    /// NCHW operands whose transpose from their twin has not been emitted yet.
    pending: HashSet<OperandId>,
    /// Operands made by [`MethodBuilder::temp`] that nothing names (no value, no twin): an op
    /// writing one may write its final destination instead ([`MethodBuilder::retarget`]).
    temps: HashSet<OperandId>,
    /// Int values a `sym_size` wrote: sizes known only at run time.
    pub symbolic: HashSet<i64>,
    /// Scalar values instructions computed at load (`sym_size` of a fixed size, the
    /// `executorch_prim` operators on them): loops run on them are unrolled.
    pub known: HashMap<i64, Scalar>,
    /// Values bound as views of what an instruction wrote at their planned place: the operand
    /// they view.
    views: HashMap<i64, OperandId>,
    /// Sizes known only at run time that the `executorch_prim` operators computed (not a
    /// `sym_size` itself): the int32 [1] operand computing each at run time.
    pub derived: HashMap<i64, OperandId>,
    /// The tensor and dim of each `sym_size` of a size known only at run time.
    pub sym_src: HashMap<i64, (OperandId, usize)>,
    /// Values an op computes only if something reads them (max pooling's indices).
    pub deferred: HashMap<i64, Deferred>,
    /// The instruction being converted and its operator, for errors.
    pub at: (usize, String),
    /// Mutable buffers: the values an `aten::copy_` writes in place (ExecuTorch's emitter writes
    /// each mutated buffer back that way), whose contents persist from one run to the next.
    mutable: HashSet<i64>,
    /// The state of each mutable buffer read so far: (value, variable, written flag, the
    /// operand its read gave). The method's end writes the buffer's last value back.
    state: Vec<(i64, OperandId, OperandId, OperandId)>,
}

impl<'c, 'a> MethodBuilder<'c, 'a> {
    pub fn new(c: &'c Container<'a>, plan: &et::ExecutionPlan<'a>, method: &str) -> Self {
        let values = plan.values().unwrap_or_default();
        let bound = vec![None; values.len()];
        let g = Subgraph { name: method.to_string(), numerics: nnrt_core::Numerics::ExecuTorch, ..Subgraph::default() };
        Self { c, method: method.to_string(), values, bound, g, memory: HashMap::new(), twin: HashMap::new(), pending: HashSet::new(), temps: HashSet::new(), deferred: HashMap::new(), symbolic: HashSet::new(), known: HashMap::new(), views: HashMap::new(), derived: HashMap::new(), sym_src: HashMap::new(), at: (0, String::new()), mutable: HashSet::new(), state: Vec::new() }
    }

    /// An error about this method, at the current instruction when there is one.
    pub fn err(&self, reason: impl Into<String>) -> LoadError {
        let (i, op) = &self.at;
        let at = if op.is_empty() { String::new() } else { format!(", instruction {i} ({op})") };
        self.c.malformed(format!("method '{}'{at}: {}", self.method, reason.into()))
    }

    /// Value `i` of the method.
    pub fn value(&self, i: i64) -> Result<et::EValue<'a>, LoadError> {
        usize::try_from(i)
            .ok()
            .filter(|&i| i < self.values.len())
            .map(|i| self.values.get(i))
            .ok_or_else(|| self.err(format!("value {i} does not exist (the method has {} values)", self.values.len())))
    }

    fn tensor_decl(&self, i: i64) -> Result<et::Tensor<'a>, LoadError> {
        let v = self.value(i)?;
        v.val_as_tensor().ok_or_else(|| self.err(format!("value {i} is {}, where a Tensor is expected", kind_name(&v))))
    }

    /// A fresh operand declared like tensor value `i` (type, sizes, dynamism), with no data.
    fn declare(&self, i: i64) -> Result<Operand, LoadError> {
        let t = self.tensor_decl(i)?;
        let st = t.scalar_type();
        let dtype = dtype_of(st).ok_or_else(|| LoadError::UnsupportedType {
            path: self.c.path.to_string(),
            tensor: i as usize,
            name: format!("value {i} of method '{}'", self.method),
            dtype: scalar_type_name(st),
        })?;
        let sizes = t.sizes().map(|s| s.iter().collect::<Vec<i32>>()).unwrap_or_default();
        let dims = sizes
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| self.err(format!("value {i} has a negative size {d} in {sizes:?}"))))
            .collect::<Result<Vec<usize>, _>>()?;
        if let Some(order) = t.dim_order() {
            let mut seen: Vec<u8> = order.iter().collect();
            seen.sort_unstable();
            if !order.is_empty() && (seen.len() != dims.len() || seen.iter().enumerate().any(|(k, &d)| d as usize != k)) {
                return Err(self.err(format!("value {i}'s dim_order {:?} is not a permutation of its {} dims", order.iter().collect::<Vec<_>>(), dims.len())));
            }
        }
        let mut op = Operand::new(self.tensor_name(&t, i), dtype, &dims);
        if t.shape_dynamism() != et::TensorShapeDynamism::STATIC {
            op.shape = Shape(vec![Dim::Unknown; dims.len()]);
        }
        Ok(op)
    }

    fn tensor_name(&self, t: &et::Tensor<'_>, i: i64) -> String {
        t.extra_tensor_info().and_then(|x| x.fully_qualified_name()).map_or_else(|| format!("v{i}"), str::to_string)
    }

    /// Declares a method input.
    pub fn input(&mut self, i: i64) -> Result<OperandId, LoadError> {
        let v = self.value(i)?;
        if v.val_as_tensor().is_none() {
            return Err(self.err(format!("input value {i} is {}; nnrt runs methods whose inputs are tensors", kind_name(&v))));
        }
        self.place(i)
    }

    /// A fresh operand declared like tensor value `i`, bound to it and recorded as the last write
    /// to its planned place (for the views that read that place later).
    fn place(&mut self, i: i64) -> Result<OperandId, LoadError> {
        let op = self.declare(i)?;
        let len = byte_len(&op).unwrap_or(usize::MAX);
        let id = self.g.add_operand(op);
        self.bound[i as usize] = Some(id);
        self.views.remove(&i);
        if let Some(p) = self.tensor_decl(i)?.allocation_info() {
            self.memory.insert((p.memory_id(), place_offset(&p)), (id, len));
        }
        Ok(id)
    }

    /// The operand holding tensor value `i` now: the last write, or its constant data.
    pub fn read(&mut self, i: i64) -> Result<OperandId, LoadError> {
        let t = self.tensor_decl(i)?;
        let place = t.allocation_info().map(|p| (p.memory_id(), place_offset(&p)));
        if let Some(id) = self.bound[i as usize] {
            // A view stays bound while its place holds what it was made from; in a loop's next
            // iteration the place is written again and the view is made anew.
            match self.views.get(&i) {
                Some(src) if place.and_then(|p| self.memory.get(&p)).map(|m| m.0) != Some(*src) => self.bound[i as usize] = None,
                _ => return Ok(id),
            }
        }
        if let Some(d) = self.deferred.remove(&i) {
            let id = super::ops::compute_deferred(self, i, d)?;
            self.bound[i as usize] = Some(id);
            return Ok(id);
        }
        let idx = t.data_buffer_idx() as usize;
        let mut op = self.declare(i)?;
        let len = byte_len(&op).ok_or_else(|| self.err(format!("value {i}'s size overflows")))?;
        if self.mutable.contains(&i) && t.allocation_info().is_some() {
            return self.read_state(i, op, idx, len);
        }
        if idx == 0 {
            let Some(&(src, size)) = place.and_then(|p| self.memory.get(&p)) else {
                return Err(self.err(format!("value {i} (a tensor with no data) is read before anything writes it")));
            };
            if size != len {
                return Err(self.err(format!("value {i} ({len} bytes) views memory last written with {size} bytes")));
            }
            let id = self.g.add_operand(op);
            self.reshape_op(src, id);
            self.bound[i as usize] = Some(id);
            self.views.insert(i, src);
            return Ok(id);
        }
        let what = format!("method '{}' value {i}", self.method);
        op.data = Some(match t.allocation_info() {
            None => self.c.constant(idx, len, &what)?,
            Some(_) => {
                let list = t.extra_tensor_info().map_or(0, |x| x.mutable_data_segments_idx() as usize);
                self.c.mutable(list, idx, len, &what)?
            }
        });
        let id = self.g.add_operand(op);
        self.bound[i as usize] = Some(id);
        Ok(id)
    }

    /// The first read of mutable buffer `i` (declared as `op`): a variable (its state across
    /// runs) and its written flag, read with the buffer's initial contents (its mutable data,
    /// or zeros: ExecuTorch keeps "meaningless" initial contents of a buffer it did not
    /// serialize, which its runtime's zeroed planned memory makes zeros).
    fn read_state(&mut self, i: i64, op: Operand, idx: usize, len: usize) -> Result<OperandId, LoadError> {
        let what = format!("method '{}' value {i}", self.method);
        let t = self.tensor_decl(i)?;
        if op.shape.0.iter().any(|d| matches!(d, Dim::Unknown)) {
            return Err(self.err(format!("mutable buffer {i} has a dynamic shape; nnrt keeps buffers of static shape only")));
        }
        let mut init = op.clone();
        init.name = format!("{}/initial", op.name);
        init.data = Some(match idx {
            0 => {
                // Zeros the loader allocates: bounded like the other constants it computes, so
                // a corrupt size cannot make loading allocate without limit.
                self.budget(Some(len / op.dtype.size()), &format!("the zero initial contents of mutable buffer {i}"))?;
                nnrt_core::ConstData::owned(vec![0; len])
            }
            _ => {
                let list = t.extra_tensor_info().map_or(0, |x| x.mutable_data_segments_idx() as usize);
                self.c.mutable(list, idx, len, &what)?
            }
        });
        let init = self.g.add_operand(init);
        let mut var = op.clone();
        var.is_variable = true;
        let var = self.g.add_operand(var);
        let mut flag = Operand::new(format!("{}/written", op.name), DType::Bool, &[1]);
        flag.is_variable = true;
        let flag = self.g.add_operand(flag);
        let out = self.g.add_operand(op);
        self.emit_all(OpKind::VariableRead, &[var, flag, init], vec![out]);
        self.state.push((i, var, flag, out));
        self.bound[i as usize] = Some(out);
        if let Some(p) = t.allocation_info() {
            self.memory.insert((p.memory_id(), place_offset(&p)), (out, len));
        }
        Ok(out)
    }

    /// Writes each mutable buffer's last value back to its variable, for the next run (at the
    /// end of the method).
    pub fn write_back_state(&mut self) -> Result<(), LoadError> {
        for (i, var, flag, first) in std::mem::take(&mut self.state) {
            let last = self.read(i)?;
            if last != first {
                self.materialize(last);
                self.emit_all(OpKind::VariableWrite, &[last, var, flag], Vec::new());
            }
        }
        Ok(())
    }

    /// A fresh operand for a write to tensor value `i`, bound to `i` from now on.
    pub fn write(&mut self, i: i64) -> Result<OperandId, LoadError> {
        self.deferred.remove(&i);
        self.place(i)
    }

    /// Binds value `i` to an existing operand (an alias: MoveCall, a no-op copy).
    pub fn bind(&mut self, i: i64, id: OperandId) -> Result<(), LoadError> {
        self.value(i)?;
        self.temps.remove(&id);
        self.bound[i as usize] = Some(id);
        self.views.remove(&i);
        Ok(())
    }

    /// Refuses a constant of `elems` elements that the importer would compute from the program's
    /// values (an `arange`, pooling weights, batch-norm statistics): at most 2^26 elements, so a
    /// corrupt size cannot make loading allocate without bound. Tensors the program runs on are
    /// checked against the session's MEMORY_LIMIT at prepare instead.
    pub fn budget(&self, elems: Option<usize>, what: &str) -> Result<usize, LoadError> {
        const MAX: usize = 1 << 26;
        elems.filter(|&n| n <= MAX).ok_or_else(|| self.err(format!("{what} would need {} elements computed at load (at most {MAX})", elems.map_or("too many".into(), |n| n.to_string()))))
    }

    /// The operand's dims as declared.
    pub fn dims(&self, id: OperandId) -> Vec<usize> {
        self.g.operand(id).default_dims.clone()
    }

    pub fn dtype(&self, id: OperandId) -> DType {
        self.g.operand(id).dtype
    }

    /// A new operand without data.
    pub fn temp(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        let n = self.g.operands.len();
        let id = self.g.add_operand(Operand::new(format!("t{n}"), dtype, dims));
        self.temps.insert(id);
        id
    }

    /// When `x` is an unnamed temporary that the last op wrote, makes that op write `out`
    /// instead (same type and dims) and returns true: the copy into `out` is then not needed.
    pub fn retarget(&mut self, x: OperandId, out: OperandId) -> bool {
        let same = self.g.operand(x).dtype == self.g.operand(out).dtype && self.g.operand(x).default_dims == self.g.operand(out).default_dims;
        let Some(last) = self.g.ops.last_mut() else { return false };
        if !same || !self.temps.contains(&x) || last.outputs.as_slice() != [x] {
            return false;
        }
        last.outputs[0] = out;
        self.temps.remove(&x);
        true
    }

    /// A constant operand of `dims` holding `bytes`.
    pub fn constant(&mut self, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> OperandId {
        let n = self.g.operands.len();
        let mut op = Operand::new(format!("c{n}"), dtype, dims);
        op.data = Some(nnrt_core::ConstData::owned(bytes));
        self.g.add_operand(op)
    }

    pub fn const_i32(&mut self, v: &[i32]) -> OperandId {
        self.constant(DType::I32, &[v.len()], v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }

    pub fn const_i32_scalar(&mut self, v: i32) -> OperandId {
        self.constant(DType::I32, &[], v.to_le_bytes().to_vec())
    }

    pub fn const_f32(&mut self, dims: &[usize], v: &[f32]) -> OperandId {
        self.constant(DType::F32, dims, v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }

    /// A one-element constant (rank 0) of `dtype` holding `x` (converted as a cast would).
    pub fn const_scalar(&mut self, dtype: DType, x: Scalar) -> Result<OperandId, LoadError> {
        let f = x.as_f64();
        let i = match x {
            Scalar::Int(i) => i,
            Scalar::Double(d) => d as i64,
            Scalar::Bool(b) => i64::from(b),
        };
        let bytes = match dtype {
            DType::F32 => (f as f32).to_le_bytes().to_vec(),
            DType::F16 => half::f16::from_f64(f).to_le_bytes().to_vec(),
            DType::I32 => (i as i32).to_le_bytes().to_vec(),
            DType::I64 => i.to_le_bytes().to_vec(),
            DType::I16 => (i as i16).to_le_bytes().to_vec(),
            DType::I8 => vec![i as i8 as u8],
            DType::U8 => vec![i as u8],
            DType::Bool => vec![u8::from(f != 0.0)],
            DType::C64 => return Err(self.err("a complex scalar")),
        };
        Ok(self.constant(dtype, &[], bytes))
    }

    /// Reshapes `x` into `out`'s declared dims. A dim `out` declares dynamic becomes -1 when it is
    /// the only one; with several, `x`'s own run-time shape is used (a same-rank copy).
    pub fn reshape_op(&mut self, x: OperandId, out: OperandId) {
        let o = self.g.operand(out);
        let dims = o.default_dims.clone();
        let unknown: Vec<usize> = o.shape.0.iter().enumerate().filter(|(_, d)| **d == Dim::Unknown).map(|(i, _)| i).collect();
        if unknown.len() > 1 && self.g.operand(x).default_dims.len() == dims.len() {
            let shape = self.temp(DType::I32, &[dims.len()]);
            self.emit_all(OpKind::Shape, &[x], vec![shape]);
            self.emit_all(OpKind::Reshape { new_shape: None }, &[x, shape], vec![out]);
            return;
        }
        let ns: Vec<i32> = dims.iter().enumerate().map(|(i, &d)| if unknown.len() == 1 && unknown[0] == i { -1 } else { d as i32 }).collect();
        let shape = self.const_i32(&ns);
        self.emit_all(OpKind::Reshape { new_shape: Some(ns) }, &[x, shape], vec![out]);
    }

    /// Appends an op, after the transposes that materialise any pending NCHW input.
    pub fn emit(&mut self, kind: OpKind, inputs: Vec<Option<OperandId>>, outputs: Vec<OperandId>) {
        for &i in inputs.iter().flatten() {
            self.materialize(i);
        }
        self.g.add_op(Operation { kind, inputs, outputs });
    }

    /// Makes `nchw` (declared NCHW, 4-D) stand for the NHWC operand `nhwc` without a transpose
    /// until an op reads it.
    pub fn set_lazy(&mut self, nchw: OperandId, nhwc: OperandId) {
        self.temps.remove(&nhwc);
        self.twin.insert(nchw, nhwc);
        self.pending.insert(nchw);
    }

    /// The NHWC twin of a 4-D NCHW operand, when there is one.
    pub fn twin(&self, nchw: OperandId) -> Option<OperandId> {
        self.twin.get(&nchw).copied()
    }

    /// Records `nhwc` as the NHWC form of `nchw` (both computed).
    pub fn set_twin(&mut self, nchw: OperandId, nhwc: OperandId) {
        self.temps.remove(&nhwc);
        self.twin.insert(nchw, nhwc);
    }

    /// Emits the pending transpose that computes `x` from its twin, if any.
    pub fn materialize(&mut self, x: OperandId) {
        if self.pending.remove(&x) {
            let t = self.twin[&x];
            let perm = self.const_i32(&[0, 3, 1, 2]);
            self.g.add_op(Operation { kind: OpKind::Transpose, inputs: vec![Some(t), Some(perm)], outputs: vec![x] });
        }
    }

    /// Appends an op of all-present inputs.
    pub fn emit_all(&mut self, kind: OpKind, inputs: &[OperandId], outputs: Vec<OperandId>) {
        self.emit(kind, inputs.iter().map(|&i| Some(i)).collect(), outputs);
    }

    /// `x` converted to `dtype` (itself when it already is).
    pub fn cast(&mut self, x: OperandId, dtype: DType) -> OperandId {
        if self.dtype(x) == dtype {
            return x;
        }
        let dims = self.dims(x);
        let out = self.temp(dtype, &dims);
        self.emit_all(OpKind::Cast, &[x], vec![out]);
        out
    }

    /// Runs the method's instructions (chain 0; a plan with several chains runs them in order).
    pub fn run(&mut self, plan: &et::ExecutionPlan<'a>) -> Result<(), LoadError> {
        let operators: Vec<String> = plan
            .operators()
            .map(|ops| ops.iter().map(|o| op_name(&o)).collect())
            .unwrap_or_default();
        // Mutable buffers: the first argument of every `aten::copy_` (written in place).
        for chain in plan.chains().unwrap_or_default().iter() {
            for ins in chain.instructions().unwrap_or_default().iter() {
                let Some(k) = ins.instr_args_as_kernel_call() else { continue };
                let is_copy = usize::try_from(k.op_index()).ok().and_then(|o| operators.get(o)).is_some_and(|n| n == "aten::copy_");
                if let Some(dst) = k.args().filter(|_| is_copy).and_then(|a| a.iter().next()) {
                    self.mutable.insert(i64::from(dst));
                }
            }
        }
        for (ci, chain) in plan.chains().unwrap_or_default().iter().enumerate() {
            let instrs = chain.instructions().unwrap_or_default();
            let mut steps = 0;
            self.run_range(plan, &operators, ci, &instrs, 0, instrs.len(), &mut steps)?;
        }
        self.at = (0, String::new());
        Ok(())
    }

    /// Runs instructions `start..end` of chain `ci`. A JumpFalse on a Bool known at load
    /// jumps (backwards too: a `torch.map` / `torch.scan` loop, whose trip count is known at
    /// load, is unrolled, at most [`MAX_STEPS`] instructions in all); one on a bool tensor
    /// computed at run time opens an if/else (see [`MethodBuilder::run_cond`]).
    #[allow(clippy::too_many_arguments)]
    fn run_range(
        &mut self,
        plan: &et::ExecutionPlan<'a>,
        operators: &[String],
        ci: usize,
        instrs: &Vector<'a, ForwardsUOffset<et::Instruction<'a>>>,
        start: usize,
        end: usize,
        steps: &mut usize,
    ) -> Result<(), LoadError> {
        let mut pc = start;
        while pc < end {
            *steps += 1;
            if *steps > MAX_STEPS {
                return Err(self.err(format!(
                    "chain {ci} runs more than {MAX_STEPS} instructions at load: a loop that does not end (nnrt unrolls loops whose trip count is known when the program loads)"
                )));
            }
            let ins = instrs.get(pc);
            self.at = (pc, String::new());
            let mut next = pc + 1;
            match ins.instr_args_type() {
                et::InstructionArguments::KernelCall => {
                    let k = ins.instr_args_as_kernel_call().ok_or_else(|| self.err("empty KernelCall"))?;
                    let name = usize::try_from(k.op_index()).ok().and_then(|o| operators.get(o)).cloned().ok_or_else(|| {
                        self.err(format!("KernelCall names operator {} (the method has {})", k.op_index(), operators.len()))
                    })?;
                    self.at = (pc, name.clone());
                    let args: Vec<i64> = k.args().map(|a| a.iter().map(i64::from).collect()).unwrap_or_default();
                    let convert = ops::find(&name).ok_or_else(|| self.err("no converter (checked before)"))?;
                    convert(self, &args)?;
                }
                et::InstructionArguments::DelegateCall => {
                    let d = ins.instr_args_as_delegate_call().ok_or_else(|| self.err("empty DelegateCall"))?;
                    let delegates = plan.delegates().unwrap_or_default();
                    let di = usize::try_from(d.delegate_index()).ok().filter(|&i| i < delegates.len()).ok_or_else(|| {
                        self.err(format!("DelegateCall names delegate {} (the method has {})", d.delegate_index(), delegates.len()))
                    })?;
                    let delegate = delegates.get(di);
                    let id = delegate.id().unwrap_or_default().to_string();
                    self.at = (pc, format!("delegate {id}"));
                    let args: Vec<i64> = d.args().map(|a| a.iter().map(i64::from).collect()).unwrap_or_default();
                    super::delegate::call(self, &delegate, &id, &args)?;
                }
                et::InstructionArguments::MoveCall => {
                    let m = ins.instr_args_as_move_call().ok_or_else(|| self.err("empty MoveCall"))?;
                    self.at = (pc, "MoveCall".into());
                    let (from_i, to_i) = (i64::from(m.move_from()), i64::from(m.move_to()));
                    let from = self.value(from_i)?;
                    self.value(to_i)?;
                    if from.val_as_tensor().is_some() {
                        let id = self.read(from_i)?;
                        self.bind(to_i, id)?;
                    } else if self.symbolic.contains(&from_i) {
                        let d = self.derived.get(&from_i).copied();
                        self.set_scalar(to_i, None)?;
                        if let Some(d) = d {
                            self.derived.insert(to_i, d);
                        }
                    } else if let Some(x) = self.known.get(&from_i).copied() {
                        self.set_scalar(to_i, Some(x))?;
                    }
                }
                et::InstructionArguments::JumpFalseCall => {
                    let j = ins.instr_args_as_jump_false_call().ok_or_else(|| self.err("empty JumpFalseCall"))?;
                    self.at = (pc, "JumpFalseCall".into());
                    let cv = i64::from(j.cond_value_index());
                    let cond = self.value(cv)?;
                    let dest = usize::try_from(j.destination_instruction()).ok().filter(|&d| d <= instrs.len()).ok_or_else(|| {
                        self.err(format!("jumps to instruction {} (the chain has {})", j.destination_instruction(), instrs.len()))
                    })?;
                    let known = match self.scalar_value(cv)? {
                        Some(Scalar::Bool(b)) => Some(b),
                        Some(other) => return Err(self.err(format!("the condition (value {cv}) holds {other:?}, not a Bool"))),
                        None => cond.val_as_bool().map(|b| b.bool_val()),
                    };
                    match known {
                        Some(false) => {
                            if dest < start || dest > end {
                                return Err(self.err(format!("jumps to instruction {dest}, outside the instructions {start}..{end} it runs in")));
                            }
                            if dest <= pc && !self.known.contains_key(&cv) {
                                return Err(self.err(format!(
                                    "jumps back to instruction {dest} on a constant condition (value {cv}): a loop that never ends, which nnrt cannot run as a graph"
                                )));
                            }
                            next = dest;
                        }
                        Some(true) => {}
                        None if cond.val_as_tensor().is_some() && dest > pc + 1 && dest <= end => {
                            next = self.run_cond(plan, operators, ci, instrs, pc, cv, dest, end, steps)?;
                        }
                        None => {
                            return Err(self.err(format!(
                                "the condition (value {cv}) is {}; nnrt takes a Bool known at load (a loop is unrolled), or a bool tensor computed at run time with a forward jump (torch.cond)",
                                kind_name(&cond)
                            )))
                        }
                    }
                }
                et::InstructionArguments::FreeCall => {
                    let f = ins.instr_args_as_free_call().ok_or_else(|| self.err("empty FreeCall"))?;
                    self.value(i64::from(f.value_index()))?;
                }
                other => return Err(self.err(format!("instruction kind {} is unknown", other.0))),
            }
            pc = next;
        }
        Ok(())
    }

    /// An if/else on bool tensor `cond` (one element) as ExecuTorch emits `torch.cond`: the
    /// JumpFalse at `at` skips the then-branch `at+1..else_start`, which ends with an
    /// unconditional jump (JumpFalse on a constant false) over the else-branch
    /// `else_start..after`. Both branches are pure, so both are converted, and every value either
    /// branch wrote becomes a SELECT of the two on the condition. Returns `after`.
    #[allow(clippy::too_many_arguments)]
    fn run_cond(
        &mut self,
        plan: &et::ExecutionPlan<'a>,
        operators: &[String],
        ci: usize,
        instrs: &Vector<'a, ForwardsUOffset<et::Instruction<'a>>>,
        at: usize,
        cond_value: i64,
        else_start: usize,
        end: usize,
        steps: &mut usize,
    ) -> Result<usize, LoadError> {
        let skip = instrs.get(else_start - 1);
        let after = match skip.instr_args_as_jump_false_call() {
            Some(j) if else_start - 1 > at => {
                let cv = i64::from(j.cond_value_index());
                let always = match self.known.get(&cv) {
                    Some(x) => *x == Scalar::Bool(false),
                    None => !self.symbolic.contains(&cv) && self.value(cv)?.val_as_bool().is_some_and(|b| !b.bool_val()),
                };
                let dest = usize::try_from(j.destination_instruction()).unwrap_or(usize::MAX);
                if !always || dest < else_start || dest > end {
                    return Err(self.err(format!("instruction {} does not end a then-branch with a jump over an else-branch", else_start - 1)));
                }
                dest
            }
            // No else-branch: the then-branch runs to `else_start`.
            _ => else_start,
        };
        let cond = self.read(cond_value)?;
        self.materialize(cond);
        if self.dtype(cond) != DType::Bool || self.dims(cond).iter().product::<usize>() != 1 {
            return Err(self.err(format!("the condition (value {cond_value}) must be one bool, is {} {:?}", self.dtype(cond), self.dims(cond))));
        }
        let before = self.bound.clone();
        let memory = self.memory.clone();
        let known = self.known.clone();
        let derived = self.derived.clone();
        let then_end = if after == else_start { else_start } else { else_start - 1 };
        if then_end > at + 1 {
            self.run_range(plan, operators, ci, instrs, at + 1, then_end, steps)?;
        }
        let then_bound = std::mem::replace(&mut self.bound, before.clone());
        let then_known = std::mem::replace(&mut self.known, known);
        let then_derived = std::mem::replace(&mut self.derived, derived);
        self.memory = memory;
        if after > else_start {
            self.run_range(plan, operators, ci, instrs, else_start, after, steps)?;
        }
        if let Some(k) = then_derived.iter().find(|(k, v)| self.derived.get(k) != Some(v)).map(|(k, _)| *k) {
            return Err(self.err(format!("value {k} is a size computed at run time differently in each branch; nnrt does not select run-time sizes")));
        }
        // A scalar the branches left different is known only at run time.
        let keys: HashSet<i64> = then_known.keys().chain(self.known.keys()).copied().collect();
        for k in keys {
            if then_known.get(&k) != self.known.get(&k) {
                self.known.remove(&k);
                self.symbolic.insert(k);
                self.derived.remove(&k);
            }
        }
        let else_bound = self.bound.clone();
        self.at = (at, "JumpFalseCall".into());
        for i in 0..before.len() {
            let (t, e) = (then_bound[i], else_bound[i]);
            if t == e {
                continue;
            }
            let (Some(t), Some(e)) = (t.or(before[i]), e.or(before[i])) else {
                // Written by one branch only and never before: not defined after the if.
                self.bound[i] = None;
                continue;
            };
            for x in [t, e] {
                self.materialize(x);
            }
            if self.dims(t) != self.dims(e) || self.dtype(t) != self.dtype(e) {
                return Err(self.err(format!("value {i} is {} {:?} after the then-branch but {} {:?} after the else-branch", self.dtype(t), self.dims(t), self.dtype(e), self.dims(e))));
            }
            let out = self.place(i as i64)?;
            self.emit_all(OpKind::Select { v2: true }, &[cond, t, e], vec![out]);
        }
        Ok(after)
    }

    /// Records `x` as the scalar value `vi` holds from now on (computed at load), or, for
    /// `None`, that `vi` is known only at run time.
    pub fn set_scalar(&mut self, vi: i64, x: Option<Scalar>) -> Result<(), LoadError> {
        self.value(vi)?;
        match x {
            Some(x) => {
                self.symbolic.remove(&vi);
                self.known.insert(vi, x);
            }
            None => {
                self.known.remove(&vi);
                self.symbolic.insert(vi);
            }
        }
        self.derived.remove(&vi);
        self.sym_src.remove(&vi);
        Ok(())
    }

    /// `et_copy_index(copy_to, copy_from, index)`: row `index` of `copy_to` becomes
    /// `copy_from` (ExecuTorch resizes `copy_to` to `index + 1` rows). The rows are stacked
    /// when `copy_to` is read; they must come in order, from row 0.
    pub fn copy_index(&mut self, to: i64, row: OperandId, index: i64) -> Result<(), LoadError> {
        let mut rows = match self.deferred.remove(&to) {
            Some(Deferred::Stack(rows)) if index > 0 => rows,
            _ => Vec::new(),
        };
        if usize::try_from(index).ok() != Some(rows.len()) {
            return Err(self.err(format!("writes row {index} of value {to} after {} rows: nnrt stacks the rows of a loop written in order from row 0", rows.len())));
        }
        if let Some(&first) = rows.first() {
            if self.dims(first) != self.dims(row) || self.dtype(first) != self.dtype(row) {
                return Err(self.err(format!("row {index} of value {to} is {} {:?}, row 0 was {} {:?}", self.dtype(row), self.dims(row), self.dtype(first), self.dims(first))));
            }
        }
        self.materialize(row);
        rows.push(row);
        self.value(to)?;
        self.bound[to as usize] = None;
        self.deferred.insert(to, Deferred::Stack(rows));
        Ok(())
    }

    /// The operand stacking `rows` for value `vi` (see [`Deferred::Stack`]).
    pub fn stack_rows(&mut self, vi: i64, rows: Vec<OperandId>) -> Result<OperandId, LoadError> {
        let first = *rows.first().ok_or_else(|| self.err(format!("value {vi} has no rows")))?;
        let dtype = self.dtype(first);
        let mut dims = vec![rows.len()];
        dims.extend(self.dims(first));
        let t = self.tensor_decl(vi)?;
        let op = Operand::new(self.tensor_name(&t, vi), dtype, &dims);
        let len = byte_len(&op).ok_or_else(|| self.err(format!("value {vi}'s size overflows")))?;
        let out = self.g.add_operand(op);
        self.emit_all(OpKind::Pack { axis: 0, count: rows.len() }, &rows, vec![out]);
        if let Some(p) = t.allocation_info() {
            self.memory.insert((p.memory_id(), place_offset(&p)), (out, len));
        }
        Ok(out)
    }
}

/// The most instructions a chain runs at load, loops unrolled.
const MAX_STEPS: usize = 1 << 16;

/// Bytes of an operand's declared dims; `None` on overflow.
fn byte_len(op: &Operand) -> Option<usize> {
    op.default_dims.iter().try_fold(op.dtype.size(), |a, &d| a.checked_mul(d))
}

/// The 64-bit offset of a planned tensor.
fn place_offset(p: &et::AllocationDetails<'_>) -> u64 {
    u64::from(p.memory_offset_high()) << 32 | u64::from(p.memory_offset_low())
}

/// `name.overload` of an operator (`aten::add.out`); the bare name when the overload is empty.
pub(crate) fn op_name(o: &et::Operator<'_>) -> String {
    let name = o.name().unwrap_or_default();
    match o.overload().unwrap_or_default() {
        "" => name.to_string(),
        ov => format!("{name}.{ov}"),
    }
}
