//! `.npy` bytes (as `nnpackage_run --load:npy` reads them): an array or a typed error, never a
//! panic; an array that parsed has exactly the bytes its shape and type give, and writing it
//! and reading that back gives the same array.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = nnrt_npy::parse(data) {
        let elements = if a.dims.contains(&0) { 0 } else { a.dims.iter().product() };
        assert_eq!(a.data.len(), elements * a.dtype.size());
        let again = nnrt_npy::parse(&nnrt_npy::to_bytes(a.dtype, &a.dims, &a.data));
        assert_eq!(again.as_ref(), Ok(&a));
    }
});
