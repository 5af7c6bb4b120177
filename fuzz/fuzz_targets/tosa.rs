//! A TOSA graph from bytes: loading (the verified flatbuffer, its versions, every region's
//! tensors, shapes and operators, COND_IF / WHILE_LOOP regions) gives a model or a typed error;
//! a model that loads is validated and prepared on the CPU backend under small limits (64 MiB of
//! tensors, one thread) and run once on zero inputs. Never a panic, an abort, a hang or an
//! allocation over the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nnrt_core::{Backend, Config, Prepared};

fuzz_target!(|data: &[u8]| {
    let Ok(loaded) = nnrt_loaders::tosa::load("fuzz.tosa", std::sync::Arc::new(data.to_vec())) else { return };
    let model = loaded.model;
    if nnrt_core::validate_model(&model).is_err() {
        return;
    }
    let mut config = Config::default();
    config.set("MEMORY_LIMIT", "64M");
    let Some(entry) = model.subgraphs.first() else { return };
    let dims: Vec<Vec<usize>> = entry.inputs.iter().map(|&i| entry.operand(i).default_dims.clone()).collect();
    if dims.iter().any(|d| d.iter().try_fold(1usize, |a, &x| a.checked_mul(x)).is_none_or(|n| n > 1 << 22)) {
        return;
    }
    let backends: Vec<Box<dyn Backend>> = vec![Box::new(nnrt_backend_cpu::CpuBackend::new())];
    let Ok(mut p) = Prepared::new(&model, nnrt_core::SubgraphId::new(0), &dims, backends, &config, 1) else { return };
    let _ = p.run();
});
