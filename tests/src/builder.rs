//! [`ModelBuilder`]: one-subgraph TFLite models written with the generated flatbuffers builder.

use flatbuffers::{FlatBufferBuilder, ForwardsUOffset, Vector, WIPOffset};
use nnrt_loaders::generated::tflite as t;

use crate::options::Options;

pub use t::{BuiltinOperator, TensorType};

/// `deprecated_builtin_code` of every operator whose code does not fit in an `i8`
/// (TFLite's `PLACEHOLDER_FOR_GREATER_OP_CODES`); the real code is in `builtin_code`.
const PLACEHOLDER_FOR_GREATER_OP_CODES: i8 = 127;

/// Index of a tensor in the model being built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorIdx(pub i32);

impl TensorIdx {
    /// An optional operator input left out (TFLite writes -1).
    pub const ABSENT: TensorIdx = TensorIdx(-1);
}

#[derive(Clone, Debug)]
struct TensorSpec {
    name: String,
    dtype: TensorType,
    dims: Vec<i32>,
    signature: Option<Vec<i32>>,
    buffer: u32,
    quant: Option<(Vec<f32>, Vec<i64>, i32)>,
}

#[derive(Clone, Debug)]
struct OpSpec {
    code: u32,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    options: Options,
    custom_options: Option<Vec<u8>>,
}

#[derive(Clone, Debug, PartialEq)]
struct CodeSpec {
    code: BuiltinOperator,
    custom: Option<String>,
}

#[derive(Clone, Debug)]
struct SignatureSpec {
    key: String,
    inputs: Vec<(String, TensorIdx)>,
    outputs: Vec<(String, TensorIdx)>,
}

/// Builds a TFLite (`TFL3`, schema version 3) model with one subgraph.
///
/// Tensors are added in order and named by the [`TensorIdx`] returned; each constant gets its
/// own buffer (buffer 0 stays the empty sentinel TFLite requires); operator codes are
/// deduplicated. Nothing is checked beyond what the builder needs to write the file: building
/// inconsistent models on purpose is what `neg_` tests are for.
#[derive(Clone, Debug)]
pub struct ModelBuilder {
    tensors: Vec<TensorSpec>,
    buffers: Vec<Vec<u8>>,
    codes: Vec<CodeSpec>,
    ops: Vec<OpSpec>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    signature: Option<SignatureSpec>,
    description: String,
}

impl Default for ModelBuilder {
    fn default() -> Self {
        ModelBuilder::new()
    }
}

fn element_count(dims: &[i32]) -> usize {
    dims.iter().map(|&d| d.max(0) as usize).product()
}

impl ModelBuilder {
    /// An empty model; `description` reads "nnrt-tests ModelBuilder".
    pub fn new() -> ModelBuilder {
        ModelBuilder {
            tensors: Vec::new(),
            buffers: vec![Vec::new()],
            codes: Vec::new(),
            ops: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            signature: None,
            description: "nnrt-tests ModelBuilder".into(),
        }
    }

    /// Sets the model's description string.
    pub fn description(&mut self, text: &str) -> &mut Self {
        self.description = text.into();
        self
    }

    fn push_tensor(&mut self, name: &str, dtype: TensorType, dims: &[i32], buffer: u32) -> TensorIdx {
        self.tensors.push(TensorSpec { name: name.into(), dtype, dims: dims.to_vec(), signature: None, buffer, quant: None });
        TensorIdx(self.tensors.len() as i32 - 1)
    }

    /// A tensor without data (an op's output or an intermediate).
    pub fn tensor(&mut self, name: &str, dtype: TensorType, dims: &[i32]) -> TensorIdx {
        self.push_tensor(name, dtype, dims, 0)
    }

    /// A tensor that is also a graph input (in the order of calls).
    pub fn input(&mut self, name: &str, dtype: TensorType, dims: &[i32]) -> TensorIdx {
        let idx = self.tensor(name, dtype, dims);
        self.inputs.push(idx.0);
        idx
    }

    /// Marks a tensor as a graph output (in the order of calls).
    pub fn output(&mut self, idx: TensorIdx) -> &mut Self {
        self.outputs.push(idx.0);
        self
    }

    /// A constant of any type from raw little-endian bytes, in a buffer of its own. The length
    /// is not checked against the shape (a mismatch is a valid `neg_` case).
    pub fn constant_bytes(&mut self, name: &str, dtype: TensorType, dims: &[i32], bytes: &[u8]) -> TensorIdx {
        self.buffers.push(bytes.to_vec());
        let buffer = self.buffers.len() as u32 - 1;
        self.push_tensor(name, dtype, dims, buffer)
    }

    /// A float32 constant. Panics if `data` does not hold one value per element.
    pub fn constant_f32(&mut self, name: &str, dims: &[i32], data: &[f32]) -> TensorIdx {
        assert_eq!(data.len(), element_count(dims), "constant '{name}': {} values for dims {dims:?}", data.len());
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant_bytes(name, TensorType::FLOAT32, dims, &bytes)
    }

    /// An int32 constant (shapes, axes, paddings, permutations). Panics on a count mismatch.
    pub fn constant_i32(&mut self, name: &str, dims: &[i32], data: &[i32]) -> TensorIdx {
        assert_eq!(data.len(), element_count(dims), "constant '{name}': {} values for dims {dims:?}", data.len());
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.constant_bytes(name, TensorType::INT32, dims, &bytes)
    }

    /// A float16 constant from f32 values (rounded to nearest even). Panics on a count mismatch.
    pub fn constant_f16(&mut self, name: &str, dims: &[i32], data: &[f32]) -> TensorIdx {
        assert_eq!(data.len(), element_count(dims), "constant '{name}': {} values for dims {dims:?}", data.len());
        let bytes: Vec<u8> = data.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect();
        self.constant_bytes(name, TensorType::FLOAT16, dims, &bytes)
    }

    /// Sets a tensor's `shape_signature` (-1 marks a dim unknown until run time); `shape` stays
    /// the default dims.
    pub fn shape_signature(&mut self, idx: TensorIdx, signature: &[i32]) -> &mut Self {
        self.tensors[idx.0 as usize].signature = Some(signature.to_vec());
        self
    }

    /// Sets a tensor's quantization: one scale/zero point per tensor, or per channel of `axis`.
    pub fn quantization(&mut self, idx: TensorIdx, scales: &[f32], zero_points: &[i64], axis: i32) -> &mut Self {
        self.tensors[idx.0 as usize].quant = Some((scales.to_vec(), zero_points.to_vec(), axis));
        self
    }

    fn code_index(&mut self, code: CodeSpec) -> u32 {
        match self.codes.iter().position(|c| *c == code) {
            Some(i) => i as u32,
            None => {
                self.codes.push(code);
                self.codes.len() as u32 - 1
            }
        }
    }

    /// Adds a builtin operator; use [`TensorIdx::ABSENT`] for an optional input left out.
    /// Returns the operator's index.
    pub fn op(&mut self, code: BuiltinOperator, inputs: &[TensorIdx], outputs: &[TensorIdx], options: Options) -> usize {
        let code = self.code_index(CodeSpec { code, custom: None });
        self.push_op(code, inputs, outputs, options, None)
    }

    /// Adds a custom operator named `name` with the given option bytes. Returns its index.
    pub fn custom_op(&mut self, name: &str, inputs: &[TensorIdx], outputs: &[TensorIdx], custom_options: &[u8]) -> usize {
        let code = self.code_index(CodeSpec { code: BuiltinOperator::CUSTOM, custom: Some(name.into()) });
        self.push_op(code, inputs, outputs, Options::None, Some(custom_options.to_vec()))
    }

    fn push_op(&mut self, code: u32, inputs: &[TensorIdx], outputs: &[TensorIdx], options: Options, custom: Option<Vec<u8>>) -> usize {
        let ids = |v: &[TensorIdx]| v.iter().map(|t| t.0).collect();
        self.ops.push(OpSpec { code, inputs: ids(inputs), outputs: ids(outputs), options, custom_options: custom });
        self.ops.len() - 1
    }

    /// Adds a signature (`SignatureDef`) over the subgraph with named inputs and outputs.
    pub fn signature(&mut self, key: &str, inputs: &[(&str, TensorIdx)], outputs: &[(&str, TensorIdx)]) -> &mut Self {
        let named = |v: &[(&str, TensorIdx)]| v.iter().map(|(n, t)| (n.to_string(), *t)).collect();
        self.signature = Some(SignatureSpec { key: key.into(), inputs: named(inputs), outputs: named(outputs) });
        self
    }

    /// Writes the model: a `TFL3` flatbuffer, schema version 3. Deterministic: the same calls
    /// give the same bytes.
    pub fn finish(&self) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let buffers: Vec<_> = self
            .buffers
            .iter()
            .map(|b| {
                let data = (!b.is_empty()).then(|| fbb.create_vector(b));
                t::Buffer::create(&mut fbb, &t::BufferArgs { data, ..Default::default() })
            })
            .collect();
        let buffers = fbb.create_vector(&buffers);
        let codes: Vec<_> = self.codes.iter().map(|c| write_code(&mut fbb, c)).collect();
        let codes = fbb.create_vector(&codes);
        let tensors: Vec<_> = self.tensors.iter().map(|ts| write_tensor(&mut fbb, ts)).collect();
        let tensors = fbb.create_vector(&tensors);
        let ops: Vec<_> = self.ops.iter().map(|o| write_op(&mut fbb, o)).collect();
        let ops = fbb.create_vector(&ops);
        let (inputs, outputs) = (fbb.create_vector(&self.inputs), fbb.create_vector(&self.outputs));
        let name = fbb.create_string("main");
        let subgraph = t::SubGraph::create(
            &mut fbb,
            &t::SubGraphArgs { tensors: Some(tensors), inputs: Some(inputs), outputs: Some(outputs), operators: Some(ops), name: Some(name), ..Default::default() },
        );
        let subgraphs = fbb.create_vector(&[subgraph]);
        let signature_defs = self.signature.as_ref().map(|s| write_signature(&mut fbb, s));
        let description = fbb.create_string(&self.description);
        let model = t::Model::create(
            &mut fbb,
            &t::ModelArgs {
                version: 3,
                operator_codes: Some(codes),
                subgraphs: Some(subgraphs),
                description: Some(description),
                buffers: Some(buffers),
                signature_defs,
                ..Default::default()
            },
        );
        fbb.finish(model, Some("TFL3"));
        fbb.finished_data().to_vec()
    }
}

fn write_code<'a>(fbb: &mut FlatBufferBuilder<'a>, c: &CodeSpec) -> WIPOffset<t::OperatorCode<'a>> {
    let custom_code = c.custom.as_deref().map(|s| fbb.create_string(s));
    // Since schema 3a, `builtin_code` holds the code and the deprecated i8 field holds it too when
    // it fits, else the placeholder 127 (TFLite's `GetBuiltinCode` takes the larger of the two).
    let deprecated_builtin_code = i8::try_from(c.code.0).unwrap_or(PLACEHOLDER_FOR_GREATER_OP_CODES);
    t::OperatorCode::create(fbb, &t::OperatorCodeArgs { deprecated_builtin_code, custom_code, version: 1, builtin_code: c.code })
}

fn write_tensor<'a>(fbb: &mut FlatBufferBuilder<'a>, ts: &TensorSpec) -> WIPOffset<t::Tensor<'a>> {
    let shape = fbb.create_vector(&ts.dims);
    let shape_signature = ts.signature.as_ref().map(|s| fbb.create_vector(s));
    let quantization = ts.quant.as_ref().map(|(scales, zero_points, axis)| {
        let (scale, zero_point) = (fbb.create_vector(scales), fbb.create_vector(zero_points));
        let args = t::QuantizationParametersArgs { scale: Some(scale), zero_point: Some(zero_point), quantized_dimension: *axis, ..Default::default() };
        t::QuantizationParameters::create(fbb, &args)
    });
    let name = fbb.create_string(&ts.name);
    let args = t::TensorArgs { shape: Some(shape), type_: ts.dtype, buffer: ts.buffer, name: Some(name), quantization, shape_signature, ..Default::default() };
    t::Tensor::create(fbb, &args)
}

fn write_op<'a>(fbb: &mut FlatBufferBuilder<'a>, o: &OpSpec) -> WIPOffset<t::Operator<'a>> {
    let (inputs, outputs) = (fbb.create_vector(&o.inputs), fbb.create_vector(&o.outputs));
    let (builtin_options_type, builtin_options) = o.options.write(fbb);
    let custom_options = o.custom_options.as_ref().map(|b| fbb.create_vector(b));
    let args = t::OperatorArgs {
        opcode_index: o.code,
        inputs: Some(inputs),
        outputs: Some(outputs),
        builtin_options_type,
        builtin_options,
        custom_options,
        ..Default::default()
    };
    t::Operator::create(fbb, &args)
}

type TensorMaps<'a> = WIPOffset<Vector<'a, ForwardsUOffset<t::TensorMap<'a>>>>;

fn write_signature<'a>(fbb: &mut FlatBufferBuilder<'a>, s: &SignatureSpec) -> WIPOffset<Vector<'a, ForwardsUOffset<t::SignatureDef<'a>>>> {
    let mut maps = |list: &[(String, TensorIdx)]| -> TensorMaps<'a> {
        let items: Vec<_> = list
            .iter()
            .map(|(n, idx)| {
                let name = fbb.create_string(n);
                t::TensorMap::create(fbb, &t::TensorMapArgs { name: Some(name), tensor_index: idx.0 as u32 })
            })
            .collect();
        fbb.create_vector(&items)
    };
    let (inputs, outputs) = (maps(&s.inputs), maps(&s.outputs));
    let key = fbb.create_string(&s.key);
    let def = t::SignatureDef::create(fbb, &t::SignatureDefArgs { inputs: Some(inputs), outputs: Some(outputs), signature_key: Some(key), subgraph_index: 0 });
    fbb.create_vector(&[def])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Act, Padding};

    fn sample() -> Vec<u8> {
        let mut b = ModelBuilder::new();
        let x = b.input("x", TensorType::FLOAT32, &[1, 4, 4, 2]);
        b.shape_signature(x, &[-1, 4, 4, 2]);
        let w = b.constant_f32("w", &[3, 1, 1, 2], &[0.5; 6]);
        let y = b.tensor("y", TensorType::FLOAT32, &[1, 4, 4, 3]);
        let z = b.tensor("z", TensorType::FLOAT32, &[1, 4, 4, 3]);
        b.op(BuiltinOperator::CONV_2D, &[x, w, TensorIdx::ABSENT], &[y], Options::conv(Padding::VALID, 1, Act::RELU6));
        b.op(BuiltinOperator::STABLEHLO_ADD, &[y, y], &[z], Options::None);
        b.op(BuiltinOperator::CONV_2D, &[x, w], &[y], Options::None);
        b.custom_op("MyOp", &[z], &[z], b"\x2a");
        b.output(z);
        b.signature("serving_default", &[("x", x)], &[("z", z)]);
        b.finish()
    }

    #[test]
    fn writes_a_verified_tfl3_file() {
        let bytes = sample();
        assert_eq!(&bytes[4..8], b"TFL3");
        assert_eq!(bytes, sample(), "deterministic");
        let m = t::root_as_model(&bytes).expect("verifies");
        assert_eq!(m.version(), 3);
        let buffers = m.buffers().expect("buffers");
        assert_eq!(buffers.len(), 2, "the sentinel and one constant");
        assert_eq!(buffers.get(0).data().map(|d| d.len()).unwrap_or(0), 0, "buffer 0 is the empty sentinel");
        assert_eq!(buffers.get(1).data().map(|d| d.len()), Some(24));
        let g = m.subgraphs().expect("subgraphs").get(0);
        let x = g.tensors().expect("tensors").get(0);
        assert_eq!(x.shape_signature().map(|s| s.iter().collect::<Vec<_>>()), Some(vec![-1, 4, 4, 2]));
        let ops = g.operators().expect("ops");
        assert_eq!(ops.get(0).inputs().map(|v| v.iter().collect::<Vec<_>>()), Some(vec![0, 1, -1]));
        let conv = ops.get(0).builtin_options_as_conv_2_doptions().expect("conv options");
        assert_eq!((conv.padding(), conv.fused_activation_function()), (Padding::VALID, Act::RELU6));
        assert_eq!(m.signature_defs().map(|s| s.len()), Some(1));
    }

    #[test]
    fn operator_codes_are_deduplicated_and_large_codes_use_the_placeholder() {
        let bytes = sample();
        let m = t::root_as_model(&bytes).expect("verifies");
        let codes: Vec<(i8, i32, Option<&str>)> =
            m.operator_codes().expect("codes").iter().map(|c| (c.deprecated_builtin_code(), c.builtin_code().0, c.custom_code())).collect();
        assert_eq!(codes, vec![(3, 3, None), (127, 163, None), (32, 32, Some("MyOp"))]);
        let ops = m.subgraphs().expect("subgraphs").get(0).operators().expect("ops");
        let indices: Vec<u32> = ops.iter().map(|o| o.opcode_index()).collect();
        assert_eq!(indices, vec![0, 1, 0, 2]);
        assert_eq!(ops.get(3).custom_options().map(|o| o.bytes().to_vec()), Some(vec![0x2a]));
    }
}
