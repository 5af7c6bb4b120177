//! A TFLite or Circle file from bytes: loading must give a model or a typed error, never a
//! panic, an abort or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = nnrt_loaders::tflite::load_bytes("fuzz.tflite", data.to_vec());
});
