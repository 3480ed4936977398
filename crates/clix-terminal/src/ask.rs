//! Questions put to the person on `/dev/tty` while a spinner may be
//! drawing on stderr: the spinner steps aside until the answer is in.

/// The spinner on screen while the model or a command works, if any.
static SPINNER: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

/// Makes `bar` the spinner a question pauses (`None`: none is shown).
pub fn set_spinner(bar: Option<indicatif::ProgressBar>) {
    *SPINNER.lock().unwrap_or_else(|p| p.into_inner()) = bar;
}

/// Runs `ask` (a question to the person) with the spinner off the screen:
/// its ticks would otherwise redraw over the question while clix waits for
/// the answer. It comes back once the answer is in.
pub fn with_spinner_paused<R>(ask: impl FnOnce() -> R) -> R {
    let bar = SPINNER.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match bar {
        Some(bar) => bar.suspend(ask),
        None => ask(),
    }
}

/// Puts `question` to the person on `/dev/tty` (stdout may be piped),
/// the spinner paused, and returns the answer trimmed and lowercased;
/// `None` without a terminal or an answer.
pub fn ask_person(question: &str) -> Option<String> {
    use std::io::{BufRead, Write};
    with_spinner_paused(|| {
        let mut tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").ok()?;
        tty.write_all(question.as_bytes()).ok()?;
        let mut answer = String::new();
        std::io::BufReader::new(&tty).read_line(&mut answer).ok()?;
        Some(answer.trim().to_ascii_lowercase())
    })
}
