//! The TOSA flatbuffer: identifier, verification, the version checks, and where a tensor's
//! constant bytes are (inline `data`, or `offset/size` past the flatbuffer in graphs over 2 GB).

use flatbuffers::VerifierOptions;

use nnrt_core::{ConstData, LoadError, Blob};

use crate::generated::tosa;
use crate::import::Constants;

/// The format's name in errors.
pub(crate) const FORMAT: &str = "TOSA";

/// The newest TOSA specification version this reader maps (1.0, and the 1.1 draft that
/// tosa-opt writes).
const NEWEST: (i32, i32) = (1, 1);

/// The newest serialization library whose files this reader was written against
/// (`compatibility.min_reader_version`): a file that needs a newer reader is refused.
const READER_VERSION: (i32, i32, i32) = (2026, 8, 0);

pub(crate) fn malformed(path: &str, reason: impl Into<String>) -> LoadError {
    LoadError::Malformed { path: path.to_string(), format: FORMAT, reason: reason.into() }
}

fn verifier_options() -> VerifierOptions {
    VerifierOptions { max_tables: 10_000_000, max_depth: 128, max_apparent_size: 1 << 31, ..Default::default() }
}

/// An opened graph: the verified root and the file's bytes.
pub(crate) struct Container<'a> {
    pub path: &'a str,
    pub bytes: &'a [u8],
    pub graph: tosa::TosaGraph<'a>,
    consts: Constants<'a>,
}

impl<'a> Container<'a> {
    /// Checks the identifier, verifies the flatbuffer once (afterwards every generated accessor
    /// reads in bounds) and refuses versions newer than this reader.
    pub fn open(path: &'a str, blob: &'a Blob) -> Result<Self, LoadError> {
        let bytes: &'a [u8] = (**blob).as_ref();
        if bytes.get(4..8) != Some(b"TOSA".as_slice()) {
            return Err(crate::format::unknown_format(path, "file identifier is not \"TOSA\"".into()));
        }
        let graph = tosa::root_as_tosa_graph_with_opts(&verifier_options(), bytes)
            .map_err(|e| malformed(path, format!("the graph flatbuffer does not verify: {e}")))?;
        let c = Self { path, bytes, graph, consts: Constants::new(blob) };
        c.check_versions()?;
        Ok(c)
    }

    fn check_versions(&self) -> Result<(), LoadError> {
        let v = self.graph.version();
        let (major, minor) = (v._major(), v._minor());
        if major != NEWEST.0 || minor > NEWEST.1 || minor < 0 {
            return Err(self.malformed(format!(
                "TOSA version {major}.{minor}.{}{} is not supported: nnrt reads TOSA 1.0 and the 1.1 draft",
                v._patch(),
                if v._draft() { "d" } else { "" }
            )));
        }
        if let Some(compat) = self.graph.compatibility() {
            if let Some(m) = compat.min_reader_version() {
                let need = (m._major(), m._minor(), m._micro());
                if need > READER_VERSION {
                    return Err(self.malformed(format!(
                        "the file needs a reader of serialization library {}.{}.{} or newer (min_reader_version); nnrt's TOSA reader follows {}.{}.{}",
                        need.0, need.1, need.2, READER_VERSION.0, READER_VERSION.1, READER_VERSION.2
                    )));
                }
            }
            let features = compat.features();
            if features != 0 {
                let mut names = Vec::new();
                for bit in 1..64u32 {
                    if features & (1u64 << bit) != 0 {
                        names.push(tosa::CompatibilityFeature(bit).variant_name().map_or_else(|| format!("feature bit {bit}"), str::to_string));
                    }
                }
                return Err(self.malformed(format!("the file needs compatibility features nnrt does not support: {}", names.join(", "))));
            }
        }
        Ok(())
    }

    pub fn malformed(&self, reason: impl Into<String>) -> LoadError {
        malformed(self.path, reason)
    }

    /// The constant bytes of `t` (`len` of them), or `None` when the tensor holds no data.
    pub fn tensor_data(&self, t: &tosa::TosaTensor<'a>, len: usize, what: &str) -> Result<Option<ConstData>, LoadError> {
        if let Some(d) = t.data().filter(|d| !d.is_empty()) {
            let bytes = d.bytes();
            if bytes.len() < len {
                return Err(self.malformed(format!("{what}: holds {} bytes of data, its type and shape need {len}", bytes.len())));
            }
            return self.consts.slice(&bytes[..len]).map(Some).ok_or_else(|| self.malformed(format!("{what}: data outside the file")));
        }
        if t.offset() > 1 {
            let (offset, size) = (t.offset(), t.size());
            let end = offset.checked_add(size).filter(|&e| e <= self.bytes.len() as u64);
            if end.is_none() || size < len as u64 {
                return Err(self.malformed(format!(
                    "{what}: its data at offset {offset}, size {size} lies outside the file ({} bytes) or is shorter than the {len} bytes it needs",
                    self.bytes.len()
                )));
            }
            return self.consts.range(offset as usize, len).map(Some).ok_or_else(|| self.malformed(format!("{what}: data outside the file")));
        }
        Ok(None)
    }
}
