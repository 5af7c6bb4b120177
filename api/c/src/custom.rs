//! `nnfw_register_custom_op_info`: a C kernel wrapped as the Rust API's [`nnrt::EvalFn`]. At each
//! run the adapter describes the op's tensors as `nnfw_operand`s (type, shape, data pointer) and
//! passes the op's option bytes as `userdata`, as onert does.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use nnrt::{DType, EvalFn, Quantization};
use nnrt_core::{TensorMut, TensorRef};

use crate::abi::*;
use crate::ffi;
use crate::io::nnfw_type;

/// The C kernel's type once checked non-NULL.
pub type CEval = unsafe extern "C" fn(*mut nnfw_custom_kernel_params, *mut c_char, usize);

/// Type and shape of a tensor as a kernel sees it. The views carry no quantization, so uint8 is
/// reported as `NNFW_TYPE_TENSOR_QUANT8_ASYMM`, the type onert gives custom kernels for it.
fn operand_type(dtype: DType, dims: &[usize]) -> Result<nnfw_tensorinfo, String> {
    if dims.len() > NNFW_MAX_RANK {
        return Err(format!("rank {} is above NNFW_MAX_RANK ({NNFW_MAX_RANK})", dims.len()));
    }
    let quant = if dtype == DType::U8 { Quantization::PerTensor { scale: 1.0, zero_point: 0 } } else { Quantization::None };
    let mut t = nnfw_tensorinfo { dtype: nnfw_type(dtype, &quant)?, rank: dims.len() as i32, dims: [0; NNFW_MAX_RANK] };
    for (d, &n) in t.dims.iter_mut().zip(dims) {
        *d = i32::try_from(n).map_err(|_| format!("dimension {n} does not fit an int32_t"))?;
    }
    Ok(t)
}

/// The Rust API kernel that calls `eval`.
pub fn adapter(eval: CEval) -> EvalFn {
    Arc::new(move |ins: &[TensorRef<'_>], outs: &mut [TensorMut<'_>], options: &[u8]| {
        let mut inputs = ins
            .iter()
            // The kernel gets inputs through `void *` as in onert; it must not write them.
            .map(|t| Ok(nnfw_operand { type_: operand_type(t.dtype, t.dims)?, allocation: t.bytes.as_ptr() as *mut c_void }))
            .collect::<Result<Vec<_>, String>>()?;
        let mut outputs = outs
            .iter_mut()
            .map(|t| Ok(nnfw_operand { type_: operand_type(t.dtype, t.dims)?, allocation: t.bytes.as_mut_ptr().cast::<c_void>() }))
            .collect::<Result<Vec<_>, String>>()?;
        let mut params =
            nnfw_custom_kernel_params { ninputs: inputs.len(), inputs: inputs.as_mut_ptr(), noutputs: outputs.len(), outputs: outputs.as_mut_ptr() };
        // A copy, so the kernel may write its `char *userdata` without touching the model.
        let mut userdata = options.to_vec();
        ffi::call_custom_eval(eval, &mut params, &mut userdata);
        Ok(())
    })
}
