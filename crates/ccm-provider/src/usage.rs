//! How far the local token estimate of a request was from what the provider counted.

use super::Usage;
use serde::{Deserialize, Serialize};

/// The local estimate of a request's prompt tokens next to the provider's count.
///
/// The local count (tiktoken or another tokenizer) is what every budget decision is
/// based on; the provider's count is the truth it is billed by. Keeping both for every request
/// shows how far off the estimate runs for a given model, for example in the token curve.
///
/// ```
/// # use ccm_provider::UsageReconciliation;
/// let check = UsageReconciliation::new(1_000, 1_250);
/// assert_eq!(check.difference, 250);            // the provider counted 250 tokens more
/// assert_eq!(check.ratio, Some(1.25));          // reported ÷ estimated
/// assert_eq!(check.relative_error(), Some(0.2)); // the estimate missed by 20 % of the truth
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UsageReconciliation {
    /// The prompt tokens counted locally before sending.
    pub estimated_prompt_tokens: u64,
    /// The prompt tokens the provider reported.
    pub reported_prompt_tokens: u64,
    /// `reported − estimated`: positive when the local estimate was too low.
    pub difference: i64,
    /// `reported ÷ estimated`, or `None` when the estimate is 0.
    pub ratio: Option<f64>,
}

impl UsageReconciliation {
    /// Compares an estimate with a reported count.
    pub fn new(estimated_prompt_tokens: u64, reported_prompt_tokens: u64) -> Self {
        let difference = i128::from(reported_prompt_tokens) - i128::from(estimated_prompt_tokens);
        let difference = difference.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        let ratio = (estimated_prompt_tokens > 0)
            .then(|| reported_prompt_tokens as f64 / estimated_prompt_tokens as f64);
        UsageReconciliation {
            estimated_prompt_tokens,
            reported_prompt_tokens,
            difference,
            ratio,
        }
    }

    /// Compares an estimate with a response's usage; `None` when the provider reported none.
    pub fn from_usage(estimated_prompt_tokens: u64, usage: Option<&Usage>) -> Option<Self> {
        usage.map(|usage| UsageReconciliation::new(estimated_prompt_tokens, usage.prompt_tokens))
    }

    /// `|difference| ÷ reported`: the share of the provider's count the estimate missed by, or
    /// `None` when the provider reported 0 tokens.
    pub fn relative_error(&self) -> Option<f64> {
        (self.reported_prompt_tokens > 0)
            .then(|| self.difference.unsigned_abs() as f64 / self.reported_prompt_tokens as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_and_under_estimates() {
        let over = UsageReconciliation::new(1_200, 1_000);
        assert_eq!(over.difference, -200);
        assert_eq!(over.ratio, Some(1_000.0 / 1_200.0));
        assert_eq!(over.relative_error(), Some(0.2));

        let exact = UsageReconciliation::new(42, 42);
        assert_eq!(exact.difference, 0);
        assert_eq!(exact.ratio, Some(1.0));
        assert_eq!(exact.relative_error(), Some(0.0));
    }

    #[test]
    fn zero_counts_have_no_ratio() {
        let nothing_estimated = UsageReconciliation::new(0, 10);
        assert_eq!(nothing_estimated.difference, 10);
        assert_eq!(nothing_estimated.ratio, None);
        assert_eq!(UsageReconciliation::new(10, 0).relative_error(), None);
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        assert_eq!(UsageReconciliation::new(0, u64::MAX).difference, i64::MAX);
        assert_eq!(UsageReconciliation::new(u64::MAX, 0).difference, i64::MIN);
    }

    #[test]
    fn from_usage_needs_a_report() {
        let usage = Usage {
            prompt_tokens: 900,
            completion_tokens: 50,
        };
        assert_eq!(
            UsageReconciliation::from_usage(1_000, Some(&usage)),
            Some(UsageReconciliation::new(1_000, 900))
        );
        assert_eq!(UsageReconciliation::from_usage(1_000, None), None);
    }
}
