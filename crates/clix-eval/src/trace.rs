//! What an attempt did, as the checks see it: its tool calls and its answer.

use std::time::Duration;

use clix_engine::SeenImage;
use serde::Serialize;
use serde_json::Value;

/// One tool call of an attempt: what was asked, what the model was sent,
/// and the raw facts the checks score.
#[derive(Debug, Clone)]
pub struct TracedCall {
    /// The tool's name (`run`, `bash`, `read_file`, …).
    pub tool: String,
    /// The arguments as the model (or a solution step) gave them.
    pub arguments: Value,
    /// Exactly the tool result the model is sent (for `run`, Layer 2's text
    /// with its footer; for `bash`, the cut raw output).
    pub text: String,
    /// Images the model is sent with the result (`see` under `run`).
    pub images: Vec<SeenImage>,
    /// The raw standard output, before any presentation: `stdout_*` checks
    /// read this, as bashkit-eval does. For a typed file tool, its result.
    pub stdout: String,
    /// The raw standard error; for a typed file tool, its error message.
    pub stderr: String,
    /// The exit code; a typed file tool gives 0 on success and 1 on error.
    pub exit_code: i32,
    /// Wall time of the call.
    pub duration: Duration,
    /// Under `run`, a pipeline stage other than the last failed (the footer
    /// names it) though the exit code is the last stage's: the agent treats
    /// the call as failed. Always false for the other designs, which have
    /// no footer.
    pub stage_failed: bool,
}

impl TracedCall {
    /// A call refused before anything ran (an unknown tool, bad arguments):
    /// the model is told why, and the call counts as failed.
    pub(crate) fn refused(tool: &str, arguments: &Value, message: String) -> TracedCall {
        TracedCall {
            tool: tool.to_string(),
            arguments: arguments.clone(),
            text: message.clone(),
            images: Vec::new(),
            stdout: String::new(),
            stderr: message,
            exit_code: clix_common::exit::USAGE,
            duration: Duration::ZERO,
            stage_failed: false,
        }
    }

    /// Whether the call failed: a non-zero exit, as bashkit-eval counts errors.
    pub fn failed(&self) -> bool {
        self.exit_code != 0
    }

    /// Bytes of tool result sent to the model: the text, images not included.
    pub fn result_bytes(&self) -> u64 {
        self.text.len() as u64
    }

    /// Bytes of images sent with the result.
    pub fn image_bytes(&self) -> u64 {
        self.images.iter().map(|i| i.data.len() as u64).sum()
    }

    /// Estimated tokens the model reads for this result: the text at four
    /// characters a token, each image at width × height / 750 (the rule
    /// Anthropic documents for its vision models).
    pub fn estimated_tokens(&self) -> u64 {
        let images: u64 = self.images.iter().map(|i| u64::from(i.width) * u64::from(i.height) / 750).sum();
        estimate_tokens(&self.text) + images
    }

    /// The short record of this call kept in an attempt's result.
    pub fn summary(&self) -> CallSummary {
        CallSummary {
            tool: self.tool.clone(),
            arguments: self.arguments.clone(),
            exit_code: self.exit_code,
            result_bytes: self.result_bytes(),
            image_bytes: self.image_bytes(),
            estimated_tokens: self.estimated_tokens(),
            duration_ms: self.duration.as_millis() as u64,
        }
    }
}

/// A tool call as `results.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct CallSummary {
    /// The tool's name.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Its exit code (typed file tools: 0 ok, 1 error).
    pub exit_code: i32,
    /// Bytes of text the model was sent.
    pub result_bytes: u64,
    /// Bytes of images the model was sent.
    pub image_bytes: u64,
    /// Estimated tokens of the result (see [`estimate_tokens`]).
    pub estimated_tokens: u64,
    /// Wall time, in milliseconds.
    pub duration_ms: u64,
}

/// Estimated tokens of a text: one per four characters, rounded up. A
/// tokenizer-free rule of thumb; it is the same for every design, so the
/// designs' ratios hold even where the absolute count is off.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Everything the checks of an attempt score.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The tool calls, in order.
    pub calls: Vec<TracedCall>,
    /// The model's final answer; `None` when it gave none.
    pub answer: Option<String>,
}

impl Trace {
    /// The exit code `exit_code:N` compares: the last call's, -1 when there
    /// was none (as bashkit-eval scores it).
    pub fn last_exit_code(&self) -> i32 {
        self.calls.last().map_or(-1, |c| c.exit_code)
    }

    /// Bytes of tool results sent to the model over the attempt.
    pub fn result_bytes(&self) -> u64 {
        self.calls.iter().map(TracedCall::result_bytes).sum()
    }

    /// Estimated tokens of the tool results over the attempt.
    pub fn estimated_tokens(&self) -> u64 {
        self.calls.iter().map(TracedCall::estimated_tokens).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(text: &str, exit_code: i32) -> TracedCall {
        TracedCall {
            tool: "run".into(),
            arguments: Value::Null,
            text: text.into(),
            images: Vec::new(),
            stdout: String::new(),
            stderr: String::new(),
            exit_code,
            duration: Duration::ZERO,
            stage_failed: false,
        }
    }

    #[test]
    fn tokens_are_characters_over_four_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Characters, not bytes: four two-byte letters are one token.
        assert_eq!(estimate_tokens("éééé"), 1);
    }

    #[test]
    fn images_add_their_area_over_750() {
        let mut c = call("abcd", 0);
        c.images.push(SeenImage {
            path: "a.png".into(),
            mime: "image/png".into(),
            data: vec![0; 10],
            width: 150,
            height: 100,
        });
        assert_eq!(c.estimated_tokens(), 1 + 20);
        assert_eq!(c.image_bytes(), 10);
        assert_eq!(c.result_bytes(), 4);
    }

    #[test]
    fn last_exit_code_is_minus_one_without_calls() {
        let mut trace = Trace::default();
        assert_eq!(trace.last_exit_code(), -1);
        trace.calls.push(call("x", 0));
        trace.calls.push(call("y", 3));
        assert_eq!(trace.last_exit_code(), 3);
        assert_eq!(trace.result_bytes(), 2);
        assert!(trace.calls[1].failed() && !trace.calls[0].failed());
    }
}
