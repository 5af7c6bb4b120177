//! The session's thread pool, joined when dropped.
//!
//! rayon does not wait for a pool's threads to exit when the pool is dropped. A library that is
//! unloaded (`dlclose`) right after its last session closes must not leave threads running its
//! code, so dropping a [`JoinedPool`] waits (boundedly) until every worker has exited.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::CompileError;

/// How long `drop` waits for workers; only reached if a worker is stuck or the pool is dropped
/// from one of its own threads.
const JOIN_TIMEOUT: Duration = Duration::from_secs(5);

/// A rayon pool whose workers are joined when it is dropped.
pub(crate) struct JoinedPool {
    pool: Option<rayon::ThreadPool>,
    live: Arc<(Mutex<usize>, Condvar)>,
}

impl JoinedPool {
    /// A pool of `threads` workers named `nnrt-<i>`.
    pub(crate) fn new(threads: usize) -> Result<JoinedPool, CompileError> {
        // Every worker runs the exit handler once, so counting down from `threads` cannot miss a
        // worker that has not started yet.
        let live = Arc::new((Mutex::new(threads), Condvar::new()));
        let on_exit = live.clone();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("nnrt-{i}"))
            .exit_handler(move |_| {
                let (n, cv) = &*on_exit;
                let mut n = n.lock().unwrap_or_else(|e| e.into_inner());
                *n = n.saturating_sub(1);
                cv.notify_all();
            })
            .build()
            .map_err(|e| CompileError::Config { key: "NUM_THREADS".into(), value: threads.to_string(), reason: e.to_string() })?;
        Ok(JoinedPool { pool: Some(pool), live })
    }

    /// Runs `f` on the pool.
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}

impl Drop for JoinedPool {
    fn drop(&mut self) {
        let on_own_thread = rayon::current_thread_index().is_some() && self.pool.as_ref().is_some_and(|p| p.current_thread_index().is_some());
        drop(self.pool.take());
        if on_own_thread {
            return; // a worker cannot wait for itself to exit
        }
        let (n, cv) = &*self.live;
        let guard = n.lock().unwrap_or_else(|e| e.into_inner());
        let _ = cv.wait_timeout_while(guard, JOIN_TIMEOUT, |n| *n > 0);
    }
}
