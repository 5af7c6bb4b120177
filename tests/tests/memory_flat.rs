//! Memory stays flat over many runs whose shapes change: at run time (a FILL sized by an input)
//! and by the caller (`set_input_shape` alternating between sizes). Its own test binary with a
//! counting allocator and one test: it measures the bytes this process holds through the
//! allocator, not the process's RSS, which other tests running beside it (and the allocator's
//! caching) move at random.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use nnrt::{DType, Session};
use nnrt_core::{Dim, OpKind, OperandId, Shape};
use nnrt_tests::{f, i, Graph};

/// The system allocator, counting the bytes held.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the caller's layout; the counter is only data.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HELD.fetch_add(new_size, Ordering::Relaxed);
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A session on one thread for `g`, after giving the listed operands declared shapes whose
/// `None` dims are unknown.
fn session(mut g: Graph, unknown: &[(OperandId, &[Option<usize>])]) -> Session {
    for (id, dims) in unknown {
        g.sub.operands[id.index()].shape = Shape(dims.iter().map(|d| d.map_or(Dim::Unknown, Dim::Known)).collect());
    }
    let mut s = Session::from_model(g.model()).unwrap();
    s.set_backends("cpu").unwrap();
    s.set_threads(1).unwrap();
    s.prepare().unwrap();
    s
}

/// FILL(dims, 2.5) with `dims` a graph input: its output's shape is known only at run time.
fn fill_session() -> Session {
    let mut g = Graph::new();
    let (dims, v) = (g.input(&[2], i(&[1, 1])), g.konst(&[], f(&[2.5])));
    let y = g.out(DType::F32, &[1, 1]);
    g.op(OpKind::Fill, &[Some(dims), Some(v)], &[y]);
    session(g, &[(y, &[None, None])])
}

/// Calls `run(i)` 1000 times; the bytes held after the 100th call may not grow by the end.
fn assert_flat(what: &str, mut run: impl FnMut(usize)) {
    let mut after_warmup = 0;
    for i in 0..1000 {
        run(i);
        if i == 99 {
            after_warmup = HELD.load(Ordering::Relaxed);
        }
    }
    let after = HELD.load(Ordering::Relaxed);
    assert!(after_warmup > 0, "the counting allocator is not installed");
    // Nothing may grow per run: 900 runs leaking even 32 bytes each would pass this slack.
    assert!(after <= after_warmup + 16 * 1024, "{what}: held bytes grew from {after_warmup} to {after} over 900 runs");
}

/// x[?,12] -> RELU, on one thread.
fn relu_session() -> Session {
    let g = Graph::unary(OpKind::Unary(nnrt_core::UnaryOp::Relu), &[1, 12], f(&[0.0; 12]), DType::F32);
    let (x, y) = (g.sub.inputs[0], g.sub.outputs[0]);
    session(g, &[(x, &[None, Some(12)]), (y, &[None, Some(12)])])
}

/// One test, so that nothing else allocates while it measures.
#[test]
fn alternating_shapes_for_a_thousand_runs_keeps_memory_flat() {
    // Run-time shapes: dynamic storage grows to the largest shape once and is reused; kernels
    // are cached per shape.
    let mut s = fill_session();
    let sizes = [[256i32, 256], [1, 3], [64, 100]];
    assert_flat("FILL sized at run time", |i| {
        let dims = sizes[i % 3];
        s.set_input(0, &dims.iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        s.run().unwrap();
        assert_eq!(s.output_info(0).unwrap().dims, vec![dims[0] as usize, dims[1] as usize]);
        assert_eq!(s.output(0).unwrap().len(), 4 * (dims[0] * dims[1]) as usize);
    });
    // Caller's shapes: the plans for the three sizes are kept and reused.
    let mut s = relu_session();
    let inputs: Vec<Vec<u8>> = [2usize, 5, 9].iter().map(|&b| (0..b * 12).flat_map(|v| (v as f32 - 20.0).to_le_bytes()).collect()).collect();
    assert_flat("input resized by the caller", |i| {
        let b = [2usize, 5, 9][i % 3];
        s.set_input_shape(0, &[b, 12]).unwrap();
        s.set_input(0, &inputs[i % 3]).unwrap();
        s.run().unwrap();
        assert_eq!(s.output(0).unwrap().len(), b * 48);
    });
}
