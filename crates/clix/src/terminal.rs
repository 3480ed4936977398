//! Text from models, workspace files and MCP servers shown on a terminal:
//! their control characters made visible, so none of them reaches the
//! terminal as a command (OSC 52 setting the clipboard, `CSI 2J` clearing
//! the screen to draw a fake prompt, U+202E reversing what follows). Text
//! going to a pipe or a file is left as it is.

use std::borrow::Cow;
use std::io::IsTerminal;

/// One line for a terminal (a question, a name): every control character
/// escaped, newlines too.
pub(crate) use clix_common::names::escape_controls as escaped;
/// Text for a terminal: as [`escaped`], but its newlines and tabs kept.
pub(crate) use clix_common::names::escape_controls_in_text as visible;

/// [`visible`] when stdout is a terminal, else `text` as it is.
pub(crate) fn for_stdout(text: &str) -> Cow<'_, str> {
    if std::io::stdout().is_terminal() { visible(text) } else { Cow::Borrowed(text) }
}

/// The spinner on screen while the model or a command works, if any.
static SPINNER: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

/// Makes `bar` the spinner a question pauses (`None`: none is shown).
pub(crate) fn set_spinner(bar: Option<indicatif::ProgressBar>) {
    *SPINNER.lock().unwrap_or_else(|p| p.into_inner()) = bar;
}

/// Runs `ask` (a question to the person) with the spinner off the screen:
/// its ticks would otherwise redraw over the question while clix waits for
/// the answer. It comes back once the answer is in.
pub(crate) fn with_spinner_paused<R>(ask: impl FnOnce() -> R) -> R {
    let bar = SPINNER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match bar {
        Some(bar) => bar.suspend(ask),
        None => ask(),
    }
}

/// Puts `question` to the person on `/dev/tty` (stdout may be piped),
/// the spinner paused, and returns the answer trimmed and lowercased;
/// `None` without a terminal or an answer.
pub(crate) fn ask_person(question: &str) -> Option<String> {
    use std::io::{BufRead, Write};
    with_spinner_paused(|| {
        let mut tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").ok()?;
        tty.write_all(question.as_bytes()).ok()?;
        let mut answer = String::new();
        std::io::BufReader::new(&tty).read_line(&mut answer).ok()?;
        Some(answer.trim().to_ascii_lowercase())
    })
}

/// Says each of `engine`'s notices on stderr (`clix: …`), once per
/// workspace: a notice already said there stays quiet until the set
/// changes, so `clix run` after `clix run` does not repeat it. What was said
/// is kept in clix's state folder; if it cannot be kept, the notices are
/// said every time rather than never.
pub(crate) fn tell_notices(paths: &clix_config::Paths, engine: &clix_engine::Engine) {
    use std::hash::{Hash, Hasher};
    let notices = engine.notices();
    if notices.is_empty() {
        return;
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.shell().folder().root().hash(&mut hasher);
    let file = paths.state_dir.join("said").join(format!("{:016x}", hasher.finish()));
    let said = std::fs::read_to_string(&file).unwrap_or_default();
    for notice in notices.iter().filter(|n| !said.lines().any(|s| s == n.as_str())) {
        eprintln!("clix: {notice}");
    }
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&file, notices.join("\n")));
    }
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
