//! The client: one HTTP connection pool, a key, and the retry policy, with a
//! typed method per route.

use std::time::{Duration, Instant};

use reqwest::{Method, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;
use stockledger::domain::RejectionCode;

use crate::error::Error;
use crate::retry::{retryable_status, RetryPolicy};

/// The header that ties a call's attempts together in the server's log
/// and in the events it appends (`metadata.correlation_id`).
pub const CORRELATION_HEADER: &str = "X-Correlation-Id";

/// The longest error body read: bodies are `{code, message, details}`, a
/// few hundred bytes; a proxy's HTML page is cut here.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A stockledger server, reached with one API key. Cheap to clone; clones
/// share the connection pool.
#[derive(Clone, Debug)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) base: Url,
    pub(crate) key: Option<String>,
    pub(crate) policy: RetryPolicy,
}

/// One call: what to send, built once and sent again as it is.
pub(crate) struct Call<'a> {
    pub method: Method,
    pub segments: &'a [&'a str],
    pub query: &'a [(&'a str, String)],
    pub body: Option<Vec<u8>>,
}

impl Client {
    /// A client of the server at `base_url` (`http://host:port`), with an
    /// API key (`None` for a server run with `--dev`).
    pub fn new(base_url: &str, api_key: Option<&str>) -> Result<Client, Error> {
        let base = Url::parse(base_url).map_err(|e| Error::Config(format!("{base_url}: {e}")))?;
        if base.cannot_be_a_base() {
            return Err(Error::Config(format!("{base_url} cannot be a base URL")));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()?;
        Ok(Client {
            http,
            base,
            key: api_key.map(str::to_owned),
            policy: RetryPolicy::default(),
        })
    }

    /// The same client with every call bounded by `deadline` (all attempts
    /// and pauses included): `client.with_deadline(d).reserve(&r)` for one
    /// call.
    pub fn with_deadline(&self, deadline: Duration) -> Client {
        let mut c = self.clone();
        c.policy.deadline = deadline;
        c
    }

    /// The same client with another retry policy.
    pub fn with_policy(&self, policy: RetryPolicy) -> Client {
        let mut c = self.clone();
        c.policy = policy;
        c
    }

    pub(crate) fn url(&self, segments: &[&str], query: &[(&str, String)]) -> Url {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .expect("checked in new")
            .pop_if_empty()
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// Sends `call` until it gets an answer that is not "not now", the
    /// attempts are spent or the deadline passes; decodes a success as `T`.
    pub(crate) async fn send<T: DeserializeOwned>(&self, call: Call<'_>) -> Result<T, Error> {
        let started = Instant::now();
        let correlation = uuid::Uuid::new_v4().to_string();
        let url = self.url(call.segments, call.query);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let left = self.policy.deadline.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(self.deadline_exceeded(attempt - 1, "no time left".into()));
            }
            let mut req = self
                .http
                .request(call.method.clone(), url.clone())
                .timeout(left)
                .header(CORRELATION_HEADER, &correlation);
            if let Some(key) = &self.key {
                req = req.bearer_auth(key);
            }
            if let Some(body) = &call.body {
                req = req
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            // What this attempt ended in, when it is one to try again.
            let (failed, retry_after) = match req.send().await {
                Ok(resp) if retryable_status(resp.status().as_u16()) => {
                    let after = retry_after(&resp);
                    (answer_error(resp).await, after)
                }
                // A success whose body was cut off: the command may have
                // been applied, and sent again it is answered as a replay.
                Ok(resp) if resp.status().is_success() => {
                    let status = resp.status().as_u16();
                    match resp.bytes().await {
                        Ok(bytes) => return decode(status, &bytes),
                        Err(e) => (Error::Transport(e), None),
                    }
                }
                Ok(resp) => return Err(answer_error(resp).await),
                Err(e) if is_transport(&e) => (Error::Transport(e), None),
                Err(e) => return Err(Error::Transport(e)),
            };
            if started.elapsed() >= self.policy.deadline {
                return Err(self.deadline_exceeded(attempt, failed.to_string()));
            }
            // Out of attempts: the last answer as it was (`UNAVAILABLE`,
            // `RATE_LIMITED`, the broken connection).
            if attempt >= self.policy.max_attempts {
                return Err(failed);
            }
            let pause = self.policy.pause(attempt, retry_after);
            if started.elapsed() + pause >= self.policy.deadline {
                return Err(self.deadline_exceeded(attempt, failed.to_string()));
            }
            tokio::time::sleep(pause).await;
        }
    }

    fn deadline_exceeded(&self, attempts: u32, last: String) -> Error {
        Error::DeadlineExceeded {
            deadline: self.policy.deadline,
            attempts,
            last,
        }
    }

    /// A command: `body` serialised once, and the same bytes on every attempt.
    pub(crate) async fn command<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        body: &impl Serialize,
    ) -> Result<T, Error> {
        let body = serde_json::to_vec(body).map_err(|e| Error::Config(e.to_string()))?;
        self.send(Call {
            method: Method::POST,
            segments,
            query: &[],
            body: Some(body),
        })
        .await
    }

    /// A read.
    pub(crate) async fn read<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<T, Error> {
        self.send(Call {
            method: Method::GET,
            segments,
            query,
            body: None,
        })
        .await
    }
}

/// A failure to reach the server or to get its whole answer: the request
/// may or may not have arrived, and the contract makes sending it again safe.
fn is_transport(e: &reqwest::Error) -> bool {
    e.is_connect() || e.is_timeout() || e.is_request() || e.is_body()
}

fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    resp.headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

fn decode<T: DeserializeOwned>(status: u16, bytes: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Unexpected {
        status,
        why: format!(
            "{e}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(512)])
        ),
    })
}

/// An error answer as the API describes it: `{code, message, details}`.
pub(crate) async fn answer_error(resp: reqwest::Response) -> Error {
    #[derive(serde::Deserialize)]
    struct Body {
        code: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        details: serde_json::Value,
    }
    let status = resp.status();
    let bytes = match resp.bytes().await {
        Ok(b) => b,
        Err(e) => return Error::Transport(e),
    };
    let bytes = &bytes[..bytes.len().min(MAX_ERROR_BODY_BYTES)];
    let Ok(body) = serde_json::from_slice::<Body>(bytes) else {
        return Error::Unexpected {
            status: status.as_u16(),
            why: format!(
                "not an error body: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(512)])
            ),
        };
    };
    match RejectionCode::from_code(&body.code) {
        Some(code) => Error::Rejected {
            code,
            message: body.message,
            details: body.details,
        },
        None => Error::Api {
            status: status.as_u16(),
            code: body.code,
            message: body.message,
            details: body.details,
        },
    }
}
