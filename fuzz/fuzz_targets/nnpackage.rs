//! An nnpackage zip from bytes (written to a file, as packages arrive): the zip reader, MANIFEST,
//! cfg files and the models inside must give a package or a typed error, never a panic, an
//! abort, a hang or an allocation past the package's caps.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("nnrt-fuzz-{}.nnpkg.zip", std::process::id()));
    if std::fs::write(&path, data).is_ok() {
        let _ = nnrt_loaders::load(&path);
    }
});
