//! What the protocol modules' stream tests share: feeding a stream's bytes in pieces, the text
//! its deltas showed, and the checks every protocol's stream must pass the same way.

use crate::{ProviderError, ProviderKind, ProviderResponse, ProviderStream, StreamDelta};

/// Feeds `chunks` to a new stream of `kind`'s protocol and ends it: the deltas shown, then the
/// answer (or the first error, after which nothing more is fed).
pub(crate) fn run(
    kind: ProviderKind,
    chunks: &[&[u8]],
) -> (Vec<StreamDelta>, Result<ProviderResponse, ProviderError>) {
    let mut stream = ProviderStream::new(kind);
    let mut deltas = Vec::new();
    for chunk in chunks {
        match stream.push(chunk) {
            Ok(more) => deltas.extend(more),
            Err(error) => return (deltas, Err(error)),
        }
    }
    (deltas, stream.finish())
}

/// The answer text the deltas showed, in order.
pub(crate) fn shown_text(deltas: &[StreamDelta]) -> String {
    deltas
        .iter()
        .filter_map(|delta| match delta {
            StreamDelta::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// What a stream that writes its text in `pieces` and then calls the tools of `answer` shows:
/// each piece, then each call as it starts.
pub(crate) fn text_then_calls(pieces: &[&str], answer: &ProviderResponse) -> Vec<StreamDelta> {
    let text = pieces
        .iter()
        .map(|piece| StreamDelta::Text(piece.to_string()));
    let calls = answer
        .tool_calls
        .iter()
        .map(|call| StreamDelta::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
    text.chain(calls).collect()
}

/// A stream split in two at any byte gives the same answer, and shows all of its text.
pub(crate) fn assert_same_answer_split_at_every_byte(
    kind: ProviderKind,
    bytes: &[u8],
    expected: &ProviderResponse,
) {
    for cut in 0..=bytes.len() {
        let (deltas, response) = run(kind, &[&bytes[..cut], &bytes[cut..]]);
        assert_eq!(response.as_ref(), Ok(expected), "split at byte {cut}");
        assert_eq!(shown_text(&deltas), expected.text, "split at byte {cut}");
    }
}

/// A stream cut anywhere before `end_at` (where its end marker starts) is a cut-off stream.
pub(crate) fn assert_truncated_at_every_cut_before(
    kind: ProviderKind,
    bytes: &[u8],
    end_at: usize,
) {
    for cut in 0..end_at {
        let (_, response) = run(kind, &[&bytes[..cut]]);
        assert!(
            matches!(response, Err(ProviderError::StreamTruncated { .. })),
            "cut at byte {cut}: {response:?}"
        );
    }
}

/// `error` is the provider's own error of `error_type`, and worth trying again.
pub(crate) fn assert_transient_api_error(error: &ProviderError, error_type: &str, message: &str) {
    assert_eq!(
        *error,
        ProviderError::ApiError {
            error_type: Some(error_type.into()),
            message: message.into()
        }
    );
    assert!(error.is_transient());
}
