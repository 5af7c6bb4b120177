//! Typed indices. Each prints distinctly (`%17` an operand, `@3` an op, `^1` a subgraph) so logs
//! and errors never confuse one kind of index with another.

use std::fmt;

macro_rules! typed_index {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for indexing the owning vector.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
            /// Builds the id of the `i`-th element.
            #[inline]
            pub fn new(i: usize) -> Self {
                Self(i as u32)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    };
}

typed_index!(
    /// Index of an operand (tensor) within its subgraph.
    OperandId,
    "%"
);
typed_index!(
    /// Index of an operation within its subgraph, in execution order.
    OpId,
    "@"
);
typed_index!(
    /// Index of a subgraph within a model; `^0` is the entry.
    SubgraphId,
    "^"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_distinctly() {
        assert_eq!(OperandId(17).to_string(), "%17");
        assert_eq!(OpId(3).to_string(), "@3");
        assert_eq!(SubgraphId(1).to_string(), "^1");
    }
}
