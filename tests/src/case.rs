//! [`Case`]: one op test as data (a model, its inputs, what must come out or which phase must
//! fail, tolerances with their reasons, and the targets it is skipped on, with why), replayed on
//! every [`Target`] by [`crate::replay`].

use std::ops::Range;

use crate::graph::Graph;
use crate::reference::T;
use crate::values::V;
use crate::ModelBuilder;

/// A backend configuration a case is replayed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `cpu` with 1 thread.
    Cpu1,
    /// `cpu` with 2 threads; outputs must also equal the 1-thread ones bit for bit.
    Cpu2,
    /// `gpu` alone: every op on the GPU.
    Gpu,
    /// `gpu;cpu`: the GPU where it has a kernel, the CPU for the rest.
    GpuCpu,
}

impl Target {
    /// The `BACKENDS` value.
    pub fn backends(self) -> &'static str {
        match self {
            Target::Cpu1 | Target::Cpu2 => "cpu",
            Target::Gpu => "gpu",
            Target::GpuCpu => "gpu;cpu",
        }
    }

    /// The thread count.
    pub fn threads(self) -> usize {
        if self == Target::Cpu2 {
            2
        } else {
            1
        }
    }

    /// Whether the target needs a GPU adapter.
    pub fn on_gpu(self) -> bool {
        matches!(self, Target::Gpu | Target::GpuCpu)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let threads = if self.threads() == 1 { "1 thread" } else { "2 threads" };
        write!(f, "{} ({threads})", self.backends())
    }
}

/// How far apart a float output may be from the expected value: `|got - want| <= abs + rel·|want|`
/// (NaN matches NaN), with the reason the rounding may differ.
#[derive(Clone, Copy, Debug)]
pub struct Tol {
    /// Absolute part.
    pub abs: f32,
    /// Relative part, times |want|.
    pub rel: f32,
    /// Why this much.
    pub why: &'static str,
}

impl Tol {
    /// Bit-exact (a zero's sign aside when checked against values).
    pub const EXACT: Tol = Tol { abs: 0.0, rel: 0.0, why: "data movement, comparisons, casts and single IEEE operations are not rounded differently" };

    /// A tolerance with its reason.
    pub const fn new(abs: f32, rel: f32, why: &'static str) -> Tol {
        Tol { abs, rel, why }
    }

    /// Whether `got` passes for `want`; `bits`: an exact tolerance compares the bits (against
    /// another backend's output) rather than the values.
    pub fn accepts(&self, got: f32, want: f32, bits: bool) -> bool {
        if got.is_nan() && want.is_nan() {
            return true;
        }
        if self.abs == 0.0 && self.rel == 0.0 {
            return if bits { got.to_bits() == want.to_bits() } else { got == want };
        }
        got == want || (got - want).abs() <= self.abs + self.rel * want.abs()
    }
}

/// One expected output (or a part of it).
#[derive(Clone, Debug)]
pub(crate) struct Want {
    pub index: usize,
    pub dims: Option<Vec<usize>>,
    pub values: Option<(V, Tol)>,
    pub part: Option<Range<usize>>,
}

/// What a case must give.
#[derive(Clone, Debug)]
pub(crate) enum Expect {
    /// These outputs.
    Outputs(Vec<Want>),
    /// The `cpu` backend's outputs of the same model (or of `reference`, an equivalent model).
    Cpu { reference: Option<Box<Graph>>, tol: Tol },
    /// Prepare fails with a compile error mentioning every needle.
    Prepare(Vec<&'static str>),
    /// Prepare succeeds; run fails with a run error mentioning every needle.
    Run(Vec<&'static str>),
}

/// Where the model comes from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// Built in IR.
    Ir(Box<Graph>),
    /// A TFLite file (read by the loader at every replay).
    Tflite(Vec<u8>),
}

/// One op test, replayed on every [`Target`].
#[derive(Clone, Debug)]
pub struct Case {
    /// The case's name, unique in its family.
    pub name: String,
    pub(crate) source: Source,
    pub(crate) feeds: Vec<V>,
    pub(crate) expect: Expect,
    pub(crate) runs: usize,
    pub(crate) skips: Vec<(Target, String)>,
    pub(crate) gpu_tol: Option<Tol>,
}

impl Case {
    /// A case on the model `g` (fed with its values); add what it must give.
    pub fn new(name: impl Into<String>, g: &Graph) -> Case {
        let feeds = g.feeds().to_vec();
        Case::from_source(name.into(), Source::Ir(Box::new(g.clone())), feeds)
    }

    /// A case on a TFLite model (read by the loader, so its mapping of the op is tested too).
    pub fn tflite(name: impl Into<String>, b: &ModelBuilder, feeds: Vec<V>) -> Case {
        Case::from_source(name.into(), Source::Tflite(b.finish()), feeds)
    }

    fn from_source(name: String, source: Source, feeds: Vec<V>) -> Case {
        Case { name, source, feeds, expect: Expect::Outputs(Vec::new()), runs: 1, skips: Vec::new(), gpu_tol: None }
    }

    fn want(&mut self, w: Want) {
        match &mut self.expect {
            Expect::Outputs(list) => list.push(w),
            other => panic!("case '{}': expects {other:?}, not outputs", self.name),
        }
    }

    /// Output `k` is exactly `v`.
    pub fn out(self, k: usize, v: V) -> Case {
        self.out_close(k, v, Tol::EXACT)
    }

    /// Output `k` is `v` within `tol` (float outputs; other types compare exactly).
    pub fn out_close(mut self, k: usize, v: V, tol: Tol) -> Case {
        self.want(Want { index: k, dims: None, values: Some((v, tol)), part: None });
        self
    }

    /// Output `k` has `t`'s dims and, within `tol`, its values.
    pub fn out_tensor(mut self, k: usize, t: &T, tol: Tol) -> Case {
        self.want(Want { index: k, dims: Some(t.dims.clone()), values: Some((V::F32(t.data.clone()), tol)), part: None });
        self
    }

    /// Elements `part` of output `k` are `v` within `tol`.
    pub fn out_part(mut self, k: usize, part: Range<usize>, v: V, tol: Tol) -> Case {
        self.want(Want { index: k, dims: None, values: Some((v, tol)), part: Some(part) });
        self
    }

    /// Output `k` has these dims.
    pub fn dims(mut self, k: usize, dims: &[usize]) -> Case {
        self.want(Want { index: k, dims: Some(dims.to_vec()), values: None, part: None });
        self
    }

    /// Prepare must fail with a compile error mentioning every needle.
    pub fn prepare_error(mut self, needles: &[&'static str]) -> Case {
        self.expect = Expect::Prepare(needles.to_vec());
        self
    }

    /// Prepare must succeed and run fail with a run error mentioning every needle.
    pub fn run_error(mut self, needles: &[&'static str]) -> Case {
        self.expect = Expect::Run(needles.to_vec());
        self
    }

    /// The outputs must be the `cpu` backend's (1 thread) within `tol` (bit for bit when exact).
    pub fn same_as_cpu(mut self, tol: Tol) -> Case {
        self.expect = Expect::Cpu { reference: None, tol };
        self
    }

    /// The outputs must be those of `reference` (the same computation from other ops) on the
    /// `cpu` backend, within `tol`.
    pub fn same_as_cpu_of(mut self, reference: &Graph, tol: Tol) -> Case {
        self.expect = Expect::Cpu { reference: Some(Box::new(reference.clone())), tol };
        self
    }

    /// Runs `n` times before the outputs are read (state carried between runs).
    pub fn runs(mut self, n: usize) -> Case {
        self.runs = n;
        self
    }

    /// Not replayed on `targets`, for the reason given (printed when skipped).
    pub fn skip(mut self, targets: &[Target], why: &str) -> Case {
        self.skips.extend(targets.iter().map(|&t| (t, why.to_string())));
        self
    }

    /// Not replayed on `gpu` alone, which has no kernel for it: `why` says what is missing.
    pub fn no_gpu(self, why: &str) -> Case {
        self.skip(&[Target::Gpu], &format!("gpu: {why}"))
    }

    /// On `gpu` and `gpu;cpu`, float outputs are compared with `tol` instead.
    pub fn gpu_tol(mut self, tol: Tol) -> Case {
        self.gpu_tol = Some(tol);
        self
    }

    /// Why the case is not replayed on `target`, if it is not.
    pub fn skip_reason(&self, target: Target) -> Option<&str> {
        self.skips.iter().find(|(t, _)| *t == target).map(|(_, why)| why.as_str())
    }
}
