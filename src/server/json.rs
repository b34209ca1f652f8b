//! The JSON body extractor: bodies over the limit are `PAYLOAD_TOO_LARGE`,
//! bodies that are not JSON are `MALFORMED_JSON`, and JSON of the wrong shape
//! (an unknown field, a missing one, a wrong type) is `INVALID_ARGUMENT`
//! naming the field. An empty body counts as `{}`.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::domain::Rejection;
use crate::limits::MAX_REQUEST_BODY_BYTES;
use crate::server::error::ApiError;

pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge {
                    limit: MAX_REQUEST_BODY_BYTES,
                }
            } else {
                ApiError::MalformedJson(e.body_text())
            }
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        // First: is it JSON at all? Only then: is it the right shape?
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .map_err(|e| ApiError::MalformedJson(e.to_string()))?;
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let inner = e.inner();
            if inner.is_syntax() || inner.is_eof() {
                return ApiError::MalformedJson(inner.to_string());
            }
            let path = e.path().to_string();
            let message = inner.to_string();
            // The path names the field (for an unknown field, the unknown key
            // itself); "." is the body as a whole.
            let field = if path == "." { "body".to_owned() } else { path };
            let reason = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_owned();
            ApiError::Rejected(Rejection::invalid(&field, reason))
        })?;
        de.end()
            .map_err(|e| ApiError::MalformedJson(e.to_string()))?;
        Ok(ApiJson(value))
    }
}

/// A path parameter; one that cannot be read (invalid percent-encoding or
/// UTF-8) is `INVALID_ARGUMENT` like any other bad field, not axum's plain text.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> axum::extract::FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| ApiPath(v))
            .map_err(|e| ApiError::Rejected(Rejection::invalid("path", e.body_text())))
    }
}
