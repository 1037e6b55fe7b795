//! When to send a failed request again, and after how long.

use super::error::ProviderError;
use serde::{Deserialize, Serialize};

/// A deterministic retry schedule: exponential backoff with a cap, a limit on attempts, and the
/// provider's own `Retry-After` taking precedence.
///
/// Only [transient](ProviderError::is_transient) failures are retried: 429 rate limits, 5xx
/// server errors (not 501 or 505), timeouts, network failures and transient error events
/// (`overloaded_error`, …). Other 4xx statuses, exhausted quotas, refused connections,
/// truncated streams, invalid responses, bad settings and cancellation are never retried.
///
/// The policy only computes delays; the transport waits (it owns the clock). There is no random
/// jitter because this crate has no randomness: a transport that serves many clients at once
/// can add its own jitter to the returned delay.
///
/// ```
/// # use ccm_provider::{ProviderError, RetryPolicy};
/// let policy = RetryPolicy::default();
/// let overloaded = ProviderError::Server { status: 529, message: "Overloaded".into(),
///                                          retry_after_ms: None };
/// assert_eq!(policy.delay_ms(1, &overloaded), Some(1_000));
/// assert_eq!(policy.delay_ms(2, &overloaded), Some(2_000));
/// assert_eq!(policy.delay_ms(3, &overloaded), Some(4_000));
/// assert_eq!(policy.delay_ms(4, &overloaded), None); // four attempts were made
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// The most attempts in total, the first one included; 1 means never retry.
    pub max_attempts: u32,
    /// The delay before the second attempt; each further attempt doubles it.
    pub initial_delay_ms: u64,
    /// The longest delay the backoff grows to.
    pub max_delay_ms: u64,
    /// The longest `Retry-After` the policy will wait. When the provider asks for more (an
    /// hourly quota resetting, say), retrying is given up so that the person sees the rate
    /// limit error at once rather than a turn that hangs.
    pub max_retry_after_ms: u64,
}

impl Default for RetryPolicy {
    /// Four attempts, waiting 1 s, 2 s and 4 s (at most 20 s per step), and honouring a
    /// `Retry-After` of up to 60 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_delay_ms: 1_000,
            max_delay_ms: 20_000,
            max_retry_after_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn never() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// How long to wait before trying again after attempt number `failed_attempt` (counting
    /// from 1) failed with `error`, or `None` to give up and report the error.
    ///
    /// The delay is the `Retry-After` the provider sent if there is one (`None` if it exceeds
    /// [`max_retry_after_ms`](Self::max_retry_after_ms)); otherwise it is
    /// [`backoff_ms`](Self::backoff_ms).
    pub fn delay_ms(&self, failed_attempt: u32, error: &ProviderError) -> Option<u64> {
        if failed_attempt >= self.max_attempts || !error.is_transient() {
            return None;
        }
        match error.retry_after_ms() {
            Some(asked) if asked > self.max_retry_after_ms => None,
            Some(asked) => Some(asked),
            None => Some(self.backoff_ms(failed_attempt)),
        }
    }

    /// The backoff after attempt number `failed_attempt` (counting from 1):
    /// `initial_delay_ms × 2^(failed_attempt − 1)`, capped at `max_delay_ms`.
    pub fn backoff_ms(&self, failed_attempt: u32) -> u64 {
        let doublings = failed_attempt.saturating_sub(1).min(63);
        self.initial_delay_ms
            .saturating_mul(1u64 << doublings)
            .min(self.max_delay_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(status: u16, retry_after_ms: Option<u64>) -> ProviderError {
        ProviderError::Server {
            status,
            message: String::new(),
            retry_after_ms,
        }
    }

    fn rate_limited(retry_after_ms: Option<u64>) -> ProviderError {
        ProviderError::RateLimited {
            message: String::new(),
            retry_after_ms,
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_delay_ms: 500,
            max_delay_ms: 5_000,
            max_retry_after_ms: 60_000,
        };
        let delays: Vec<Option<u64>> = (1..=10)
            .map(|attempt| policy.delay_ms(attempt, &server(503, None)))
            .collect();
        assert_eq!(
            delays,
            vec![
                Some(500),
                Some(1_000),
                Some(2_000),
                Some(4_000),
                Some(5_000),
                Some(5_000),
                Some(5_000),
                Some(5_000),
                Some(5_000),
                None
            ]
        );
        // Huge attempt numbers neither overflow nor exceed the cap.
        assert_eq!(policy.backoff_ms(200), 5_000);
        assert_eq!(policy.backoff_ms(0), 500);
    }

    #[test]
    fn retry_after_takes_precedence_within_its_limit() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_ms(1, &rate_limited(Some(7_000))), Some(7_000));
        assert_eq!(policy.delay_ms(3, &rate_limited(Some(0))), Some(0));
        assert_eq!(policy.delay_ms(2, &server(503, Some(30_000))), Some(30_000));
        assert_eq!(
            policy.delay_ms(1, &rate_limited(Some(60_000))),
            Some(60_000)
        );
        assert_eq!(policy.delay_ms(1, &rate_limited(Some(60_001))), None);
        assert_eq!(policy.delay_ms(1, &rate_limited(None)), Some(1_000));
        // The attempt limit holds even when the provider asks to retry.
        assert_eq!(policy.delay_ms(4, &rate_limited(Some(1))), None);
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let policy = RetryPolicy::default();
        let retried = [
            rate_limited(None),
            server(500, None),
            server(502, None),
            server(529, None),
            ProviderError::Timeout { after_ms: 30_000 },
            ProviderError::Network("connection reset".into()),
            ProviderError::ApiError {
                error_type: Some("overloaded_error".into()),
                message: "Overloaded".into(),
            },
        ];
        for error in &retried {
            assert_eq!(policy.delay_ms(1, error), Some(1_000), "{error:?}");
        }
        let never = [
            ProviderError::BadRequest {
                status: 400,
                message: String::new(),
                code: None,
            },
            ProviderError::Unauthorized {
                message: String::new(),
                api_key_given: true,
            },
            ProviderError::QuotaExceeded {
                status: 429,
                message: String::new(),
            },
            ProviderError::Forbidden {
                message: String::new(),
            },
            ProviderError::NotFound {
                message: String::new(),
                model: String::new(),
                url: String::new(),
            },
            ProviderError::Http {
                status: 409,
                message: String::new(),
            },
            server(501, None),
            ProviderError::ConnectionRefused { url: String::new() },
            ProviderError::StreamTruncated {
                events: 3,
                text_chars: 10,
                tool_calls: 0,
            },
            ProviderError::InvalidJson {
                context: String::new(),
                snippet: String::new(),
            },
            ProviderError::Protocol(String::new()),
            ProviderError::Cancelled,
            ProviderError::InvalidConfig(String::new()),
        ];
        for error in &never {
            assert_eq!(policy.delay_ms(1, error), None, "{error:?}");
        }
    }

    #[test]
    fn never_means_never() {
        assert_eq!(RetryPolicy::never().delay_ms(1, &server(500, None)), None);
    }
}
