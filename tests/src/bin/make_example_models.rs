//! Writes the example models into `examples/models/` (or the folder given as the only argument):
//! `cargo run -p nnrt-tests --bin make_example_models`.

fn main() {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => nnrt_tests::repo_root().join("examples/models"),
    };
    match nnrt_tests::example::write_examples(&dir) {
        Ok(files) => {
            for f in files {
                println!("wrote {}", f.display());
            }
        }
        Err(e) => {
            eprintln!("make_example_models: cannot write into {}: {e}", dir.display());
            std::process::exit(1);
        }
    }
}
