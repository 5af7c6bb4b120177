//! Cancelling a run from another thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A handle that stops a prepared model's run from any thread: the run checks it before each
/// step and at each WHILE iteration, and ends with [`crate::RunError::Cancelled`]. A cancel made
/// while no run is in progress stops the next run at its start: it is never lost, and each
/// cancel stops one run.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// Asks the run in progress (or the next one) to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether a cancel is pending.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Consumes a pending cancel: `Err(Cancelled)` once per [`CancelToken::cancel`].
    pub(crate) fn check(&self, detail: impl FnOnce() -> String) -> Result<(), crate::RunError> {
        if self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::AcqRel) {
            return Err(crate::RunError::Cancelled { detail: detail() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_stops_one_run() {
        let t = CancelToken::default();
        assert!(t.check(String::new).is_ok());
        t.clone().cancel();
        assert!(t.is_cancelled());
        assert!(matches!(t.check(|| " here".into()), Err(crate::RunError::Cancelled { detail }) if detail == " here"));
        assert!(t.check(String::new).is_ok());
    }
}
