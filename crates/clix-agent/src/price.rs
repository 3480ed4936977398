//! What a run cost, from the prices a person set for its model
//! (`[agent.prices."<model>"]`). clix ships no price table: providers change
//! their prices, and a stale built-in figure would be worse than none.

use clix_common::settings::{BadValue, key_part};
use serde::{Deserialize, Serialize};

use crate::provider::Usage;

/// One model's prices, per million tokens, in whatever currency the person
/// writes them in (the providers' lists are in US dollars).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Input tokens that were not read from or written to a prompt cache.
    pub input: f64,
    /// Input tokens read from the prompt cache; unset, `input`'s price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Input tokens written to the prompt cache (Anthropic's breakpoints);
    /// unset, `input`'s price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Output tokens.
    pub output: f64,
}

impl ModelPrice {
    /// What `usage` cost at these prices, to a millionth.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let parts = [
            (usage.uncached_input_tokens(), self.input),
            (usage.cache_read_tokens, self.cached_input.unwrap_or(self.input)),
            (usage.cache_write_tokens, self.cache_write.unwrap_or(self.input)),
            (usage.output_tokens, self.output),
        ];
        let cost: f64 = parts.iter().map(|&(tokens, per_million)| tokens as f64 * per_million).sum::<f64>() / 1e6;
        (cost * 1e6).round() / 1e6
    }

    /// Each price that is not a number of 0 or more, keyed under `model` as
    /// the config loader and `clix config show` write keys
    /// (`prices."gpt-4.1".input`), so the loader names where the value came from.
    pub(crate) fn validate(&self, model: &str) -> Vec<BadValue> {
        let prices = [
            ("input", Some(self.input)),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
            ("output", Some(self.output)),
        ];
        prices
            .into_iter()
            .filter_map(|(key, price)| {
                price.filter(|p| !(p.is_finite() && *p >= 0.0)).map(|p| {
                    BadValue::new(
                        format!("prices.{}.{key}", key_part(model)),
                        p,
                        "a price per million tokens, 0 or more",
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, read: u64, write: u64, output: u64) -> Usage {
        Usage { input_tokens: input, output_tokens: output, cache_read_tokens: read, cache_write_tokens: write }
    }

    /// Each part of the input at its own price; an unset cache price is the input's.
    #[test]
    fn each_kind_of_token_costs_its_own_price() {
        let sonnet = ModelPrice { input: 3.0, cached_input: Some(0.3), cache_write: Some(3.75), output: 15.0 };
        let plain = ModelPrice { input: 2.0, cached_input: None, cache_write: None, output: 8.0 };
        let rows = [
            (sonnet, usage(0, 0, 0, 0), 0.0),
            // 1M uncached in, 1M out.
            (sonnet, usage(1_000_000, 0, 0, 1_000_000), 18.0),
            // 10k in: 8k read, 1k written, 1k fresh; 500 out.
            (sonnet, usage(10_000, 8_000, 1_000, 500), 0.0024 + 0.00375 + 0.003 + 0.0075),
            (plain, usage(10_000, 8_000, 1_000, 500), 0.02 + 0.004),
        ];
        for (price, usage, want) in rows {
            assert!((price.cost(&usage) - want).abs() < 1e-9, "{usage:?}: {} != {want}", price.cost(&usage));
        }
    }

    #[test]
    fn a_price_is_a_number_of_zero_or_more() {
        let bad = ModelPrice { input: -1.0, cached_input: Some(f64::NAN), cache_write: None, output: 0.0 };
        let shown: Vec<String> = bad.validate("m-1").iter().map(ToString::to_string).collect();
        let dotted = bad.validate("gpt-4.1");
        assert_eq!(dotted[0].key, "prices.\"gpt-4.1\".input", "a name with a dot stays one part of the key");
        assert_eq!(
            shown,
            [
                "prices.m-1.input = -1: a price per million tokens, 0 or more",
                "prices.m-1.cached_input = NaN: a price per million tokens, 0 or more"
            ]
        );
        let good = ModelPrice { input: 0.0, cached_input: Some(0.1), cache_write: Some(1.0), output: 2.0 };
        assert!(good.validate("m").is_empty());
    }
}
