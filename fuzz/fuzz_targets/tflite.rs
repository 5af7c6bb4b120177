//! A TFLite or Circle file from bytes: loading must give a model or a typed error, never a
//! panic, an abort or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Through the frontend: detection by the file identifier, then the TFLite/Circle reader.
    let _ = nnrt_loaders::format::load("fuzz.tflite", std::sync::Arc::new(data.to_vec()));
});
