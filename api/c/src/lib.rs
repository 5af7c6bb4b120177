//! # nnfw
//!
//! nnrt's C ABI, a drop-in for onert's `nnfw.h`: `libnnfw.so` / `libnnfw.a` with the headers in
//! `api/c/include/` (`nnfw.h`, `nnfw_experimental.h`, `nnfw_internal.h`, `nnfw_version.h`).
//! Applications written for onert's C API build against them unchanged
//! (`cc app.c -I api/c/include -L target/release -lnnfw`).
//!
//! Layers, outside in:
//! - [`exports`]: the `extern "C"` functions; each checks its pointers, catches panics and turns
//!   errors into `NNFW_STATUS` codes, keeping the message for `nnfw_get_last_error_message`;
//! - `session`: onert's session state machine over an [`nnrt::Session`];
//! - `io`: NCHW/NHWC transposes and float/quantized conversion at the I/O boundary;
//! - `custom`: C custom-op kernels as Rust API kernels;
//! - `ffi`: the only `unsafe` code, a few checked helpers that turn raw pointers into
//!   references, slices and strings.
//!
//! Depends on the `nnrt` Rust API (and `nnrt-core` for the custom-op tensor views) only. Its cargo
//! features `cpu` and `gpu` (both default) are nnrt's: `cargo build -p nnfw --no-default-features
//! --features cpu` links a libnnfw without wgpu, where `nnfw_set_available_backends("gpu")` then
//! fails at `nnfw_prepare` with "backend 'gpu' is not in this build (built with: cpu)".

#![deny(unsafe_code)]

pub mod abi;
mod custom;
mod error;
pub mod exports;
mod ffi;
mod io;
mod session;

pub use abi::*;
pub use exports::*;

/// The message of a caught panic (pass the payload's contents, `p.as_ref()`: a `&Box<dyn Any>`
/// would coerce to the box itself and lose the message).
pub(crate) use nnrt::panic_message;

#[cfg(test)]
mod tests {
    /// `unsafe` stays in `ffi.rs`, each block under a `// SAFETY:` comment; `exports.rs` may
    /// only say `#[unsafe(no_mangle)]`.
    #[test]
    fn unsafe_stays_in_the_ffi_layer() {
        // Spelled in pieces so that this test's own source does not match.
        let kw = concat!("un", "safe");
        let allowed = [format!("{kw}(no_mangle)"), format!("{kw} extern \"C\" fn")];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let word = |at: usize| {
                    let ident = |c: char| c.is_alphanumeric() || c == '_';
                    !code[..at].ends_with(ident) && !code[at + kw.len()..].starts_with(ident)
                };
                let uses = code.match_indices(kw).filter(|&(at, _)| word(at)).count();
                let uses = uses.saturating_sub(allowed.iter().map(|a| code.matches(a.as_str()).count()).sum());
                if uses == 0 {
                    continue;
                }
                assert_eq!(name, "ffi.rs", "{name}:{}: {kw} outside ffi.rs: {line}", i + 1);
                let commented = lines[..i].iter().rev().take_while(|l| l.trim_start().starts_with("//")).any(|l| l.contains("SAFETY:"));
                assert!(commented, "ffi.rs:{}: {kw} without a SAFETY comment right above", i + 1);
            }
        }
    }
}
