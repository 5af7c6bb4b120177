//! An Edge TPU op's options or a bare DarwiNN package from bytes (`DWN1` at bytes 4..8 picks
//! the package reader, anything else is read as the op's FlexBuffer options): the options map,
//! the aligned package, the hand-read MultiExecutable, each executable's verifier and the
//! checks give a package or a typed error; a package that reads has each output re-laid out
//! from a zeroed device buffer and each input packed. Never a panic, an abort, a hang or an
//! allocation over the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nnrt_loaders::darwinn::{self, host, Package};

fn exercise(p: &Package) {
    let Some(e) = p.runnable() else { return };
    for l in &e.output_layers {
        let (Some(actual), Ok(size)) = (l.actual_bytes(), usize::try_from(l.size_bytes)) else { continue };
        if actual > 1 << 24 || size > 1 << 24 {
            continue;
        }
        let src = vec![0u8; size];
        let mut dst = vec![0u8; actual];
        let _ = host::relayout(l, &src, &mut dst);
    }
    for l in &e.input_layers {
        let (Some(actual), Ok(size)) = (l.actual_bytes(), usize::try_from(l.size_bytes)) else { continue };
        if actual > 1 << 24 || size > 1 << 24 {
            continue;
        }
        let mut dst = vec![0u8; size];
        let _ = host::pack_input(l, &vec![0u8; actual], &mut dst);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.get(4..8) == Some(darwinn::IDENTIFIER.as_slice()) {
        if let Ok(p) = darwinn::read_package(data) {
            exercise(&p);
        }
    } else if let Ok(o) = darwinn::read_options(data) {
        o.packages.iter().for_each(exercise);
    }
});
