//! The structured-api operator: one HTTP request per authorized action, no redirects, no
//! retries, a bounded body.

use std::time::{Duration, Instant};

use cua_policy::{Authorized, HttpRequest};
use cua_surface::{OperatorFuture, ServiceClient, ServiceResponse, SurfaceError};

/// Responses larger than this are refused rather than buffered.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// A [`ServiceClient`] over reqwest.
#[derive(Debug, Clone)]
pub struct HttpServiceClient {
    client: reqwest::Client,
}

impl HttpServiceClient {
    /// A client that never follows redirects and keeps no cookies. TLS is rustls with the ring
    /// provider, installed once for the process (a provider installed earlier is kept).
    pub fn new() -> Result<Self, SurfaceError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| SurfaceError::Unavailable {
                reason: format!("the HTTP client cannot start: {error}"),
            })?;
        Ok(Self { client })
    }
}

impl ServiceClient for HttpServiceClient {
    fn send(&self, action: Authorized<HttpRequest>) -> OperatorFuture<'_, ServiceResponse> {
        Box::pin(async move {
            let request = action.action();
            let method = reqwest::Method::from_bytes(request.method.as_str().as_bytes()).map_err(
                |error| SurfaceError::ActionFailed {
                    reason: format!("method {}: {error}", request.method.as_str()),
                },
            )?;
            let timeout = Duration::from_millis(u64::from(request.timeout_ms));
            let mut builder = self
                .client
                .request(method, &request.url)
                .timeout(timeout)
                .header("accept", "application/json");
            for (name, value) in &request.headers {
                builder = builder.header(name, value);
            }
            if let Some(body) = &request.body {
                builder = builder
                    .header("content-type", "application/json")
                    .body(body.clone());
            }
            let started = Instant::now();
            let response = builder
                .send()
                .await
                .map_err(|error| classify(&error, timeout))?;
            let status = response.status().as_u16();
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let mut response = response;
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|error| classify(&error, timeout))?
            {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(SurfaceError::ActionFailed {
                        reason: format!("the response body is larger than {MAX_BODY_BYTES} bytes"),
                    });
                }
                body.extend_from_slice(&chunk);
            }
            Ok(ServiceResponse {
                status,
                content_type,
                body,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            })
        })
    }
}

/// A transport error as the executor reads it. The message never holds the URL's query or a
/// header: reqwest's error text names the URL, which the executor already recorded, redacted.
fn classify(error: &reqwest::Error, timeout: Duration) -> SurfaceError {
    let text = error.without_url_ref();
    if error.is_timeout() {
        SurfaceError::Timeout {
            what: "the HTTP request".to_owned(),
            after: timeout,
        }
    } else if error.is_connect() {
        SurfaceError::Unavailable {
            reason: format!("the service is unreachable: {text}"),
        }
    } else {
        SurfaceError::ActionFailed {
            reason: format!("the HTTP request failed: {text}"),
        }
    }
}

trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let mut text = self.to_string();
        if let Some(url) = self.url() {
            text = text.replace(url.as_str(), "<url>");
        }
        text
    }
}
