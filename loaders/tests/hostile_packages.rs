//! Packages built to hurt the host: zip bombs, two MANIFESTs, entries named twice, paths out of
//! the package, FIFOs and devices where files belong (links to regular files elsewhere are
//! fine: packages link their models). Each must end at once in a typed error
//! that says what is wrong, never a hang, a huge allocation or a panic.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nnrt_core::LoadError;
use zip::write::SimpleFileOptions;

/// A small real model (a FULLY_CONNECTED), shipped with the loader's tests.
fn model_bytes() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dense_fc.tflite")).unwrap()
}

fn manifest(models: &str, configs: &str) -> String {
    format!(r#"{{"major-version":"1","minor-version":"0","patch-version":"0","configs":[{configs}],"models":[{models}],"model-types":["tflite"]}}"#)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nnrt-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a zip of `entries` (name, bytes, deflated?) to `path`.
fn write_zip(path: &Path, entries: &[(&str, &[u8], bool)]) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes, deflate) in entries {
        let method = if *deflate { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
        w.start_file(*name, SimpleFileOptions::default().compression_method(method).large_file(bytes.len() > u32::MAX as usize)).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap();
}

/// Loads `path`, which must fail quickly with an error whose text holds `want`.
fn refused(path: &Path, want: &str) -> LoadError {
    let start = Instant::now();
    let e = nnrt_loaders::load(path).err().unwrap_or_else(|| panic!("{} loaded", path.display()));
    assert!(start.elapsed() < Duration::from_secs(2), "took {:?}", start.elapsed());
    assert!(e.to_string().contains(want), "{e}");
    e
}

#[test]
fn a_zip_bomb_is_refused_before_it_is_inflated() {
    let d = scratch("bomb");
    // 64 MiB of zeros deflate to ~64 KiB: a ratio of 1,000, ten times what any model has.
    let mut bomb = model_bytes();
    bomb.resize(64 << 20, 0);
    let m = manifest(r#""model.tflite""#, "");
    write_zip(&d.join("p.zip"), &[("metadata/MANIFEST", m.as_bytes(), true), ("model.tflite", &bomb, true)]);
    refused(&d.join("p.zip"), "allowed for it");
    // The same model stored (not compressed) and compressed normally loads.
    let m = manifest(r#""model.tflite""#, "");
    write_zip(&d.join("ok.zip"), &[("metadata/MANIFEST", m.as_bytes(), true), ("model.tflite", &model_bytes(), true)]);
    assert!(nnrt_loaders::load(d.join("ok.zip")).is_ok());
}

#[test]
fn a_large_manifest_is_refused() {
    let d = scratch("bigmanifest");
    let mut m = manifest(r#""model.tflite""#, "").into_bytes();
    m.extend(std::iter::repeat_n(b' ', 2 << 20));
    write_zip(&d.join("p.zip"), &[("metadata/MANIFEST", &m, true), ("model.tflite", &model_bytes(), false)]);
    refused(&d.join("p.zip"), "allowed for it");
}

#[test]
fn two_manifests_or_an_entry_named_twice_are_refused() {
    let d = scratch("twice");
    let m = manifest(r#""model.tflite""#, "");
    let model = model_bytes();
    write_zip(&d.join("two.zip"), &[("metadata/MANIFEST", m.as_bytes(), false), ("pkg/metadata/MANIFEST", m.as_bytes(), false), ("model.tflite", &model, false)]);
    refused(&d.join("two.zip"), "MANIFESTs");
    // The zip writer refuses a name twice: write `model.tflitX`, then rename it in place.
    write_zip(&d.join("dup.zip"), &[("metadata/MANIFEST", m.as_bytes(), false), ("model.tflite", &model, false), ("model.tflitX", &model, false)]);
    let mut bytes = std::fs::read(d.join("dup.zip")).unwrap();
    let pat = b"model.tflitX";
    let hits: Vec<usize> = (0..bytes.len() - pat.len()).filter(|&k| &bytes[k..k + pat.len()] == pat).collect();
    assert_eq!(hits.len(), 2, "one local header and one central directory entry");
    for k in hits {
        bytes[k + pat.len() - 1] = b'e';
    }
    std::fs::write(d.join("dup.zip"), bytes).unwrap();
    refused(&d.join("dup.zip"), "twice");
}

#[test]
fn configs_and_models_must_stay_inside_the_package() {
    for (models, configs) in [(r#""model.tflite""#, r#""/dev/zero""#), (r#""model.tflite""#, r#""../../../dev/zero""#), (r#""../model.tflite""#, ""), (r#""/etc/passwd""#, "")] {
        let d = scratch("inside");
        std::fs::create_dir_all(d.join("metadata")).unwrap();
        std::fs::write(d.join("metadata/MANIFEST"), manifest(models, configs)).unwrap();
        std::fs::write(d.join("model.tflite"), model_bytes()).unwrap();
        refused(&d, "inside the package");
    }
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_are_not_read() {
    let d = scratch("fifo");
    std::fs::create_dir_all(d.join("metadata")).unwrap();
    std::fs::write(d.join("metadata/MANIFEST"), manifest(r#""model.tflite""#, r#""x.cfg""#)).unwrap();
    std::fs::write(d.join("model.tflite"), model_bytes()).unwrap();
    // A config that is a FIFO would block a reader forever.
    let fifo = d.join("metadata/x.cfg");
    if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        refused(&d, "not a regular file");
        // A bare path that is a FIFO, too.
        refused(&fifo, "not a regular file");
        std::fs::remove_file(&fifo).unwrap();
    } else {
        eprintln!("skipped the FIFO cases: mkfifo is not available");
    }
    // A config that links to a device.
    std::os::unix::fs::symlink("/dev/zero", &fifo).unwrap();
    refused(&d, "not a regular file");
    // The same config as a file of the package loads.
    std::fs::remove_file(&fifo).unwrap();
    std::fs::write(&fifo, "NUM_THREADS=1\n").unwrap();
    assert_eq!(nnrt_loaders::load(&d).unwrap().config, vec![("NUM_THREADS".to_string(), "1".to_string())]);
}
