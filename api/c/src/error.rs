//! The error every C entry point turns into an `NNFW_STATUS` and the session's last error message.

use crate::abi::*;
use crate::session::Phase;

/// A failed call: the status to return and the message `nnfw_get_last_error_message` gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// What the C function returns.
    pub status: NNFW_STATUS,
    /// What went wrong and, where it helps, what to do instead.
    pub message: String,
}

impl ApiError {
    /// `NNFW_STATUS_ERROR` with `message`.
    pub fn error(message: impl Into<String>) -> ApiError {
        ApiError { status: NNFW_STATUS_ERROR, message: message.into() }
    }

    /// `NNFW_STATUS_UNEXPECTED_NULL`: argument `what` of `call` was NULL.
    pub fn null(call: &str, what: &str) -> ApiError {
        ApiError { status: NNFW_STATUS_UNEXPECTED_NULL, message: format!("{call}: {what} is NULL") }
    }

    /// `NNFW_STATUS_INVALID_STATE`: `call` is not allowed in `phase`; `hint` says what is.
    pub fn state(call: &str, phase: Phase, hint: &str) -> ApiError {
        ApiError { status: NNFW_STATUS_INVALID_STATE, message: format!("{call}: not allowed in state {}: {hint}", phase.name()) }
    }

    /// `NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE` with `message`.
    pub fn insufficient(message: impl Into<String>) -> ApiError {
        ApiError { status: NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE, message: message.into() }
    }

    /// `NNFW_STATUS_DEPRECATED_API` for `call`, naming its replacement.
    pub fn deprecated(call: &str, instead: &str) -> ApiError {
        ApiError { status: NNFW_STATUS_DEPRECATED_API, message: format!("{call} is deprecated: use {instead}") }
    }

    /// An error of the Rust API during `call`. The C layer checks session states itself, so even
    /// the Rust API's `InvalidState` (a shape change that left the session unprepared) is an
    /// `NNFW_STATUS_ERROR` here.
    pub fn from_nnrt(call: &str, e: nnrt::Error) -> ApiError {
        let out_of_memory = matches!(e, nnrt::Error::Compile(nnrt_core::CompileError::OutOfMemory { .. }) | nnrt::Error::Run(nnrt_core::RunError::OutOfMemory { .. }));
        let status = if out_of_memory { NNFW_STATUS_OUT_OF_MEMORY } else { NNFW_STATUS_ERROR };
        ApiError { status, message: format!("{call}: {e}") }
    }
}

/// Turns an `nnrt::Error` into an [`ApiError`] of `call`.
pub trait Context<T> {
    /// Names the C call in the error.
    fn during(self, call: &str) -> Result<T, ApiError>;
}

impl<T> Context<T> for Result<T, nnrt::Error> {
    fn during(self, call: &str) -> Result<T, ApiError> {
        self.map_err(|e| ApiError::from_nnrt(call, e))
    }
}
