//! The session's thread pool, joined when dropped.
//!
//! rayon does not wait for a pool's threads to exit when the pool is dropped. A library that is
//! unloaded (`dlclose`) right after its last session closes must not leave threads running its
//! code, so dropping a [`JoinedPool`] waits (boundedly) until every worker has exited.
//!
//! While a run is in progress (and for [`KEEP_WARM`] after it) the pool's other workers stay
//! awake: each runs a *keeper* that spins on `rayon::yield_now`, taking the kernels' parallel
//! tasks as soon as they are queued. A rayon worker that finds no work goes to sleep after a few
//! microseconds, and waking it costs tens of microseconds on a virtual machine (an interrupt to a
//! halted vCPU) — once per parallel op, more than many ops take. Spinning workers are how
//! XNNPACK's pthreadpool avoids the same cost.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::CompileError;

/// How long `drop` waits for workers; only reached if a worker is stuck or the pool is dropped
/// from one of its own threads.
const JOIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long keepers go on spinning after the last run ended, so that back-to-back runs find the
/// workers awake.
const KEEP_WARM: Duration = Duration::from_millis(2);

/// A rayon pool whose workers are joined when it is dropped.
pub(crate) struct JoinedPool {
    pool: Option<rayon::ThreadPool>,
    live: Arc<(Mutex<usize>, Condvar)>,
    threads: usize,
    runs: Arc<RunState>,
}

/// What keepers watch.
#[derive(Default)]
struct RunState {
    /// Runs in progress.
    active: AtomicUsize,
    /// Runs ended so far; a keeper that sees it change restarts its warm period.
    ended: AtomicUsize,
}

/// How many threads the kernel running on this thread may split its work across: 1 inside a
/// one-thread session's run (which stays on the caller's thread, so that a run costs no
/// hand-off to a worker and back), else the current rayon pool's size.
pub fn kernel_threads() -> usize {
    if SERIAL.with(|s| s.get()) {
        1
    } else {
        rayon::current_num_threads()
    }
}

/// Puts [`SERIAL`] back when a one-thread run ends (even by unwinding).
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        SERIAL.with(|s| s.set(self.0));
    }
}

thread_local! {
    /// Whether this thread runs a one-thread session's ops.
    static SERIAL: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is already working for a run (running it, or keeping): a keeper that
    /// lands on such a thread returns at once, so that a worker never spins inside a keeper
    /// while the run it serves waits lower on the same stack.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// One run in progress on this thread; ends (even by unwinding) when dropped.
struct ActiveRun<'a> {
    runs: &'a RunState,
    was_busy: bool,
}

impl<'a> ActiveRun<'a> {
    fn start(runs: &'a RunState) -> Self {
        let was_busy = BUSY.with(|b| b.replace(true));
        runs.active.fetch_add(1, Ordering::AcqRel);
        ActiveRun { runs, was_busy }
    }
}

impl Drop for ActiveRun<'_> {
    fn drop(&mut self) {
        self.runs.ended.fetch_add(1, Ordering::AcqRel);
        self.runs.active.fetch_sub(1, Ordering::AcqRel);
        BUSY.with(|b| b.set(self.was_busy));
    }
}

/// Spins on `rayon::yield_now` (which runs queued tasks) while a run is active and for
/// [`KEEP_WARM`] after the last one ended.
fn keep(runs: &RunState) {
    if BUSY.with(|b| b.replace(true)) {
        return;
    }
    let mut seen = runs.ended.load(Ordering::Acquire);
    let mut idle_since = Instant::now();
    loop {
        if let Some(rayon::Yield::Executed) = rayon::yield_now() {
            idle_since = Instant::now();
            continue;
        }
        let ended = runs.ended.load(Ordering::Acquire);
        if runs.active.load(Ordering::Acquire) > 0 || ended != seen {
            seen = ended;
            idle_since = Instant::now();
        } else if idle_since.elapsed() > KEEP_WARM {
            break;
        }
        std::hint::spin_loop();
    }
    BUSY.with(|b| b.set(false));
}

impl JoinedPool {
    /// A pool of `threads` workers named `nnrt-<i>`.
    /// With one thread there is no pool: runs stay on the caller's thread (see [`kernel_threads`]).
    pub(crate) fn new(threads: usize) -> Result<JoinedPool, CompileError> {
        if threads <= 1 {
            let live = Arc::new((Mutex::new(0), Condvar::new()));
            return Ok(JoinedPool { pool: None, live, threads: 1, runs: Arc::default() });
        }
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
        Ok(JoinedPool { pool: Some(pool), live, threads, runs: Arc::default() })
    }

    /// Runs `f` on the pool, with the other workers kept awake (see the module's doc).
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let Some(p) = &self.pool else {
            let was = SERIAL.with(|s| s.replace(true));
            let _restore = Restore(was);
            return f();
        };
        p.install(|| {
            let _active = ActiveRun::start(&self.runs);
            for _ in 1..self.threads {
                let runs = self.runs.clone();
                rayon::spawn(move || keep(&runs));
            }
            f()
        })
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
