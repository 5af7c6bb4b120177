//! nnpackages: a folder or a zip (stored or deflated, with or without one top-level folder)
//! holding `metadata/MANIFEST` (JSON naming the models), optional `metadata/*.cfg` configs and
//! the model files. A bare model file is accepted too. Every model goes through the frontend
//! dispatch of [`crate::format`]: by its MANIFEST `model-types` entry in a package, by its bytes
//! otherwise.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nnrt_core::{Blob, LoadError, Model};
use serde_json::Value;

use crate::format::{self, Format, FormatInfo, Loaded};

/// The parsed `metadata/MANIFEST`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// `major-version`.`minor-version`.`patch-version`.
    pub version: (u32, u32, u32),
    /// Config files (under `metadata/`) applied to the session, in order.
    pub configs: Vec<String>,
    /// Model file names, relative to the package root.
    pub models: Vec<String>,
    /// Each model's type (`tflite`, `circle`, `pte`, `tosa`).
    pub model_types: Vec<String>,
    /// 1.3: the package's inputs as `model:subgraph:input` triples.
    pub pkg_inputs: Vec<IoRef>,
    /// 1.3: the package's outputs as `model:subgraph:output` triples.
    pub pkg_outputs: Vec<IoRef>,
    /// 1.3: edges from one model's output to other models' inputs.
    pub model_connect: Vec<(IoRef, Vec<IoRef>)>,
}

/// One tensor of one model of a package: `model:subgraph:io` in the MANIFEST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRef {
    /// Index into the MANIFEST's `models`.
    pub model: usize,
    /// Subgraph index in that model.
    pub subgraph: usize,
    /// Input or output index of that subgraph.
    pub io: usize,
}

/// A loaded package: its models and the configuration its cfg files set.
#[derive(Clone, Debug, Default)]
pub struct Package {
    /// The MANIFEST (a synthetic one for a bare model file).
    pub manifest: Manifest,
    /// One IR model per MANIFEST model, in order.
    pub models: Vec<Model>,
    /// `key=value` pairs from the cfg files, in order.
    pub config: Vec<(String, String)>,
    /// Names of files under the package's `custom_op/` folder (loaded only when allowed).
    pub custom_op_files: Vec<String>,
    /// What each model's frontend read about its file (format, version, ...), in model order.
    pub formats: Vec<FormatInfo>,
}

fn pkg_err(path: &str, reason: impl Into<String>) -> LoadError {
    LoadError::Package { path: path.to_string(), reason: reason.into() }
}

fn io_err(path: &Path, error: std::io::Error) -> LoadError {
    LoadError::Io { path: path.display().to_string(), error }
}

/// Loads a package folder, a package zip, or a bare model file (its format read from its bytes).
pub fn load(path: impl AsRef<Path>) -> Result<Package, LoadError> {
    let path = path.as_ref();
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if meta.is_dir() {
        return load_dir(path);
    }
    if !meta.is_file() {
        return Err(pkg_err(&path.display().to_string(), "not a regular file (a FIFO, a device or a socket cannot be a model)"));
    }
    let blob = map_file(path)?;
    let bytes: &[u8] = (*blob).as_ref();
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        return load_zip(path, blob);
    }
    let Loaded { model, info } = format::load(&path.display().to_string(), blob)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Package {
        manifest: Manifest { version: (1, 0, 0), models: vec![name], model_types: vec![info.format.model_type().into()], ..Manifest::default() },
        models: vec![model],
        formats: vec![info],
        ..Package::default()
    })
}

/// Memory-maps a file (the model's weights are then borrowed, never copied).
fn map_file(path: &Path) -> Result<Blob, LoadError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let len = file.metadata().map_err(|e| io_err(path, e))?.len();
    if len == 0 {
        return Err(format::unknown_format(&path.display().to_string(), "the file is empty".into()));
    }
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes change if another process truncates
    // or rewrites the file while it is mapped. Model files are read-only inputs here (as in every
    // runtime that maps them: TFLite, onert); all reads go through bounds-checked slices and the
    // flatbuffers verifier. (The loader's other `unsafe` is the `Follow` impl in
    // `fbs/circle.rs`, which the flatbuffers API requires.)
    match unsafe { memmap2::Mmap::map(&file) } {
        Ok(map) => Ok(Arc::new(map) as Blob),
        // Some file systems cannot map; reading is always possible.
        Err(_) => read_all(path, file).map(|v| Arc::new(v) as Blob),
    }
}

fn read_all(path: &Path, mut file: File) -> Result<Vec<u8>, LoadError> {
    let mut v = Vec::new();
    file.read_to_end(&mut v).map_err(|e| io_err(path, e))?;
    Ok(v)
}

/// The most bytes a MANIFEST or a cfg file may hold (real ones hold a few hundred).
pub const MAX_METADATA_BYTES: u64 = 1 << 20;

/// The most bytes one zip entry may inflate to: a flatbuffer model cannot exceed 2 GiB.
pub const MAX_ENTRY_BYTES: u64 = 2 << 30;

/// The most a zip entry may inflate relative to its compressed size (models compress 1-10x;
/// a zip bomb, about 1,000x).
pub const MAX_INFLATE_RATIO: u64 = 100;

/// Checks that `p`, named by the MANIFEST as `what`, is a regular file (after following links:
/// a package may link its models from elsewhere, but never to a FIFO or a device) and returns
/// its size. The MANIFEST's paths themselves stay inside the package ([`parse_manifest`]).
fn package_file(p: &Path, what: &str) -> Result<u64, LoadError> {
    let shown = p.display().to_string();
    let meta = std::fs::metadata(p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => pkg_err(&shown, format!("{what} named in MANIFEST is missing")),
        _ => io_err(p, e),
    })?;
    if !meta.is_file() {
        return Err(pkg_err(&shown, format!("{what} is not a regular file (a FIFO, a device or a folder cannot be read as one)")));
    }
    Ok(meta.len())
}

/// Reads a small text file of the package (MANIFEST, cfg), at most [`MAX_METADATA_BYTES`].
fn read_metadata(p: &Path, what: &str) -> Result<Vec<u8>, LoadError> {
    let len = package_file(p, what)?;
    if len > MAX_METADATA_BYTES {
        return Err(pkg_err(&p.display().to_string(), format!("{what} has {len} bytes; at most {MAX_METADATA_BYTES} are read")));
    }
    std::fs::read(p).map_err(|e| io_err(p, e))
}

fn load_dir(root: &Path) -> Result<Package, LoadError> {
    let manifest_path = root.join("metadata").join("MANIFEST");
    if !manifest_path.exists() {
        return Err(pkg_err(
            &root.display().to_string(),
            "not an nnpackage: metadata/MANIFEST is missing (a package folder holds metadata/MANIFEST and the model files)",
        ));
    }
    let text = read_metadata(&manifest_path, "metadata/MANIFEST")?;
    let manifest = parse_manifest(&manifest_path.display().to_string(), &text)?;
    let mut config = Vec::new();
    for cfg in &manifest.configs {
        let p = root.join("metadata").join(cfg);
        let text = read_metadata(&p, &format!("config file '{cfg}'"))?;
        config.extend(parse_cfg(&String::from_utf8_lossy(&text)));
    }
    let (mut models, mut formats) = (Vec::new(), Vec::new());
    for (name, ty) in manifest.models.iter().zip(&manifest.model_types) {
        let p: PathBuf = root.join(name);
        package_file(&p, &format!("model file '{name}'"))?;
        let blob = map_file(&p)?;
        let Loaded { model, info } = format::load_declared(&p.display().to_string(), ty, blob)?;
        models.push(model);
        formats.push(info);
    }
    let custom_op_files = match std::fs::read_dir(root.join("custom_op")) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    Ok(Package { manifest, models, config, custom_op_files, formats })
}

fn load_zip(path: &Path, blob: Blob) -> Result<Package, LoadError> {
    let shown = path.display().to_string();
    let bytes: &[u8] = (*blob).as_ref();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| pkg_err(&shown, format!("not a readable zip: {e}")))?;
    let names: Vec<String> = zip.file_names().map(String::from).collect();
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(pkg_err(&shown, format!("the zip holds '{dup}' twice; a package names each file once")));
    }
    // The zip reader keeps one entry per name: count the central directory's own records.
    if let Some(listed) = central_directory_entries(bytes).filter(|&n| n != names.len()) {
        return Err(pkg_err(&shown, format!("the zip's directory lists {listed} entries under {} names: a name twice; a package names each file once", names.len())));
    }
    let manifests: Vec<&String> = names.iter().filter(|n| n.ends_with("metadata/MANIFEST")).collect();
    let manifest_name = match manifests.as_slice() {
        [] => return Err(pkg_err(&shown, "not an nnpackage: the zip holds no metadata/MANIFEST")),
        [one] => (*one).clone(),
        more => return Err(pkg_err(&shown, format!("the zip holds {} MANIFESTs ({}); a package has one", more.len(), more.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")))),
    };
    let prefix = manifest_name.trim_end_matches("metadata/MANIFEST").to_string();
    if !prefix.is_empty() && prefix.trim_end_matches('/').contains('/') {
        return Err(pkg_err(&shown, format!("metadata/MANIFEST is nested too deep ('{manifest_name}'); expected at the root or in one top-level folder")));
    }
    // `cap`: the most bytes the entry may inflate to; `check_head`: a look at its first 8
    // bytes before the rest is inflated (a model's file identifier).
    let mut read_entry = |name: &str, what: &str, cap: u64, check_head: &dyn Fn(&[u8]) -> Result<(), LoadError>| -> Result<Blob, LoadError> {
        let full = format!("{prefix}{name}");
        let inner = format!("{shown}!{full}");
        let mut f = zip.by_name(&full).map_err(|_| pkg_err(&inner, format!("{what} is missing from the zip")))?;
        if f.is_dir() {
            return Err(pkg_err(&inner, format!("{what} is a folder in the zip, not a file")));
        }
        if f.compression() == zip::CompressionMethod::Stored {
            // A stored entry is borrowed from the file's bytes as it is: no copy.
            let start = f.data_start() as usize;
            let len = f.size() as usize;
            if let Some(end) = start.checked_add(len).filter(|&e| e <= bytes.len()) {
                let _ = end;
                return Ok(Arc::new(SubBlob { parent: blob.clone(), start, len }) as Blob);
            }
            return Err(pkg_err(&inner, "entry extends past the end of the zip"));
        }
        let cap = cap.min(f.compressed_size().saturating_mul(MAX_INFLATE_RATIO).max(4096));
        if f.size() > cap {
            return Err(pkg_err(&inner, format!("{what} would inflate to {} bytes, more than the {cap} allowed for it", f.size())));
        }
        let mut v = Vec::new();
        v.try_reserve_exact(f.size() as usize).map_err(|e| pkg_err(&inner, format!("cannot hold {} bytes: {e}", f.size())))?;
        // The declared size is the archive's word: read no more than the cap whatever it says.
        let mut limited = (&mut f).take(cap + 1);
        let mut head = [0u8; 8];
        let n = read_up_to(&mut limited, &mut head).map_err(|e| pkg_err(&inner, format!("cannot decompress: {e}")))?;
        check_head(&head[..n])?;
        v.extend_from_slice(&head[..n]);
        limited.read_to_end(&mut v).map_err(|e| pkg_err(&inner, format!("cannot decompress: {e}")))?;
        if v.len() as u64 > cap {
            return Err(pkg_err(&inner, format!("{what} inflates past the {cap} bytes allowed for it (a zip bomb?)")));
        }
        Ok(Arc::new(v) as Blob)
    };
    let any = |_: &[u8]| Ok(());
    let manifest_blob = read_entry("metadata/MANIFEST", "metadata/MANIFEST", MAX_METADATA_BYTES, &any)?;
    let manifest = parse_manifest(&format!("{shown}!{manifest_name}"), (*manifest_blob).as_ref())?;
    let mut config = Vec::new();
    for cfg in &manifest.configs {
        let b = read_entry(&format!("metadata/{cfg}"), &format!("config file '{cfg}' named in MANIFEST"), MAX_METADATA_BYTES, &any)?;
        config.extend(parse_cfg(&String::from_utf8_lossy((*b).as_ref())));
    }
    let (mut models, mut formats) = (Vec::new(), Vec::new());
    for (name, ty) in manifest.models.iter().zip(&manifest.model_types) {
        let sniff = |head: &[u8]| format::check_declared(&format!("{shown}!{prefix}{name}"), ty, head).map(|_| ());
        let b = read_entry(name, &format!("model file '{name}' named in MANIFEST"), MAX_ENTRY_BYTES, &sniff)?;
        let Loaded { model, info } = format::load_declared(&format!("{shown}!{prefix}{name}"), ty, b)?;
        models.push(model);
        formats.push(info);
    }
    let custom_prefix = format!("{prefix}custom_op/");
    let custom_op_files = names
        .iter()
        .filter_map(|n| n.strip_prefix(&custom_prefix))
        .filter(|n| !n.is_empty() && !n.ends_with('/'))
        .map(String::from)
        .collect();
    Ok(Package { manifest, models, config, custom_op_files, formats })
}

/// The entry count of a zip's end-of-central-directory record (`None` when it cannot be read
/// or is a ZIP64 placeholder).
fn central_directory_entries(bytes: &[u8]) -> Option<usize> {
    // The record is 22 bytes plus a comment of at most 65,535 bytes, at the end of the file.
    let from = bytes.len().saturating_sub(22 + 65_535);
    let at = bytes[from..].windows(4).rposition(|w| w == b"PK\x05\x06")? + from;
    let total = u16::from_le_bytes(bytes.get(at + 10..at + 12)?.try_into().ok()?);
    (total != u16::MAX).then_some(total as usize)
}

/// Reads until `buf` is full or the reader ends; returns how many bytes were read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A byte range of a parent blob (a stored zip entry).
struct SubBlob {
    parent: Blob,
    start: usize,
    len: usize,
}

impl AsRef<[u8]> for SubBlob {
    fn as_ref(&self) -> &[u8] {
        &(*self.parent).as_ref()[self.start..self.start + self.len]
    }
}

/// Parses `key=value` lines of a cfg file (`#` comments and blank lines skipped).
pub fn parse_cfg(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .collect()
}

fn version_field(path: &str, v: &Value, key: &str) -> Result<u32, LoadError> {
    match v.get(key) {
        Some(Value::String(s)) => s.trim().parse().map_err(|_| pkg_err(path, format!("MANIFEST '{key}' must be a number, got \"{s}\""))),
        Some(Value::Number(n)) => n.as_u64().map(|n| n as u32).ok_or_else(|| pkg_err(path, format!("MANIFEST '{key}' must be a non-negative integer"))),
        None if key == "patch-version" => Ok(0),
        None => Err(pkg_err(path, format!("MANIFEST is missing '{key}'"))),
        Some(other) => Err(pkg_err(path, format!("MANIFEST '{key}' must be a number, got {other}"))),
    }
}

fn string_list(path: &str, v: &Value, key: &str) -> Result<Vec<String>, LoadError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(String::from).ok_or_else(|| pkg_err(path, format!("MANIFEST '{key}' must be a list of strings"))))
            .collect(),
        Some(_) => Err(pkg_err(path, format!("MANIFEST '{key}' must be a list of strings"))),
    }
}

fn io_ref(path: &str, key: &str, s: &str) -> Result<IoRef, LoadError> {
    let parts: Vec<&str> = s.split(':').collect();
    let nums: Option<Vec<usize>> = parts.iter().map(|p| p.trim().parse().ok()).collect();
    match nums.as_deref() {
        Some([m, g, i]) => Ok(IoRef { model: *m, subgraph: *g, io: *i }),
        _ => Err(pkg_err(path, format!("MANIFEST '{key}' entry \"{s}\" must be model:subgraph:index"))),
    }
}

/// Parses a MANIFEST (versions 1.0 to 1.3) and checks it names at least one model, each with a type.
pub fn parse_manifest(path: &str, bytes: &[u8]) -> Result<Manifest, LoadError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| pkg_err(path, format!("MANIFEST is not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(pkg_err(path, "MANIFEST must be a JSON object"));
    }
    let version = (version_field(path, &v, "major-version")?, version_field(path, &v, "minor-version")?, version_field(path, &v, "patch-version")?);
    if version.0 != 1 || version.1 > 3 {
        return Err(pkg_err(path, format!("MANIFEST version {}.{}.{} is not supported (1.0 to 1.3 are)", version.0, version.1, version.2)));
    }
    let models = string_list(path, &v, "models")?;
    if models.is_empty() {
        return Err(pkg_err(path, "MANIFEST 'models' names no model"));
    }
    let mut model_types = string_list(path, &v, "model-types")?;
    if model_types.is_empty() {
        // 1.0 packages may omit types: derive them from the extensions.
        for m in &models {
            let format = Format::from_file_name(m).ok_or_else(|| pkg_err(path, format!("MANIFEST has no 'model-types' and '{m}' has no known extension")))?;
            model_types.push(format.model_type().to_string());
        }
    }
    if model_types.len() != models.len() {
        return Err(pkg_err(path, format!("MANIFEST lists {} models but {} model-types", models.len(), model_types.len())));
    }
    let configs = string_list(path, &v, "configs")?;
    for (what, p) in models.iter().map(|m| ("model", m)).chain(configs.iter().map(|c| ("config", c))) {
        if !stays_inside(p) {
            return Err(pkg_err(path, format!("MANIFEST {what} path '{p}' must stay inside the package (no '..', no absolute path)")));
        }
    }
    let refs = |key: &str| -> Result<Vec<IoRef>, LoadError> {
        let list = string_list(path, &v, key)?;
        let refs = list.iter().map(|s| io_ref(path, key, s)).collect::<Result<Vec<_>, _>>()?;
        if let Some(r) = refs.iter().find(|r| r.model >= models.len()) {
            return Err(pkg_err(path, format!("MANIFEST '{key}' refers to model {} but only {} are listed", r.model, models.len())));
        }
        Ok(refs)
    };
    let pkg_inputs = refs("pkg-inputs")?;
    let pkg_outputs = refs("pkg-outputs")?;
    let mut model_connect = Vec::new();
    match v.get("model-connect") {
        None | Some(Value::Null) => {}
        Some(Value::Array(edges)) => {
            for e in edges {
                let from = e.get("from").and_then(Value::as_str).ok_or_else(|| pkg_err(path, "MANIFEST 'model-connect' entries need a \"from\" string"))?;
                let to = string_list(path, e, "to")?;
                let from = io_ref(path, "model-connect", from)?;
                let to = to.iter().map(|s| io_ref(path, "model-connect", s)).collect::<Result<Vec<_>, _>>()?;
                model_connect.push((from, to));
            }
        }
        Some(_) => return Err(pkg_err(path, "MANIFEST 'model-connect' must be a list")),
    }
    Ok(Manifest { version, configs, models, model_types, pkg_inputs, pkg_outputs, model_connect })
}

/// Whether a path the MANIFEST names stays inside the package: relative, no `..` component, no
/// drive or backslash tricks.
fn stays_inside(p: &str) -> bool {
    !p.is_empty() && !p.starts_with(['/', '\\']) && !p.contains(':') && !p.split(['/', '\\']).any(|c| c == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_versions_and_errors() {
        let m = parse_manifest("M", br#"{"major-version":"1","minor-version":"2","patch-version":"0","configs":[],"models":["a.tflite"],"model-types":["tflite"]}"#).unwrap();
        assert_eq!(m.version, (1, 2, 0));
        assert_eq!(m.models, vec!["a.tflite"]);
        let m = parse_manifest("M", br#"{"major-version":"1","minor-version":"3","patch-version":"0","models":["a.circle","b.circle"],"model-types":["circle","circle"],"pkg-inputs":["0:0:0"],"pkg-outputs":["1:0:0"],"model-connect":[{"from":"0:0:0","to":["1:0:0"]}]}"#).unwrap();
        assert_eq!(m.pkg_outputs, vec![IoRef { model: 1, subgraph: 0, io: 0 }]);
        assert_eq!(m.model_connect.len(), 1);
        for bad in [&b"{"[..], b"[]", br#"{"major-version":"1","minor-version":"0","models":[]}"#, br#"{"major-version":"2","minor-version":"0","models":["a.tflite"]}"#, br#"{"major-version":"1","minor-version":"0","models":["a.tflite"],"model-types":["tflite","tflite"]}"#] {
            assert!(parse_manifest("M", bad).is_err());
        }
    }

    #[test]
    fn cfg_lines() {
        assert_eq!(parse_cfg("# c\nBACKENDS=cpu\n\nNUM_THREADS = 2\n"), vec![("BACKENDS".into(), "cpu".into()), ("NUM_THREADS".into(), "2".into())]);
    }
}
