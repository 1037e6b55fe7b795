//! The server's refusals: a status, a code a client acts on and a sentence for the person, sent
//! as the wire format's [`ErrorBody`].

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ccm_store::remote::{ErrorBody, ErrorDetail};
use ccm_store::StoreError;

/// A refusal of a request.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// The code (see [`ccm_store::remote::ErrorDetail::code`]).
    pub code: &'static str,
    /// The sentence for the person.
    pub message: String,
    /// For a conflict: the stored revision.
    pub stored_revision: Option<u64>,
    /// For `rate_limited`: seconds until a request would be accepted.
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            stored_revision: None,
            retry_after: None,
        }
    }

    /// A missing, malformed, unknown or revoked token.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(401, "unauthorized", message)
    }

    /// A request the server cannot read.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "bad_request", message)
    }

    /// A body over the size limit.
    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(413, "too_large", message)
    }

    /// An account over its rate limit.
    pub fn rate_limited(retry_after: u64) -> ApiError {
        ApiError {
            retry_after: Some(retry_after),
            ..ApiError::new(
                429,
                "rate_limited",
                format!("too many requests for this account; try again in {retry_after} s"),
            )
        }
    }

    /// Something that does not exist (outside the store's own `not_found`).
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(404, "not_found", message)
    }

    /// The database cannot be reached.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(503, "unavailable", message)
    }

    /// A failure of the server itself.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "storage", message)
    }

    /// A store's refusal, with the stored revision where it is a conflict on a stored session.
    /// A connection to the database lost mid-request is `503 unavailable`: the client tries
    /// again (after reading the revision, which tells whether a save landed).
    pub fn store(error: StoreError, stored_revision: Option<u64>) -> ApiError {
        if ccm_store::postgres::connection_was_lost(&error) {
            return ApiError::unavailable(error.to_string());
        }
        ApiError {
            status: ErrorBody::status_of(&error),
            code: error.code(),
            message: error.to_string(),
            stored_revision,
            retry_after: None,
        }
    }

    /// The wire body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message.clone(),
                stored_revision: self.stored_revision,
            },
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::store(error, None)
    }
}

impl From<ccm_core::SnapshotError> for ApiError {
    fn from(error: ccm_core::SnapshotError) -> ApiError {
        ApiError::bad_request(format!("the session document was refused: {error}"))
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(seconds));
        }
        // The code, for the request log, which never sees bodies.
        response.extensions_mut().insert(ErrorCode(self.code));
        response
    }
}

/// The code of an error answer, carried to the request log.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub &'static str);
