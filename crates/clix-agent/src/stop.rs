//! How a run ended: its [`RunSummary`] for the caller, and why, the one
//! [`StopReason`] of every place that says so (the
//! stream's `result`, the trajectory's `done`, `clix runs`, a plan's
//! `plan-result.json`, the eval harness's `results.json`), written one way:
//! `answered`, `max_steps`, `max_tokens`, `wall_time`, `interrupted`, or
//! `error: <message>`.

use std::fmt;
use std::str::FromStr;

use clix_common::exit;

use crate::provider::Usage;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a run ended, for the caller (the CLI's exit code and last line).
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The trajectory's id (`clix replay <id>`), when the run has one.
    pub run_id: Option<String>,
    /// Why the run ended.
    pub stop_reason: StopReason,
    /// The model's last text: its answer, or where it stands after a budget stop.
    pub answer: String,
    /// Model calls made with tools offered (the last text-only call not counted).
    pub steps: u32,
    /// Tokens of every model call of the run, as the provider counted them.
    pub usage: Usage,
    /// What those tokens cost at the prices set for the model
    /// (`agent.prices`); `None` when none are.
    pub cost: Option<f64>,
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without a tool call.
    Answered,
    /// `agent.max_steps` model calls were made.
    MaxSteps,
    /// `agent.max_total_tokens` (input plus output, the whole run) were used.
    MaxTokens,
    /// `agent.max_wall_secs` passed since the task began.
    WallTime,
    /// Ctrl-C (or the caller) stopped it.
    Interrupted,
    /// The run could not go on: the model could not be reached or kept
    /// failing (the provider's message), or the run could not start.
    Error(String),
}

/// The prefix of an error's label; the message follows it.
const ERROR: &str = "error: ";

impl StopReason {
    /// Every reason but [`StopReason::Error`].
    const NAMED: [StopReason; 5] = [
        StopReason::Answered,
        StopReason::MaxSteps,
        StopReason::MaxTokens,
        StopReason::WallTime,
        StopReason::Interrupted,
    ];

    /// Its name without an error's message: `answered`, …, `error` (a
    /// table's column, where the whole message would not fit).
    pub fn kind(&self) -> &'static str {
        match self {
            StopReason::Answered => "answered",
            StopReason::MaxSteps => "max_steps",
            StopReason::MaxTokens => "max_tokens",
            StopReason::WallTime => "wall_time",
            StopReason::Interrupted => "interrupted",
            StopReason::Error(_) => "error",
        }
    }

    /// The exit code of a command that ran the agent (`clix ask`): 0
    /// answered, 3 a budget, 130 interrupted, 1 an error.
    pub fn exit_code(&self) -> i32 {
        match self {
            StopReason::Answered => exit::SUCCESS,
            StopReason::MaxSteps | StopReason::MaxTokens | StopReason::WallTime => exit::BUDGET,
            StopReason::Interrupted => exit::CANCELLED,
            StopReason::Error(_) => exit::FAILURE,
        }
    }

    /// Budget stops end with one last text-only call.
    pub(super) fn budget_note(&self) -> Option<&'static str> {
        match self {
            StopReason::MaxSteps => Some("the step budget"),
            StopReason::MaxTokens => Some("the token budget"),
            StopReason::WallTime => Some("the time budget"),
            _ => None,
        }
    }
}

impl fmt::Display for StopReason {
    /// Its label, as every file and stream writes it: `answered`, …,
    /// `error: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Error(message) => write!(f, "{ERROR}{message}"),
            named => f.write_str(named.kind()),
        }
    }
}

impl FromStr for StopReason {
    type Err = String;

    /// A label as [`fmt::Display`] writes it.
    fn from_str(label: &str) -> Result<StopReason, String> {
        if let Some(message) = label.strip_prefix(ERROR) {
            return Ok(StopReason::Error(message.to_string()));
        }
        Self::NAMED.into_iter().find(|reason| reason.kind() == label).ok_or_else(|| {
            let names: Vec<&str> = Self::NAMED.iter().map(StopReason::kind).collect();
            format!("unknown stop reason `{label}`: one of {}, or `{ERROR}<message>`", names.join(", "))
        })
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StopReason, D::Error> {
        let label = String::deserialize(deserializer)?;
        label.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reason: its label (what files hold), its kind, its exit code.
    #[test]
    fn each_reason_is_written_one_way_and_read_back() {
        let table = [
            (StopReason::Answered, "answered", "answered", 0),
            (StopReason::MaxSteps, "max_steps", "max_steps", 3),
            (StopReason::MaxTokens, "max_tokens", "max_tokens", 3),
            (StopReason::WallTime, "wall_time", "wall_time", 3),
            (StopReason::Interrupted, "interrupted", "interrupted", 130),
            (StopReason::Error("HTTP 500: down".into()), "error: HTTP 500: down", "error", 1),
            (StopReason::Error(String::new()), "error: ", "error", 1),
        ];
        for (reason, label, kind, code) in table {
            assert_eq!(reason.to_string(), label);
            assert_eq!((reason.kind(), reason.exit_code()), (kind, code), "{label}");
            let json = serde_json::to_value(&reason).unwrap();
            assert_eq!(json, serde_json::json!(label));
            assert_eq!(serde_json::from_value::<StopReason>(json).unwrap(), reason);
        }
    }

    /// Another program's spelling is refused, not guessed.
    #[test]
    fn an_unknown_label_is_refused_with_the_known_ones() {
        for label in ["token_budget", "timeout", "error", "Answered", ""] {
            let err = serde_json::from_value::<StopReason>(serde_json::json!(label)).unwrap_err().to_string();
            assert!(err.contains("unknown stop reason") && err.contains("max_tokens"), "{label}: {err}");
        }
    }
}
