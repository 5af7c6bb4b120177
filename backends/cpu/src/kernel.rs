//! What an op builder makes: a [`Kernel`] and the inputs it reads ([`Built`]). A leaf module:
//! the op builders (`ops`) and the backend that runs their kernels (`backend`) both use it.

use nnrt_core::{InputSource, OperandId, TensorMut, TensorRef};

/// A compiled op: reads its inputs (the arena's or its own constants), writes its outputs.
pub(crate) trait Kernel: Send {
    /// Runs once per inference. `ins` holds the inputs the builder asked for, in its order.
    fn run(&mut self, ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]) -> Result<(), String>;
}

/// What an op builder returns: the kernel and the inputs it reads at run time.
pub(crate) struct Built {
    pub kernel: Box<dyn Kernel>,
    pub inputs: Vec<InputSource>,
    /// Variable tensors the kernel reads and updates in place (LSTM state); they follow the
    /// op's outputs in the kernel's `outs`.
    pub state: Vec<OperandId>,
}

/// A kernel made from a closure over (inputs, outputs).
pub(crate) struct FnKernel<F>(pub F);

impl<F> Kernel for FnKernel<F>
where
    F: FnMut(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), String> + Send,
{
    fn run(&mut self, ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>]) -> Result<(), String> {
        (self.0)(ins, outs)
    }
}

/// Boxes a closure kernel with its run-time inputs.
pub(crate) fn built<F>(inputs: Vec<InputSource>, f: F) -> Built
where
    F: FnMut(&[TensorRef<'_>], &mut [TensorMut<'_>]) -> Result<(), String> + Send + 'static,
{
    Built { kernel: Box::new(FnKernel(f)), inputs, state: Vec::new() }
}
