//! The line editor of `clix chat`: history on disk, multi-line input.

use std::io::IsTerminal;
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

/// Where a chat's turns come from: a person at the line editor, or piped
/// stdin, one task per line.
pub enum Turns {
    /// A person typing.
    Terminal(Box<Editor>),
    /// Piped stdin's lines, left to go.
    Piped(std::vec::IntoIter<String>),
}

impl Turns {
    /// The editor (its history in `history`) when stdin is a terminal and
    /// nothing was `piped`; else the piped text's non-empty lines, an error
    /// when there is none.
    pub fn new(piped: Option<Vec<u8>>, history: &Path) -> Result<Turns> {
        match piped {
            None if std::io::stdin().is_terminal() => Ok(Turns::Terminal(Box::new(Editor::new(history)?))),
            piped => {
                let text = String::from_utf8_lossy(piped.as_deref().unwrap_or_default()).into_owned();
                let lines: Vec<String> =
                    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
                if lines.is_empty() {
                    anyhow::bail!(
                        "clix chat: stdin held no task; type in a terminal, pipe one task per line, \
                         or give one task to clix ask \"…\""
                    );
                }
                Ok(Turns::Piped(lines.into_iter()))
            }
        }
    }

    /// Whether a person is typing.
    pub fn at_terminal(&self) -> bool {
        matches!(self, Turns::Terminal(_))
    }

    /// The next input; `None` at the end (Ctrl-D, or the last piped line).
    pub fn next_line(&mut self) -> Result<Option<String>> {
        match self {
            Turns::Terminal(editor) => editor.read_line(),
            Turns::Piped(lines) => Ok(lines.next()),
        }
    }
}
