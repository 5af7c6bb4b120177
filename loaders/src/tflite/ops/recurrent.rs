//! Recurrent layers: LSTM, RNN and SVDF, each with its options table.

use nnrt_core::{Activation, BidirectionalLstm, LoadError, OpKind, Rnn, SequenceLstm, Svdf};

use super::{act, OpRef, B};

/// The fields both LSTM options tables have: activation (TANH when absent), cell and projection
/// clips, asymmetric_quantize_inputs.
macro_rules! lstm {
    ($o:expr) => {
        (
            $o.map(|o| act(o.fused_activation_function())).unwrap_or(Activation::Tanh),
            $o.map_or(0.0, |o| o.cell_clip()),
            $o.map_or(0.0, |o| o.proj_clip()),
            $o.is_some_and(|o| o.asymmetric_quantize_inputs()),
        )
    };
}

/// This family's op, or `None` when the operator code is not one of it.
pub(super) fn map(m: &OpRef<'_, '_>) -> Result<Option<OpKind>, LoadError> {
    let op = m.op;
    Ok(Some(match B(m.code.code) {
        B::UNIDIRECTIONAL_SEQUENCE_LSTM => {
            let o = op.builtin_options_as_unidirectional_sequence_lstmoptions();
            let (act, cell_clip, proj_clip, asymmetric_quantize_inputs) = lstm!(o);
            let (time_major, diagonal_recurrent) = (o.is_some_and(|o| o.time_major()), o.is_some_and(|o| o.diagonal_recurrent_tensors()));
            OpKind::UnidirectionalSequenceLstm(SequenceLstm { act, cell_clip, proj_clip, time_major, diagonal_recurrent, asymmetric_quantize_inputs })
        }
        B::RNN => {
            let o = op.builtin_options_as_rnnoptions();
            OpKind::Rnn(Rnn {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                time_major: false,
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::UNIDIRECTIONAL_SEQUENCE_RNN => {
            let o = op.builtin_options_as_sequence_rnnoptions();
            OpKind::SequenceRnn(Rnn {
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                time_major: o.is_some_and(|o| o.time_major()),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::SVDF => {
            let o = op.builtin_options_as_svdfoptions();
            OpKind::Svdf(Svdf {
                rank: o.map_or(0, |o| o.rank()),
                act: o.map(|o| act(o.fused_activation_function())).unwrap_or_default(),
                asymmetric_quantize_inputs: o.is_some_and(|o| o.asymmetric_quantize_inputs()),
            })
        }
        B::BIDIRECTIONAL_SEQUENCE_LSTM => {
            let o = op.builtin_options_as_bidirectional_sequence_lstmoptions();
            let (act, cell_clip, proj_clip, asymmetric_quantize_inputs) = lstm!(o);
            let merge_outputs = o.is_some_and(|o| o.merge_outputs());
            // Version 1 models have no field and are time-major, the schema's default.
            let time_major = o.is_none_or(|o| o.time_major());
            OpKind::BidirectionalSequenceLstm(BidirectionalLstm { act, cell_clip, proj_clip, merge_outputs, time_major, asymmetric_quantize_inputs })
        }
        _ => return Ok(None),
    }))
}
