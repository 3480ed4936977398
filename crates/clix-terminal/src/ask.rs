//! Questions put to the person on `/dev/tty` while a spinner may be
//! drawing on stderr: the spinner steps aside until the answer is in.
//! The policy's `ask` and `review`'s question are put this way.

use crate::text::{escaped, visible};

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

/// The person at this terminal answering the policy's `ask`, on
/// `/dev/tty` (stdout may be piped).
pub struct TerminalApprover;

impl clix_policy::Approver for TerminalApprover {
    fn approve(&self, request: &clix_policy::Approval) -> clix_policy::Answer {
        match ask_person(&prompt(request)).as_deref() {
            Some("y" | "yes") => clix_policy::Answer::Once,
            Some("a" | "always") => clix_policy::Answer::Always,
            _ => clix_policy::Answer::No,
        }
    }
}

/// The question put to the person. Every control and text-direction
/// character is shown escaped: an argument holding `\r\x1b[2K\x1b[1A` would
/// otherwise rewrite the terminal and hide the real command and its reason.
fn prompt(request: &clix_policy::Approval) -> String {
    format!(
        "\nclix policy asks before running:\n  {}\n  why: {}\n  ({})\nrun it? [y] once, [a] always this session, [n] no: ",
        escaped(&request.command),
        escaped(&request.why),
        escaped(&request.place)
    )
}

/// The person at this terminal, asked on `/dev/tty` whether a call's
/// changes stay (`--mode review`), with the spinner out of the way.
pub struct TerminalReviewer;

impl clix_checkpoint::Reviewer for TerminalReviewer {
    fn keep(&self, line: &str, set: &clix_checkpoint::ChangeSet, diff: &str) -> bool {
        let question = format!(
            "\nclix review: `{}` {}\n{}\nkeep these changes? [y] yes, [n] no (put the workspace back): ",
            escaped(line),
            set.summary().unwrap_or_default(),
            visible(diff.trim_end())
        );
        matches!(ask_person(&question).as_deref(), Some("y" | "yes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28, finding 8: a line could erase itself from the question.
    #[test]
    fn the_question_shows_control_characters_escaped() {
        let request = clix_policy::Approval {
            command: "rm -rf /srv/data \r\u{1b}[2K\u{1b}[1Aecho harmless\u{1b}[8m".into(),
            why: "deletes \u{202e}txt.exe".into(),
            place: "rule `x` in defaults".into(),
        };
        let shown = prompt(&request);
        assert!(shown.contains("rm -rf /srv/data \\r\\u{1b}[2K\\u{1b}[1Aecho harmless\\u{1b}[8m"), "{shown}");
        assert!(shown.contains("deletes \\u{202e}txt.exe"), "{shown}");
        let raw: Vec<char> = shown.chars().filter(|c| c.is_control() && *c != '\n').collect();
        assert!(raw.is_empty(), "raw control characters left: {raw:?}");
    }
}
