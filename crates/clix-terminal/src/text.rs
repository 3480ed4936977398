//! Text from models, workspace files and MCP servers shown on a terminal:
//! their control characters made visible, so none of them reaches the
//! terminal as a command (OSC 52 setting the clipboard, `CSI 2J` clearing
//! the screen to draw a fake prompt, U+202E reversing what follows). Text
//! going to a pipe or a file is left as it is.

use std::borrow::Cow;
use std::io::IsTerminal;

/// One line for a terminal (a question, a name): every control character
/// escaped, newlines too.
pub use clix_common::names::escape_controls as escaped;
/// Text for a terminal: as [`escaped`], but its newlines and tabs kept.
pub use clix_common::names::escape_controls_in_text as visible;

/// [`visible`] when stdout is a terminal, else `text` as it is.
pub fn for_stdout(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() { visible(text) } else { Cow::Borrowed(text) }
}

/// `s` on one line for a terminal: newlines as `⏎`, control characters
/// escaped, cut to `max` characters with `…`.
pub fn one_line(s: &str, max: usize) -> String {
    // Shown on stderr, a terminal's: what a model or a file wrote is never obeyed there.
    let flat = visible(&s.replace('\n', " ⏎ ")).into_owned();
    if flat.chars().count() <= max { flat } else { format!("{}…", flat.chars().take(max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_terminal_would_act_on_is_shown_instead() {
        for (text, shown) in [
            ("plain\ttext\nline two\n", "plain\ttext\nline two\n"),
            ("\x1b]52;c;ZWNobyBwd25lZA==\x07copied", "\\u{1b}]52;c;ZWNobyBwd25lZA==\\u{7}copied"),
            ("\x1b[2J\x1b[Hclix$ ", "\\u{1b}[2J\\u{1b}[Hclix$ "),
            ("over\rwrite", "over\\rwrite"),
            ("abc\u{202e}fed", "abc\\u{202e}fed"),
            ("\u{9b}31m c1", "\\u{9b}31m c1"),
        ] {
            assert_eq!(visible(text), shown, "{text:?}");
        }
        assert_eq!(escaped("a\nb\x1b"), "a\\nb\\u{1b}");
    }
}
