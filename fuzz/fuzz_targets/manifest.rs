//! MANIFEST and cfg text: parsed into a manifest (or a typed error) and key=value pairs, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = nnrt_loaders::nnpackage::parse_manifest("MANIFEST", data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = nnrt_loaders::nnpackage::parse_cfg(text);
    }
});
