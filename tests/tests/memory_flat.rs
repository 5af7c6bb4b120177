//! Memory stays flat over many runs whose shapes change at run time. Its own test binary with a
//! counting allocator: it measures the bytes this process holds through the allocator, not the
//! process's RSS, which other tests running beside it (and the allocator's caching) move at
//! random.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use nnrt::{DType, Session};
use nnrt_core::{ConstData, Dim, Model, OpKind, Operand, Operation, Shape, Subgraph};

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

/// FILL(dims, 2.5) with `dims` a graph input: its output's shape is known only at run time.
fn fill_session() -> Session {
    let mut g = Subgraph::default();
    let dims = g.add_operand(Operand::new("dims", DType::I32, &[2]));
    let mut v = Operand::new("v", DType::F32, &[]);
    v.data = Some(ConstData::owned(2.5f32.to_le_bytes().to_vec()));
    let v = g.add_operand(v);
    let mut y = Operand::new("y", DType::F32, &[1, 1]);
    y.shape = Shape(vec![Dim::Unknown; 2]);
    let y = g.add_operand(y);
    g.add_op(Operation { kind: OpKind::Fill, inputs: vec![Some(dims), Some(v)], outputs: vec![y] });
    g.inputs.push(dims);
    g.outputs.push(y);
    let mut s = Session::from_model(Model { subgraphs: vec![g], source: "memory_flat".into(), ..Model::default() }).unwrap();
    s.set_backends("cpu").unwrap();
    s.set_threads(1).unwrap();
    s.prepare().unwrap();
    s
}

#[test]
fn alternating_run_time_shapes_for_a_thousand_runs_keeps_memory_flat() {
    let mut s = fill_session();
    let sizes = [[256i32, 256], [1, 3], [64, 100]];
    let mut after_warmup = 0;
    for i in 0..1000 {
        let dims = sizes[i % 3];
        s.set_input(0, &dims.iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        s.run().unwrap();
        assert_eq!(s.output_info(0).unwrap().dims, vec![dims[0] as usize, dims[1] as usize]);
        assert_eq!(s.output(0).unwrap().len(), 4 * (dims[0] * dims[1]) as usize);
        if i == 99 {
            after_warmup = HELD.load(Ordering::Relaxed);
        }
    }
    let after = HELD.load(Ordering::Relaxed);
    // Dynamic storage grows to the largest shape once and is reused; kernels are cached per
    // shape. Nothing may grow per run: 900 runs leaking even 64 bytes each would pass 56 KiB.
    assert!(after <= after_warmup + 16 * 1024, "held bytes grew from {after_warmup} to {after} over 900 runs");
}
