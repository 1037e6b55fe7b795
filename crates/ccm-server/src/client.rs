//! A native client of the sync server: a [`Transport`] over a blocking HTTP client, so that
//! [`RemoteStore`](ccm_store::remote::RemoteStore) works from Rust hosts, the tests and the
//! benchmark. Each call blocks its thread until the answer is in (the futures of
//! [`Transport::send`] complete on their first poll); give each device a thread of its own.

use ccm_store::remote::{Request, Response, Transport};
use ccm_store::StoreError;
use std::time::Duration;

/// The server's base URL and a bearer token.
#[derive(Clone)]
pub struct HttpTransport {
    base: String,
    token: String,
    agent: ureq::Agent,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("HttpTransport")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// A transport to the server at `base` (`http://host:port`) acting with `token`; each
    /// request may take `timeout` in all.
    pub fn new(base: &str, token: &str, timeout: Duration) -> HttpTransport {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .timeout_connect(Some(Duration::from_secs(5)))
            .build()
            .new_agent();
        HttpTransport {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            agent,
        }
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The bearer token it sends.
    pub fn token(&self) -> &str {
        &self.token
    }

    fn send_blocking(&self, request: Request) -> Result<Response, StoreError> {
        use ccm_store::remote::Method;
        let url = format!("{}{}", self.base, request.path);
        let auth = format!("Bearer {}", self.token);
        let unreachable = |e: ureq::Error| {
            StoreError::unavailable(format!(
                "the sync server at {} could not be reached ({e}); check the URL and that the server runs",
                self.base
            ))
        };
        let answer = match (request.method, request.body) {
            (Method::Get, _) => self.agent.get(&url).header("authorization", &auth).call(),
            (Method::Delete, _) => self
                .agent
                .delete(&url)
                .header("authorization", &auth)
                .call(),
            (method, body) => {
                let builder = match method {
                    Method::Put => self.agent.put(&url),
                    Method::Patch => self.agent.patch(&url),
                    _ => self.agent.post(&url),
                };
                builder
                    .header("authorization", &auth)
                    .header("content-type", "application/json")
                    .send(body.unwrap_or_default())
            }
        };
        let mut answer = answer.map_err(unreachable)?;
        let status = answer.status().as_u16();
        let body = answer
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .map_err(|e| {
                StoreError::unavailable(format!(
                    "the sync server at {} stopped answering mid-way ({e}); nothing is known to have changed",
                    self.base
                ))
            })?;
        Ok(Response { status, body })
    }
}

impl Transport for HttpTransport {
    async fn send(&self, request: Request) -> Result<Response, StoreError> {
        self.send_blocking(request)
    }
}
