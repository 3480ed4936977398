//! Exponential backoff with jitter, honouring `Retry-After`.

use std::time::Duration;

use super::ProviderError;

#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Tries in all, the first included.
    pub tries: u32,
    pub base: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// The wait before try `attempt + 1` (attempt counts from 1): the
    /// server's `Retry-After` when it gave one (capped), else a random
    /// wait between half and all of `base * 2^(attempt-1)` (capped): growing,
    /// and spread so that clients that failed together do not retry together.
    pub(crate) fn delay(&self, attempt: u32, error: &ProviderError) -> Duration {
        if let ProviderError::Http { retry_after: Some(after), .. } = error {
            return (*after).min(self.max_delay);
        }
        let ceiling = self.base.saturating_mul(1 << attempt.saturating_sub(1).min(16)).min(self.max_delay);
        ceiling.mul_f64(rand::random_range(0.5..=1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_are_capped_and_follow_retry_after() {
        let p = RetryPolicy { tries: 5, base: Duration::from_millis(100), max_delay: Duration::from_secs(2) };
        let other = ProviderError::Connect { url: "u".into(), message: "m".into() };
        for (attempt, ceiling) in [(1, 100), (2, 200), (3, 400), (10, 2000)] {
            let d = p.delay(attempt, &other);
            assert!(d <= Duration::from_millis(ceiling) && d >= Duration::from_millis(ceiling / 2), "{attempt}: {d:?}");
        }
        let limited =
            ProviderError::Http { status: 429, message: String::new(), retry_after: Some(Duration::from_secs(1)) };
        assert_eq!(p.delay(1, &limited), Duration::from_secs(1));
        let long =
            ProviderError::Http { status: 429, message: String::new(), retry_after: Some(Duration::from_secs(60)) };
        assert_eq!(p.delay(1, &long), Duration::from_secs(2));
    }
}
