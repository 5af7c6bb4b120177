//! [`OpRegistry`]: the table a backend looks its ops up in.

use std::collections::BTreeMap;

use crate::OpKind;

/// What a backend does for each op it handles, keyed by op name: builtin ops by
/// [`OpKind::name`], custom ops by their own name in a map of their own, so a custom op named
/// like a builtin is never taken for that builtin. Each backend picks its entry type `E` (the
/// functions that check and build an op, or lower it).
///
/// Backends fill a registry once, from each op family's `register`, one call per group of ops
/// sharing an entry. Registering a name twice is a bug and panics. The maps are B-trees: a
/// registry lives in a process-wide static, and leak checkers (valgrind) take a hash table's
/// pointer into the middle of its allocation for a possible leak.
pub struct OpRegistry<E> {
    builtin: BTreeMap<&'static str, E>,
    custom: BTreeMap<&'static str, E>,
}

impl<E> Default for OpRegistry<E> {
    fn default() -> Self {
        OpRegistry { builtin: BTreeMap::new(), custom: BTreeMap::new() }
    }
}

impl<E: Clone> OpRegistry<E> {
    /// Registers builtin ops by their [`OpKind::name`], all handled by `entry`.
    ///
    /// # Panics
    /// If one of `names` is already registered as a builtin.
    pub fn ops(&mut self, names: &[&'static str], entry: E) {
        add(&mut self.builtin, names, entry);
    }

    /// Registers custom ops by their name, all handled by `entry`.
    ///
    /// # Panics
    /// If one of `names` is already registered as a custom op.
    pub fn customs(&mut self, names: &[&'static str], entry: E) {
        add(&mut self.custom, names, entry);
    }
}

impl<E> OpRegistry<E> {
    /// The entry of an op of kind `kind`: a custom op's by its name among the custom ops, any
    /// other's by [`OpKind::name`] among the builtins.
    pub fn get(&self, kind: &OpKind) -> Option<&E> {
        match kind {
            OpKind::Custom { name, .. } => self.custom.get(name.as_str()),
            kind => self.builtin.get(kind.name()),
        }
    }

    /// The names of the registered builtin ops, in no particular order.
    pub fn builtin_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.builtin.keys().copied()
    }
}

fn add<E: Clone>(map: &mut BTreeMap<&'static str, E>, names: &[&'static str], entry: E) {
    for &name in names {
        let old = map.insert(name, entry.clone());
        assert!(old.is_none(), "op {name} is registered twice");
    }
}

#[cfg(test)]
mod tests {
    use super::OpRegistry;
    use crate::{Activation, BinaryOp, OpKind};

    fn add() -> OpKind {
        OpKind::Binary { op: BinaryOp::Add, act: Activation::None }
    }

    fn custom(name: &str) -> OpKind {
        OpKind::Custom { name: name.into(), options: Vec::new() }
    }

    #[test]
    fn builtins_by_name_customs_apart() {
        let mut r = OpRegistry::default();
        r.ops(&["Add", "Sub"], 1);
        r.customs(&["MaxUnpooling2D"], 2);
        assert_eq!(r.get(&add()), Some(&1));
        assert_eq!(r.get(&custom("Add")), None);
        assert_eq!(r.get(&custom("MaxUnpooling2D")), Some(&2));
        assert_eq!(r.get(&OpKind::Atan2), None);
        let mut names: Vec<_> = r.builtin_names().collect();
        names.sort_unstable();
        assert_eq!(names, ["Add", "Sub"]);
    }

    #[test]
    #[should_panic(expected = "op Add is registered twice")]
    fn registering_a_name_twice_panics() {
        let mut r = OpRegistry::default();
        r.ops(&["Add"], 1);
        r.ops(&["Add"], 2);
    }

    #[test]
    fn a_custom_may_share_a_builtin_name() {
        let mut r = OpRegistry::default();
        r.ops(&["Add"], 1);
        r.customs(&["Add"], 2);
        assert_eq!(r.get(&add()), Some(&1));
        assert_eq!(r.get(&custom("Add")), Some(&2));
    }
}
