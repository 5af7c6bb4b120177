//! One region's basic block into one IR subgraph: its tensors become operands by name, its
//! `TosaShape`s (CONST_SHAPE results) are kept as integer lists for the ops that read them, and
//! each operator is mapped by [`super::ops`].

use std::collections::HashMap;

use nnrt_core::{ConstData, DType, LoadError, Operand, OperandId, OpKind, Operation, Subgraph, SubgraphId};

use super::container::Container;
use crate::generated::tosa;

/// The TOSA element type `t` as an nnrt element type.
pub(crate) fn dtype_of(t: tosa::DType) -> Option<DType> {
    Some(match t {
        tosa::DType::BOOL => DType::Bool,
        tosa::DType::INT8 => DType::I8,
        tosa::DType::INT16 => DType::I16,
        tosa::DType::INT32 => DType::I32,
        // 48-bit integers (int16 convolution sums, their RESCALE) are held in 64 bits.
        tosa::DType::INT48 | tosa::DType::INT64 => DType::I64,
        tosa::DType::FP32 => DType::F32,
        tosa::DType::FP16 => DType::F16,
        _ => return None,
    })
}

/// TOSA's name of an element type, for errors.
pub(crate) fn dtype_name(t: tosa::DType) -> String {
    t.variant_name().map(str::to_string).unwrap_or_else(|| format!("type {}", t.0))
}

/// Builds the subgraph of one basic block.
pub(crate) struct BlockBuilder<'c, 'a> {
    pub c: &'c Container<'a>,
    /// The region's name and index, for errors.
    pub region: (usize, String),
    pub g: Subgraph,
    names: HashMap<&'a str, OperandId>,
    /// TOSA element type of each tensor, by name.
    types: HashMap<&'a str, tosa::DType>,
    shapes: HashMap<&'a str, Vec<i64>>,
    /// Region name to subgraph, for COND_IF and WHILE_LOOP.
    pub regions: &'c HashMap<String, SubgraphId>,
    /// The operator being converted and its name, for errors.
    pub at: (usize, String),
    temps: usize,
    /// The block's variable tensors: their written flags and initial values.
    pub variables: HashMap<OperandId, Variable>,
}

/// What a variable tensor (an operand with `is_variable`) comes with.
pub(crate) struct Variable {
    /// The variable's name (`variable_name`, else the tensor's).
    pub name: String,
    /// The tensor that declares it.
    pub tensor: String,
    /// A bool `[1]` variable set by the first write.
    pub flag: OperandId,
    /// The constant initial value, when the file gives one.
    pub initial: Option<OperandId>,
}

impl<'c, 'a> BlockBuilder<'c, 'a> {
    /// Creates the operands of `block`'s tensors (constants borrow their bytes) and reads its
    /// shapes.
    pub fn new(c: &'c Container<'a>, region: (usize, String), block: &tosa::TosaBasicBlock<'a>, regions: &'c HashMap<String, SubgraphId>) -> Result<Self, LoadError> {
        let g = Subgraph { name: region.1.clone(), ..Subgraph::default() };
        let mut b = Self { c, region, g, names: HashMap::new(), types: HashMap::new(), shapes: HashMap::new(), regions, at: (0, String::new()), temps: 0, variables: HashMap::new() };
        for t in block.tensors().unwrap_or_default().iter() {
            b.tensor(&t)?;
        }
        for s in block.shapes().unwrap_or_default().iter() {
            let name = s.name().unwrap_or_default();
            let data = s.data().map(|d| d.bytes()).unwrap_or(&[]);
            let n = s.rank() as usize;
            if data.len() / 8 < n {
                return Err(b.err(format!("shape '{name}' has rank {n} but only {} bytes of int64 data", data.len())));
            }
            let vals = data.chunks_exact(8).take(n).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
            b.shapes.insert(name, vals);
        }
        Ok(b)
    }

    fn tensor(&mut self, t: &tosa::TosaTensor<'a>) -> Result<(), LoadError> {
        let name = t.name().unwrap_or_default();
        let what = format!("tensor '{name}'");
        if t.scale_type() != tosa::DType::UNKNOWN || t.scale_data().is_some_and(|d| !d.is_empty()) || t.block_shape() != tosa::BlockShape::UNKNOWN {
            return Err(self.err(format!("{what} is block-scaled (scale_type {}); nnrt does not support block-scaled tensors", dtype_name(t.scale_type()))));
        }
        if t.is_unranked() {
            return Err(self.err(format!("{what} is unranked; nnrt needs every tensor's rank")));
        }
        let ty = t.type_();
        let dtype = dtype_of(ty).ok_or_else(|| self.err(format!("{what} has element type {}, which nnrt does not support", dtype_name(ty))))?;
        let mut dims = Vec::new();
        for d in t.shape().unwrap_or_default().iter() {
            let d = usize::try_from(d).map_err(|_| self.err(format!("{what} has dimension {d}; nnrt needs static, non-negative dims")))?;
            dims.push(d);
        }
        let count = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).and_then(|n| n.checked_mul(dtype.size()));
        let len = count.ok_or_else(|| self.err(format!("{what}'s size overflows")))?;
        let mut op = Operand::new(name, dtype, &dims);
        if ty == tosa::DType::INT48 {
            // Stored as 6 little-endian bytes an element; widened to int64 here.
            let n = len / 8;
            let six = n.checked_mul(6).ok_or_else(|| self.err(format!("{what}'s size overflows")))?;
            op.data = self.c.tensor_data(t, six, &what)?.map(|d| {
                let wide: Vec<u8> = d.bytes().chunks_exact(6).flat_map(|c| (i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], 0, 0]) << 16 >> 16).to_le_bytes()).collect();
                ConstData::owned(wide)
            });
        } else {
            op.data = self.c.tensor_data(t, len, &what)?;
        }
        // A variable tensor (VARIABLE's declaration) is state kept across runs; its data is
        // the initial value, which a constant of its own holds (see `variable`).
        op.is_variable = t.variable();
        let initial = if op.is_variable { op.data.take() } else { None };
        let id = self.g.add_operand(op);
        if self.g.operand(id).is_variable {
            // Variables are named uniquely (TOSA's VARIABLE requires a new name).
            let label = t.variable_name().filter(|n| !n.is_empty()).unwrap_or(name).to_string();
            if let Some(other) = self.variables.values().find(|v| v.name == label) {
                return Err(self.err(format!("{what} declares variable '{label}', which tensor '{}' declares too", other.tensor)));
            }
            let flag = self.temp(DType::Bool, &[1]);
            self.g.operands[flag.index()].is_variable = true;
            let init = initial.map(|data| {
                let (dtype, dims) = (self.dtype(id), self.dims(id));
                let c = self.temp(dtype, &dims);
                self.g.operands[c.index()].data = Some(data);
                c
            });
            self.variables.insert(id, Variable { name: label, tensor: name.to_string(), flag, initial: init });
        }
        self.names.insert(name, id);
        self.types.insert(name, ty);
        Ok(())
    }

    /// An error about this block, at the current operator when there is one.
    pub fn err(&self, reason: impl Into<String>) -> LoadError {
        let (i, op) = &self.at;
        let at = if op.is_empty() { String::new() } else { format!(", operator {i} ({op})") };
        self.c.malformed(format!("region '{}'{at}: {}", self.region.1, reason.into()))
    }

    /// The tensor named `name`.
    pub fn tensor_id(&self, name: &str) -> Result<OperandId, LoadError> {
        self.names.get(name).copied().ok_or_else(|| self.err(format!("tensor '{name}' does not exist in the block")))
    }

    /// The TOSA element type of tensor `name`.
    pub fn tosa_type(&self, name: &str) -> Result<tosa::DType, LoadError> {
        self.types.get(name).copied().ok_or_else(|| self.err(format!("tensor '{name}' does not exist in the block")))
    }

    /// The values of the shape named `name`.
    pub fn shape(&self, name: &str) -> Result<&[i64], LoadError> {
        self.shapes.get(name).map(Vec::as_slice).ok_or_else(|| self.err(format!("shape '{name}' does not exist in the block (shape operands are CONST_SHAPE results)")))
    }

    pub fn dims(&self, id: OperandId) -> Vec<usize> {
        self.g.operand(id).default_dims.clone()
    }

    pub fn dtype(&self, id: OperandId) -> DType {
        self.g.operand(id).dtype
    }

    /// The constant bytes of `id`, when it is a constant.
    pub fn const_bytes(&self, id: OperandId) -> Option<&[u8]> {
        self.g.operand(id).data.as_ref().map(ConstData::bytes)
    }

    /// A new operand no tensor names.
    pub fn temp(&mut self, dtype: DType, dims: &[usize]) -> OperandId {
        self.temps += 1;
        let name = format!("{}:tmp{}", self.region.1, self.temps);
        self.g.add_operand(Operand::new(name, dtype, dims))
    }

    /// A new constant operand holding `bytes`.
    pub fn constant(&mut self, dtype: DType, dims: &[usize], bytes: Vec<u8>) -> OperandId {
        let id = self.temp(dtype, dims);
        self.g.operands[id.index()].data = Some(ConstData::owned(bytes));
        id
    }

    /// A constant int32 vector.
    pub fn const_i32(&mut self, vals: &[i32]) -> OperandId {
        self.constant(DType::I32, &[vals.len()], vals.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// A constant int32 matrix `[rows, cols]`.
    pub fn const_i32_2d(&mut self, rows: usize, cols: usize, vals: &[i32]) -> OperandId {
        self.constant(DType::I32, &[rows, cols], vals.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    /// Adds an operation.
    pub fn emit(&mut self, kind: OpKind, inputs: &[Option<OperandId>], outputs: Vec<OperandId>) {
        self.g.ops.push(Operation { kind, inputs: inputs.to_vec(), outputs });
    }

    /// Adds an operation whose inputs are all present.
    pub fn emit_all(&mut self, kind: OpKind, inputs: &[OperandId], outputs: Vec<OperandId>) {
        let inputs: Vec<Option<OperandId>> = inputs.iter().copied().map(Some).collect();
        self.emit(kind, &inputs, outputs);
    }
}
