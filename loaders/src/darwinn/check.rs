//! Checks of a package on its own ([`check_package`]: executable types and pairing, layer
//! dims, sizes and output tile maps) and against its op ([`match_op`]: layers matched to the
//! op's tensors by name, y·x·z against each tensor's elements, element widths).

use super::*;

/// Checks what a package promises on its own; called by every read.
pub(crate) fn check_package(p: &Package) -> Result<(), DarwinnError> {
    if p.executables.is_empty() && p.multi_chip_packages.is_empty() {
        return Err(DarwinnError::Package { reason: "the package has no executables".into() });
    }
    for (i, e) in p.executables.iter().enumerate() {
        let fail = |reason: String| DarwinnError::Executable { index: i, name: format!(" ({} '{}')", e.kind.name(), e.name.as_deref().unwrap_or("")), reason };
        let partner = match e.kind {
            ExecutableType::StandAlone => None,
            ExecutableType::ParameterCaching => Some(ExecutableType::ExecutionOnly),
            ExecutableType::ExecutionOnly => Some(ExecutableType::ParameterCaching),
        };
        if let Some(partner) = partner {
            if !p.executables.iter().any(|o| o.kind == partner && o.parameter_caching_token == e.parameter_caching_token) {
                return Err(fail(format!(
                    "no {} executable shares its parameter_caching_token {} (the two types come in pairs)",
                    partner.name(),
                    e.parameter_caching_token
                )));
            }
        }
        if e.kind == ExecutableType::ParameterCaching && !(e.input_layers.is_empty() && e.output_layers.is_empty()) {
            return Err(fail("a PARAMETER_CACHING executable has input or output layers".into()));
        }
        for (what, layers) in [("input", &e.input_layers), ("output", &e.output_layers)] {
            for l in layers.iter() {
                check_layer(l, what).map_err(|r| fail(format!("{what} layer '{}': {r}", l.name)))?;
            }
        }
    }
    if !p.executables.is_empty() && p.runnable().is_none() {
        return Err(DarwinnError::Package { reason: "no EXECUTION_ONLY or STAND_ALONE executable: nothing runs an inference".into() });
    }
    Ok(())
}

fn check_layer(l: &Layer, what: &str) -> Result<(), String> {
    let actual = l.actual_bytes().ok_or_else(|| format!("dims y {} x {} z {} must be positive", l.y_dim, l.x_dim, l.z_dim))?;
    let executions = usize::try_from(l.execution_count_per_inference).ok().filter(|&n| n > 0);
    let executions = executions.ok_or_else(|| format!("execution_count_per_inference {} must be positive", l.execution_count_per_inference))?;
    let size = usize::try_from(l.size_bytes).map_err(|_| format!("size_bytes {} is negative", l.size_bytes))?;
    if size.checked_mul(executions).is_none_or(|padded| padded < actual.saturating_mul(executions)) {
        return Err(format!("size_bytes {size} is less than y·x·z·{} = {actual}", l.data_type.size()));
    }
    match (&l.kind, what) {
        (LayerKind::Input, "input") => Ok(()),
        (LayerKind::Output { layout, .. }, "output") => match layout {
            Some(m) => host::check_layout(m, l).map(|_| ()),
            None if l.y_dim > 1 || l.x_dim > 1 => Err("it has y or x above 1 but no output layout (the schema requires one)".into()),
            None => Ok(()),
        },
        (kind, _) => Err(format!("an {what} layer holds {kind:?}")),
    }
}

/// A TFLite tensor of the op, as the checks see it.
#[derive(Clone, Copy, Debug)]
pub struct OpTensor<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its dims.
    pub dims: &'a [usize],
    /// Bytes per element.
    pub elem_bytes: usize,
    /// Whether it is float (then nnrt quantizes or dequantizes with the layer's numerics).
    pub is_float: bool,
}

/// Where an output layer's values go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    /// The op's output of this index.
    Output(usize),
    /// The state written back to the op's input layer of this index (`NAME_variable_output`
    /// of an input `NAME`: the recurrent state of a compiled LSTM).
    State(usize),
}

/// Which op tensor each layer of an executable is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerMatch {
    /// For each input layer (executable order), the op's input index.
    pub inputs: Vec<usize>,
    /// For each output layer (executable order), where it goes.
    pub outputs: Vec<OutputTarget>,
}

/// Suffix of an output layer that writes an input's state back.
pub const VARIABLE_OUTPUT_SUFFIX: &str = "_variable_output";

/// Matches the layers of `e` to the op's tensors by name (the orders differ) and checks each
/// pair: y·x·z equals the tensor's elements; a non-float tensor has the layer's element width.
/// Every op tensor must have a layer and every layer a tensor.
pub fn match_op(e: &Executable, inputs: &[OpTensor<'_>], outputs: &[OpTensor<'_>]) -> Result<LayerMatch, DarwinnError> {
    let find = |list: &[OpTensor<'_>], name: &str| list.iter().position(|t| t.name == name);
    let mut m = LayerMatch { inputs: Vec::new(), outputs: Vec::new() };
    for l in &e.input_layers {
        let err = |reason: String| DarwinnError::Layer { what: "input", layer: l.name.clone(), reason };
        let i = find(inputs, &l.name).ok_or_else(|| err(format!("the op has no input of that name (its inputs: {})", names(inputs))))?;
        check_pair(l, &inputs[i]).map_err(err)?;
        m.inputs.push(i);
    }
    for l in &e.output_layers {
        let err = |reason: String| DarwinnError::Layer { what: "output", layer: l.name.clone(), reason };
        if let Some(i) = find(outputs, &l.name) {
            check_pair(l, &outputs[i]).map_err(err)?;
            m.outputs.push(OutputTarget::Output(i));
            continue;
        }
        let state = l.name.strip_suffix(VARIABLE_OUTPUT_SUFFIX).and_then(|base| e.input_layers.iter().position(|x| x.name == base));
        let Some(k) = state else {
            return Err(err(format!("the op has no output of that name (its outputs: {})", names(outputs))));
        };
        let input = &e.input_layers[k];
        if input.actual_bytes() != l.actual_bytes() || input.data_type != l.data_type {
            return Err(err(format!("it writes back input layer '{}', whose dims or data type differ", input.name)));
        }
        m.outputs.push(OutputTarget::State(k));
    }
    for (what, list, used) in [
        ("input", inputs, m.inputs.clone()),
        ("output", outputs, m.outputs.iter().filter_map(|t| if let OutputTarget::Output(i) = t { Some(*i) } else { None }).collect()),
    ] {
        for (i, t) in list.iter().enumerate() {
            match used.iter().filter(|&&u| u == i).count() {
                1 => {}
                0 => return Err(DarwinnError::Layer { what, layer: t.name.to_string(), reason: format!("the op's {what} {i} has no layer of that name in the package") }),
                n => return Err(DarwinnError::Layer { what, layer: t.name.to_string(), reason: format!("{n} layers name the op's {what} {i}") }),
            }
        }
    }
    Ok(m)
}

fn names(list: &[OpTensor<'_>]) -> String {
    list.iter().map(|t| format!("'{}'", t.name)).collect::<Vec<_>>().join(", ")
}

fn check_pair(l: &Layer, t: &OpTensor<'_>) -> Result<(), String> {
    let elements = t.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if elements != l.elements() {
        return Err(format!(
            "y·x·z = {}·{}·{} does not match the TFLite tensor '{}' of dims {:?}",
            l.y_dim, l.x_dim, l.z_dim, t.name, t.dims
        ));
    }
    if !t.is_float && t.elem_bytes != l.data_type.size() {
        return Err(format!(
            "data type {} has {} bytes per element but the TFLite tensor '{}' has {}",
            l.data_type.name(),
            l.data_type.size(),
            t.name,
            t.elem_bytes
        ));
    }
    Ok(())
}
