//! In-process A/B of one model under two values of `NNRT_NOFUSE` (read at prepare): session A
//! prepared with it unset, session B with it set to `VALUE`, both in this process, run in
//! alternating batches so that the machine's slow and fast phases (and a fresh process's
//! luck) hit both alike. Inputs are zeros. Prints min and median per session and B/A.
//! `cargo run --release -p nnrt-benches --example session_ab -- MODEL VALUE [THREADS] [ROUNDS] [RUNS]`
use std::time::Instant;

fn session(model: &str, threads: usize) -> nnrt::Session {
    let mut s = nnrt::Session::load(model).expect("load");
    s.set_threads(threads).expect("threads");
    s.prepare().expect("prepare");
    for i in 0..s.input_count() {
        let n = s.input_info(i).expect("input").byte_size();
        s.set_input(i, &vec![0u8; n]).expect("input");
    }
    s
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (model, value) = (&args[1], &args[2]);
    let arg = |i: usize, d: usize| args.get(i).and_then(|v| v.parse().ok()).unwrap_or(d);
    let (threads, rounds, runs) = (arg(3, 1), arg(4, 30), arg(5, 20));
    std::env::remove_var("NNRT_NOFUSE");
    let mut a = session(model, threads);
    std::env::set_var("NNRT_NOFUSE", value);
    let mut b = session(model, threads);
    std::env::remove_var("NNRT_NOFUSE");
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        for (s, t) in if r % 2 == 0 { [(&mut a, &mut ta), (&mut b, &mut tb)] } else { [(&mut b, &mut tb), (&mut a, &mut ta)] } {
            s.run().expect("run");
            for _ in 0..runs {
                let start = Instant::now();
                s.run().expect("run");
                t.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let (mina, minb) = (ta.iter().copied().fold(f64::MAX, f64::min), tb.iter().copied().fold(f64::MAX, f64::min));
    let (meda, medb) = (median(&mut ta), median(&mut tb));
    println!("{model} t={threads} NNRT_NOFUSE={value}: A (unset) min {mina:.3} med {meda:.3} ms, B min {minb:.3} med {medb:.3} ms; A/B min {:.3} med {:.3}", mina / minb, meda / medb);
}
