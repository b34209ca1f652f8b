//! The API's one error type: every failure becomes `{code, message, details}`
//! with the status of the HTTP contract, and `Retry-After` where retrying is
//! the answer. Internal details are logged, never sent to callers: a 5xx body
//! says what happened in plain words and carries the request's correlation id,
//! so the caller can point an operator at the log line.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tracing::{error, warn};

use crate::domain::{Rejection, RejectionCode};
use crate::limits::UNAVAILABLE_RETRY_AFTER_SECONDS;
use crate::store::StoreError;

/// The codes of the API's own errors, beside the domain's rejections, and
/// the status each is answered with.
const API_ERROR_CODES: &[(&str, StatusCode)] = &[
    ("MALFORMED_JSON", StatusCode::BAD_REQUEST),
    ("UNSUPPORTED_MEDIA_TYPE", StatusCode::UNSUPPORTED_MEDIA_TYPE),
    ("UNAUTHENTICATED", StatusCode::UNAUTHORIZED),
    ("FORBIDDEN", StatusCode::FORBIDDEN),
    ("METHOD_NOT_ALLOWED", StatusCode::METHOD_NOT_ALLOWED),
    ("PAYLOAD_TOO_LARGE", StatusCode::PAYLOAD_TOO_LARGE),
    ("RATE_LIMITED", StatusCode::TOO_MANY_REQUESTS),
    (
        crate::store::error::UNAVAILABLE,
        StatusCode::SERVICE_UNAVAILABLE,
    ),
    (crate::store::error::HISTORY_ARCHIVED, StatusCode::GONE),
    (
        crate::store::error::INTERNAL,
        StatusCode::INTERNAL_SERVER_ERROR,
    ),
];

/// The status a domain rejection is answered with.
fn rejection_status(code: RejectionCode) -> StatusCode {
    StatusCode::from_u16(code.http_status())
        .unwrap_or_else(|_| unreachable!("{code} has a valid status (the refusal table's)"))
}

/// Every code an error body can carry, with its status: the domain's
/// rejections, then the API's own. The API description lists exactly these
/// codes (a test holds every `ApiError` variant to the list), and writes
/// which codes each status carries from this table.
pub fn error_statuses() -> Vec<(&'static str, StatusCode)> {
    RejectionCode::ALL
        .iter()
        .map(|c| (c.as_str(), rejection_status(*c)))
        .chain(API_ERROR_CODES.iter().copied())
        .collect()
}

/// Every code an error body can carry.
pub fn error_codes() -> Vec<&'static str> {
    error_statuses().into_iter().map(|(code, _)| code).collect()
}

/// The codes answered with `status`, in the order of `error_statuses`.
pub fn codes_with_status(status: StatusCode) -> Vec<&'static str> {
    error_statuses()
        .into_iter()
        .filter(|(_, s)| *s == status)
        .map(|(code, _)| code)
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error("the request body is not valid JSON: {0}")]
    MalformedJson(String),
    #[error("request bodies must be JSON, sent as Content-Type: application/json (got {0})")]
    UnsupportedMediaType(String),
    #[error("a valid API key is required (Authorization: Bearer <key>)")]
    Unauthenticated,
    #[error("a {role} key may not {action}")]
    Forbidden {
        role: &'static str,
        action: &'static str,
    },
    #[error("this route does not take that method")]
    MethodNotAllowed,
    /// Development mode serves only requests addressed to its loopback
    /// address from it (`dev_guard`): not a browser's, rebound or cross-site.
    #[error("development mode answers only requests addressed to it on its loopback address: {0}")]
    ForeignOrigin(String),
    #[error("request bodies are limited to {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("too many requests for this key; retry after {retry_after} s")]
    RateLimited { retry_after: u64 },
    /// `reason` is sent to the caller; `detail` (which may hold the database's
    /// own message) only goes to the log.
    #[error("{reason}; retry with the same ids")]
    Unavailable {
        reason: &'static str,
        detail: String,
    },
    /// What the read asks for left the database with archived partitions.
    #[error("{message}")]
    Archived {
        message: String,
        whole_after: String,
    },
    #[error("internal error")]
    Internal(String),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        if let StoreError::Archived { whole_after, .. } = &e {
            return ApiError::Archived {
                whole_after: whole_after.clone(),
                message: e.to_string(),
            };
        }
        if e.is_retryable() {
            ApiError::Unavailable {
                reason: e.public_reason(),
                detail: e.to_string(),
            }
        } else {
            ApiError::Internal(e.to_string())
        }
    }
}

impl ApiError {
    /// A 503 whose cause needs no further detail in the log.
    pub fn unavailable(reason: &'static str) -> Self {
        ApiError::Unavailable {
            reason,
            detail: String::new(),
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Rejected(r) => r.code().as_str(),
            ApiError::MalformedJson(_) => "MALFORMED_JSON",
            ApiError::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::Unauthenticated => "UNAUTHENTICATED",
            ApiError::Forbidden { .. } | ApiError::ForeignOrigin(_) => "FORBIDDEN",
            ApiError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ApiError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            ApiError::RateLimited { .. } => "RATE_LIMITED",
            ApiError::Unavailable { .. } => crate::store::error::UNAVAILABLE,
            ApiError::Archived { .. } => crate::store::error::HISTORY_ARCHIVED,
            ApiError::Internal(_) => crate::store::error::INTERNAL,
        }
    }

    /// The status of the contract for this error: the one its code has in
    /// `error_statuses`.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Rejected(r) => rejection_status(r.code()),
            // Every other error's status is its code's row in the table;
            // named one by one, so a new error is placed here on purpose.
            ApiError::MalformedJson(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::Unauthenticated
            | ApiError::Forbidden { .. }
            | ApiError::ForeignOrigin(_)
            | ApiError::MethodNotAllowed
            | ApiError::PayloadTooLarge { .. }
            | ApiError::RateLimited { .. }
            | ApiError::Unavailable { .. }
            | ApiError::Archived { .. }
            | ApiError::Internal(_) => {
                let code = self.code();
                API_ERROR_CODES
                    .iter()
                    .find(|(c, _)| *c == code)
                    .map(|(_, status)| *status)
                    .unwrap_or_else(|| unreachable!("{code} is in API_ERROR_CODES (tested)"))
            }
        }
    }

    fn details(&self) -> Value {
        match self {
            ApiError::Rejected(r) => r.details(),
            ApiError::PayloadTooLarge { limit } => json!({"limit_bytes": limit}),
            ApiError::RateLimited { retry_after } => json!({"retry_after_seconds": retry_after}),
            ApiError::Archived { whole_after, .. } => json!({"whole_after": whole_after}),
            ApiError::Unavailable { .. } | ApiError::Internal(_) => {
                json!({"correlation_id": crate::server::current_correlation_id()})
            }
            ApiError::MalformedJson(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::Unauthenticated
            | ApiError::Forbidden { .. }
            | ApiError::ForeignOrigin(_)
            | ApiError::MethodNotAllowed => json!({}),
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited { retry_after } => Some(*retry_after),
            ApiError::Unavailable { .. } => Some(UNAVAILABLE_RETRY_AFTER_SECONDS),
            ApiError::Rejected(_)
            | ApiError::MalformedJson(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::Unauthenticated
            | ApiError::Forbidden { .. }
            | ApiError::ForeignOrigin(_)
            | ApiError::MethodNotAllowed
            | ApiError::PayloadTooLarge { .. }
            | ApiError::Archived { .. }
            | ApiError::Internal(_) => None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = match &self {
            ApiError::Internal(detail) => {
                error!(?detail, "internal error");
                "internal error; the server log has the details under this request's correlation id"
                    .to_owned()
            }
            ApiError::Unavailable { detail, .. } => {
                if !detail.is_empty() {
                    warn!(?detail, "answered UNAVAILABLE");
                }
                self.to_string()
            }
            ApiError::Rejected(_)
            | ApiError::MalformedJson(_)
            | ApiError::UnsupportedMediaType(_)
            | ApiError::Unauthenticated
            | ApiError::Forbidden { .. }
            | ApiError::ForeignOrigin(_)
            | ApiError::MethodNotAllowed
            | ApiError::PayloadTooLarge { .. }
            | ApiError::RateLimited { .. }
            | ApiError::Archived { .. } => self.to_string(),
        };
        let body = json!({"code": self.code(), "message": message, "details": self.details()});
        let mut response = (self.status(), axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after() {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One of each variant; the match makes a new variant fail to compile
    /// here until it is added.
    fn one_of_each() -> Vec<ApiError> {
        let all = vec![
            ApiError::MalformedJson(String::new()),
            ApiError::UnsupportedMediaType(String::new()),
            ApiError::Unauthenticated,
            ApiError::Forbidden {
                role: "reader",
                action: "write",
            },
            ApiError::MethodNotAllowed,
            ApiError::ForeignOrigin("Host \"x\"".into()),
            ApiError::PayloadTooLarge { limit: 1 },
            ApiError::RateLimited { retry_after: 1 },
            ApiError::unavailable("test"),
            ApiError::Archived {
                message: String::new(),
                whole_after: "5:9".into(),
            },
            ApiError::Internal(String::new()),
        ];
        for e in &all {
            match e {
                ApiError::Rejected(_)
                | ApiError::MalformedJson(_)
                | ApiError::UnsupportedMediaType(_)
                | ApiError::Unauthenticated
                | ApiError::Forbidden { .. }
                | ApiError::ForeignOrigin(_)
                | ApiError::MethodNotAllowed
                | ApiError::PayloadTooLarge { .. }
                | ApiError::RateLimited { .. }
                | ApiError::Unavailable { .. }
                | ApiError::Archived { .. }
                | ApiError::Internal(_) => {}
            }
        }
        all
    }

    /// Each error is answered with the status its code has in the table
    /// the API description is written from.
    #[test]
    fn every_error_has_its_codes_status() {
        let table = error_statuses();
        for e in one_of_each() {
            let listed = table.iter().find(|(c, _)| *c == e.code()).map(|(_, s)| *s);
            assert_eq!(listed, Some(e.status()), "{}", e.code());
        }
    }

    #[test]
    fn every_code_is_in_the_published_list_once() {
        let mut codes: Vec<&str> = one_of_each().iter().map(ApiError::code).collect();
        codes.extend(RejectionCode::ALL.iter().map(|c| c.as_str()));
        codes.sort_unstable();
        // Two errors may share a code (FORBIDDEN: a role's, a foreign origin's).
        codes.dedup();
        let mut listed = error_codes();
        listed.sort_unstable();
        assert_eq!(codes, listed);
    }
}
