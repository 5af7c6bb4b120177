//! DarwiNN (Edge TPU) packages: what Coral's compiler puts in the options of an
//! `edgetpu-custom-op` (see `../shared/FORMATS.md` §3 and `loaders/schema/darwinn.fbs`).
//!
//! The op's options are a FlexBuffer map whose key `"4"` is a `DWN1` [`Package`] (not 4-aligned
//! in the file: it is copied into an aligned buffer before it is read). The package's
//! MultiExecutable holds the [`Executable`]s as binary strings, read here by hand
//! ([`read`]), each then verified on its own as a flatbuffer. Everything the schema holds is kept
//! in plain Rust types; [`check`] matches the layers against the op's TFLite tensors by name, and
//! [`host`] is the host side of a run (input padding, output re-layout, numerics).

pub mod check;
pub mod host;
mod read;
#[cfg(test)]
mod tests;

pub use read::{read_options, read_package};

use thiserror::Error;

/// The package's file identifier, at bytes 4..8 of a package.
pub const IDENTIFIER: &[u8; 4] = b"DWN1";

/// Why DarwiNN options or a package could not be read, or do not fit their op.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum DarwinnError {
    /// The FlexBuffer options map is malformed or lacks the package.
    #[error("edgetpu-custom-op options: {reason}")]
    Options {
        /// What is wrong.
        reason: String,
    },
    /// The package (`DWN1`) or its MultiExecutable is malformed.
    #[error("DarwiNN package: {reason}")]
    Package {
        /// What is wrong.
        reason: String,
    },
    /// One executable is malformed.
    #[error("DarwiNN package: executable {index}{name}: {reason}")]
    Executable {
        /// Its index in the MultiExecutable.
        index: usize,
        /// `" (TYPE 'name')"` when known, for messages.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A layer does not fit the op's tensor of the same name (or has none).
    #[error("DarwiNN {what} layer '{layer}': {reason}")]
    Layer {
        /// `input` or `output`.
        what: &'static str,
        /// The layer's name.
        layer: String,
        /// What is wrong, naming the TFLite tensor and what was expected.
        reason: String,
    },
}

/// The decoded options of one `edgetpu-custom-op`.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeTpuOptions {
    /// Key `"1"`: the options' version (0 in every known model).
    pub version: Option<i64>,
    /// Key `"5"`: execution preference (-1 in every known model).
    pub execution_preference: Option<i64>,
    /// Key `"6"`: the chip enum values the op was compiled for (absent in older models).
    pub chips: Vec<i64>,
    /// Where the package's bytes start in the options (6 or 8 in known models: not 4-aligned).
    pub package_offset: usize,
    /// Key `"4"`, then each package of key `"7"` (further per-chip packages) in order.
    pub packages: Vec<Package>,
}

/// A `DWN1` package.
#[derive(Clone, Debug, PartialEq)]
pub struct Package {
    /// Bytes of the package.
    pub size_bytes: usize,
    /// Minimum DarwiNN runtime version that can run the package.
    pub min_runtime_version: i32,
    /// Bytes of the serialized MultiExecutable.
    pub multi_executable_bytes: usize,
    /// Where the MultiExecutable starts in the package.
    pub multi_executable_offset: usize,
    /// Signature of the MultiExecutable (empty in known models).
    pub signature: Vec<u8>,
    /// Structure version of the package.
    pub keypair_version: i32,
    /// The compiler that made it (`"cl/343520747"`).
    pub compiler_version: Option<String>,
    /// Chip id in a virtual cluster (0: single chip; -1: multi-chip package).
    pub virtual_chip_id: i32,
    /// Per-chip packages of a multi-chip package, each read as a package.
    pub multi_chip_packages: Vec<Package>,
    /// A user-given identifier.
    pub model_identifier: Option<String>,
    /// The executables, in the MultiExecutable's order.
    pub executables: Vec<Executable>,
}

impl Package {
    /// The executable that runs an inference: EXECUTION_ONLY, else STAND_ALONE.
    pub fn runnable(&self) -> Option<&Executable> {
        let find = |t: ExecutableType| self.executables.iter().find(|e| e.kind == t);
        find(ExecutableType::ExecutionOnly).or_else(|| find(ExecutableType::StandAlone))
    }

    /// The chip of its runnable executable (`"beagle"`), for messages.
    pub fn chip(&self) -> Option<&str> {
        self.runnable().and_then(|e| e.chip.as_deref())
    }
}

/// What an executable does (`ExecutableType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutableType {
    /// Everything an inference needs.
    StandAlone,
    /// Only loads parameters; goes with an EXECUTION_ONLY of the same caching token.
    ParameterCaching,
    /// Runs with parameters already cached.
    ExecutionOnly,
}

impl ExecutableType {
    /// The schema's name.
    pub fn name(self) -> &'static str {
        match self {
            ExecutableType::StandAlone => "STAND_ALONE",
            ExecutableType::ParameterCaching => "PARAMETER_CACHING",
            ExecutableType::ExecutionOnly => "EXECUTION_ONLY",
        }
    }
}

/// One executable.
#[derive(Clone, Debug, PartialEq)]
pub struct Executable {
    /// Where its bytes start in the MultiExecutable (4096-aligned in known models).
    pub offset: usize,
    /// Its bytes.
    pub size_bytes: usize,
    /// Format version (0).
    pub version: i32,
    /// Model name (`"model"`; `"Unknown"` for parameter caching).
    pub name: Option<String>,
    /// Serialized model protobuf (empty in known models).
    pub serialized_model: Vec<u8>,
    /// Inputs processed at once.
    pub batch_size: i32,
    /// Scratch buffer bytes (batch 1).
    pub scratch_size_bytes: i32,
    /// Instruction bitstreams.
    pub instruction_bitstreams: Vec<InstructionBitstream>,
    /// The parameter stream.
    pub parameters: Vec<u8>,
    /// DMA hints.
    pub dma_hints: Option<DmaHints>,
    /// Input layers, in the executable's order (not the op's).
    pub input_layers: Vec<Layer>,
    /// Output layers, in the executable's order (not the op's).
    pub output_layers: Vec<Layer>,
    /// Chip it was compiled for (`"beagle"`).
    pub chip: Option<String>,
    /// Deprecated cycle estimate.
    pub estimated_cycles: i32,
    /// Narrow memory bytes used per tile.
    pub used_narrow_memory_bytes_per_tile: i32,
    /// What it does.
    pub kind: ExecutableType,
    /// Parameter-caching executables with the same token cache together.
    pub parameter_caching_token: u64,
    /// Whether parameters go to TPU DRAM.
    pub use_tpu_dram_for_parameters: bool,
    /// Cycle estimate.
    pub estimated_cycles_64bit: i64,
}

/// An instruction bitstream and the fields the driver patches in it.
#[derive(Clone, Debug, PartialEq)]
pub struct InstructionBitstream {
    /// The encoded instructions.
    pub bitstream: Vec<u8>,
    /// Fields filled at run time.
    pub field_offsets: Vec<FieldOffset>,
}

/// A field of a bitstream.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldOffset {
    /// Which address goes there.
    pub meta: Option<Meta>,
    /// Bit offset in the bitstream.
    pub offset_bit: i32,
}

/// Linker metadata: which base address, for which layer and batch, which half.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// `Description` value (0 output activation, 1 input activation, 2 parameter, 3 scratch).
    pub desc: i16,
    /// Batch of an activation.
    pub batch: i32,
    /// The activation's layer name.
    pub name: Option<String>,
    /// `Position` value (0 lower 32 bits, 1 upper).
    pub position: i16,
}

impl Meta {
    /// The schema's name of `desc`.
    pub fn desc_name(&self) -> &'static str {
        crate::generated::platforms::darwinn::Description(self.desc).variant_name().unwrap_or("unknown")
    }

    /// The schema's name of `position`.
    pub fn position_name(&self) -> &'static str {
        crate::generated::platforms::darwinn::Position(self.position).variant_name().unwrap_or("unknown")
    }
}

/// DMA hints of an executable.
#[derive(Clone, Debug, PartialEq)]
pub struct DmaHints {
    /// The hints, in order.
    pub hints: Vec<DmaHint>,
    /// Whether they cover every DMA of the model.
    pub fully_deterministic: bool,
}

/// One DMA hint.
#[derive(Clone, Debug, PartialEq)]
pub struct DmaHint {
    /// `Direction` value (0 infeed, 1 outfeed).
    pub direction: i16,
    /// What the hint is.
    pub hint: Hint,
}

/// The `AnyHint` union.
#[derive(Clone, Debug, PartialEq)]
pub enum Hint {
    /// No hint set.
    None,
    /// A DMA descriptor: base address metadata, offset and size in bytes.
    DmaDescriptor {
        /// Which base address.
        meta: Option<Meta>,
        /// Offset from the base address.
        offset_in_bytes: i32,
        /// Bytes transferred.
        size_in_bytes: i32,
    },
    /// An instruction chunk.
    Instruction {
        /// Its index.
        instruction_chunk_index: i32,
    },
    /// An interrupt (`InterruptType` value).
    Interrupt {
        /// The interrupt.
        interrupt_type: i16,
    },
    /// A fence.
    Fence,
    /// A union type this schema does not know.
    Unknown(u8),
}

/// A layer's element type (`DataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    /// Unsigned affine: real = (q - zero_point) * scale.
    FixedPoint8,
    /// Unsigned affine, 16 bits.
    FixedPoint16,
    /// Signed 32-bit fixed point.
    SignedFixedPoint32,
    /// bfloat16.
    Bfloat,
    /// IEEE half.
    Half,
    /// IEEE single.
    Single,
    /// Signed: real = q * scale.
    SignedFixedPoint8,
    /// Signed 16 bits: real = q * scale.
    SignedFixedPoint16,
}

impl DataType {
    /// The type of schema value `v`.
    pub fn from_value(v: i16) -> Option<DataType> {
        Some(match v {
            0 => DataType::FixedPoint8,
            1 => DataType::FixedPoint16,
            2 => DataType::SignedFixedPoint32,
            3 => DataType::Bfloat,
            4 => DataType::Half,
            5 => DataType::Single,
            8 => DataType::SignedFixedPoint8,
            9 => DataType::SignedFixedPoint16,
            _ => return None,
        })
    }

    /// The schema's name.
    pub fn name(self) -> &'static str {
        match self {
            DataType::FixedPoint8 => "FIXED_POINT8",
            DataType::FixedPoint16 => "FIXED_POINT16",
            DataType::SignedFixedPoint32 => "SIGNED_FIXED_POINT32",
            DataType::Bfloat => "BFLOAT",
            DataType::Half => "HALF",
            DataType::Single => "SINGLE",
            DataType::SignedFixedPoint8 => "SIGNED_FIXED_POINT8",
            DataType::SignedFixedPoint16 => "SIGNED_FIXED_POINT16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::FixedPoint8 | DataType::SignedFixedPoint8 => 1,
            DataType::FixedPoint16 | DataType::SignedFixedPoint16 | DataType::Bfloat | DataType::Half => 2,
            DataType::SignedFixedPoint32 | DataType::Single => 4,
        }
    }

    /// Whether the device stores it with the sign bit flipped (the host flips it back: the
    /// signed fixed-point types of 8 and 16 bits).
    pub fn sign_flipped(self) -> bool {
        matches!(self, DataType::SignedFixedPoint8 | DataType::SignedFixedPoint16)
    }
}

/// A layer's numerics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Numerics {
    /// Zero point (unsigned types).
    pub zero_point: i32,
    /// Scale.
    pub dequantization_factor: f32,
}

/// An input or output layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// The TFLite tensor's name.
    pub name: String,
    /// Bytes including padding (batch 1).
    pub size_bytes: i32,
    /// Rows (1 when absent).
    pub y_dim: i32,
    /// Columns (1 when absent).
    pub x_dim: i32,
    /// Channels.
    pub z_dim: i32,
    /// Numerics.
    pub numerics: Option<Numerics>,
    /// Element type.
    pub data_type: DataType,
    /// Input or output specifics.
    pub kind: LayerKind,
    /// Executions per inference (1).
    pub execution_count_per_inference: i32,
    /// Whether activations stay in TPU DRAM.
    pub cache_on_dram: bool,
    /// Inclusive ranges of each dimension, when set.
    pub shape: Option<Vec<(i32, i32)>>,
}

impl Layer {
    /// Elements y·x·z, when positive and representable.
    pub fn elements(&self) -> Option<usize> {
        let d = |v: i32| usize::try_from(v).ok().filter(|&v| v > 0);
        d(self.y_dim)?.checked_mul(d(self.x_dim)?)?.checked_mul(d(self.z_dim)?)
    }

    /// Unpadded bytes y·x·z·size.
    pub fn actual_bytes(&self) -> Option<usize> {
        self.elements()?.checked_mul(self.data_type.size())
    }
}

/// The `AnyLayer` union.
#[derive(Clone, Debug, PartialEq)]
pub enum LayerKind {
    /// Not set.
    None,
    /// An input layer.
    Input,
    /// An output layer.
    Output {
        /// Tile maps for the re-layout to YXZ.
        layout: Option<OutputLayout>,
        /// Deprecated output data type.
        data_type: i16,
        /// Output slices, when the compiler gives them.
        shape_info: Option<OutputShapeInfo>,
    },
    /// A union type this schema does not know.
    Unknown(u8),
}

/// The tile maps of an output (schema `OutputLayout`; see [`host::relayout`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputLayout {
    /// y → linear id of the first tile of the row of tiles holding it.
    pub y_coordinate_to_linear_tile_id_map: Vec<i32>,
    /// x → tile id within a row of tiles.
    pub x_coordinate_to_linear_tile_id_map: Vec<i32>,
    /// Start of each tile's output, in elements of the layer's type.
    pub linearized_tile_byte_offset: Vec<i32>,
    /// x → offset within its tile's row.
    pub x_coordinate_to_local_byte_offset: Vec<i32>,
    /// y → row within its tile.
    pub y_coordinate_to_local_y_offset: Vec<i32>,
    /// x → row size of its tile.
    pub x_coordinate_to_local_y_row_size: Vec<i32>,
}

/// Output slices (schema `OutputShapeInfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct OutputShapeInfo {
    /// Each slice's layout.
    pub slice_layout: Vec<SliceLayout>,
    /// Each slice's base offset in bytes.
    pub slice_offset: Vec<i32>,
}

/// One output slice's layout (schema `TensorLayout`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceLayout {
    /// Inclusive range of each dimension.
    pub shape: Vec<(i32, i32)>,
    /// Distance in elements between neighbours in each dimension.
    pub stride: Vec<i32>,
}
