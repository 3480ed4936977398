//! How the model's answer reaches a person's stdout: drawn with
//! `clix-markdown` on a terminal that takes styles, as written otherwise
//! (piped or redirected output, `--jsonl`, `NO_COLOR`: Markdown is plain
//! text already).

use std::io::IsTerminal;

/// Widest an answer is wrapped to, however wide the terminal: longer lines
/// are hard to read.
const MAX_WIDTH: usize = 100;

/// How the answers of one run reach stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// As written: not a terminal, `--jsonl`, or `NO_COLOR`.
    Raw,
    /// Drawn, wrapped to this many columns (0: not wrapped).
    Drawn(usize),
}

impl Answer {
    /// Drawn when stdout is a terminal and `NO_COLOR` is unset.
    pub fn for_stdout(jsonl: bool) -> Self {
        if jsonl || !std::io::stdout().is_terminal() || std::env::var_os("NO_COLOR").is_some() {
            return Answer::Raw;
        }
        let columns = terminal_size::terminal_size().map_or(0, |(w, _)| usize::from(w.0));
        Answer::Drawn(columns.min(MAX_WIDTH))
    }

    /// `text` as this run shows it; on a terminal, the model's control
    /// characters are shown escaped, never obeyed.
    pub fn show(self, text: &str) -> String {
        match self {
            Answer::Raw => crate::text::for_stdout(text).into_owned(),
            Answer::Drawn(width) => clix_markdown::render(&crate::text::visible(text), width),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_is_the_text_as_written() {
        let text = "**bold** and `code`\n";
        assert_eq!(Answer::Raw.show(text), text);
        assert_eq!(Answer::Drawn(0).show(text), clix_markdown::render(text, 0));
    }
}
