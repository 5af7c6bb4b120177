//! The frontend layer: which format a model file is, and the one `load` per format.
//!
//! A model is recognised by its bytes ([`detect`]: the FlatBuffers file identifier at bytes 4..8,
//! and for TFLite files the Edge TPU custom op inside) or, in an nnpackage, by its MANIFEST
//! `model-types` entry ([`load_declared`]). Every path into the IR goes through [`load`] or
//! [`load_declared`], which hand the bytes to the format's frontend; a format nnrt recognises but
//! cannot read yet fails with an error that says exactly that.

use core::fmt;

use nnrt_core::{Blob, LoadError, Model};

use crate::{pte, tflite, tosa};

/// The custom op name Edge TPU compilers give the op that carries a DarwiNN package.
pub const EDGETPU_CUSTOM_OP: &str = "edgetpu-custom-op";

/// A model file format nnrt recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// TensorFlow Lite / LiteRT flatbuffer, identifier `TFL3`.
    Tflite,
    /// Samsung ONE's Circle flatbuffer, identifier `CIR0`.
    Circle,
    /// A TFLite file whose graph holds the Edge TPU custom op (`edgetpu-custom-op`). It loads as
    /// TFLite, with each op's DarwiNN package read and checked ([`crate::darwinn`], in
    /// [`FormatInfo::edgetpu`]); the op then needs a device driver at prepare.
    EdgeTpu,
    /// ExecuTorch program (`.pte`), identifier `ET12`.
    ExecuTorch,
    /// TOSA serialized graph, identifier `TOSA`.
    Tosa,
}

impl Format {
    /// Every format, in the order errors list them.
    pub const ALL: [Format; 5] = [Format::Tflite, Format::Circle, Format::EdgeTpu, Format::ExecuTorch, Format::Tosa];

    /// The 4-byte file identifier at bytes 4..8 (an Edge TPU file is a TFLite file).
    pub const fn identifier(self) -> &'static [u8; 4] {
        match self {
            Format::Tflite | Format::EdgeTpu => b"TFL3",
            Format::Circle => b"CIR0",
            Format::ExecuTorch => b"ET12",
            Format::Tosa => b"TOSA",
        }
    }

    /// The format's name in messages.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Tflite => "TFLite",
            Format::Circle => "Circle",
            Format::EdgeTpu => "TFLite with Edge TPU custom op",
            Format::ExecuTorch => "ExecuTorch program",
            Format::Tosa => "TOSA flatbuffer",
        }
    }

    /// The MANIFEST `model-types` value of the format (an Edge TPU file is declared `tflite`).
    pub const fn model_type(self) -> &'static str {
        match self {
            Format::Tflite | Format::EdgeTpu => "tflite",
            Format::Circle => "circle",
            Format::ExecuTorch => "pte",
            Format::Tosa => "tosa",
        }
    }

    /// Whether nnrt can load the format into its IR today.
    pub const fn is_supported(self) -> bool {
        matches!(self, Format::Tflite | Format::Circle | Format::EdgeTpu | Format::ExecuTorch | Format::Tosa)
    }

    /// The format whose file identifier is `id` (`TFL3` is [`Format::Tflite`]; telling an Edge
    /// TPU file apart needs the whole file, see [`detect`]).
    pub fn from_identifier(id: &[u8; 4]) -> Option<Format> {
        Format::ALL.into_iter().filter(|&f| f != Format::EdgeTpu).find(|f| f.identifier() == id)
    }

    /// The format a MANIFEST `model-types` value names.
    pub fn from_model_type(model_type: &str) -> Option<Format> {
        Format::ALL.into_iter().filter(|&f| f != Format::EdgeTpu).find(|f| f.model_type() == model_type)
    }

    /// The format a file name's extension suggests (`.tflite`, `.circle`, `.pte`, `.tosa`), for
    /// MANIFEST 1.0 packages that omit `model-types`.
    pub fn from_file_name(name: &str) -> Option<Format> {
        let ext = name.rsplit_once('.')?.1;
        Format::ALL.into_iter().filter(|&f| f != Format::EdgeTpu).find(|f| f.model_type() == ext)
    }

    /// The formats one reader loads interchangeably: TFLite, Circle and Edge TPU files share
    /// the TFLite reader, so a package declaring one may hold another.
    fn reader(self) -> Format {
        match self {
            Format::Tflite | Format::Circle | Format::EdgeTpu => Format::Tflite,
            other => other,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.identifier().escape_ascii())
    }
}

/// An `edgetpu-custom-op` of a model: where it is, its tensors, its decoded options and which
/// layer of its runnable executable is which of its tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeTpuOp {
    /// The subgraph holding it.
    pub subgraph: usize,
    /// Its index in the subgraph.
    pub op: usize,
    /// Names of its inputs, in the op's order.
    pub inputs: Vec<String>,
    /// Names of its outputs, in the op's order.
    pub outputs: Vec<String>,
    /// Bytes of its options.
    pub options_bytes: usize,
    /// The options: packages and executables.
    pub options: crate::darwinn::EdgeTpuOptions,
    /// The runnable executable's layers matched to the op's tensors.
    pub layers: crate::darwinn::check::LayerMatch,
}

/// What a frontend read about a model file besides the IR, for `nnrt-inspect`.
#[derive(Clone, Debug, PartialEq)]
pub struct FormatInfo {
    /// The file's format.
    pub format: Format,
    /// The format's schema version as the file states it (TFLite and Circle: `Model.version`).
    pub schema_version: u32,
    /// The file's description string, when it has one (TFLite: the converter's name).
    pub description: Option<String>,
    /// Subgraphs (regions, methods) in the file.
    pub subgraphs: usize,
    /// Named entry points (TFLite SignatureDefs, ExecuTorch methods) in the file.
    pub signatures: usize,
    /// For formats whose entry points call named operators (ExecuTorch methods): each entry
    /// point's name and the operators it uses as the file names them (`aten::add.out`,
    /// `delegate XnnpackBackend`), in file order. Empty for TFLite and Circle.
    pub entry_operators: Vec<(String, Vec<String>)>,
    /// Each Edge TPU custom op of the model with its DarwiNN packages (TFLite files only).
    pub edgetpu: Vec<EdgeTpuOp>,
}

impl fmt::Display for FormatInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        write!(f, "{}, schema version {}", self.format, self.schema_version)?;
        if let Some(d) = self.description.as_deref().filter(|d| !d.is_empty()) {
            write!(f, ", description '{d}'")?;
        }
        write!(f, ", {} subgraph{}, {} signature{}", self.subgraphs, plural(self.subgraphs), self.signatures, plural(self.signatures))
    }
}

/// A model loaded by its format's frontend: the IR and the format's own facts.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The model in nnrt's IR.
    pub model: Model,
    /// What the frontend read about the file.
    pub info: FormatInfo,
}

/// The error for bytes of no format nnrt recognises; `reason` says what was found, and the
/// error lists what nnrt recognises (every [`Format`]).
pub(crate) fn unknown_format(path: &str, reason: String) -> LoadError {
    let known = Format::ALL.into_iter().filter(|&f| f != Format::EdgeTpu);
    let known = known.map(|f| format!("\"{}\" ({}, .{})", f.identifier().escape_ascii(), f.name(), f.model_type()));
    let expected = format!("an nnpackage folder or zip, or a model file whose identifier (bytes 4..8) is one nnrt recognises: {}", known.collect::<Vec<_>>().join(", "));
    LoadError::UnknownFormat { path: path.to_string(), reason, expected }
}

/// The format named by bytes 4..8, without reading further (`TFL3` is [`Format::Tflite`]).
/// `declared` (a MANIFEST `model-types` value) is named in the error when the bytes are unknown.
fn identify(path: &str, bytes: &[u8], declared: Option<&str>) -> Result<Format, LoadError> {
    let declared = declared.map(|t| format!("; the MANIFEST declares it '{t}'")).unwrap_or_default();
    let unknown = |reason: String| unknown_format(path, format!("{reason}{declared}"));
    let Some(found) = bytes.get(4..8).and_then(|id| <[u8; 4]>::try_from(id).ok()) else {
        return Err(unknown(format!(
            "the file is {} bytes, too short for a model flatbuffer (at least 8: root offset and file identifier); is it empty or truncated?",
            bytes.len()
        )));
    };
    Format::from_identifier(&found).ok_or_else(|| {
        unknown(format!(
            "file identifier is \"{}\" (bytes 4..8); the file may be size-prefixed or corrupt",
            found.escape_ascii()
        ))
    })
}

/// Recognises a model by its bytes: the file identifier at bytes 4..8, and for a TFLite file
/// whether its operator codes name the Edge TPU custom op (which needs the verified file).
/// Errors name the bytes found.
pub fn detect(path: &str, bytes: &[u8]) -> Result<Format, LoadError> {
    let format = identify(path, bytes, None)?;
    if format != Format::Tflite {
        return Ok(format);
    }
    let (_, root) = crate::fbs::open(bytes).map_err(|e| tflite::open_error(path, e))?;
    Ok(if tflite::uses_edgetpu(&root) { Format::EdgeTpu } else { Format::Tflite })
}

/// Loads a model file held in `blob` with the frontend its bytes name. Constants borrow from
/// the blob.
pub fn load(path: &str, blob: Blob) -> Result<Loaded, LoadError> {
    let format = identify(path, (*blob).as_ref(), None)?;
    load_as(path, format, blob)
}

/// Loads a model an nnpackage declares with MANIFEST `model-types` value `model_type`. The
/// declared type picks the frontend family; the bytes must agree with it (TFLite and Circle
/// share one reader, so either may hold the other).
pub fn load_declared(path: &str, model_type: &str, blob: Blob) -> Result<Loaded, LoadError> {
    let found = check_declared(path, model_type, (*blob).as_ref())?;
    load_as(path, found, blob)
}

/// Checks, from a model's first 8 bytes (enough to sniff a zip entry before inflating the
/// rest), that `model_type` is a type nnrt knows and that the bytes are of that format; returns
/// the format the bytes name.
pub fn check_declared(path: &str, model_type: &str, head: &[u8]) -> Result<Format, LoadError> {
    let declared = Format::from_model_type(model_type).ok_or_else(|| LoadError::Package {
        path: path.to_string(),
        reason: format!(
            "model type '{model_type}' is not supported (known: {}; loadable: {})",
            Format::ALL.iter().filter(|f| **f != Format::EdgeTpu).map(|f| f.model_type()).collect::<Vec<_>>().join(", "),
            Format::ALL.iter().filter(|f| f.is_supported() && **f != Format::EdgeTpu).map(|f| f.model_type()).collect::<Vec<_>>().join(", "),
        ),
    })?;
    let found = identify(path, head, Some(model_type))?;
    if found.reader() != declared.reader() {
        return Err(LoadError::Package {
            path: path.to_string(),
            reason: format!("the MANIFEST declares model type '{model_type}' ({}), but the file is {found}", declared.name()),
        });
    }
    Ok(found)
}

/// The frontend of each format.
fn load_as(path: &str, format: Format, blob: Blob) -> Result<Loaded, LoadError> {
    match format {
        Format::Tflite | Format::Circle | Format::EdgeTpu => tflite::load(path, blob),
        Format::ExecuTorch => pte::load(path, blob),
        Format::Tosa => tosa::load(path, blob),
    }
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
