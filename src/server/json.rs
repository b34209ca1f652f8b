//! The JSON body extractor: bodies over the limit are `PAYLOAD_TOO_LARGE`,
//! bodies that are not JSON are `MALFORMED_JSON`, and JSON of the wrong shape
//! (an unknown field, a missing one, a wrong type) is `INVALID_ARGUMENT`
//! naming the field. An empty body counts as `{}`. A body that is not empty
//! must be declared `Content-Type: application/json` (else
//! `UNSUPPORTED_MEDIA_TYPE`, so a browser page cannot post a "simple" text or
//! form request without a preflight), and must be a JSON object.

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
        let declared = req
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
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
            if !is_json(declared.as_deref()) {
                return Err(ApiError::UnsupportedMediaType(
                    declared.map_or_else(|| "none".to_owned(), |d| format!("{d:?}")),
                ));
            }
            &bytes
        };
        // First: is it JSON at all? Then: is it an object? Only then: is it
        // the right shape? (serde would read an array as positional fields.)
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .map_err(|e| ApiError::MalformedJson(e.to_string()))?;
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(Rejection::invalid("body", "must be a JSON object").into());
        }
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

/// Whether a Content-Type names JSON: `application/json`, any case, with or
/// without parameters such as `charset=utf-8`.
fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| {
        c.split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
    })
}

/// Query parameters: decoded like axum's `Query`, but any value or name with
/// a NUL or another control character is `INVALID_ARGUMENT` naming it (the
/// database refuses NUL in text, and nothing here has a use for them), and a
/// query that does not fit the parameters is `INVALID_ARGUMENT` too.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> axum::extract::FromRequestParts<S>
    for ApiQuery<T>
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            if name.chars().any(char::is_control) {
                return Err(Rejection::invalid(
                    "query",
                    "a parameter name holds a control character",
                )
                .into());
            }
            if value.chars().any(char::is_control) {
                return Err(Rejection::invalid(&name, "must not hold control characters").into());
            }
        }
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(ApiQuery)
            .map_err(|e| {
                let field = e.path().to_string();
                let field = if field == "." {
                    "query".to_owned()
                } else {
                    field
                };
                Rejection::invalid(&field, e.inner().to_string()).into()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::is_json;

    #[test]
    fn only_json_content_types_are_json() {
        assert!(is_json(Some("application/json")));
        assert!(is_json(Some("Application/JSON; charset=utf-8")));
        for other in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("application/jsonx"),
            Some(""),
        ] {
            assert!(!is_json(other), "{other:?}");
        }
    }
}
