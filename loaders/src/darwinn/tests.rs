//! Reader tests on built inputs (the corpus' real packages are checked in
//! `loaders/tests/darwinn_corpus.rs`).

use super::*;

#[test]
fn options_without_a_package_say_what_is_expected() {
    let opts = nnrt_plugin_sdk::flexbuffers::build::map(&[("1", nnrt_plugin_sdk::flexbuffers::build::Value::Int(0))]);
    let e = read_options(&opts).unwrap_err();
    assert!(e.to_string().contains("no key \"4\""), "{e}");
    assert!(read_options(&[]).is_err());
    assert!(read_options(b"not a flexbuffer at all").is_err());
}

#[test]
fn a_package_needs_its_identifier() {
    let e = read_package(b"\x08\0\0\0TFL3\0\0\0\0").unwrap_err();
    assert!(e.to_string().contains("\"DWN1\"") && e.to_string().contains("TFL3"), "{e}");
    assert!(read_package(b"DW").unwrap_err().to_string().contains("only 2 bytes"));
}

/// A real package with any one byte changed, or cut anywhere, reads or fails with an error:
/// never a panic (the fuzz target `darwinn` does the same at random).
#[test]
fn damaged_packages_are_errors() {
    let shared = std::env::var_os("NNRT_SHARED").map(std::path::PathBuf::from).unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let path = shared.join("corpus/darwinn/split_concat/package.dwn");
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!("skipped: {} not found", path.display());
        return;
    };
    assert!(read_package(&bytes).is_ok());
    for cut in (0..bytes.len()).step_by(97) {
        let _ = read_package(&bytes[..cut]);
    }
    for at in (0..bytes.len()).step_by(13) {
        let mut b = bytes.clone();
        b[at] ^= 0xa5;
        let _ = read_package(&b);
    }
}
