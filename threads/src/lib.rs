#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]
//! The session's kernel threads: a fork-join pool in the style of XNNPACK's pthreadpool.
//!
//! A run executes on the caller's thread, which is also worker 0 of every parallel loop; the
//! pool's other threads join each loop ([`par_for`]) as it is published. Measured on the 2-vCPU
//! virtual machine this project is tuned on, rayon (which this module replaced) cost 5–50 µs per
//! parallel op: a run had to be handed to a pool thread and back, and a thread waiting in
//! `join` went to sleep when its half finished first, so the other half's end had to wake it
//! (an interrupt to a halted vCPU). Here nobody sleeps while a run is in progress:
//!
//! - While a run is active, and for [`KEEP_WARM`] after it, workers spin on the pool's state
//!   word, so a loop published by the run's thread is joined within a cache-line transfer.
//!   Afterwards they park on a condition variable, and the next run wakes them as it starts.
//! - A loop's `n` tasks are dealt out as contiguous ranges, thread `t` owning tasks
//!   `t·n/T .. (t+1)·n/T`, which it takes from the front; a thread whose range is empty steals
//!   from the back of the others'. Consecutive ops thus mostly give a thread the rows it wrote
//!   in the op before, which are still in its core's L2 (a shared counter handing tasks to
//!   whoever is free measured no faster than one thread on MediaPipe's face detector: every op
//!   pulled half its input across cores). The run's thread waits, spinning, only for the
//!   workers that actually joined the loop: a worker still parked never holds a loop up.
//! - Kernels inside a task see one thread ([`kernel_threads`] = 1): loops do not nest.
//!
//! This crate is the one place outside the CPU backend's SIMD module, the C ABI and plugin
//! loading that needs `unsafe`: a persistent pool runs borrowed closures, which safe Rust only
//! offers by spawning threads per call (`std::thread::scope`).
//!
//! Dropping the pool stops and joins its threads, so a library unloaded (`dlclose`) right after
//! its last session closes leaves no thread running its code.

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long workers go on spinning after the last run ended, so that back-to-back runs (and
/// the ops of one run) find them awake.
const KEEP_WARM: Duration = Duration::from_millis(2);

/// The state word's layout: generation in the high 32 bits, then the "closed" flag, then the
/// number of workers inside the current loop.
const CLOSED: u64 = 1 << 31;
const ENTERED: u64 = CLOSED - 1;

fn generation(s: u64) -> u64 {
    s >> 32
}

/// One published loop: `f(i)` for every task `i` dealt out in `Shared::ranges`.
#[derive(Clone, Copy)]
struct Job {
    f: *const (dyn Fn(usize) + Sync),
}

/// What the run's thread and the workers share.
struct Shared {
    /// Generation | CLOSED | entered workers (see the constants).
    state: AtomicU64,
    /// The current loop; written by the run's thread only while the state is closed with no
    /// worker inside, read by workers only while they are inside (entered) an open loop.
    job: UnsafeCell<Job>,
    /// Each thread's range of the current loop's tasks: `lo | hi << 32`, taken by its owner
    /// from `lo`, stolen by others from `hi`.
    ranges: Box<[Range]>,
    /// Held by the thread publishing a loop: a pool installed on two threads at once publishes
    /// from one of them at a time; the other runs its loops serially.
    publishing: AtomicBool,
    /// Runs in progress.
    active: AtomicUsize,
    /// Runs ended so far (a worker that sees it change restarts its warm period).
    ended: AtomicUsize,
    /// Workers parked on `wake`.
    sleepers: AtomicUsize,
    shutdown: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    /// A panic raised by a task on a worker, re-raised on the run's thread.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    threads: usize,
}

// SAFETY: every field but `job` is Sync. `job` is written only by the thread publishing a loop
// while the state word says closed with no worker inside (so no worker reads it), and read by
// workers only between a successful enter (acquire CAS on the state, which the publisher's
// release store of the open state precedes) and their leave (release decrement, which the
// publisher's acquire wait observes before it writes `job` again). The `f` it points to is
// `Sync`.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointer in `job` is only dereferenced under that protocol.
unsafe impl Send for Shared {}

impl Shared {
    fn wake_sleepers(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }

    /// Runs the tasks of `job` left in thread `me`'s range, then steals from the others' until
    /// none is left.
    fn drain(&self, job: Job, me: usize) {
        // SAFETY: the caller is inside the loop (entered, or its publisher), so `f` is alive.
        let f = unsafe { &*job.f };
        while let Some(i) = self.ranges[me].take_front() {
            f(i);
        }
        let t = self.ranges.len();
        for d in 1..t {
            let victim = &self.ranges[(me + d) % t];
            while let Some(i) = victim.take_back() {
                f(i);
            }
        }
    }

    /// Empties every range (no task is handed out any more).
    fn cancel(&self) {
        for r in self.ranges.iter() {
            r.0.store(0, Ordering::Relaxed);
        }
    }
}

/// One thread's share of a loop, on its own cache line(s).
#[repr(align(128))]
struct Range(AtomicU64);

impl Range {
    fn set(&self, lo: usize, hi: usize) {
        self.0.store(lo as u64 | (hi as u64) << 32, Ordering::Relaxed);
    }

    fn take_front(&self) -> Option<usize> {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let (lo, hi) = (v & 0xffff_ffff, v >> 32);
            if lo >= hi {
                return None;
            }
            match self.0.compare_exchange_weak(v, v + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(lo as usize),
                Err(now) => v = now,
            }
        }
    }

    fn take_back(&self) -> Option<usize> {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let (lo, hi) = (v & 0xffff_ffff, v >> 32);
            if lo >= hi {
                return None;
            }
            match self.0.compare_exchange_weak(v, lo | (hi - 1) << 32, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(hi as usize - 1),
                Err(now) => v = now,
            }
        }
    }
}

thread_local! {
    /// The pool of the run in progress on this thread (null outside runs and inside tasks).
    static CURRENT: Cell<*const Shared> = const { Cell::new(std::ptr::null()) };
}

/// Puts [`CURRENT`] back when dropped (also while unwinding).
struct RestoreCurrent(*const Shared);

impl Drop for RestoreCurrent {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// How many threads a kernel running on this thread may split its work across: the run's pool
/// size on the run's thread, 1 anywhere else (outside runs, inside a task, one-thread pools).
pub fn kernel_threads() -> usize {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        1
    } else {
        // SAFETY: CURRENT is set only by `KernelPool::install`, which holds the pool (and so
        // its `Shared`) borrowed until it restores the previous value.
        unsafe { (*p).threads }
    }
}

/// Calls `f(i)` for every `i < n`, split across the current run's pool (see the module's doc);
/// on the calling thread alone when there is no pool, one task (which may then split its own
/// work), or this is already a task of a loop.
/// Returns when every call has returned. A panic in any task is re-raised here.
pub fn par_for(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() || n <= 1 {
        (0..n).for_each(f);
        return;
    }
    // SAFETY: see `kernel_threads`.
    let sh = unsafe { &*p };
    if sh.publishing.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        (0..n).for_each(f);
        return;
    }
    /// Lets the next loop be published (also while unwinding).
    struct Unpublish<'a>(&'a Shared);
    impl Drop for Unpublish<'_> {
        fn drop(&mut self) {
            self.0.publishing.store(false, Ordering::Release);
        }
    }
    let _unpublish = Unpublish(sh);
    // SAFETY: only the job's lifetime is erased. Workers dereference it only while entered, and
    // `Close` (dropped before this function returns or unwinds past `f`'s owner) waits until
    // none is.
    let f_static: *const (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(f) };
    let job = Job { f: f_static };
    let s = sh.state.load(Ordering::Acquire);
    debug_assert!(s & CLOSED != 0 && s & ENTERED == 0, "loop published while another is open");
    // SAFETY: the state is closed with no worker inside (the previous loop's `Close` waited for
    // that), so no worker reads `job` now; see `Shared`'s Sync impl.
    unsafe { *sh.job.get() = job };
    assert!(n <= u32::MAX as usize, "par_for: {n} tasks (at most 2^32 − 1)");
    let t = sh.ranges.len();
    for (i, r) in sh.ranges.iter().enumerate() {
        r.set(i * n / t, (i + 1) * n / t);
    }
    let g = (generation(s) + 1) & 0xffff_ffff;
    sh.state.store(g << 32, Ordering::SeqCst);
    sh.wake_sleepers();

    /// Closes the loop and waits for the workers inside it, even while unwinding from a task.
    struct Close<'a>(&'a Shared);
    impl Drop for Close<'_> {
        fn drop(&mut self) {
            let sh = self.0;
            if std::thread::panicking() {
                sh.cancel();
            }
            let mut s = sh.state.load(Ordering::Acquire);
            while let Err(now) = sh.state.compare_exchange_weak(s, s | CLOSED, Ordering::AcqRel, Ordering::Acquire) {
                s = now;
            }
            while sh.state.load(Ordering::Acquire) & ENTERED != 0 {
                std::hint::spin_loop();
            }
        }
    }
    {
        let close = Close(sh);
        let _restore = RestoreCurrent(p);
        CURRENT.with(|c| c.set(std::ptr::null()));
        sh.drain(job, 0);
        drop(close);
    }
    let payload = sh.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(payload) = payload {
        resume_unwind(payload);
    }
}

/// A raw base pointer that tasks turn into disjoint sub-slices.
struct SyncPtr<T>(*mut T);
// SAFETY: tasks build non-overlapping `&mut [T]` from it (one per task index), which is what
// sending `&mut [T]` pieces to other threads requires: `T: Send`.
unsafe impl<T: Send> Sync for SyncPtr<T> {}

/// `f(i, chunk_i)` over `data.chunks_mut(chunk)`, split across the current run's pool like
/// [`par_for`].
///
/// # Panics
/// If `chunk` is 0 and `data` is not empty.
pub fn par_chunks_mut<T: Send>(data: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if data.is_empty() {
        return;
    }
    assert!(chunk > 0, "par_chunks_mut: chunk length 0");
    let len = data.len();
    let base = SyncPtr(data.as_mut_ptr());
    par_for(len.div_ceil(chunk), &|i| {
        let lo = i * chunk;
        let hi = (lo + chunk).min(len);
        let base = &base;
        // SAFETY: `lo..hi` lies inside `data` (i < ceil(len / chunk)), each index `i` is
        // handed to exactly one task, so the sub-slices are disjoint, and `data` stays
        // mutably borrowed until `par_for` has returned from every task.
        let part = unsafe { std::slice::from_raw_parts_mut(base.0.add(lo), hi - lo) };
        f(i, part)
    });
}

/// `f(r, row_r)` over `data.chunks_mut(row_len)`, split across the current run's pool in tasks
/// of at least `min_rows` rows (and about eight per thread for balance).
///
/// # Panics
/// If `row_len` is 0 and `data` is not empty.
pub fn par_rows_mut<T: Send>(data: &mut [T], row_len: usize, min_rows: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if data.is_empty() {
        return;
    }
    assert!(row_len > 0, "par_rows_mut: row length 0");
    let rows = data.len().div_ceil(row_len);
    let per = rows.div_ceil(8 * kernel_threads()).max(min_rows).max(1);
    par_chunks_mut(data, per * row_len, |t, block| {
        for (i, row) in block.chunks_mut(row_len).enumerate() {
            f(t * per + i, row)
        }
    });
}

/// How [`par_blocks_mut`] cuts a row-major matrix into a grid of blocks: `row_blocks` bands of
/// rows and `col_blocks` bands of columns, band boundaries on multiples of `row_unit` /
/// `col_unit` (a GEMM's register tile, a depthwise conv's output row) and as even as those
/// allow. Tasks are numbered row band by row band, so the pool's contiguous task ranges give
/// each thread its own rows (the rows it wrote in the op before) as far as the bands allow.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// Rows and columns of the matrix.
    pub rows: usize,
    /// Columns of the matrix (at most its row stride).
    pub cols: usize,
    /// Row band boundaries fall on multiples of this (the last band ends at `rows`).
    pub row_unit: usize,
    /// Column band boundaries fall on multiples of this (the last band ends at `cols`).
    pub col_unit: usize,
    /// Bands of rows wanted (fewer when `rows` has fewer units).
    pub row_blocks: usize,
    /// Bands of columns wanted (fewer when `cols` has fewer units).
    pub col_blocks: usize,
}

impl Grid {
    /// Band `i` of `n` over `units` units of `unit` elements, cut at `len`: `[lo, hi)`.
    fn band(i: usize, n: usize, units: usize, unit: usize, len: usize) -> (usize, usize) {
        ((i * units / n * unit).min(len), ((i + 1) * units / n * unit).min(len))
    }

    /// `(bands of rows, bands of columns)` actually used: at least one, at most one per unit.
    fn shape(&self) -> (usize, usize, usize, usize) {
        let ur = self.rows.div_ceil(self.row_unit.max(1));
        let uc = self.cols.div_ceil(self.col_unit.max(1));
        (self.row_blocks.clamp(1, ur.max(1)), self.col_blocks.clamp(1, uc.max(1)), ur, uc)
    }

    /// Rows and columns `(r0, r1, c0, c1)` of task `t`.
    fn block(&self, t: usize) -> (usize, usize, usize, usize) {
        let (rb, cb, ur, uc) = self.shape();
        let (ri, ci) = (t / cb, t % cb);
        let (r0, r1) = Self::band(ri, rb, ur, self.row_unit.max(1), self.rows);
        let (c0, c1) = Self::band(ci, cb, uc, self.col_unit.max(1), self.cols);
        (r0, r1, c0, c1)
    }
}

/// One task's block of [`par_blocks_mut`]: rows `row0()..row0() + rows()` and columns
/// `col0()..col0() + cols()` of the matrix, which no other task's block shares an element with.
pub struct BlockMut<'a, T> {
    /// Element `(row0, col0)`.
    base: *mut T,
    ld: usize,
    row0: usize,
    col0: usize,
    rows: usize,
    cols: usize,
    _life: std::marker::PhantomData<&'a mut [T]>,
}

impl<T> BlockMut<'_, T> {
    /// First matrix row of the block.
    pub fn row0(&self) -> usize {
        self.row0
    }

    /// First matrix column of the block.
    pub fn col0(&self) -> usize {
        self.col0
    }

    /// Rows in the block.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns in the block.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The block's part of its row `r` (matrix row `row0() + r`): `cols()` elements.
    ///
    /// # Panics
    /// If `r >= rows()`.
    pub fn row_mut(&mut self, r: usize) -> &mut [T] {
        assert!(r < self.rows, "block row {r} of {}", self.rows);
        // SAFETY: `par_blocks_mut` checked that every element `(row, col)` of the grid lies at
        // `row * ld + col` inside its slice; this block owns rows `row0..row0 + rows` ×
        // columns `col0..col0 + cols` of it exclusively (grid blocks are disjoint, each handed
        // to one task), and `&mut self` keeps two row slices from being alive at once.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(r * self.ld), self.cols) }
    }
}

/// `f(t, block_t)` for every block of `grid` over the row-major matrix `data` (row stride
/// `ld`), split across the current run's pool like [`par_for`]. Unlike [`par_chunks_mut`] a
/// task may own a band of columns: a GEMM with few rows and many output channels splits its
/// weights, not its rows, across threads.
///
/// # Panics
/// If `grid.cols > ld`, or `data` is shorter than `(grid.rows − 1) · ld + grid.cols`.
pub fn par_blocks_mut<T: Send>(data: &mut [T], ld: usize, grid: Grid, f: impl Fn(usize, BlockMut<'_, T>) + Sync) {
    if grid.rows == 0 || grid.cols == 0 {
        return;
    }
    assert!(grid.cols <= ld, "par_blocks_mut: {} columns in rows of stride {ld}", grid.cols);
    assert!(data.len() >= (grid.rows - 1) * ld + grid.cols, "par_blocks_mut: {} elements for {}×{} (stride {ld})", data.len(), grid.rows, grid.cols);
    let (rb, cb, _, _) = grid.shape();
    let base = SyncPtr(data.as_mut_ptr());
    par_for(rb * cb, &|t| {
        let (r0, r1, c0, c1) = grid.block(t);
        let base = &base;
        let block = BlockMut {
            // SAFETY: `r0 < rows` and `c0 <= cols <= ld` (or the block is empty and never
            // dereferenced: `row_mut` asserts `r < rows`), so the offset stays inside `data`.
            base: unsafe { base.0.add(if r1 > r0 { r0 * ld + c0 } else { 0 }) },
            ld,
            row0: r0,
            col0: c0,
            rows: r1 - r0,
            cols: c1 - c0,
            _life: std::marker::PhantomData,
        };
        f(t, block)
    });
}

/// `[f(0), …, f(n − 1)]`, computed across the current run's pool like [`par_for`].
pub fn par_map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut slots: Vec<Option<R>> = (0..n).map(|_| None).collect();
    par_chunks_mut(&mut slots, 1, |i, s| s[0] = Some(f(i)));
    slots.into_iter().map(|s| s.expect("par_map: every task ran")).collect()
}

/// A worker: joins published loops while runs are active (spinning), parks when idle.
fn worker(sh: Arc<Shared>, me: usize) {
    let mut seen = generation(sh.state.load(Ordering::Acquire));
    let mut seen_ended = sh.ended.load(Ordering::Acquire);
    let mut idle_since = Instant::now();
    let mut spins = 0u32;
    loop {
        let s = sh.state.load(Ordering::Acquire);
        if generation(s) != seen {
            if s & CLOSED != 0 {
                seen = generation(s);
            } else if sh.state.compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                seen = generation(s);
                // SAFETY: entered an open loop: `job` is stable until this worker leaves.
                let job = unsafe { *sh.job.get() };
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| sh.drain(job, me))) {
                    sh.cancel();
                    *sh.panic.lock().unwrap_or_else(|e| e.into_inner()) = Some(payload);
                }
                sh.state.fetch_sub(1, Ordering::Release);
                idle_since = Instant::now();
            }
            continue;
        }
        if sh.shutdown.load(Ordering::Acquire) {
            return;
        }
        spins += 1;
        if spins & 0x3ff == 0 {
            let ended = sh.ended.load(Ordering::Acquire);
            if sh.active.load(Ordering::Acquire) > 0 || ended != seen_ended {
                seen_ended = ended;
                idle_since = Instant::now();
            } else if idle_since.elapsed() > KEEP_WARM {
                park(&sh, seen);
                seen_ended = sh.ended.load(Ordering::Acquire);
                idle_since = Instant::now();
            }
        }
        std::hint::spin_loop();
    }
}

/// Sleeps until a run starts, a loop is published after generation `seen`, or shutdown.
fn park(sh: &Shared, seen: u64) {
    let mut g = sh.lock.lock().unwrap_or_else(|e| e.into_inner());
    sh.sleepers.fetch_add(1, Ordering::SeqCst);
    while !sh.shutdown.load(Ordering::SeqCst) && sh.active.load(Ordering::SeqCst) == 0 && generation(sh.state.load(Ordering::SeqCst)) == seen {
        g = sh.wake.wait(g).unwrap_or_else(|e| e.into_inner());
    }
    sh.sleepers.fetch_sub(1, Ordering::SeqCst);
}

/// A session's kernel threads (see the module's doc).
pub struct KernelPool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl KernelPool {
    /// A pool running kernels on `threads` threads in all: the caller's plus `threads − 1`
    /// workers named `nnrt-<i>` (none for 0 or 1).
    ///
    /// # Errors
    /// When the OS refuses a thread.
    pub fn new(threads: usize) -> std::io::Result<KernelPool> {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            state: AtomicU64::new(CLOSED),
            job: UnsafeCell::new(Job { f: &|_| {} }),
            ranges: (0..threads).map(|_| Range(AtomicU64::new(0))).collect(),
            publishing: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            ended: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            panic: Mutex::new(None),
            threads,
        });
        let mut pool = KernelPool { shared, workers: Vec::new() };
        for i in 1..threads {
            let sh = pool.shared.clone();
            let handle = std::thread::Builder::new()
                .name(format!("nnrt-{i}"))
                .spawn(move || worker(sh, i))?;
            pool.workers.push(handle);
        }
        Ok(pool)
    }

    /// Threads kernels run on.
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Runs `f` on the calling thread with this pool's workers awake and available to the
    /// kernels it calls ([`par_for`], [`kernel_threads`]).
    pub fn install<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.shared.threads <= 1 {
            let _restore = RestoreCurrent(CURRENT.with(|c| c.replace(std::ptr::null())));
            return f();
        }
        /// Ends the run (even by unwinding).
        struct Active<'a>(&'a Shared);
        impl Drop for Active<'_> {
            fn drop(&mut self) {
                self.0.ended.fetch_add(1, Ordering::AcqRel);
                self.0.active.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let sh = &*self.shared;
        sh.active.fetch_add(1, Ordering::SeqCst);
        let _active = Active(sh);
        sh.wake_sleepers();
        let _restore = RestoreCurrent(CURRENT.with(|c| c.replace(sh as *const Shared)));
        f()
    }
}

impl Drop for KernelPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once_and_results_are_visible() {
        for threads in [1, 2, 3] {
            let pool = KernelPool::new(threads).unwrap();
            pool.install(|| {
                assert_eq!(kernel_threads(), threads);
                for n in [0, 1, 2, 7, 1000] {
                    let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                    par_for(n, &|i| {
                        if n > 1 {
                            assert_eq!(kernel_threads(), 1, "tasks do not nest");
                        }
                        hits[i].fetch_add(1, Ordering::Relaxed);
                    });
                    assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                    let mut v = vec![0usize; n * 3 + 1];
                    par_chunks_mut(&mut v, 3, |i, c| c.iter_mut().for_each(|x| *x = i + 1));
                    assert!(v.iter().enumerate().all(|(j, &x)| x == j / 3 + 1));
                    assert_eq!(par_map(n, |i| i * i), (0..n).map(|i| i * i).collect::<Vec<_>>());
                }
                blocks_cover_the_matrix_once();
            });
            assert_eq!(kernel_threads(), 1, "outside a run");
        }
    }

    /// Every grid writes each element of its matrix exactly once and nothing between rows.
    fn blocks_cover_the_matrix_once() {
        for (rows, cols, ld) in [(1, 1, 1), (49, 1280, 1280), (7, 10, 13), (13, 5, 5), (3, 40, 41)] {
            for (ru, cu, rb, cb) in [(1, 1, 1, 1), (8, 32, 1, 8), (2, 3, 4, 4), (5, 1, 100, 100), (1, 16, 2, 3)] {
                let grid = Grid { rows, cols, row_unit: ru, col_unit: cu, row_blocks: rb, col_blocks: cb };
                let mut m = vec![0u32; (rows - 1) * ld + cols + 3];
                par_blocks_mut(&mut m[..(rows - 1) * ld + cols], ld, grid, |_, mut b| {
                    assert!(b.row0() % ru == 0 && b.col0() % cu == 0, "{grid:?}");
                    for r in 0..b.rows() {
                        b.row_mut(r).iter_mut().for_each(|x| *x += 1);
                    }
                });
                for (i, &x) in m.iter().enumerate() {
                    let inside = i / ld < rows && i % ld < cols;
                    assert_eq!(x, inside as u32, "element {i} of {grid:?} (ld {ld})");
                }
            }
        }
    }

    #[test]
    fn a_panicking_task_reaches_the_caller_and_the_pool_still_works() {
        let pool = KernelPool::new(2).unwrap();
        for _ in 0..20 {
            let r = catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    par_for(64, &|i| {
                        if i == 37 {
                            panic!("task 37");
                        }
                    })
                })
            }));
            assert!(r.is_err());
            assert_sums_0_to_99(&pool);
        }
    }

    /// Adds 0..100 with `par_for` on `pool` and checks the total.
    fn assert_sums_0_to_99(pool: &KernelPool) {
        let sum = AtomicUsize::new(0);
        pool.install(|| par_for(100, &|i| {
            sum.fetch_add(i, Ordering::Relaxed);
        }));
        assert_eq!(sum.load(Ordering::Relaxed), 4950);
    }

    #[test]
    fn one_pool_installed_on_two_threads_at_once_stays_correct() {
        let pool = KernelPool::new(2).unwrap();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..200 {
                        assert_sums_0_to_99(&pool);
                    }
                });
            }
        });
    }

    #[test]
    fn parked_workers_wake_for_the_next_run_and_join_on_drop() {
        let pool = KernelPool::new(3).unwrap();
        std::thread::sleep(KEEP_WARM * 4);
        let seen = Mutex::new(std::collections::HashSet::new());
        for _ in 0..200 {
            pool.install(|| {
                par_for(64, &|_| {
                    seen.lock().unwrap().insert(std::thread::current().id());
                    std::thread::sleep(Duration::from_micros(50));
                })
            });
            if seen.lock().unwrap().len() == 3 {
                break;
            }
        }
        assert_eq!(seen.lock().unwrap().len(), 3, "every worker joined some loop");
        drop(pool);
    }
}
