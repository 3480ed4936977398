//! The `bash` design: real bash in clix's bubblewrap sandbox, output as is.
//!
//! This is the baseline popular coding agents ship: the line runs with GNU
//! bash, stdout then stderr come back raw, and only the first 30,000
//! characters are kept (with a note of how many lines were cut, as those
//! tools add). No exit-code footer, no spill file, no binary guard. Every
//! call starts in the workspace folder: `cd` does not carry over.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clix_sandbox::{Request, Sandbox};
use serde_json::{Value, json};

use super::{ToolSpec, string_arg};
use crate::trace::TracedCall;

/// Characters of output a call returns; the rest is cut.
pub const OUTPUT_LIMIT_CHARS: usize = 30_000;

/// The `bash` tool of one attempt (also the typed set's `shell`).
pub struct BashTools {
    sandbox: Sandbox,
    workspace: PathBuf,
    timeout: Duration,
}

impl BashTools {
    /// Runs lines in `sandbox` (laid out over `workspace`), each for at most `timeout`.
    pub fn new(sandbox: Sandbox, workspace: PathBuf, timeout: Duration) -> Self {
        BashTools { sandbox, workspace, timeout }
    }

    /// One call of the tool named `tool` (`bash`, or the typed set's `shell`).
    pub async fn call(&self, tool: &str, arguments: &Value) -> TracedCall {
        let command = match string_arg(arguments, "command") {
            Ok(c) => c,
            Err(e) => {
                return TracedCall::refused(
                    tool,
                    arguments,
                    format!("{tool}: {e}; call it as {{\"command\": \"ls -la\"}}"),
                );
            }
        };
        let argv = ["bash".to_string(), "-c".to_string(), command.to_string()];
        let started = Instant::now();
        let (stdout, stderr, exit_code) =
            match self.sandbox.run(Request::new(&argv, &self.workspace, None, self.timeout)).await {
                Ok(out) => {
                    let mut stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                    if let Some(limit) = out.timed_out {
                        stderr.push_str(&format!("timed out after {}s\n", limit.as_secs()));
                    }
                    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr, out.exit_code)
                }
                Err(e) => (String::new(), format!("{e}\n"), clix_common::exit::CANNOT_RUN),
            };
        TracedCall {
            tool: tool.to_string(),
            arguments: arguments.clone(),
            text: cut(&format!("{stdout}{stderr}")),
            images: Vec::new(),
            stdout,
            stderr,
            exit_code,
            duration: started.elapsed(),
            stage_failed: false,
        }
    }
}

/// The first [`OUTPUT_LIMIT_CHARS`] characters of `output`, and how many
/// lines were cut after them.
pub(super) fn cut(output: &str) -> String {
    match output.char_indices().nth(OUTPUT_LIMIT_CHARS) {
        None => output.to_string(),
        Some((at, _)) => {
            let lines = output[at..].lines().count();
            format!("{}\n\n... [{lines} lines truncated] ...", &output[..at])
        }
    }
}

/// The definition of the tool named `name`.
pub(super) fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: "Run a bash command line in the workspace folder and return its standard output and \
                      standard error. Each call starts in the workspace folder. Output over 30000 characters \
                      is cut."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command line to run."}},
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_returned_whole() {
        assert_eq!(cut("a\nb\n"), "a\nb\n");
        let exact = "x".repeat(OUTPUT_LIMIT_CHARS);
        assert_eq!(cut(&exact), exact);
    }

    #[test]
    fn long_output_keeps_the_first_characters_and_counts_the_cut_lines() {
        let line = "é123456789\n"; // 11 characters, 12 bytes
        let output = line.repeat(3_000); // 33,000 characters
        let text = cut(&output);
        let kept = &output.chars().take(OUTPUT_LIMIT_CHARS).collect::<String>();
        assert!(text.starts_with(kept.as_str()));
        // 30,000 = 2,727 whole lines and 3 characters: the cut holds the
        // rest of line 2,728 and the 272 lines after it.
        assert!(text.ends_with("\n\n... [273 lines truncated] ..."), "{}", &text[text.len() - 40..]);
    }
}
