//! The verifier for Circle ("CIR0") buffers: the generated TFLite verifier with Circle's two
//! byte fields checked as bytes.
//!
//! Circle stores `SubGraph.data_format` (field 5) and `Tensor.compression_type` (field 10) as one
//! byte where TFLite has a 4-byte `debug_metadata_index` / `external_buffer`; Circle writers put
//! that byte at any offset, which the generated verifier rejects as unaligned. [`root`] verifies
//! `Model`, `SubGraph` and `Tensor` field by field as the generated code does, except that those
//! two fields need no alignment, only 4 bytes inside the buffer: the generated 4-byte accessors
//! (meaningless on Circle, but called by the generated `Debug`) then still read in bounds. Every
//! other table is verified by its generated verifier. Facts from Samsung/ONE
//! `res/CircleSchema/0.10/circle_schema.fbs`.

use flatbuffers::{ForwardsUOffset, InvalidFlatbuffer, TableVerifier, Verifiable, Vector, Verifier, VerifierOptions};

use crate::generated::tflite::{Buffer, ExternalBuffer, ExternalBufferGroup, Metadata, Model, Operator, OperatorCode, QuantizationParameters, SignatureDef, SparsityParameters, SubGraph, Tensor, TensorType, VariantSubType};

type Table<T> = ForwardsUOffset<T>;
type Tables<T> = ForwardsUOffset<Vector<'static, ForwardsUOffset<T>>>;
type Ints = ForwardsUOffset<Vector<'static, i32>>;
type Str = ForwardsUOffset<&'static str>;

/// A Circle `Model`: verified as Circle, read through the generated TFLite [`Model`].
struct CircleModel;
/// A Circle `SubGraph` (verification only).
struct CircleSubGraph;
/// A Circle `Tensor` (verification only).
struct CircleTensor;

/// Checks a Circle byte field that shares its slot with a 4-byte TFLite field: any alignment,
/// and 4 bytes inside the buffer so that the TFLite accessor of the slot reads in bounds.
fn byte_field<'v, 'o, 'b>(mut table: TableVerifier<'v, 'o, 'b>, vtable_slot: u16) -> Result<TableVerifier<'v, 'o, 'b>, InvalidFlatbuffer> {
    if let Some(pos) = table.deref(vtable_slot)? {
        table.verifier().range_in_buffer(pos, 4)?;
    }
    Ok(table)
}

impl Verifiable for CircleModel {
    fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
        v.visit_table(pos)?
            .visit_field::<u32>("version", Model::VT_VERSION, false)?
            .visit_field::<Tables<OperatorCode>>("operator_codes", Model::VT_OPERATOR_CODES, false)?
            .visit_field::<Tables<CircleSubGraph>>("subgraphs", Model::VT_SUBGRAPHS, false)?
            .visit_field::<Str>("description", Model::VT_DESCRIPTION, false)?
            .visit_field::<Tables<Buffer>>("buffers", Model::VT_BUFFERS, false)?
            .visit_field::<Ints>("metadata_buffer", Model::VT_METADATA_BUFFER, false)?
            .visit_field::<Tables<Metadata>>("metadata", Model::VT_METADATA, false)?
            .visit_field::<Tables<SignatureDef>>("signature_defs", Model::VT_SIGNATURE_DEFS, false)?
            .visit_field::<Tables<ExternalBufferGroup>>("external_buffer_groups", Model::VT_EXTERNAL_BUFFER_GROUPS, false)?
            .visit_field::<Tables<ExternalBuffer>>("external_buffers", Model::VT_EXTERNAL_BUFFERS, false)?
            .finish();
        Ok(())
    }
}

impl Verifiable for CircleSubGraph {
    fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
        let table = v
            .visit_table(pos)?
            .visit_field::<Tables<CircleTensor>>("tensors", SubGraph::VT_TENSORS, false)?
            .visit_field::<Ints>("inputs", SubGraph::VT_INPUTS, false)?
            .visit_field::<Ints>("outputs", SubGraph::VT_OUTPUTS, false)?
            .visit_field::<Tables<Operator>>("operators", SubGraph::VT_OPERATORS, false)?
            .visit_field::<Str>("name", SubGraph::VT_NAME, false)?;
        byte_field(table, SubGraph::VT_DEBUG_METADATA_INDEX)?.finish();
        Ok(())
    }
}

impl Verifiable for CircleTensor {
    fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
        let table = v
            .visit_table(pos)?
            .visit_field::<Ints>("shape", Tensor::VT_SHAPE, false)?
            .visit_field::<TensorType>("type_", Tensor::VT_TYPE_, false)?
            .visit_field::<u32>("buffer", Tensor::VT_BUFFER, false)?
            .visit_field::<Str>("name", Tensor::VT_NAME, false)?
            .visit_field::<Table<QuantizationParameters>>("quantization", Tensor::VT_QUANTIZATION, false)?
            .visit_field::<bool>("is_variable", Tensor::VT_IS_VARIABLE, false)?
            .visit_field::<Table<SparsityParameters>>("sparsity", Tensor::VT_SPARSITY, false)?
            .visit_field::<Ints>("shape_signature", Tensor::VT_SHAPE_SIGNATURE, false)?
            .visit_field::<bool>("has_rank", Tensor::VT_HAS_RANK, false)?
            .visit_field::<Tables<VariantSubType>>("variant_tensors", Tensor::VT_VARIANT_TENSORS, false)?;
        byte_field(table, Tensor::VT_EXTERNAL_BUFFER)?.finish();
        Ok(())
    }
}

impl<'a> flatbuffers::Follow<'a> for CircleModel {
    type Inner = Model<'a>;

    #[allow(unsafe_code)]
    unsafe fn follow(buf: &'a [u8], loc: usize) -> Model<'a> {
        // SAFETY: the caller's contract (a valid `Self` at `loc`) is the one `Model::follow`
        // needs: `root` only reaches here after `CircleModel`'s verifier accepted the buffer,
        // which checks every field `Model`'s accessors read, the two byte slots included.
        unsafe { <Model<'a> as flatbuffers::Follow<'a>>::follow(buf, loc) }
    }
}

/// Verifies a Circle buffer (identifier already checked) and returns its root, read through the
/// generated TFLite types.
pub(super) fn root<'a>(opts: &VerifierOptions, bytes: &'a [u8]) -> Result<Model<'a>, InvalidFlatbuffer> {
    flatbuffers::root_with_opts::<CircleModel>(opts, bytes)
}
