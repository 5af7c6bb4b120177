//! Driving one model through every phase, for robustness tests: what matters is that each phase
//! returns (a value or a typed error), not which.

use nnrt::Session;

/// A corrupted dim can ask for gigabytes; running such a model is slow, not wrong, so cases whose
/// prepared arena exceeds this are prepared but not run.
const MAX_RUN_ARENA: usize = 64 << 20;

/// How far a case got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Loading failed.
    LoadError,
    /// Prepare failed.
    PrepareError,
    /// Prepared, but the arena is over `MAX_RUN_ARENA`: not run.
    TooBigToRun,
    /// Setting inputs or running failed.
    RunError,
    /// Ran to the end.
    Ran,
}

/// Load, prepare, set zero inputs and run, stopping at the first error. Error messages are
/// formatted too: a `Display` that panics is a bug as well.
pub fn exercise(name: &str, bytes: Vec<u8>) -> Outcome {
    let model = match nnrt_loaders::tflite::load_bytes(name, bytes) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.to_string();
            return Outcome::LoadError;
        }
    };
    let mut s = match Session::from_model(model) {
        Ok(s) => s,
        Err(e) => {
            let _ = e.to_string();
            return Outcome::LoadError;
        }
    };
    let configured = s.set_backends("cpu").and_then(|()| s.set_threads(1));
    if let Err(e) = configured.and_then(|()| s.prepare()) {
        let _ = e.to_string();
        return Outcome::PrepareError;
    }
    if s.arena_size().unwrap_or(0) > MAX_RUN_ARENA {
        return Outcome::TooBigToRun;
    }
    for i in 0..s.input_count() {
        let size = match s.input_info(i) {
            Ok(info) => info.byte_size(),
            Err(e) => {
                let _ = e.to_string();
                return Outcome::RunError;
            }
        };
        if let Err(e) = s.set_input(i, &vec![0u8; size]) {
            let _ = e.to_string();
            return Outcome::RunError;
        }
    }
    match s.run() {
        Ok(()) => {
            for i in 0..s.output_count() {
                let _ = s.output(i).map(<[u8]>::len);
            }
            Outcome::Ran
        }
        Err(e) => {
            let _ = e.to_string();
            Outcome::RunError
        }
    }
}


/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}
