//! TFLite (`TFL3`) and Circle (`CIR0`) models into nnrt's IR, through one verified reader; the
//! frontend of [`Format::Tflite`], [`Format::Circle`] and [`Format::EdgeTpu`].
//!
//! Constant tensors borrow their bytes from the model's blob (a memory map): nothing is copied.

mod ops;
mod sparsity;

use std::sync::Arc;

use nnrt_core::{Blob, ConstData, DType, Dim, Layout, LoadError, Model, OpKind, Operand, OperandId, Operation, Quantization, Shape, Signature, Subgraph, SubgraphId};

use crate::fbs::{self, Flavor};
use crate::darwinn;
use crate::format::{EdgeTpuOp, Format, FormatInfo, Loaded, EDGETPU_CUSTOM_OP};
use crate::generated::tflite as t;
use crate::import::{Constants, OperandTable, UnsupportedOps};

/// Loads a TFLite or Circle model from a file (memory-mapped).
pub fn load_file(path: impl AsRef<std::path::Path>) -> Result<Model, LoadError> {
    let pkg = crate::nnpackage::load(path)?;
    pkg.models.into_iter().next().ok_or_else(|| LoadError::Package { path: String::new(), reason: "no model".into() })
}

/// Loads a TFLite or Circle model from bytes already in memory; `path` names it in errors.
pub fn load_bytes(path: &str, bytes: Vec<u8>) -> Result<Model, LoadError> {
    load_blob(path, Arc::new(bytes))
}

fn malformed(path: &str, flavor: &'static str, reason: impl Into<String>) -> LoadError {
    LoadError::Malformed { path: path.to_string(), format: flavor, reason: reason.into() }
}

/// The load error for a buffer [`fbs::open`] refused.
pub(crate) fn open_error(path: &str, e: fbs::FbsError) -> LoadError {
    match e {
        fbs::FbsError::UnknownIdentifier { .. } | fbs::FbsError::TooShort { .. } => crate::format::unknown_format(path, e.to_string()),
        other => malformed(path, "TFLite/Circle", other.to_string()),
    }
}

/// Whether a model's operator codes name the Edge TPU custom op.
pub(crate) fn uses_edgetpu(root: &t::Model<'_>) -> bool {
    root.operator_codes().is_some_and(|codes| codes.iter().any(|c| c.custom_code() == Some(EDGETPU_CUSTOM_OP)))
}

/// Reads and checks the DarwiNN package of every Edge TPU op of `model` against the op's
/// tensors; the error names the op.
fn edgetpu_ops(model: &Model) -> Result<Vec<EdgeTpuOp>, String> {
    let mut found = Vec::new();
    for (si, g) in model.subgraphs.iter().enumerate() {
        for (oi, op) in g.ops.iter().enumerate() {
            let OpKind::Custom { name, options } = &op.kind else { continue };
            if name != EDGETPU_CUSTOM_OP {
                continue;
            }
            let fail = |e: darwinn::DarwinnError| format!("subgraph {si} op {oi} ({EDGETPU_CUSTOM_OP}): {e}");
            let decoded = darwinn::read_options(options).map_err(fail)?;
            let tensors = |ids: &mut dyn Iterator<Item = OperandId>| -> Vec<darwinn::check::OpTensor<'_>> {
                ids.map(|id| {
                    let o = g.operand(id);
                    darwinn::check::OpTensor { name: &o.name, dims: &o.default_dims, elem_bytes: o.dtype.size(), is_float: o.dtype == DType::F32 }
                })
                .collect()
            };
            let ins = tensors(&mut op.inputs.iter().flatten().copied());
            let outs = tensors(&mut op.outputs.iter().copied());
            let mut layers = None;
            for p in &decoded.packages {
                if let Some(e) = p.runnable() {
                    layers.get_or_insert(darwinn::check::match_op(e, &ins, &outs).map_err(fail)?);
                }
            }
            let layers = layers.ok_or_else(|| format!("subgraph {si} op {oi} ({EDGETPU_CUSTOM_OP}): no package holds a runnable executable"))?;
            found.push(EdgeTpuOp {
                subgraph: si,
                op: oi,
                inputs: ins.iter().map(|t| t.name.to_string()).collect(),
                outputs: outs.iter().map(|t| t.name.to_string()).collect(),
                options_bytes: options.len(),
                options: decoded,
                layers,
            });
        }
    }
    Ok(found)
}

/// Loads a model from a shared blob; constants borrow from it.
pub fn load_blob(path: &str, blob: Blob) -> Result<Model, LoadError> {
    load(path, blob).map(|l| l.model)
}

/// Loads a model from a shared blob, with the file's facts ([`FormatInfo`]): TFLite, Circle, or
/// TFLite with the Edge TPU custom op (which loads as a custom op like any other).
pub fn load(path: &str, blob: Blob) -> Result<Loaded, LoadError> {
    let bytes: &[u8] = (*blob).as_ref();
    let (flavor, root) = fbs::open(bytes).map_err(|e| open_error(path, e))?;
    let fmt = match flavor {
        Flavor::Tflite => "TFLite",
        Flavor::Circle => "Circle",
    };
    let cx = Loader { path, fmt, flavor, consts: Constants::new(&blob) };
    let subgraphs = root.subgraphs().ok_or_else(|| malformed(path, fmt, "the model has no subgraphs"))?;
    if subgraphs.is_empty() {
        return Err(malformed(path, fmt, "the model has no subgraphs"));
    }
    let codes: Vec<OpCode> = root
        .operator_codes()
        .map(|v| v.iter().map(|c| OpCode { code: fbs::builtin_code(&c), custom: c.custom_code().map(String::from) }).collect())
        .unwrap_or_default();
    let buffers = root.buffers();
    let mut model = Model { source: path.to_string(), ..Model::default() };
    let mut unsupported = UnsupportedOps::new();
    for (si, sg) in subgraphs.iter().enumerate() {
        model.subgraphs.push(cx.subgraph(si, &sg, &codes, buffers, &mut unsupported)?);
    }
    unsupported.finish(codes.iter().filter_map(|c| c.custom.as_deref()))?;
    if let Some(sigs) = root.signature_defs() {
        for s in sigs.iter() {
            let sub = s.subgraph_index() as usize;
            let g = model.subgraphs.get(sub).ok_or_else(|| malformed(path, fmt, format!("signature names subgraph {sub}, which does not exist")))?;
            let map = |v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<t::TensorMap<'_>>>>| -> Result<Vec<(String, OperandId)>, LoadError> {
                v.map(|v| v.iter().map(|m| {
                    let idx = m.tensor_index() as usize;
                    if idx >= g.operands.len() {
                        return Err(malformed(path, fmt, format!("signature tensor {idx} does not exist")));
                    }
                    Ok((m.name().unwrap_or_default().to_string(), OperandId::new(idx)))
                }).collect()).unwrap_or(Ok(Vec::new()))
            };
            model.signatures.push(Signature {
                key: s.signature_key().unwrap_or_default().to_string(),
                subgraph: SubgraphId::new(sub),
                inputs: map(s.inputs())?,
                outputs: map(s.outputs())?,
            });
        }
    }
    let format = match flavor {
        Flavor::Circle => Format::Circle,
        Flavor::Tflite if uses_edgetpu(&root) => Format::EdgeTpu,
        Flavor::Tflite => Format::Tflite,
    };
    let info = FormatInfo {
        format,
        schema_version: root.version(),
        description: root.description().map(String::from),
        subgraphs: model.subgraphs.len(),
        signatures: model.signatures.len(),
        entry_operators: Vec::new(),
        edgetpu: edgetpu_ops(&model).map_err(|e| malformed(path, "TFLite with Edge TPU custom op", e))?,
    };
    Ok(Loaded { model, info })
}

pub(crate) struct OpCode {
    pub code: i32,
    pub custom: Option<String>,
}

pub(crate) struct Loader<'a> {
    pub path: &'a str,
    pub fmt: &'static str,
    flavor: Flavor,
    consts: Constants<'a>,
}

type Buffers<'a> = Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<t::Buffer<'a>>>>;

impl Loader<'_> {
    pub(crate) fn malformed(&self, reason: impl Into<String>) -> LoadError {
        malformed(self.path, self.fmt, reason)
    }

    fn subgraph(&self, si: usize, sg: &t::SubGraph<'_>, codes: &[OpCode], buffers: Buffers<'_>, unsupported: &mut UnsupportedOps) -> Result<Subgraph, LoadError> {
        let nchw = self.flavor == Flavor::Circle && fbs::circle_data_format(sg) == 1;
        let mut table = OperandTable::new();
        if let Some(tensors) = sg.tensors() {
            for (ti, tensor) in tensors.iter().enumerate() {
                table.push(self.tensor(si, ti, &tensor, buffers, nchw)?);
            }
        }
        let n = table.len();
        let ids = |v: Option<flatbuffers::Vector<'_, i32>>, what: &str| -> Result<Vec<OperandId>, LoadError> {
            v.map(|v| v.iter().map(|i| {
                table.by_index(i.into()).ok_or_else(|| self.malformed(format!("subgraph {si} {what} {i} is not a tensor index (the subgraph has {n})")))
            }).collect()).unwrap_or(Ok(Vec::new()))
        };
        let inputs = ids(sg.inputs(), "input")?;
        let outputs = ids(sg.outputs(), "output")?;
        let mut ops = Vec::new();
        if let Some(operators) = sg.operators() {
            for (oi, op) in operators.iter().enumerate() {
                let index = op.opcode_index() as usize;
                let code = codes.get(index).ok_or_else(|| self.malformed(format!("subgraph {si} op {oi} uses operator code {index}, but there are {}", codes.len())))?;
                if t::BuiltinOperator(code.code) == t::BuiltinOperator::DENSIFY {
                    // The sparse input was densified at load: fold DENSIFY into a constant output.
                    let first = |v: Option<flatbuffers::Vector<'_, i32>>| v.and_then(|v| v.iter().next()).and_then(|i| table.by_index(i.into()));
                    let (Some(i), Some(o)) = (first(op.inputs()), first(op.outputs())) else {
                        return Err(self.malformed(format!("subgraph {si} op {oi} (DENSIFY) needs one valid input and output")));
                    };
                    let data = table.get(i).data.clone().ok_or_else(|| self.malformed(format!("subgraph {si} op {oi} (DENSIFY) has a non-constant input")))?;
                    table.get_mut(o).data = Some(data);
                    continue;
                }
                // An unsupported op is collected, so the error can list every op the model needs.
                let kind = match ops::map(self, si, oi, code, &op) {
                    Ok(k) => k,
                    Err(e) => {
                        unsupported.collect(e)?;
                        continue;
                    }
                };
                let operand = |i: i32| -> Result<Option<OperandId>, LoadError> {
                    if i < 0 {
                        Ok(None)
                    } else {
                        table.by_index(i.into()).map(Some).ok_or_else(|| self.malformed(format!("subgraph {si} op {oi} refers to tensor {i}, but there are {n}")))
                    }
                };
                let inputs = op.inputs().map(|v| v.iter().map(operand).collect::<Result<Vec<_>, _>>()).unwrap_or(Ok(Vec::new()))?;
                let outputs = op
                    .outputs()
                    .map(|v| v.iter().map(|i| operand(i)?.ok_or_else(|| self.malformed(format!("subgraph {si} op {oi} has an absent output")))).collect::<Result<Vec<_>, _>>())
                    .unwrap_or(Ok(Vec::new()))?;
                ops.push(Operation { kind, inputs, outputs });
            }
        }
        let mut g = Subgraph { name: sg.name().unwrap_or_default().to_string(), ..Subgraph::default() };
        (g.operands, g.inputs, g.outputs, g.ops) = (table.into_operands(), inputs, outputs, ops);
        Ok(g)
    }

    fn tensor(&self, si: usize, ti: usize, tensor: &t::Tensor<'_>, buffers: Buffers<'_>, nchw: bool) -> Result<Operand, LoadError> {
        let name = tensor.name().unwrap_or_default().to_string();
        let dtype = match tensor.type_() {
            t::TensorType::FLOAT32 => DType::F32,
            t::TensorType::FLOAT16 => DType::F16,
            t::TensorType::INT32 => DType::I32,
            t::TensorType::UINT8 => DType::U8,
            t::TensorType::INT64 => DType::I64,
            t::TensorType::BOOL => DType::Bool,
            t::TensorType::INT16 => DType::I16,
            t::TensorType::INT8 => DType::I8,
            t::TensorType::COMPLEX64 => DType::C64,
            other => {
                return Err(LoadError::UnsupportedType {
                    path: self.path.to_string(),
                    tensor: ti,
                    name,
                    dtype: other.variant_name().map(String::from).unwrap_or_else(|| format!("type code {}", other.0)),
                })
            }
        };
        let dims: Vec<i32> = tensor.shape().map(|s| s.iter().collect()).unwrap_or_default();
        if let Some(d) = dims.iter().find(|&&d| d < 0) {
            return Err(self.malformed(format!("subgraph {si} tensor {ti} ('{name}') has negative dim {d} in its shape")));
        }
        let default_dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let shape = match tensor.shape_signature() {
            Some(sig) if sig.len() == dims.len() => Shape(sig.iter().zip(&default_dims).map(|(s, &d)| if s < 0 { Dim::Unknown } else { Dim::Known(d) }).collect()),
            _ => Shape::fixed(&default_dims),
        };
        let quant = match tensor.quantization() {
            Some(q) => {
                let scales: Vec<f32> = q.scale().map(|v| v.iter().collect()).unwrap_or_default();
                let zps: Vec<i64> = q.zero_point().map(|v| v.iter().collect()).unwrap_or_default();
                match scales.len() {
                    0 => Quantization::None,
                    1 => Quantization::PerTensor { scale: scales[0], zero_point: zps.first().copied().unwrap_or(0) },
                    n => {
                        let axis = q.quantized_dimension();
                        if axis < 0 || axis as usize >= default_dims.len().max(1) {
                            return Err(self.malformed(format!("tensor {ti} ('{name}') is quantized along dim {axis}, which it does not have")));
                        }
                        let zero_points = if zps.len() == n { zps } else if zps.is_empty() { vec![0; n] } else {
                            return Err(self.malformed(format!("tensor {ti} ('{name}') has {n} scales but {} zero points", zps.len())));
                        };
                        Quantization::PerAxis { scales, zero_points, axis: axis as usize }
                    }
                }
            }
            None => Quantization::None,
        };
        let mut data = self.buffer(ti, &name, tensor.buffer() as usize, buffers)?;
        if self.flavor == Flavor::Circle && data.is_some() && fbs::circle_compression_type(tensor) != 0 {
            // Circle's HUFFMAN-coded weights would be read as raw values; refuse them.
            let dtype = format!("{dtype} with Circle compression_type {} (HUFFMAN)", fbs::circle_compression_type(tensor));
            return Err(LoadError::UnsupportedType { path: self.path.to_string(), tensor: ti, name, dtype });
        }
        if let Some(sp) = tensor.sparsity() {
            // Sparse constants (TFLite sparsity metadata) are densified here, once; kernels and
            // DENSIFY (folded in `subgraph`) then see an ordinary dense constant.
            let bad = |reason: String| self.malformed(format!("tensor {ti} ('{name}') has invalid sparsity metadata: {reason}"));
            let meta = sparsity::read(&sp).map_err(bad)?;
            let stored = data.as_ref().ok_or_else(|| bad("a sparse tensor must be a constant".into()))?;
            let dense = sparsity::densify(&meta, &default_dims, dtype.size(), stored.bytes()).map_err(bad)?;
            data = Some(ConstData::owned(dense));
        }
        let layout = if default_dims.len() == 4 { if nchw { Layout::Nchw } else { Layout::Nhwc } } else { Layout::Any };
        let is_variable = tensor.is_variable();
        Ok(Operand { name, dtype, shape, default_dims, layout, quant, data: if is_variable { None } else { data }, is_variable })
    }

    fn buffer(&self, ti: usize, name: &str, index: usize, buffers: Buffers<'_>) -> Result<Option<ConstData>, LoadError> {
        if index == 0 {
            return Ok(None); // buffer 0 is the empty sentinel
        }
        let buffers = buffers.ok_or_else(|| self.malformed(format!("tensor {ti} ('{name}') names buffer {index} but the model has no buffers")))?;
        if index >= buffers.len() {
            return Err(self.malformed(format!("tensor {ti} ('{name}') names buffer {index}, but there are {}", buffers.len())));
        }
        let b = buffers.get(index);
        if let Some(data) = b.data() {
            if data.is_empty() {
                return Ok(None);
            }
            return self.consts.slice(data.bytes()).map(Some).ok_or_else(|| self.malformed(format!("buffer {index} lies outside the file")));
        }
        // Models over 2 GiB keep buffers after the flatbuffer, addressed by offset and size.
        let (offset, size) = (b.offset(), b.size());
        if offset > 1 && size > 0 {
            return self
                .consts
                .range(offset as usize, size as usize)
                .map(Some)
                .ok_or_else(|| self.malformed(format!("buffer {index} (offset {offset}, size {size}) lies outside the file")));
        }
        Ok(None)
    }
}
