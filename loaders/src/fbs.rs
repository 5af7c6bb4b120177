//! Safe entry point to the generated FlatBuffers reader that TFLite and Circle share.
//!
//! [`open`] checks the file identifier and runs the FlatBuffers verifier once; after that every
//! accessor of [`crate::generated::tflite`] stays in bounds. Circle ("CIR0") is read through the
//! same TFLite types, verified by `fbs/circle.rs`'s verifier (the generated one, with Circle's two
//! byte fields checked as bytes); the few Circle-only fields the TFLite schema does not describe
//! are read with [`RawTable`], which checks every offset itself. The differences between the two
//! formats (negative op codes and tensor types, options at union ids 248..254, two byte fields
//! where TFLite has 4-byte ones) are listed at the top of `loaders/schema/tflite.fbs`.
//!
//! One pitfall of the generated code: for a union type id the schema does not know (Circle's
//! options, or a corrupt file) the verifier does not look at the value, and the untyped union
//! accessors (`Operator::builtin_options()`, `builtin_options_2()`, `details()`, ...) may then
//! panic on a crafted file. Read such options with [`raw_builtin_options`]; the typed
//! `*_as_*()` accessors (`builtin_options_as_conv_2_doptions()`) are always safe.

use core::fmt;

mod circle;

use flatbuffers::{InvalidFlatbuffer, Table, VerifierOptions};

use crate::generated::tflite::{Model, Operator, OperatorCode, SubGraph, Tensor};

/// Field id of Circle's `SubGraph.data_format` (TFLite: `debug_metadata_index`).
pub const CIRCLE_SUBGRAPH_DATA_FORMAT_FIELD: u16 = 5;
/// Field id of Circle's `Tensor.compression_type` (TFLite: `external_buffer`).
pub const CIRCLE_TENSOR_COMPRESSION_TYPE_FIELD: u16 = 10;
/// Field id of `Operator.builtin_options` (its `_type` byte is field 3).
pub const OPERATOR_BUILTIN_OPTIONS_FIELD: u16 = 4;

/// Which of the two formats that share the schema a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// TensorFlow Lite / LiteRT, file identifier `TFL3`.
    Tflite,
    /// Samsung ONE's Circle, file identifier `CIR0`.
    Circle,
}

impl Flavor {
    /// The 4-byte file identifier stored at offset 4.
    pub const fn identifier(self) -> &'static [u8; 4] {
        match self {
            Flavor::Tflite => b"TFL3",
            Flavor::Circle => b"CIR0",
        }
    }

    /// The flavor whose identifier is `id`, if any.
    pub fn from_identifier(id: &[u8; 4]) -> Option<Self> {
        [Flavor::Tflite, Flavor::Circle]
            .into_iter()
            .find(|f| f.identifier() == id)
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flavor::Tflite => "TFLite",
            Flavor::Circle => "Circle",
        })
    }
}

/// Why a buffer could not be opened or a raw field could not be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FbsError {
    /// Fewer than 8 bytes: no room for the root offset and the file identifier.
    #[error(
        "model file is {len} bytes, too short for a TFLite/Circle flatbuffer \
         (at least 8: root offset and file identifier); is it empty or truncated?"
    )]
    TooShort {
        /// Length of the buffer.
        len: usize,
    },
    /// Bytes 4..8 are neither `TFL3` nor `CIR0`.
    #[error(
        "file identifier is \"{}\" (bytes 4..8), expected \"TFL3\" (TFLite) or \"CIR0\" (Circle); \
         this is not a TFLite or Circle model (or it is size-prefixed or corrupt)",
        .found.escape_ascii()
    )]
    UnknownIdentifier {
        /// The four bytes found at offset 4.
        found: [u8; 4],
    },
    /// The FlatBuffers verifier rejected the buffer.
    #[error(
        "{flavor} model failed FlatBuffers verification (corrupt or truncated file): {}",
        .detail.to_string().trim_end()
    )]
    Invalid {
        /// The flavor named by the identifier.
        flavor: Flavor,
        /// The verifier's error, with the path of tables and fields that failed.
        detail: InvalidFlatbuffer,
    },
    /// A Circle file sets one of the byte fields that share a slot with a 4-byte TFLite field,
    /// and the verifier, which checks the slot as TFLite's, rejected it. No longer returned by
    /// [`open`], which verifies those fields as Circle's bytes; kept for code that matches it.
    #[error(
        "Circle model sets {field}, which nnrt's shared TFLite/Circle reader cannot verify \
         (it checks that slot as TFLite's 4-byte field); re-export the model without it \
         (data_format is deprecated since Circle 0.7): {}",
        .detail.to_string().trim_end()
    )]
    CircleByteField {
        /// `SubGraph.data_format` or `Tensor.compression_type`.
        field: &'static str,
        /// The verifier's error.
        detail: InvalidFlatbuffer,
    },
    /// A field read through [`RawTable`] is not where a valid file would have it.
    #[error("field {field_id} of the table at byte {table} {problem} (corrupt options table)")]
    RawField {
        /// Byte offset of the table in the buffer.
        table: usize,
        /// Field id in the schema.
        field_id: u16,
        /// What is wrong with it.
        problem: &'static str,
    },
}

/// Limits for the verifier: real models reach millions of tables (large LLMs) and deep nesting
/// is only seen in corrupt files. 2 GiB is the most 32-bit offsets can address.
fn verifier_options() -> VerifierOptions {
    VerifierOptions {
        max_tables: 10_000_000,
        max_depth: 128,
        max_apparent_size: 1 << 31,
        ..Default::default()
    }
}

/// Checks the identifier of a TFLite or Circle model and verifies the whole flatbuffer.
///
/// Called once per model file, before anything else reads it. On success every generated
/// accessor on the returned model reads in bounds (see the module doc for the one exception,
/// `builtin_options()` on unknown union ids). Fails on short buffers, unknown identifiers (the
/// error names the four bytes) and anything the verifier rejects. A Circle buffer is verified as
/// Circle, so files that set `SubGraph.data_format` or `Tensor.compression_type` open.
pub fn open(bytes: &[u8]) -> Result<(Flavor, Model<'_>), FbsError> {
    let found: [u8; 4] = bytes
        .get(4..8)
        .and_then(|id| id.try_into().ok())
        .ok_or(FbsError::TooShort { len: bytes.len() })?;
    let flavor = Flavor::from_identifier(&found).ok_or(FbsError::UnknownIdentifier { found })?;
    // `root_with_opts` does not look at the identifier, so "CIR0" passes although the schema
    // says "TFL3"; the identifier was checked just above.
    let model = match flavor {
        Flavor::Tflite => flatbuffers::root_with_opts::<Model>(&verifier_options(), bytes),
        Flavor::Circle => circle::root(&verifier_options(), bytes),
    };
    let model = model.map_err(|detail| FbsError::Invalid { flavor, detail })?;
    Ok((flavor, model))
}

/// The operator code of an `OperatorCode` entry, as a `BuiltinOperator` value.
///
/// TFLite's rule is `max(deprecated_builtin_code, builtin_code)`: files written before codes
/// above 127 existed only set the byte field, newer ones store 127 there and the real code in
/// `builtin_code`. Circle adds negative codes (INSTANCE_NORM = -2 ...), and Circle v0.3 files
/// store them only in the byte field, where `max` would turn them into ADD (0); a negative byte
/// therefore wins. TFLite never writes a negative byte, so TFLite files see the plain rule.
pub fn builtin_code(op_code: &OperatorCode<'_>) -> i32 {
    let deprecated = i32::from(op_code.deprecated_builtin_code());
    if deprecated < 0 {
        return deprecated;
    }
    deprecated.max(op_code.builtin_code().0)
}

/// Circle's `SubGraph.data_format`: 0 = CHANNELS_LAST (also when absent), 1 = CHANNELS_FIRST.
///
/// Only meaningful on [`Flavor::Circle`]; on TFLite files the same slot holds the low byte of
/// `debug_metadata_index`.
pub fn circle_data_format(subgraph: &SubGraph<'_>) -> u8 {
    // Both verifiers check that this slot's bytes are in the buffer; the fallback cannot be
    // reached on a buffer that came out of `open`.
    RawTable::new(subgraph._tab)
        .u8(CIRCLE_SUBGRAPH_DATA_FORMAT_FIELD, 0)
        .unwrap_or(0)
}

/// Circle's `Tensor.compression_type`: 0 = NONE (also when absent), 1 = HUFFMAN.
///
/// Only meaningful on [`Flavor::Circle`]; on TFLite files the slot holds `external_buffer`.
pub fn circle_compression_type(tensor: &Tensor<'_>) -> u8 {
    // In bounds for the same reason as in `circle_data_format`.
    RawTable::new(tensor._tab)
        .u8(CIRCLE_TENSOR_COMPRESSION_TYPE_FIELD, 0)
        .unwrap_or(0)
}

/// The options table of `op` whatever its union type id, for Circle-only options (ids 248..254)
/// that have no generated type. `Ok(None)` when the op has no options.
pub fn raw_builtin_options<'a>(op: &Operator<'a>) -> Result<Option<RawTable<'a>>, FbsError> {
    RawTable::new(op._tab).table(OPERATOR_BUILTIN_OPTIONS_FIELD)
}

/// A table read field by field with every offset checked against the buffer, for tables the
/// generated code does not describe. Never panics, whatever the bytes; a field that points
/// outside the buffer is an [`FbsError::RawField`].
#[derive(Clone, Copy, Debug)]
pub struct RawTable<'a> {
    buf: &'a [u8],
    loc: usize,
}

impl<'a> RawTable<'a> {
    /// Wraps a table position, e.g. the `_tab` of a generated table.
    pub fn new(table: Table<'a>) -> Self {
        Self {
            buf: table.buf(),
            loc: table.loc(),
        }
    }

    /// A 1-byte scalar field (bool, byte or ubyte enum), `default` when absent.
    pub fn u8(&self, field_id: u16, default: u8) -> Result<u8, FbsError> {
        Ok(self.scalar::<1>(field_id)?.map_or(default, |b| b[0]))
    }

    /// A 4-byte signed field, `default` when absent.
    pub fn i32(&self, field_id: u16, default: i32) -> Result<i32, FbsError> {
        Ok(self.scalar(field_id)?.map_or(default, i32::from_le_bytes))
    }

    /// A 4-byte float field, `default` when absent.
    pub fn f32(&self, field_id: u16, default: f32) -> Result<f32, FbsError> {
        Ok(self.scalar(field_id)?.map_or(default, f32::from_le_bytes))
    }

    /// A string field, `None` when absent.
    pub fn string(&self, field_id: u16) -> Result<Option<&'a str>, FbsError> {
        let Some(start) = self.follow(field_id)? else {
            return Ok(None);
        };
        let len = read_array(self.buf, start).map(u32::from_le_bytes);
        let bytes = len.and_then(|len| {
            let begin = start.checked_add(4)?;
            self.buf
                .get(begin..begin.checked_add(usize::try_from(len).ok()?)?)
        });
        let bytes = bytes.ok_or_else(|| self.error(field_id, "points outside the model file"))?;
        let text = core::str::from_utf8(bytes).map_err(|_| self.error(field_id, "is not UTF-8"))?;
        Ok(Some(text))
    }

    /// A sub-table field, `None` when absent. The sub-table is checked when its fields are read.
    pub fn table(&self, field_id: u16) -> Result<Option<RawTable<'a>>, FbsError> {
        Ok(self
            .follow(field_id)?
            .map(|loc| RawTable { buf: self.buf, loc }))
    }

    /// Where the object an offset field points to starts, `None` when the field is absent.
    fn follow(&self, field_id: u16) -> Result<Option<usize>, FbsError> {
        let Some(pos) = self.field_pos(field_id)? else {
            return Ok(None);
        };
        let target = read_array(self.buf, pos)
            .and_then(|off| pos.checked_add(usize::try_from(u32::from_le_bytes(off)).ok()?))
            .filter(|&t| t < self.buf.len());
        target
            .map(Some)
            .ok_or_else(|| self.error(field_id, "points outside the model file"))
    }

    /// The `N` bytes of a scalar field, `None` when the field is absent.
    fn scalar<const N: usize>(&self, field_id: u16) -> Result<Option<[u8; N]>, FbsError> {
        match self.field_pos(field_id)? {
            None => Ok(None),
            Some(pos) => read_array(self.buf, pos)
                .map(Some)
                .ok_or_else(|| self.error(field_id, "points outside the model file")),
        }
    }

    /// Position of a field's inline value, `None` when the vtable says it is absent.
    fn field_pos(&self, field_id: u16) -> Result<Option<usize>, FbsError> {
        let bad_vtable = || self.error(field_id, "has a vtable outside the model file");
        // A table starts with a signed offset back to its vtable: vtable = table - soffset.
        let soffset = read_array(self.buf, self.loc)
            .map(i32::from_le_bytes)
            .ok_or_else(bad_vtable)?;
        let back = usize::try_from(soffset.unsigned_abs()).map_err(|_| bad_vtable())?;
        let vtable = if soffset >= 0 {
            self.loc.checked_sub(back)
        } else {
            self.loc.checked_add(back)
        };
        let vtable = vtable.ok_or_else(bad_vtable)?;
        // A vtable holds its own size in bytes, the table's size, then one u16 offset per field.
        let read_u16 = |pos: usize| read_array(self.buf, pos).map(u16::from_le_bytes);
        let vtable_len = usize::from(read_u16(vtable).ok_or_else(bad_vtable)?);
        let slot = 4 + 2 * usize::from(field_id);
        if slot + 2 > vtable_len {
            return Ok(None); // written with an older schema: the field is absent
        }
        let offset = read_u16(vtable + slot).ok_or_else(bad_vtable)?;
        Ok((offset != 0).then(|| self.loc + usize::from(offset)))
    }

    fn error(&self, field_id: u16, problem: &'static str) -> FbsError {
        FbsError::RawField {
            table: self.loc,
            field_id,
            problem,
        }
    }
}

/// `N` bytes at `pos`, or `None` past the end of `buf`.
fn read_array<const N: usize>(buf: &[u8], pos: usize) -> Option<[u8; N]> {
    buf.get(pos..pos.checked_add(N)?)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use flatbuffers::{FlatBufferBuilder, WIPOffset};

    use super::*;
    use crate::generated::tflite::{
        ActivationFunctionType, Buffer, BufferArgs, BuiltinOperator, BuiltinOptions, Conv2DOptions,
        Conv2DOptionsArgs, ModelArgs, OperatorArgs, OperatorCodeArgs, Padding, SubGraphArgs,
        TensorArgs, TensorType,
    };

    /// Circle's InstanceNormOptions union id and BuiltinOperator code.
    const INSTANCE_NORM_OPTIONS: u8 = 254;
    const INSTANCE_NORM: i8 = -2;

    fn op_code<'a>(
        fbb: &mut FlatBufferBuilder<'a>,
        deprecated: i8,
        code: BuiltinOperator,
    ) -> WIPOffset<OperatorCode<'a>> {
        let args = OperatorCodeArgs {
            deprecated_builtin_code: deprecated,
            builtin_code: code,
            ..Default::default()
        };
        OperatorCode::create(fbb, &args)
    }

    /// One subgraph, one tensor, a CONV_2D with options and a STABLEHLO_ADD (code 163, stored
    /// the TFLite way with 127 in the byte field). With `circle_extras`, also an INSTANCE_NORM
    /// written like Circle v0.3 (code -2 in the byte field only) whose options table has the
    /// Circle-only union id 254, and `debug_metadata_index` = 1, whose low byte is where Circle
    /// keeps `data_format` = CHANNELS_FIRST.
    fn build_model(circle_extras: bool) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let sentinel = Buffer::create(&mut fbb, &BufferArgs::default());
        let buffers = fbb.create_vector(&[sentinel]);

        let shape = fbb.create_vector(&[1, 8, 8, 3]);
        let name = fbb.create_string("input");
        let tensor_args = TensorArgs {
            shape: Some(shape),
            type_: TensorType::FLOAT32,
            name: Some(name),
            has_rank: true,
            ..Default::default()
        };
        let tensor = Tensor::create(&mut fbb, &tensor_args);
        let tensors = fbb.create_vector(&[tensor]);

        let mut codes = vec![
            op_code(&mut fbb, 3, BuiltinOperator::CONV_2D),
            op_code(&mut fbb, 127, BuiltinOperator::STABLEHLO_ADD),
        ];
        if circle_extras {
            codes.push(op_code(&mut fbb, INSTANCE_NORM, BuiltinOperator::ADD));
        }
        let codes = fbb.create_vector(&codes);

        let conv_args = Conv2DOptionsArgs {
            padding: Padding::VALID,
            stride_w: 2,
            stride_h: 1,
            fused_activation_function: ActivationFunctionType::RELU6,
            ..Default::default()
        };
        let conv_options = Conv2DOptions::create(&mut fbb, &conv_args);
        let one = fbb.create_vector(&[0]);
        let two = fbb.create_vector(&[0, 0]);
        let conv_args = OperatorArgs {
            opcode_index: 0,
            inputs: Some(one),
            outputs: Some(one),
            builtin_options_type: BuiltinOptions::Conv2DOptions,
            builtin_options: Some(conv_options.as_union_value()),
            ..Default::default()
        };
        let add_args = OperatorArgs {
            opcode_index: 1,
            inputs: Some(two),
            outputs: Some(one),
            ..Default::default()
        };
        let mut ops = vec![
            Operator::create(&mut fbb, &conv_args),
            Operator::create(&mut fbb, &add_args),
        ];
        if circle_extras {
            // Circle's InstanceNormOptions { epsilon: float; fused_activation_function: byte }.
            let start = fbb.start_table();
            fbb.push_slot::<f32>(4, 1e-5, 0.0);
            fbb.push_slot::<i8>(6, ActivationFunctionType::RELU6.0, 0);
            let norm_options = fbb.end_table(start);
            let norm_args = OperatorArgs {
                opcode_index: 2,
                inputs: Some(one),
                outputs: Some(one),
                builtin_options_type: BuiltinOptions(INSTANCE_NORM_OPTIONS),
                builtin_options: Some(norm_options.as_union_value()),
                ..Default::default()
            };
            ops.push(Operator::create(&mut fbb, &norm_args));
        }
        let ops = fbb.create_vector(&ops);

        let name = fbb.create_string("main");
        let subgraph_args = SubGraphArgs {
            tensors: Some(tensors),
            inputs: Some(one),
            outputs: Some(one),
            operators: Some(ops),
            name: Some(name),
            debug_metadata_index: if circle_extras { 1 } else { -1 },
        };
        let subgraph = SubGraph::create(&mut fbb, &subgraph_args);
        let subgraphs = fbb.create_vector(&[subgraph]);
        let description = fbb.create_string("nnrt fbs test");
        let model_args = ModelArgs {
            version: 3,
            operator_codes: Some(codes),
            subgraphs: Some(subgraphs),
            description: Some(description),
            buffers: Some(buffers),
            ..Default::default()
        };
        let model = Model::create(&mut fbb, &model_args);
        fbb.finish(model, Some("TFL3"));
        fbb.finished_data().to_vec()
    }

    fn with_identifier(bytes: &[u8], id: &[u8; 4]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        out[4..8].copy_from_slice(id);
        out
    }

    /// `bytes` opened, checked to read as Circle.
    fn open_circle(bytes: &[u8]) -> Model<'_> {
        let (flavor, model) = open(bytes).expect("valid Circle model");
        assert_eq!(flavor, Flavor::Circle);
        model
    }

    /// Touches everything a loader could read, to show it never panics on a verified buffer.
    fn walk(model: &Model<'_>) {
        let _ = format!("{model:?}"); // the generated Debug visits every verified field
        for code in model.operator_codes().iter().flat_map(|v| v.iter()) {
            let _ = builtin_code(&code);
        }
        for subgraph in model.subgraphs().iter().flat_map(|v| v.iter()) {
            let _ = circle_data_format(&subgraph);
            for tensor in subgraph.tensors().iter().flat_map(|v| v.iter()) {
                let _ = circle_compression_type(&tensor);
            }
            for op in subgraph.operators().iter().flat_map(|v| v.iter()) {
                if let Ok(Some(raw)) = raw_builtin_options(&op) {
                    for id in 0..6 {
                        let _ = (
                            raw.u8(id, 0),
                            raw.i32(id, 0),
                            raw.f32(id, 0.0),
                            raw.string(id),
                        );
                        if let Ok(Some(sub)) = raw.table(id) {
                            let _ = (sub.i32(0, 0), sub.string(1));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tflite_model_reads_back() {
        let bytes = build_model(false);
        let (flavor, model) = open(&bytes).expect("valid model");
        assert_eq!(flavor, Flavor::Tflite);
        assert_eq!(model.version(), 3);
        assert_eq!(model.description(), Some("nnrt fbs test"));

        let codes = model.operator_codes().expect("operator codes");
        assert_eq!(builtin_code(&codes.get(0)), BuiltinOperator::CONV_2D.0);
        assert_eq!(
            builtin_code(&codes.get(1)),
            BuiltinOperator::STABLEHLO_ADD.0
        );
        assert_eq!(builtin_code(&codes.get(1)), 163);

        let subgraphs = model.subgraphs().expect("subgraphs");
        assert_eq!(subgraphs.len(), 1);
        let main = subgraphs.get(0);
        assert_eq!(main.name(), Some("main"));
        assert_eq!(main.debug_metadata_index(), -1);
        assert_eq!(circle_data_format(&main), 0); // -1 is the default, so the slot is not written
        let tensor = main.tensors().expect("tensors").get(0);
        assert_eq!(
            tensor.shape().map(|s| s.iter().collect::<Vec<_>>()),
            Some(vec![1, 8, 8, 3])
        );
        assert_eq!(tensor.type_(), TensorType::FLOAT32);
        assert_eq!(tensor.name(), Some("input"));
        assert!(tensor.has_rank());

        let ops = main.operators().expect("operators");
        let conv = ops
            .get(0)
            .builtin_options_as_conv_2_doptions()
            .expect("Conv2DOptions");
        assert_eq!(conv.padding(), Padding::VALID);
        assert_eq!((conv.stride_w(), conv.stride_h()), (2, 1));
        assert_eq!(
            conv.fused_activation_function(),
            ActivationFunctionType::RELU6
        );
        assert_eq!((conv.dilation_w_factor(), conv.dilation_h_factor()), (1, 1)); // schema defaults
        assert_eq!(ops.get(1).builtin_options_type(), BuiltinOptions::NONE);
        assert!(raw_builtin_options(&ops.get(1))
            .expect("in bounds")
            .is_none());
        walk(&model);
    }

    #[test]
    fn circle_identifier_reads_as_circle() {
        let bytes = with_identifier(&build_model(false), b"CIR0");
        let model = open_circle(&bytes);
        let codes = model.operator_codes().expect("operator codes");
        assert_eq!(builtin_code(&codes.get(1)), 163);
        let main = model.subgraphs().expect("subgraphs").get(0);
        let conv = main.operators().expect("operators").get(0);
        assert_eq!(
            conv.builtin_options_as_conv_2_doptions()
                .map(|c| c.stride_w()),
            Some(2)
        );
    }

    #[test]
    fn circle_only_fields_read_raw() {
        let bytes = with_identifier(&build_model(true), b"CIR0");
        let model = open_circle(&bytes);
        let codes = model.operator_codes().expect("operator codes");
        // v0.3 style: -2 only in the byte field; TFLite's max() alone would say ADD (0).
        assert_eq!(builtin_code(&codes.get(2)), i32::from(INSTANCE_NORM));

        let main = model.subgraphs().expect("subgraphs").get(0);
        assert_eq!(circle_data_format(&main), 1); // CHANNELS_FIRST
        assert_eq!(
            circle_compression_type(&main.tensors().expect("tensors").get(0)),
            0
        );

        let norm = main.operators().expect("operators").get(2);
        assert_eq!(
            norm.builtin_options_type(),
            BuiltinOptions(INSTANCE_NORM_OPTIONS)
        );
        let options = raw_builtin_options(&norm)
            .expect("in bounds")
            .expect("present");
        assert_eq!(options.f32(0, 0.0).expect("epsilon"), 1e-5);
        assert_eq!(
            options.u8(1, 0).expect("activation"),
            ActivationFunctionType::RELU6.0 as u8
        );
        assert_eq!(options.i32(7, 42).expect("absent field"), 42);
        assert_eq!(options.string(5).expect("absent field"), None);
        // Strings and sub-tables, on tables the generated code also knows.
        assert_eq!(
            RawTable::new(main._tab).string(4).expect("name"),
            Some("main")
        );
        let raw_model = RawTable::new(model._tab);
        assert_eq!(
            raw_model.string(3).expect("description"),
            Some("nnrt fbs test")
        );
        assert!(raw_model.table(3).expect("an offset field").is_some());
    }

    #[test]
    fn circle_data_format_byte_opens_as_circle_only() {
        // A subgraph written like Circle's builders do: `data_format` as a single byte.
        let mut fbb = FlatBufferBuilder::new();
        let name = fbb.create_string("main");
        let start = fbb.start_table();
        fbb.push_slot_always(SubGraph::VT_NAME, name);
        fbb.push_slot::<u8>(SubGraph::VT_DEBUG_METADATA_INDEX, 1, 0);
        let subgraph = fbb.end_table(start);
        let subgraphs = fbb.create_vector(&[subgraph]);
        let model_args = ModelArgs {
            version: 3,
            subgraphs: Some(WIPOffset::new(subgraphs.value())),
            ..Default::default()
        };
        let model = Model::create(&mut fbb, &model_args);
        fbb.finish(model, Some("CIR0"));
        let (flavor, model) = open(fbb.finished_data()).expect("Circle verifies the byte as a byte");
        assert_eq!(flavor, Flavor::Circle);
        let main = model.subgraphs().expect("subgraphs").get(0);
        assert_eq!(circle_data_format(&main), 1);
        walk(&model);
        // The same bytes as TFLite are simply corrupt: the slot is TFLite's unaligned int.
        let as_tflite = with_identifier(fbb.finished_data(), b"TFL3");
        assert!(matches!(open(&as_tflite), Err(FbsError::Invalid { .. })));
    }

    #[test]
    fn circle_field_ids_match_the_tflite_slots_they_share() {
        let slot = |id: u16| 4 + 2 * id;
        assert_eq!(
            slot(CIRCLE_SUBGRAPH_DATA_FORMAT_FIELD),
            SubGraph::VT_DEBUG_METADATA_INDEX
        );
        assert_eq!(
            slot(CIRCLE_TENSOR_COMPRESSION_TYPE_FIELD),
            Tensor::VT_EXTERNAL_BUFFER
        );
        assert_eq!(
            slot(OPERATOR_BUILTIN_OPTIONS_FIELD),
            Operator::VT_BUILTIN_OPTIONS
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let short = open(b"TFL3").unwrap_err();
        assert_eq!(short, FbsError::TooShort { len: 4 });
        assert!(short.to_string().contains("4 bytes"), "{short}");

        let zip = open(b"PK\x03\x04\x14\x00\x00\x00rest").unwrap_err();
        assert!(zip.to_string().contains(r#""\x14\x00\x00\x00""#), "{zip}");
        let pb = with_identifier(&build_model(false), b"TFL2");
        assert_eq!(
            open(&pb).unwrap_err(),
            FbsError::UnknownIdentifier { found: *b"TFL2" }
        );

        let mut broken = build_model(false);
        broken[0..4].copy_from_slice(&u32::MAX.to_le_bytes()); // root offset past the end
        let err = open(&broken).unwrap_err();
        assert!(
            matches!(
                err,
                FbsError::Invalid {
                    flavor: Flavor::Tflite,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("TFLite model failed FlatBuffers verification"),
            "{err}"
        );
    }

    #[test]
    fn every_truncation_is_an_error_or_a_model_never_a_panic() {
        for (circle_extras, id) in [(false, b"TFL3"), (true, b"TFL3"), (true, b"CIR0")] {
            let bytes = with_identifier(&build_model(circle_extras), id);
            for len in 0..bytes.len() {
                if let Ok((_, model)) = open(&bytes[..len]) {
                    walk(&model);
                }
            }
        }
    }

    #[test]
    fn two_thousand_byte_flips_never_panic() {
        // xorshift64*: deterministic, so a failure names a reproducible case.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        for (circle_extras, id) in [(false, b"TFL3"), (true, b"TFL3"), (true, b"CIR0")] {
            let bytes = with_identifier(&build_model(circle_extras), id);
            let (mut opened, mut rejected) = (0, 0);
            for _ in 0..2_000 {
                let mut flipped = bytes.clone();
                let r = next();
                let pos = (r % flipped.len() as u64) as usize;
                flipped[pos] ^= ((r >> 32) % 255 + 1) as u8; // never xor 0
                match open(&flipped) {
                    Ok((_, model)) => {
                        walk(&model);
                        opened += 1;
                    }
                    Err(_) => rejected += 1,
                }
            }
            // Both outcomes happen, so the loop does test the verifier and the reads after it.
            assert!(
                opened > 0 && rejected > 0,
                "opened {opened}, rejected {rejected}"
            );
        }
    }
}
