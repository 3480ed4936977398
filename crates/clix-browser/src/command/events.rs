//! The `browser` subcommands about what a page did besides showing itself:
//! its console, its errors, its dialogs, its requests and what is blocked.
//! `browser.rs` parses the words and calls these; the browser collects the
//! events (`clix-browser`'s watch). What a page wrote (console text, error
//! messages, dialog text) is printed between untrusted-content markers.

use std::time::Duration;

use crate::{Browser, BrowserError, Change, Level, Property, Since, mark_untrusted};
use serde_json::{Value, json};

use clix_command::flags::common::JSON;
use clix_command::flags::{Arity, Item, Operand, Opt, Parsed, Syntax, Takes};

const ONLY_JSON: &[Item] = &[Item::Shown(JSON)];

pub(super) const CONSOLE: Syntax = Syntax::plain(
    "browser console",
    &[],
    &[
        Item::Shown(Opt { short: None, long: "--level", takes: Takes::Text("error|warn|all") }),
        Item::Shown(Opt { short: None, long: "--clear", takes: Takes::Nothing }),
        Item::Shown(JSON),
    ],
);
pub(super) const ERRORS: Syntax = Syntax::plain("browser errors", &[], ONLY_JSON);
pub(super) const DIALOG: Syntax = Syntax::plain(
    "browser dialog",
    &[Operand { shown: "accept|dismiss", arity: Arity::One }, Operand { shown: "[text]", arity: Arity::Rest }],
    ONLY_JSON,
);
pub(super) const REQUESTS: Syntax = Syntax::plain(
    "browser requests",
    &[],
    &[Item::Shown(Opt { short: None, long: "--filter", takes: Takes::Text("RE") }), Item::Shown(JSON)],
);
pub(super) const BLOCK: Syntax =
    Syntax::plain("browser block", &[Operand { shown: "<pattern>", arity: Arity::One }], ONLY_JSON);
pub(super) const UNBLOCK: Syntax =
    Syntax::plain("browser unblock", &[Operand { shown: "[pattern]", arity: Arity::Optional }], ONLY_JSON);

pub(super) const FRAME: Syntax = Syntax::plain("browser frame", &[], ONLY_JSON);

/// The lines `browser --help` shows for these subcommands.
pub(super) const SUMMARIES: [(&Syntax, &str); 7] = [
    (&CONSOLE, "the page's console messages since the last look (--clear drops them unread)"),
    (&ERRORS, "uncaught exceptions and failed requests (HTTP ≥ 400, network errors) since the last look"),
    (
        &DIALOG,
        "answer the next alert/confirm/prompt/beforeunload: accept (a prompt gets TEXT) or dismiss; else [browser] dialog",
    ),
    (&REQUESTS, "this tab's requests: method, status, URL, bytes, time; --filter RE on the URL"),
    (&BLOCK, "fail requests whose URL matches (a glob with *, or any URL containing it), in every tab"),
    (&UNBLOCK, "stop blocking a pattern (all of them with none)"),
    (&FRAME, "list the page's frames (iframes); snapshot shows each under its iframe line, refs reach into them"),
];

/// One of these subcommands' results: the text, and the JSON for `--json`.
pub(super) struct Shown {
    pub(super) text: String,
    pub(super) json: Value,
}

/// Runs `sub` if it is one of these; `None` for the other subcommands.
pub(super) async fn act(browser: &mut Browser, sub: &str, parsed: &Parsed) -> Option<Result<Shown, BrowserError>> {
    Some(match sub {
        "console" => console(browser, parsed).await,
        "errors" => errors(browser).await,
        "dialog" => dialog(browser, parsed),
        "requests" => requests(browser, parsed),
        "block" => block(browser, parsed, true).await,
        "unblock" => block(browser, parsed, false).await,
        "frame" => frames(browser).await,
        _ => return None,
    })
}

async fn console(browser: &mut Browser, parsed: &Parsed) -> Result<Shown, BrowserError> {
    let level = match parsed.text("--level").unwrap_or("all") {
        "error" | "errors" => Level::Error,
        "warn" | "warning" | "warnings" => Level::Warn,
        "all" => Level::All,
        other => {
            return Err(BrowserError::Usage(format!("--level {other:?}: use error, warn (and errors) or all")));
        }
    };
    let clear = parsed.on("--clear");
    let since = browser.console(level, clear)?;
    let mut text = if clear {
        "console cleared\n".to_string()
    } else if since.entries.is_empty() {
        "no console messages since the last look\n".to_string()
    } else {
        let lines: String = since.entries.iter().map(|m| format!("[{}] {}\n", m.level, one_line(&m.text))).collect();
        let url = browser.get(Property::Url, None).await?;
        format!(
            "{} since the last look:\n{}",
            count(since.entries.len(), "console message"),
            mark_untrusted(&url, &lines)
        )
    };
    if since.left > 0 {
        text.push_str(&format!("({} at other levels kept for: browser console --level all)\n", since.left));
    }
    dropped(&mut text, &since);
    Ok(Shown { json: json!(since), text })
}

async fn errors(browser: &mut Browser) -> Result<Shown, BrowserError> {
    let since = browser.errors()?;
    let mut text = if since.entries.is_empty() {
        "no errors on the page since the last look\n".to_string()
    } else {
        let lines: String = since.entries.iter().map(|e| format!("[{}] {}\n", e.kind, one_line(&e.text))).collect();
        let url = browser.get(Property::Url, None).await?;
        format!("{} since the last look:\n{}", count(since.entries.len(), "error"), mark_untrusted(&url, &lines))
    };
    dropped(&mut text, &since);
    Ok(Shown { json: json!(since), text })
}

fn dialog(browser: &mut Browser, parsed: &Parsed) -> Result<Shown, BrowserError> {
    let words = &parsed.operands;
    let given = words.get(1..).filter(|w| !w.is_empty()).map(|w| w.join(" "));
    let accept = match words.first().map(String::as_str) {
        Some("accept") => true,
        Some("dismiss") if given.is_none() => false,
        Some("dismiss") => return Err(BrowserError::Usage("dismiss takes no text: browser dialog dismiss".into())),
        other => {
            return Err(BrowserError::Usage(format!(
                "{:?}: browser dialog accept [TEXT] or browser dialog dismiss",
                other.unwrap_or_default()
            )));
        }
    };
    browser.arm_dialog(accept, given.clone())?;
    let answer = match (&given, accept) {
        (Some(t), _) => format!("accepted with {t:?}"),
        (None, true) => "accepted".into(),
        (None, false) => "dismissed".into(),
    };
    let text = format!(
        "the next dialog on this tab will be {answer} (a dialog is answered as it opens); now do what opens it\n"
    );
    Ok(Shown { text, json: json!({"accept": accept, "text": given}) })
}

fn requests(browser: &mut Browser, parsed: &Parsed) -> Result<Shown, BrowserError> {
    let listed = browser.requests(parsed.text("--filter"))?;
    let mut text = String::new();
    if listed.earlier > 0 {
        text.push_str(&format!(
            "… {} earlier requests not shown (the last {} are); narrow with --filter RE\n",
            listed.earlier,
            listed.requests.len()
        ));
    }
    for request in &listed.requests {
        text.push_str(&format!("{}\n", request.line()));
    }
    if listed.requests.is_empty() {
        let what =
            if parsed.has("--filter") { "no request of this tab matches" } else { "no requests in this tab yet" };
        text.push_str(&format!("{what}\n"));
    }
    if listed.dropped > 0 {
        text.push_str(&format!(
            "({} older requests were dropped: the log keeps the last 1000 per tab)\n",
            listed.dropped
        ));
    }
    Ok(Shown { json: json!(listed), text })
}

async fn block(browser: &mut Browser, parsed: &Parsed, on: bool) -> Result<Shown, BrowserError> {
    let pattern = parsed.operands.first().map(String::as_str);
    let blocked = match (on, pattern) {
        (true, Some(p)) => browser.block(p).await?,
        (true, None) => return Err(BrowserError::Usage("block what? browser block PATTERN".into())),
        (false, p) => browser.unblock(p).await?,
    };
    let text = if blocked.is_empty() {
        "nothing is blocked now\n".to_string()
    } else {
        format!("blocked in every tab (requests fail as blocked by the client): {}\n", blocked.join(", "))
    };
    Ok(Shown { text, json: json!({"blocked": blocked}) })
}

async fn frames(browser: &mut Browser) -> Result<Shown, BrowserError> {
    let frames = browser.frames().await?;
    let mut text = String::new();
    for f in &frames {
        let place = match f.parent {
            None => "the page".to_string(),
            Some(p) if f.separate => format!("in {p}, a process of its own"),
            Some(p) => format!("in {p}"),
        };
        text.push_str(&format!("{} {:?} {} ({place})\n", f.number, one_line(&f.title), f.url));
    }
    if frames.len() == 1 {
        text.push_str("no frames on this page\n");
    }
    Ok(Shown { json: json!(frames), text })
}

/// `browser wait --request RE`.
pub(super) async fn wait_request(browser: &mut Browser, pattern: &str, limit: Duration) -> Result<Shown, BrowserError> {
    let request = browser.wait_request(pattern, limit).await?;
    Ok(Shown { text: format!("{}\n", request.line()), json: json!(request) })
}

/// The lines an action's result adds about errors and dialogs.
pub(super) fn events(change: &Change) -> String {
    let mut text = String::new();
    for d in &change.dialogs {
        let answer = match (&d.text, d.accepted) {
            (Some(t), _) => format!("accepted with {t:?}"),
            (None, true) => "accepted".into(),
            (None, false) => "dismissed".into(),
        };
        // The page's words, quoted with escapes so they stay one line of the result.
        let how = if d.armed { "as armed" } else { "by the [browser] dialog default; answer the next: browser dialog" };
        text.push_str(&format!("a {} dialog said {:?}: {answer} ({how})\n", d.kind, shortened(&d.message)));
    }
    if change.errors > 0 {
        let errors =
            if change.errors == 1 { "1 new error".to_string() } else { format!("{} new errors", change.errors) };
        text.push_str(&format!("{errors} on the page: browser errors\n"));
    }
    text
}

fn count(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// A message on one line, so it cannot pose as a line of ours.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A dialog's message as an action's result quotes it: one line, at most
/// [`DIALOG_CHARS`] characters (`--json` has it whole).
fn shortened(text: &str) -> String {
    let line = one_line(text);
    match line.char_indices().nth(DIALOG_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The longest dialog message an action's result quotes.
const DIALOG_CHARS: usize = 300;

fn dropped<T>(text: &mut String, since: &Since<T>) {
    if since.dropped > 0 {
        text.push_str(&format!(
            "({} older entries were dropped before this look: the log keeps the last 1000 per tab)\n",
            since.dropped
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_dialog_message_is_cut_to_one_short_line() {
        let long = format!("first\nsecond {}", "x".repeat(1000));
        let short = shortened(&long);
        assert!(short.starts_with("first second x") && short.ends_with('…'), "{short}");
        assert_eq!(short.chars().count(), DIALOG_CHARS + 1);
        assert_eq!(shortened("Delete it?"), "Delete it?");
    }
}
