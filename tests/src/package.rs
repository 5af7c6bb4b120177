//! nnpackages around test models: a folder or a zip (stored or deflated, optionally inside one
//! top-level folder) holding `metadata/MANIFEST`, cfg files and models. Plus [`TempDir`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

/// A MANIFEST 1.2 naming `models` as `(file, type)` pairs and the cfg files under `metadata/`.
pub fn manifest(models: &[(&str, &str)], configs: &[&str]) -> String {
    let list = |v: Vec<&str>| v.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ");
    format!(
        "{{\n  \"major-version\": \"1\",\n  \"minor-version\": \"2\",\n  \"patch-version\": \"0\",\n  \"configs\": [{}],\n  \"models\": [{}],\n  \"model-types\": [{}]\n}}\n",
        list(configs.to_vec()),
        list(models.iter().map(|m| m.0).collect()),
        list(models.iter().map(|m| m.1).collect()),
    )
}

/// How a zip stores its entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZipMethod {
    /// No compression (entries can be memory-mapped in place).
    Stored,
    /// Deflate.
    Deflated,
}

/// The files of an nnpackage, by path relative to its root, in the order they are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NnPackage {
    /// `(relative path, bytes)`, e.g. `("metadata/MANIFEST", …)`, `("model.tflite", …)`.
    pub files: Vec<(String, Vec<u8>)>,
}

impl NnPackage {
    /// A package holding one TFLite model, `file`, named by a MANIFEST 1.2 without configs.
    pub fn single(file: &str, model: Vec<u8>) -> NnPackage {
        NnPackage::default().with_file("metadata/MANIFEST", manifest(&[(file, "tflite")], &[]).into_bytes()).with_file(file, model)
    }

    /// Adds or replaces a file.
    pub fn with_file(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> NnPackage {
        let bytes = bytes.into();
        match self.files.iter_mut().find(|(p, _)| p == path) {
            Some(entry) => entry.1 = bytes,
            None => self.files.push((path.into(), bytes)),
        }
        self
    }

    /// Replaces `metadata/MANIFEST`.
    pub fn with_manifest(self, text: &str) -> NnPackage {
        self.with_file("metadata/MANIFEST", text.as_bytes().to_vec())
    }

    /// Removes a file.
    pub fn without(mut self, path: &str) -> NnPackage {
        self.files.retain(|(p, _)| p != path);
        self
    }

    /// Writes the package as a folder at `root` (created; existing files are overwritten).
    pub fn write_dir(&self, root: &Path) -> std::io::Result<()> {
        for (path, bytes) in &self.files {
            let p = root.join(path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(p, bytes)?;
        }
        Ok(())
    }

    /// The package as zip bytes; `top_folder` puts every entry under one folder, as `zip -r`
    /// of a package folder does.
    pub fn to_zip(&self, method: ZipMethod, top_folder: Option<&str>) -> zip::result::ZipResult<Vec<u8>> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let method = match method {
            ZipMethod::Stored => CompressionMethod::Stored,
            ZipMethod::Deflated => CompressionMethod::Deflated,
        };
        let options = SimpleFileOptions::default().compression_method(method);
        let prefix = top_folder.map(|f| format!("{}/", f.trim_end_matches('/'))).unwrap_or_default();
        if !prefix.is_empty() {
            w.add_directory(prefix.as_str(), options)?;
        }
        for (path, bytes) in &self.files {
            w.start_file(format!("{prefix}{path}"), options)?;
            w.write_all(bytes)?;
        }
        Ok(w.finish()?.into_inner())
    }
}

/// A fresh folder under the system temp dir, removed (with its contents) on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `<tmp>/nnrt-tests-<label>-<pid>-<n>`.
    pub fn new(label: &str) -> std::io::Result<TempDir> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("nnrt-tests-{label}-{}-{n}", std::process::id()));
        if p.exists() {
            std::fs::remove_dir_all(&p)?;
        }
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zip_variants_hold_the_files() {
        let pkg = NnPackage::single("m.tflite", vec![1, 2, 3]);
        for method in [ZipMethod::Stored, ZipMethod::Deflated] {
            for top in [None, Some("pkg")] {
                let bytes = pkg.to_zip(method, top).unwrap();
                let z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
                let names: Vec<&str> = z.file_names().collect();
                let want = format!("{}metadata/MANIFEST", top.map(|t| format!("{t}/")).unwrap_or_default());
                assert!(names.contains(&want.as_str()), "{names:?}");
            }
        }
    }
}
