//! Typed reads of a KernelCall's arguments: `args[k]` is an index into the method's values, and
//! the value must be of the kind the operator's schema says. Errors name the method, the
//! instruction, the argument and the value.

use nnrt_core::{LoadError, OperandId};

use super::method::{MethodBuilder, Scalar};
use crate::generated::executorch_flatbuffer as et;

impl<'a> MethodBuilder<'_, 'a> {
    /// The value index of argument `k`.
    pub fn arg_index(&self, args: &[i64], k: usize) -> Result<i64, LoadError> {
        args.get(k).copied().ok_or_else(|| self.err(format!("has {} arguments; argument {k} is missing", args.len())))
    }

    /// Argument `k`'s value.
    pub fn arg(&self, args: &[i64], k: usize) -> Result<et::EValue<'a>, LoadError> {
        self.value(self.arg_index(args, k)?)
    }

    fn wrong(&self, args: &[i64], k: usize, want: &str) -> LoadError {
        let (vi, kind) = match self.arg(args, k) {
            Ok(v) => (args[k], v.val_type().variant_name().unwrap_or("unknown kind")),
            Err(e) => return e,
        };
        self.err(format!("argument {k} (value {vi}) is {kind}, where {want} is expected"))
    }

    /// Whether argument `k` is present and not Null.
    pub fn has(&self, args: &[i64], k: usize) -> bool {
        self.arg(args, k).is_ok_and(|v| v.val_type() != et::KernelTypes::Null)
    }

    /// Tensor argument `k` (its current operand).
    pub fn tensor(&mut self, args: &[i64], k: usize) -> Result<OperandId, LoadError> {
        let v = self.arg(args, k)?;
        if v.val_as_tensor().is_none() {
            return Err(self.wrong(args, k, "a Tensor"));
        }
        self.read(args[k])
    }

    /// Optional tensor argument `k` (`Tensor?`): `None` for Null.
    pub fn opt_tensor(&mut self, args: &[i64], k: usize) -> Result<Option<OperandId>, LoadError> {
        if !self.has(args, k) {
            return Ok(None);
        }
        self.tensor(args, k).map(Some)
    }

    /// Tensor-list argument `k` (`Tensor[]`).
    pub fn tensors(&mut self, args: &[i64], k: usize) -> Result<Vec<OperandId>, LoadError> {
        let v = self.arg(args, k)?;
        let items = v.val_as_tensor_list().ok_or_else(|| self.wrong(args, k, "a TensorList"))?;
        let items: Vec<i64> = items.items().map(|l| l.iter().map(i64::from).collect()).unwrap_or_default();
        items.into_iter().map(|i| self.read(i)).collect()
    }

    /// The value indices of tensor-list argument `k`, for outputs written one by one.
    pub fn list_items(&self, args: &[i64], k: usize) -> Result<Vec<i64>, LoadError> {
        let v = self.arg(args, k)?;
        let items = v.val_as_tensor_list().ok_or_else(|| self.wrong(args, k, "a TensorList"))?;
        Ok(items.items().map(|l| l.iter().map(i64::from).collect()).unwrap_or_default())
    }

    /// The position of a single-output operator's out argument when the schema's optional
    /// arguments vary: the last argument, or the one before it when programs append the return
    /// value (the out again).
    pub fn last_out(&self, args: &[i64]) -> Result<usize, LoadError> {
        let n = args.len();
        if n >= 3 && args[n - 1] == args[n - 2] {
            return Ok(n - 2);
        }
        n.checked_sub(1).ok_or_else(|| self.err("has no out argument"))
    }

    /// A fresh operand for out-argument `k` (a Tensor value), bound to that value.
    pub fn out(&mut self, args: &[i64], k: usize) -> Result<OperandId, LoadError> {
        let v = self.arg(args, k)?;
        if v.val_as_tensor().is_none() {
            return Err(self.wrong(args, k, "an out Tensor"));
        }
        self.write(args[k])
    }

    /// Int argument `k`.
    pub fn int(&self, args: &[i64], k: usize) -> Result<i64, LoadError> {
        match self.scalar(args, k)? {
            Scalar::Int(i) => Ok(i),
            _ => Err(self.wrong(args, k, "an Int")),
        }
    }

    /// Optional int argument `k` (`int?`).
    pub fn opt_int(&self, args: &[i64], k: usize) -> Result<Option<i64>, LoadError> {
        if !self.has(args, k) {
            return Ok(None);
        }
        self.int(args, k).map(Some)
    }

    /// Bool argument `k`.
    pub fn boolean(&self, args: &[i64], k: usize) -> Result<bool, LoadError> {
        match self.scalar(args, k)? {
            Scalar::Bool(b) => Ok(b),
            _ => Err(self.wrong(args, k, "a Bool")),
        }
    }

    /// Float argument `k` (`float`: a Double, or an Int the exporter kept as one).
    pub fn double(&self, args: &[i64], k: usize) -> Result<f64, LoadError> {
        match self.scalar(args, k)? {
            Scalar::Double(d) => Ok(d),
            Scalar::Int(i) => Ok(i as f64),
            Scalar::Bool(_) => Err(self.wrong(args, k, "a Double")),
        }
    }

    /// Scalar argument `k` (an Int, Double or Bool).
    pub fn scalar(&self, args: &[i64], k: usize) -> Result<Scalar, LoadError> {
        let v = self.arg(args, k)?;
        if let Some(x) = self.scalar_value(args[k])? {
            return Ok(x);
        }
        if let Some(i) = v.val_as_int() {
            return Ok(Scalar::Int(i.int_val()));
        }
        if let Some(d) = v.val_as_double() {
            return Ok(Scalar::Double(d.double_val()));
        }
        if let Some(b) = v.val_as_bool() {
            return Ok(Scalar::Bool(b.bool_val()));
        }
        Err(self.wrong(args, k, "a Scalar (Int, Double or Bool)"))
    }

    /// Optional scalar argument `k` (`Scalar?`).
    pub fn opt_scalar(&self, args: &[i64], k: usize) -> Result<Option<Scalar>, LoadError> {
        if !self.has(args, k) {
            return Ok(None);
        }
        self.scalar(args, k).map(Some)
    }

    /// Int-list argument `k` (`int[]`): an IntList whose items name Int values.
    pub fn ints(&self, args: &[i64], k: usize) -> Result<Vec<i64>, LoadError> {
        let sizes = self.sizes(args, k)?;
        if sizes.iter().any(Option::is_none) {
            return Err(self.err(format!("argument {k} holds a size known only at run time (from sym_size); nnrt takes run-time sizes in views only")));
        }
        Ok(sizes.into_iter().flatten().collect())
    }

    /// Int-list argument `k` whose items may be run-time sizes (`None`: a `sym_size` result).
    pub fn sizes(&self, args: &[i64], k: usize) -> Result<Vec<Option<i64>>, LoadError> {
        let v = self.arg(args, k)?;
        let list = v.val_as_int_list().ok_or_else(|| self.wrong(args, k, "an IntList"))?;
        let items: Vec<i64> = list.items().map(|l| l.iter().collect()).unwrap_or_default();
        items
            .into_iter()
            .map(|i| {
                let item = self.value(i)?;
                let not_int = || self.err(format!("argument {k}'s list names value {i}, which is {}, not an Int", item.val_type().variant_name().unwrap_or("unknown")));
                if self.symbolic.contains(&i) {
                    return Ok(None);
                }
                match self.known.get(&i) {
                    Some(Scalar::Int(n)) => Ok(Some(*n)),
                    Some(_) => Err(not_int()),
                    None => item.val_as_int().map(|x| Some(x.int_val())).ok_or_else(not_int),
                }
            })
            .collect()
    }

    /// The value indices an Int-list argument `k` names.
    pub fn list_ints(&self, args: &[i64], k: usize) -> Result<Vec<i64>, LoadError> {
        let v = self.arg(args, k)?;
        let list = v.val_as_int_list().ok_or_else(|| self.wrong(args, k, "an IntList"))?;
        Ok(list.items().map(|l| l.iter().collect()).unwrap_or_default())
    }

    /// Optional int-list argument `k` (`int[]?`).
    pub fn opt_ints(&self, args: &[i64], k: usize) -> Result<Option<Vec<i64>>, LoadError> {
        if !self.has(args, k) {
            return Ok(None);
        }
        self.ints(args, k).map(Some)
    }

    /// Float-list argument `k` (`float[]`).
    pub fn doubles(&self, args: &[i64], k: usize) -> Result<Vec<f64>, LoadError> {
        let v = self.arg(args, k)?;
        let list = v.val_as_double_list().ok_or_else(|| self.wrong(args, k, "a DoubleList"))?;
        Ok(list.items().map(|l| l.iter().collect()).unwrap_or_default())
    }

    /// Optional string argument `k` (`str?`).
    pub fn opt_str(&self, args: &[i64], k: usize) -> Result<Option<String>, LoadError> {
        if !self.has(args, k) {
            return Ok(None);
        }
        let v = self.arg(args, k)?;
        let s = v.val_as_string().ok_or_else(|| self.wrong(args, k, "a String"))?;
        Ok(Some(s.string_val().unwrap_or_default().to_string()))
    }

    /// The scalar value `vi` holds now, when an instruction computed it at load (an
    /// `executorch_prim` operator, a `sym_size` of a fixed size); `None` for a value no
    /// instruction wrote (its serialized contents hold). A value computed from sizes known only
    /// at run time is an error: nnrt takes those in views only.
    pub fn scalar_value(&self, vi: i64) -> Result<Option<Scalar>, LoadError> {
        if self.symbolic.contains(&vi) {
            return Err(self.err(format!("value {vi} is a size known only at run time (from sym_size); nnrt takes run-time sizes in views only")));
        }
        Ok(self.known.get(&vi).copied())
    }

    /// [`MethodBuilder::axis`] for an operator that indexes into the dim (slice, select, split,
    /// unbind, index_select): a 0-dim tensor has none, as in PyTorch ("cannot be applied to a
    /// 0-dim tensor"), where `axis` lets dim 0 / -1 of a scalar through for reductions.
    pub fn dim_of(&self, d: i64, rank: usize) -> Result<usize, LoadError> {
        if rank == 0 {
            return Err(self.err(format!("dim {d} of a 0-dim tensor: the operator needs a tensor of at least one dim")));
        }
        self.axis(d, rank)
    }

    /// Normalises dim `d` (negative counts from the end) for a tensor of `rank` dims; dim 0 and
    /// -1 of a 0-dim tensor are allowed (PyTorch's reductions take them).
    pub fn axis(&self, d: i64, rank: usize) -> Result<usize, LoadError> {
        let r = rank.max(1) as i64;
        let a = if d < 0 { d + r } else { d };
        if a < 0 || a >= r {
            return Err(self.err(format!("dim {d} is out of range for a tensor of rank {rank}")));
        }
        Ok(a as usize)
    }
}
