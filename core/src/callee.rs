//! Subgraphs called by IF and WHILE, each prepared for the input shapes it is called with.
//!
//! A control-flow op whose input shapes are static calls callees prepared once, at prepare. One
//! whose inputs are dynamic, or a WHILE whose body changes the loop-carried shapes, prepares
//! its callees at run time for each new set of input shapes and keeps the most recent few.

use std::sync::Arc;

use crate::control::SharedPool;
use crate::prepared::Env;
use crate::shape::fmt_dims;
use crate::{Backend, CompileError, Config, Model, OpId, Prepared, RunError, SubgraphId};

/// How many preparations for different input shapes one callee keeps.
const CACHE: usize = 8;

/// What preparing a callee at run time needs: [`Env`] with everything owned.
#[derive(Clone)]
pub(crate) struct RunEnv {
    pub model: Arc<Model>,
    pub backends: Arc<[Box<dyn Backend>]>,
    pub config: Arc<Config>,
    pub pool: SharedPool,
    pub threads: usize,
    pub cancel: crate::CancelToken,
}

/// One subgraph called by a control-flow op.
pub(crate) struct Callee {
    sub: SubgraphId,
    depth: usize,
    /// Preparations by input dims, most recently used last.
    prepared: Vec<(Vec<Vec<usize>>, Box<Prepared>)>,
    /// Present when the callee may be prepared again at run time.
    env: Option<RunEnv>,
}

impl Callee {
    /// Subgraph `sub` called at nesting `depth`, prepared now for `dims` when given, and at run
    /// time for other dims when `dynamic`.
    pub fn new(sub: SubgraphId, dims: Option<&[Vec<usize>]>, dynamic: bool, env: &Env<'_>, depth: usize) -> Result<Callee, CompileError> {
        let mut prepared = Vec::new();
        if let Some(d) = dims {
            prepared.push((d.to_vec(), Box::new(Prepared::build(sub, d, env, depth)?)));
        }
        Ok(Callee { sub, depth, prepared, env: dynamic.then(|| env.to_run_env()) })
    }

    /// The preparation made at prepare (for a step whose shapes are static).
    pub fn fixed(&mut self, op: OpId, kind: &str) -> Result<&mut Prepared, RunError> {
        let sub = self.sub;
        match self.prepared.first_mut() {
            Some((_, p)) => Ok(p),
            None => Err(RunError::Kernel { op, kind: kind.into(), reason: format!("subgraph {sub} was not prepared") }),
        }
    }

    /// The callee prepared for input `dims`, preparing it now if these shapes are new.
    pub fn for_dims(&mut self, dims: &[&[usize]], op: OpId, kind: &str) -> Result<&mut Prepared, RunError> {
        let same = |d: &Vec<Vec<usize>>| d.len() == dims.len() && d.iter().zip(dims).all(|(a, b)| a.as_slice() == *b);
        match self.prepared.iter().rposition(|(d, _)| same(d)) {
            Some(k) if k + 1 == self.prepared.len() => {}
            Some(k) => {
                let hit = self.prepared.remove(k);
                self.prepared.push(hit);
            }
            None => {
                let fail = |reason: String| RunError::Kernel { op, kind: kind.into(), reason };
                let env = self.env.as_ref().ok_or_else(|| fail(format!("subgraph {} is called with shapes it was not prepared for", self.sub)))?;
                let owned: Vec<Vec<usize>> = dims.iter().map(|d| d.to_vec()).collect();
                let p = Prepared::build(self.sub, &owned, &env.env(), self.depth).map_err(|e| {
                    let shown: Vec<String> = owned.iter().map(|d| fmt_dims(d)).collect();
                    fail(format!("preparing subgraph {} for input shapes {} failed: {e}", self.sub, shown.join(", ")))
                })?;
                log::debug!("prepared {} at run time for new input shapes", self.sub);
                if self.prepared.len() >= CACHE {
                    self.prepared.remove(0);
                }
                self.prepared.push((owned, Box::new(p)));
            }
        }
        let sub = self.sub;
        match self.prepared.last_mut() {
            Some((_, p)) => Ok(p),
            None => Err(RunError::Kernel { op, kind: kind.into(), reason: format!("subgraph {sub} was not prepared") }),
        }
    }

    /// Whether output `k` of the preparation made at prepare is dynamic.
    pub fn output_is_dynamic(&self, k: usize) -> bool {
        self.prepared.first().is_some_and(|(_, p)| p.output_is_dynamic(k))
    }
}
