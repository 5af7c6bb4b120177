//! Limits that keep a hostile or broken model from hanging or exhausting the host: WHILE
//! iteration limits, cancelling a run from another thread, control-flow signatures checked at
//! prepare, thread counts and memory limits refused with typed errors.

use std::time::{Duration, Instant};

use nnrt::{CompileError, DType, Error, RunError, Session};
use nnrt_core::{Activation, BinaryOp, CompareOp, Model, OpKind, SubgraphId};
use nnrt_tests::{i, Graph};

/// `while (i < limit) i = i + step` on an int32 scalar; the body's output has type `body_out`
/// (int32 unless a test breaks it).
fn counting_loop(limit: i32, step: i32, body_out: DType) -> Model {
    let mut cond = Graph::new();
    let (x, n) = (cond.input(&[], i(&[0])), cond.scalar(limit));
    let c = cond.out(DType::Bool, &[]);
    cond.op(OpKind::Compare(CompareOp::Less), &[Some(x), Some(n)], &[c]);

    let mut body = Graph::new();
    let (x, s) = (body.input(&[], i(&[0])), body.scalar(step));
    let next = body.out(body_out, &[]);
    body.op(OpKind::Binary { op: BinaryOp::Add, act: Activation::None }, &[Some(x), Some(s)], &[next]);

    let mut main = Graph::new();
    let i0 = main.input(&[], i(&[0]));
    let out = main.out(DType::I32, &[]);
    main.op(OpKind::While { cond: SubgraphId::new(1), body: SubgraphId::new(2) }, &[Some(i0)], &[out]);
    Model { subgraphs: vec![main.sub, cond.sub, body.sub], signatures: Vec::new(), source: "limits test".into() }
}

fn session(model: Model, config: &[(&str, &str)]) -> Result<Session, Error> {
    let mut s = Session::from_model(model)?;
    s.set_backends("cpu")?;
    s.set_threads(1)?;
    for (k, v) in config {
        s.set_config(k, v)?;
    }
    s.prepare()?;
    s.set_input(0, &0i32.to_le_bytes())?;
    Ok(s)
}

#[test]
fn a_loop_that_ends_runs_to_its_end() {
    let mut s = session(counting_loop(1000, 1, DType::I32), &[]).unwrap();
    s.run().unwrap();
    assert_eq!(s.output(0).unwrap(), 1000i32.to_le_bytes());
}

#[test]
fn a_loop_that_never_ends_stops_at_the_iteration_limit() {
    let mut s = session(counting_loop(10, 0, DType::I32), &[("WHILE_MAX_ITERATIONS", "500")]).unwrap();
    let e = s.run().unwrap_err().to_string();
    assert!(e.contains("While") && e.contains("500 iterations"), "{e}");
    // The default limit ends it too, without any configuration.
    let start = Instant::now();
    let mut s = session(counting_loop(10, 0, DType::I32), &[]).unwrap();
    let e = s.run().unwrap_err();
    assert!(matches!(e, Error::Run(RunError::Kernel { .. })) && e.to_string().contains("100000 iterations"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(20), "the default limit took {:?}", start.elapsed());
}

#[test]
fn cancel_from_another_thread_stops_an_endless_loop_and_the_session_stays_usable() {
    let mut s = session(counting_loop(10, 0, DType::I32), &[("WHILE_MAX_ITERATIONS", "0")]).unwrap();
    let cancel = s.cancel_handle();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        cancel.cancel();
    });
    let e = s.run().unwrap_err();
    canceller.join().unwrap();
    assert!(matches!(&e, Error::Run(RunError::Cancelled { detail }) if detail.contains("While")), "{e}");
    // A cancel made between runs stops the next run once.
    s.cancel_handle().cancel();
    assert!(matches!(s.run(), Err(Error::Run(RunError::Cancelled { .. }))));
    s.set_input(0, &10i32.to_le_bytes()).unwrap();
    s.run().unwrap();
    assert_eq!(s.output(0).unwrap(), 10i32.to_le_bytes());
}

#[test]
fn a_body_whose_types_disagree_with_the_loop_fails_at_prepare() {
    for wrong in [DType::F32, DType::I8] {
        let e = session(counting_loop(10, 1, wrong), &[]).err().expect("prepared");
        let text = e.to_string();
        assert!(matches!(e, Error::Compile(CompileError::InvalidOp { .. })), "{text}");
        assert!(text.contains("While") && text.contains("output 0 of the body subgraph ^2 is %"), "{text}");
        // Both tensors are named with their types.
        assert!(text.contains(&format!("' {wrong}, the op's %0 '")) && text.ends_with("' int32"), "{text}");
    }
}

#[test]
fn thread_counts_and_memory_limits_out_of_range_are_typed_errors() {
    let mut s = Session::from_model(counting_loop(1, 1, DType::I32)).unwrap();
    for bad in [0usize, 4_294_967_296, usize::MAX] {
        assert!(matches!(s.set_threads(bad), Err(Error::Compile(CompileError::Config { .. }))), "{bad}");
    }
    assert!(matches!(s.set_config("NUM_THREADS", "-5"), Err(Error::Compile(CompileError::Config { .. }))));
    s.set_config("MEMORY_LIMIT", "lots").unwrap();
    assert!(matches!(s.prepare(), Err(Error::Compile(CompileError::Config { .. }))));
}

#[test]
fn a_tensor_over_the_memory_limit_fails_at_prepare_not_at_allocation() {
    let g = Graph::unary(OpKind::Unary(nnrt_core::UnaryOp::Relu), &[1 << 20, 64], nnrt_tests::f(&[]), DType::F32);
    let mut s = Session::from_model(g.model()).unwrap();
    s.set_config("MEMORY_LIMIT", "64M").unwrap();
    let e = s.prepare().unwrap_err();
    assert!(matches!(e, Error::Compile(CompileError::OutOfMemory { bytes: 268_435_456, .. })), "{e}");
    assert!(e.to_string().contains("MEMORY_LIMIT"), "{e}");
}
