//! The line editor of `clix chat`: history on disk, multi-line input.

use std::path::Path;

use anyhow::{Context, Result};
use reedline::{DefaultPrompt, DefaultPromptSegment, FileBackedHistory, Reedline, Signal, ValidationResult, Validator};

/// A line ending in `\` continues on the next one.
struct TrailingBackslash;

impl Validator for TrailingBackslash {
    fn validate(&self, line: &str) -> ValidationResult {
        if line.trim_end().ends_with('\\') { ValidationResult::Incomplete } else { ValidationResult::Complete }
    }
}

/// The prompt and its history.
pub struct Editor {
    line: Reedline,
    prompt: DefaultPrompt,
}

impl Editor {
    /// An editor keeping its history in `history`.
    pub fn new(history: &Path) -> Result<Self> {
        if let Some(dir) = history.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let history = FileBackedHistory::with_file(1000, history.to_path_buf())
            .with_context(|| format!("cannot open the chat history {}", history.display()))?;
        let line = Reedline::create().with_history(Box::new(history)).with_validator(Box::new(TrailingBackslash));
        let prompt = DefaultPrompt::new(DefaultPromptSegment::Basic("clix".into()), DefaultPromptSegment::Empty);
        Ok(Editor { line, prompt })
    }

    /// The next input; `None` on Ctrl-D.
    pub fn read_line(&mut self) -> Result<Option<String>> {
        loop {
            match self.line.read_line(&self.prompt).context("cannot read from the terminal")? {
                Signal::Success(text) => return Ok(Some(text.replace("\\\n", "\n"))),
                Signal::CtrlC => continue,
                Signal::CtrlD => return Ok(None),
                _ => return Ok(None),
            }
        }
    }
}
