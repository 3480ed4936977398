//! The arithmetic of the summaries: confidence intervals, pass@k, pass^k.

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval for `passes` out of `n` at 95%: (low, high).
/// Unlike the normal approximation it stays inside [0, 1] and is honest for
/// small n and rates near 0 or 1, which is what eval runs have. `None` when
/// n is 0.
pub fn wilson(passes: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (n, p) = (n as f64, passes.min(n) as f64 / n as f64);
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// pass@k: the chance that at least one of k attempts drawn from n (of
/// which c passed) passes, 1 - C(n-c, k) / C(n, k), computed as a product so
/// it never overflows (the unbiased estimator of Chen et al., 2021).
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let fail_all: f64 = ((n - c + 1)..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Some(1.0 - fail_all)
}

/// pass^k: the chance that all of k attempts drawn from n (c passed) pass,
/// C(c, k) / C(n, k), the reliability measure of τ-bench.
pub fn pass_pow_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if c < k {
        return Some(0.0);
    }
    Some((0..k).map(|i| (c - i) as f64 / (n - i) as f64).product())
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) { (sorted[mid - 1] + sorted[mid]) / 2.0 } else { sorted[mid] })
}

/// The arithmetic mean, 0 for no values.
pub(crate) fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, count) = values.into_iter().fold((0.0, 0u64), |(s, n), v| (s + v, n + 1));
    if count == 0 { 0.0 } else { sum / count as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    /// C(n, k) by the textbook formula, to check the product forms against.
    fn choose(n: u64, k: u64) -> f64 {
        if k > n {
            return 0.0;
        }
        (0..k).map(|i| (n - i) as f64 / (i + 1) as f64).product()
    }

    #[test]
    fn wilson_matches_published_values() {
        // 8 of 10 at 95%: (0.4902, 0.9433), the textbook example.
        let (lo, hi) = wilson(8, 10).unwrap();
        assert!(close(lo, 0.4902) && close(hi, 0.9433), "{lo} {hi}");
        // All or nothing still gives an interval inside [0, 1].
        let (lo, hi) = wilson(0, 5).unwrap();
        assert!(lo == 0.0 && close(hi, 0.4345), "{hi}");
        let (lo, hi) = wilson(5, 5).unwrap();
        assert!(close(lo, 0.5655) && hi == 1.0, "{lo}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn wilson_narrows_as_n_grows() {
        let (lo1, hi1) = wilson(5, 10).unwrap();
        let (lo2, hi2) = wilson(50, 100).unwrap();
        assert!(hi2 - lo2 < hi1 - lo1);
        assert!(lo1 < 0.5 && hi1 > 0.5 && lo2 < 0.5 && hi2 > 0.5);
    }

    #[test]
    fn pass_at_k_is_the_unbiased_estimator() {
        for n in 1..=12u64 {
            for c in 0..=n {
                for k in 1..=n {
                    let want = 1.0 - choose(n - c, k) / choose(n, k);
                    let got = pass_at_k(n, c, k).unwrap();
                    assert!(close(got, want), "n={n} c={c} k={k}: {got} vs {want}");
                }
            }
        }
        // Worked example: 10 attempts, 3 passed; one draw passes 30% of the
        // time, five draws 1 - C(7,5)/C(10,5) = 1 - 21/252.
        assert!(close(pass_at_k(10, 3, 1).unwrap(), 0.3));
        assert!(close(pass_at_k(10, 3, 5).unwrap(), 1.0 - 21.0 / 252.0));
        assert_eq!(pass_at_k(3, 0, 2), Some(0.0));
        assert_eq!(pass_at_k(3, 1, 4), None, "k above n has no estimate");
    }

    #[test]
    fn pass_pow_k_is_all_k_passing() {
        for n in 1..=12u64 {
            for c in 0..=n {
                for k in 1..=n {
                    let want = choose(c, k) / choose(n, k);
                    assert!(close(pass_pow_k(n, c, k).unwrap(), want), "n={n} c={c} k={k}");
                }
            }
        }
        assert!(close(pass_pow_k(10, 3, 2).unwrap(), 3.0 / 45.0));
        assert_eq!(pass_pow_k(4, 4, 4), Some(1.0));
        assert_eq!(pass_pow_k(4, 2, 3), Some(0.0));
        assert_eq!(pass_pow_k(4, 2, 0), None);
        // k = 1 is the plain pass rate, for both.
        assert_eq!(pass_pow_k(8, 6, 1), pass_at_k(8, 6, 1));
    }

    #[test]
    fn median_and_mean() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(mean([1.0, 2.0, 6.0]), 3.0);
        assert_eq!(mean(std::iter::empty()), 0.0);
    }
}
