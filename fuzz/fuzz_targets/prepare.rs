//! A TFLite file from bytes, loaded, validated, prepared on the CPU backend under small limits
//! (64 MiB of tensors, 1,000 loop iterations, one thread) and run once on zero inputs: every
//! stage gives a typed error or a result, never a panic, an abort, a hang or an allocation over
//! the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nnrt_core::{Backend, Config, Prepared};

fuzz_target!(|data: &[u8]| {
    let Ok(model) = nnrt_loaders::tflite::load_bytes("fuzz.tflite", data.to_vec()) else { return };
    if nnrt_core::validate_model(&model).is_err() {
        return;
    }
    let mut config = Config::default();
    config.set("MEMORY_LIMIT", "64M");
    config.set("WHILE_MAX_ITERATIONS", "1000");
    let Some(entry) = model.subgraphs.first() else { return };
    let dims: Vec<Vec<usize>> = entry.inputs.iter().map(|&i| entry.operand(i).default_dims.clone()).collect();
    // Inputs the model declares too large for the limit are refused at prepare; checking
    // here too keeps the fuzzer's own zero buffers small.
    if dims.iter().any(|d| d.iter().try_fold(1usize, |a, &x| a.checked_mul(x)).is_none_or(|n| n > 1 << 22)) {
        return;
    }
    let backends: Vec<Box<dyn Backend>> = vec![Box::new(nnrt_backend_cpu::CpuBackend::new())];
    let Ok(mut p) = Prepared::new(&model, nnrt_core::SubgraphId::new(0), &dims, backends, &config, 1) else { return };
    let _ = p.run();
});
