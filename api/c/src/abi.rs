//! The types and values of `include/nnfw.h`, `nnfw_experimental.h` and `nnfw_version.h`, mirrored
//! in Rust. C enums cross the boundary as `c_int` (what a C compiler gives an enum whose values fit
//! an `int`), never as Rust enums: a value the C caller makes up must not be undefined behaviour.
//! `tests/c_api.rs` compiles a C file that asserts every value and struct layout below against the
//! headers, so the two cannot drift.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// `NNFW_STATUS`.
pub type NNFW_STATUS = c_int;
/// `NNFW_TYPE`.
pub type NNFW_TYPE = c_int;
/// `NNFW_LAYOUT`.
pub type NNFW_LAYOUT = c_int;
/// `NNFW_INFO_ID`.
pub type NNFW_INFO_ID = c_int;

/// `NNFW_STATUS_NO_ERROR`.
pub const NNFW_STATUS_NO_ERROR: NNFW_STATUS = 0;
/// `NNFW_STATUS_ERROR`.
pub const NNFW_STATUS_ERROR: NNFW_STATUS = 1;
/// `NNFW_STATUS_UNEXPECTED_NULL`.
pub const NNFW_STATUS_UNEXPECTED_NULL: NNFW_STATUS = 2;
/// `NNFW_STATUS_INVALID_STATE`.
pub const NNFW_STATUS_INVALID_STATE: NNFW_STATUS = 3;
/// `NNFW_STATUS_OUT_OF_MEMORY`.
pub const NNFW_STATUS_OUT_OF_MEMORY: NNFW_STATUS = 4;
/// `NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE`.
pub const NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE: NNFW_STATUS = 5;
/// `NNFW_STATUS_DEPRECATED_API`.
pub const NNFW_STATUS_DEPRECATED_API: NNFW_STATUS = 6;

/// `NNFW_TYPE_TENSOR_FLOAT32`.
pub const NNFW_TYPE_TENSOR_FLOAT32: NNFW_TYPE = 0;
/// `NNFW_TYPE_TENSOR_INT32`.
pub const NNFW_TYPE_TENSOR_INT32: NNFW_TYPE = 1;
/// `NNFW_TYPE_TENSOR_QUANT8_ASYMM`.
pub const NNFW_TYPE_TENSOR_QUANT8_ASYMM: NNFW_TYPE = 2;
/// `NNFW_TYPE_TENSOR_BOOL`.
pub const NNFW_TYPE_TENSOR_BOOL: NNFW_TYPE = 3;
/// `NNFW_TYPE_TENSOR_UINT8`.
pub const NNFW_TYPE_TENSOR_UINT8: NNFW_TYPE = 4;
/// `NNFW_TYPE_TENSOR_INT64`.
pub const NNFW_TYPE_TENSOR_INT64: NNFW_TYPE = 5;
/// `NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED`.
pub const NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED: NNFW_TYPE = 6;
/// `NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED`.
pub const NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED: NNFW_TYPE = 7;

/// `NNFW_LAYOUT_NONE`.
pub const NNFW_LAYOUT_NONE: NNFW_LAYOUT = 0;
/// `NNFW_LAYOUT_CHANNELS_LAST`.
pub const NNFW_LAYOUT_CHANNELS_LAST: NNFW_LAYOUT = 1;
/// `NNFW_LAYOUT_CHANNELS_FIRST`.
pub const NNFW_LAYOUT_CHANNELS_FIRST: NNFW_LAYOUT = 2;

/// `NNFW_INFO_ID_VERSION`.
pub const NNFW_INFO_ID_VERSION: NNFW_INFO_ID = 0;

/// `NNFW_MAX_RANK`.
pub const NNFW_MAX_RANK: usize = 6;

/// `NNFW_VERSION` (`nnfw_version.h`): this crate's version as `0xMMmmmmPP`.
pub const NNFW_VERSION: u32 = version_u32(env!("CARGO_PKG_VERSION"));

/// The longest path `nnfw_load_model_from_file` accepts, NUL included (as onert).
pub const MAX_PATH_LENGTH: usize = 1024;
/// The longest backend list `nnfw_set_available_backends` accepts, NUL included (as onert).
pub const MAX_BACKEND_NAME_LENGTH: usize = 32;
/// The longest tensor name `nnfw_*_tensorindex` accepts, NUL included (as onert).
pub const MAX_TENSOR_NAME_LENGTH: usize = 64;
/// The longest configuration key or value accepted (a bound for the NUL scan only).
pub const MAX_CONFIG_LENGTH: usize = 4096;

/// `nnfw_tensorinfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct nnfw_tensorinfo {
    /// Element type (`NNFW_TYPE`).
    pub dtype: NNFW_TYPE,
    /// Number of dimensions.
    pub rank: i32,
    /// Dimensions, outermost first.
    pub dims: [i32; NNFW_MAX_RANK],
}

/// `nnfw_operand` (`nnfw_experimental.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nnfw_operand {
    /// Element type and shape.
    pub type_: nnfw_tensorinfo,
    /// The tensor's bytes.
    pub allocation: *mut c_void,
}

/// `nnfw_custom_kernel_params` (`nnfw_experimental.h`).
#[repr(C)]
#[derive(Debug)]
pub struct nnfw_custom_kernel_params {
    /// Number of inputs.
    pub ninputs: usize,
    /// `ninputs` operands.
    pub inputs: *mut nnfw_operand,
    /// Number of outputs.
    pub noutputs: usize,
    /// `noutputs` operands.
    pub outputs: *mut nnfw_operand,
}

/// `nnfw_custom_eval` (`nnfw_experimental.h`). `Option` because a C caller may pass NULL.
pub type nnfw_custom_eval = Option<unsafe extern "C" fn(params: *mut nnfw_custom_kernel_params, userdata: *mut c_char, userdata_size: usize)>;

/// `custom_kernel_registration_info` (`nnfw_experimental.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct custom_kernel_registration_info {
    /// The kernel.
    pub eval_function: nnfw_custom_eval,
}

/// Every named constant of the headers with its value, for the header check.
pub const CONSTANTS: &[(&str, i64)] = &[
    ("NNFW_STATUS_NO_ERROR", NNFW_STATUS_NO_ERROR as i64),
    ("NNFW_STATUS_ERROR", NNFW_STATUS_ERROR as i64),
    ("NNFW_STATUS_UNEXPECTED_NULL", NNFW_STATUS_UNEXPECTED_NULL as i64),
    ("NNFW_STATUS_INVALID_STATE", NNFW_STATUS_INVALID_STATE as i64),
    ("NNFW_STATUS_OUT_OF_MEMORY", NNFW_STATUS_OUT_OF_MEMORY as i64),
    ("NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE", NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE as i64),
    ("NNFW_STATUS_DEPRECATED_API", NNFW_STATUS_DEPRECATED_API as i64),
    ("NNFW_TYPE_TENSOR_FLOAT32", NNFW_TYPE_TENSOR_FLOAT32 as i64),
    ("NNFW_TYPE_TENSOR_INT32", NNFW_TYPE_TENSOR_INT32 as i64),
    ("NNFW_TYPE_TENSOR_QUANT8_ASYMM", NNFW_TYPE_TENSOR_QUANT8_ASYMM as i64),
    ("NNFW_TYPE_TENSOR_BOOL", NNFW_TYPE_TENSOR_BOOL as i64),
    ("NNFW_TYPE_TENSOR_UINT8", NNFW_TYPE_TENSOR_UINT8 as i64),
    ("NNFW_TYPE_TENSOR_INT64", NNFW_TYPE_TENSOR_INT64 as i64),
    ("NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED", NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED as i64),
    ("NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED", NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED as i64),
    ("NNFW_LAYOUT_NONE", NNFW_LAYOUT_NONE as i64),
    ("NNFW_LAYOUT_CHANNELS_LAST", NNFW_LAYOUT_CHANNELS_LAST as i64),
    ("NNFW_LAYOUT_CHANNELS_FIRST", NNFW_LAYOUT_CHANNELS_FIRST as i64),
    ("NNFW_INFO_ID_VERSION", NNFW_INFO_ID_VERSION as i64),
    ("NNFW_MAX_RANK", NNFW_MAX_RANK as i64),
    ("NNFW_VERSION", NNFW_VERSION as i64),
];

/// A struct's C name, size, alignment and `(field, offset)` list.
pub type StructLayout = (&'static str, usize, usize, Vec<(&'static str, usize)>);

/// The layout of every struct of the headers, for the header check.
pub fn layouts() -> Vec<StructLayout> {
    use std::mem::{align_of, offset_of, size_of};
    vec![
        (
            "nnfw_tensorinfo",
            size_of::<nnfw_tensorinfo>(),
            align_of::<nnfw_tensorinfo>(),
            vec![("dtype", offset_of!(nnfw_tensorinfo, dtype)), ("rank", offset_of!(nnfw_tensorinfo, rank)), ("dims", offset_of!(nnfw_tensorinfo, dims))],
        ),
        (
            "nnfw_operand",
            size_of::<nnfw_operand>(),
            align_of::<nnfw_operand>(),
            vec![("type", offset_of!(nnfw_operand, type_)), ("allocation", offset_of!(nnfw_operand, allocation))],
        ),
        (
            "nnfw_custom_kernel_params",
            size_of::<nnfw_custom_kernel_params>(),
            align_of::<nnfw_custom_kernel_params>(),
            vec![
                ("ninputs", offset_of!(nnfw_custom_kernel_params, ninputs)),
                ("inputs", offset_of!(nnfw_custom_kernel_params, inputs)),
                ("noutputs", offset_of!(nnfw_custom_kernel_params, noutputs)),
                ("outputs", offset_of!(nnfw_custom_kernel_params, outputs)),
            ],
        ),
        (
            "custom_kernel_registration_info",
            size_of::<custom_kernel_registration_info>(),
            align_of::<custom_kernel_registration_info>(),
            vec![("eval_function", offset_of!(custom_kernel_registration_info, eval_function))],
        ),
    ]
}

/// `"M.m.p"` as `0xMMmmmmPP`; parts that do not parse count as 0.
const fn version_u32(v: &str) -> u32 {
    let b = v.as_bytes();
    let mut parts = [0u32; 3];
    let (mut i, mut k) = (0, 0);
    while i < b.len() && k < 3 {
        match b[i] {
            b'.' => k += 1,
            d @ b'0'..=b'9' => parts[k] = parts[k] * 10 + (d - b'0') as u32,
            _ => break, // a pre-release suffix ("-rc1") ends the number
        }
        i += 1;
    }
    ((parts[0] & 0xff) << 24) | ((parts[1] & 0xffff) << 8) | (parts[2] & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_packs_like_onert() {
        assert_eq!(version_u32("1.28.0"), 0x01001C00);
        assert_eq!(version_u32("0.1.0"), 0x00000100);
        assert_eq!(version_u32("2.3.4-rc1"), 0x02000304);
    }
}
