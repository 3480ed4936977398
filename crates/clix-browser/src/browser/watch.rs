//! What a page does between and during commands, collected as it happens:
//! console messages, uncaught exceptions, failed requests, dialogs and
//! every request. The CDP reading thread hands each event to [`Watch`]
//! before broadcasting it, so nothing is missed between two commands and
//! an action's result already holds what its page did. Dialogs are
//! answered there at once (a pre-armed answer, else `[browser] dialog`), so
//! an `alert()` never blocks an action. Each kind is kept per tab, bounded:
//! the oldest entries go first, and the reader is told how many went.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};

use super::network::{Request, RequestLog};
use super::{Browser, Change};
use crate::cdp::{Event, Outbox};
use crate::error::Result;

/// Entries kept per tab of each kind; older ones are dropped and counted.
pub(crate) const KEPT: usize = 1000;
/// The longest text kept of one message, error or dialog: a page logging
/// megabytes costs clix at most `KEPT` times this per kind.
const TEXT_CHARS: usize = 4000;

/// A console message (`console.log`, `console.error`…, or the browser's own).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConsoleMessage {
    /// `error`, `warn` or `info` (log, info, debug and the rest).
    pub level: String,
    /// The message, its arguments joined by spaces.
    pub text: String,
}

/// An error of the page: an uncaught exception or a failed request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PageError {
    /// `exception` or `request`.
    pub kind: String,
    /// What happened, on one line.
    pub text: String,
}

/// A dialog the page opened and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// What it said.
    pub message: String,
    /// Accepted (true) or dismissed.
    pub accepted: bool,
    /// The text given to a prompt that was accepted.
    pub text: Option<String>,
    /// Whether a `browser dialog` armed this answer (else it was the default).
    pub armed: bool,
}

/// Entries since the last read, and how many were dropped to stay bounded.
#[derive(Debug)]
pub(crate) struct Bounded<T> {
    pub(crate) items: VecDeque<T>,
    pub(crate) dropped: usize,
}

impl<T> Default for Bounded<T> {
    fn default() -> Self {
        Bounded { items: VecDeque::new(), dropped: 0 }
    }
}

impl<T> Bounded<T> {
    pub(crate) fn push(&mut self, item: T) {
        if self.items.len() == KEPT {
            self.items.pop_front();
            self.dropped += 1;
        }
        self.items.push_back(item);
    }
}

/// An answer for the next dialog, given by `browser dialog`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) accept: bool,
    pub(crate) text: Option<String>,
}

/// What one tab did.
#[derive(Debug, Default)]
pub(crate) struct TabLog {
    pub(crate) console: Bounded<ConsoleMessage>,
    pub(crate) errors: Bounded<PageError>,
    /// Errors no action's result has mentioned yet.
    pub(crate) unreported: usize,
    /// Dialogs no action's result has shown yet.
    pub(crate) dialogs: Bounded<Dialog>,
    pub(crate) armed: Option<Answer>,
    pub(crate) requests: RequestLog,
}

/// An out-of-process frame (a cross-site `<iframe>`, a target of its own).
#[derive(Debug, Clone)]
pub(crate) struct OopFrame {
    /// Its frame id, which is also its target id.
    pub(crate) frame: String,
    /// The session of the frame it is in (the tab's, or another frame's).
    pub(crate) parent: String,
}

/// Everything collected, shared by the reading thread and the browser.
#[derive(Debug, Default)]
pub(crate) struct Logs {
    pub(crate) tabs: HashMap<String, TabLog>,
    /// Sessions attached to a tab's (out-of-process frames, workers), and
    /// the tab session each belongs to.
    pub(crate) frames: HashMap<String, String>,
    /// Out-of-process frames: each one's session, with its frame id and
    /// the session of its parent frame.
    pub(crate) oop_frames: HashMap<String, OopFrame>,
    /// URL patterns whose requests fail (`browser block`).
    pub(crate) blocked: Vec<String>,
    /// The answer when nothing is armed: accept (true) or dismiss.
    pub(crate) accept_by_default: bool,
}

impl Logs {
    /// The tab a session's events belong to (a frame's go to its tab).
    fn tab_of(&self, session: &str) -> String {
        self.frames.get(session).cloned().unwrap_or_else(|| session.to_string())
    }

    pub(crate) fn tab(&mut self, session: &str) -> &mut TabLog {
        let tab = self.tab_of(session);
        self.tabs.entry(tab).or_default()
    }
}

/// The collected events of one browser.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watch {
    logs: Arc<Mutex<Logs>>,
}

impl Watch {
    /// Starts collecting `cdp`'s events; dialogs get `dialog` ("accept" or "dismiss") unless armed.
    pub(crate) fn start(cdp: &crate::cdp::Cdp, dialog: &str) -> Watch {
        let watch = Watch::default();
        watch.lock().accept_by_default = dialog == "accept";
        let logs = Arc::clone(&watch.logs);
        cdp.observe(Box::new(move |event, outbox| {
            let mut logs = logs.lock().unwrap_or_else(|p| p.into_inner());
            note(&mut logs, event, outbox);
        }));
        watch
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Logs> {
        self.logs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Records one event; answers a dialog and fails a blocked request at once.
fn note(logs: &mut Logs, e: &Event, outbox: &Outbox) {
    let Some(session) = e.session.as_deref() else {
        // A tab gone (closed by us or its page): what it did goes with it.
        if e.method == "Target.detachedFromTarget"
            && let Some(tab) = e.params.get("sessionId").and_then(Value::as_str)
        {
            logs.tabs.remove(tab);
            logs.frames.retain(|_, of| of != tab);
            let frames = &logs.frames;
            logs.oop_frames.retain(|child, _| frames.contains_key(child));
        }
        return;
    };
    let p = &e.params;
    let text = |path: &str| p.pointer(path).and_then(Value::as_str).unwrap_or_default().to_string();
    match e.method.as_str() {
        "Runtime.consoleAPICalled" => {
            let level = match p.get("type").and_then(Value::as_str).unwrap_or_default() {
                "error" | "assert" => "error",
                "warning" => "warn",
                _ => "info",
            };
            let args = p.get("args").and_then(Value::as_array).cloned().unwrap_or_default();
            let text = args.iter().map(remote_text).collect::<Vec<_>>().join(" ");
            logs.tab(session).console.push(ConsoleMessage { level: level.into(), text: kept(text) });
        }
        // The browser's own messages; failed requests are reported as errors instead.
        "Log.entryAdded" if text("/entry/source") != "network" => {
            let level = match text("/entry/level").as_str() {
                "error" => "error",
                "warning" => "warn",
                _ => "info",
            };
            let text = kept(text("/entry/text"));
            logs.tab(session).console.push(ConsoleMessage { level: level.into(), text });
        }
        "Runtime.exceptionThrown" => {
            let details = p.get("exceptionDetails").cloned().unwrap_or(Value::Null);
            let described = details.pointer("/exception/description").and_then(Value::as_str);
            let first = described.and_then(|d| d.lines().next()).unwrap_or_default();
            let said = details.get("text").and_then(Value::as_str).unwrap_or("Uncaught");
            let mut line = if first.is_empty() { said.to_string() } else { format!("{said} {first}") };
            if let Some(url) = details.get("url").and_then(Value::as_str).filter(|u| !u.is_empty()) {
                let at = details.get("lineNumber").and_then(Value::as_i64).unwrap_or(0) + 1;
                line.push_str(&format!(" ({url}:{at})"));
            }
            error(logs, session, "exception", line);
        }
        "Page.javascriptDialogOpening" => {
            let tab = logs.tab(session);
            let armed = tab.armed.take();
            let was_armed = armed.is_some();
            let answer = armed.unwrap_or(Answer { accept: logs.accept_by_default, text: None });
            let default_text = text("/defaultPrompt");
            let kind = text("/type");
            let given = (answer.accept && kind == "prompt").then(|| answer.text.clone().unwrap_or(default_text));
            let mut params = json!({"accept": answer.accept});
            if let Some(t) = &given {
                params["promptText"] = json!(t);
            }
            outbox.send(Some(session), "Page.handleJavaScriptDialog", params);
            let message = kept(text("/message"));
            let dialog = Dialog { kind, message, accepted: answer.accept, text: given, armed: was_armed };
            logs.tab(session).dialogs.push(dialog);
        }
        "Fetch.requestPaused" => {
            // Only blocked patterns are intercepted: every paused request fails.
            let id = text("/requestId");
            outbox.send(Some(session), "Fetch.failRequest", json!({"requestId": id, "errorReason": "BlockedByClient"}));
        }
        "Target.attachedToTarget" => {
            let child = text("/sessionId");
            let root = logs.tab_of(session);
            logs.frames.insert(child.clone(), root);
            if text("/targetInfo/type") == "iframe" {
                let frame = OopFrame { frame: text("/targetInfo/targetId"), parent: session.to_string() };
                logs.oop_frames.insert(child.clone(), frame);
            }
            let blocked = logs.blocked.clone();
            super::network::watch_session(outbox, &child, &blocked);
        }
        "Target.detachedFromTarget" => {
            let child = text("/sessionId");
            logs.frames.remove(&child);
            logs.oop_frames.remove(&child);
        }
        method if method.starts_with("Network.") => {
            if let Some(failed) = logs.tab(session).requests.note(method, p) {
                error(logs, session, "request", failed);
            }
        }
        _ => {}
    }
}

fn error(logs: &mut Logs, session: &str, kind: &str, text: String) {
    let tab = logs.tab(session);
    tab.errors.push(PageError { kind: kind.into(), text: kept(text) });
    tab.unreported += 1;
}

/// `text`, cut to [`TEXT_CHARS`] characters (marked with `…`).
fn kept(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(TEXT_CHARS) {
        text.truncate(at);
        text.push('…');
    }
    text
}

/// A console argument as text: a string as it is, else its value or description.
fn remote_text(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => arg
            .get("unserializableValue")
            .or_else(|| arg.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(arg.get("type").and_then(Value::as_str).unwrap_or("undefined"))
            .to_string(),
    }
}

/// What a console or errors call returns: the entries since the last call
/// of its kind, and how many older ones were dropped.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Since<T> {
    /// The entries, oldest first.
    pub entries: Vec<T>,
    /// Entries dropped before they were read (the log keeps the last 1000).
    pub dropped: usize,
    /// Entries left for a later call (other levels than asked for).
    pub left: usize,
}

/// Which console messages `browser console --level` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// Everything.
    All,
}

impl Level {
    fn shows(self, level: &str) -> bool {
        match self {
            Level::Error => level == "error",
            Level::Warn => level == "error" || level == "warn",
            Level::All => true,
        }
    }
}

impl Browser {
    fn tab_session(&self) -> Result<String> {
        Ok(self.tab()?.session.clone())
    }

    /// Starts collecting a new tab's network events, blocking, and its
    /// out-of-process frames (each attached, flat, as its own session).
    pub(crate) async fn watch_tab(&self, session: &str) -> Result<()> {
        let blocked = self.watch.lock().blocked.clone();
        for (method, params) in super::network::enabling(&blocked) {
            self.call(Some(session), method, params).await?;
        }
        self.call(
            Some(session),
            "Target.setAutoAttach",
            json!({"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}),
        )
        .await?;
        Ok(())
    }

    /// `change` with the errors and dialogs its page had that no result told yet.
    pub(crate) fn noticed(&self, mut change: Change) -> Change {
        let Ok(session) = self.tab_session() else { return change };
        let mut logs = self.watch.lock();
        let tab = logs.tab(&session);
        change.errors = std::mem::take(&mut tab.unreported);
        change.dialogs = tab.dialogs.items.drain(..).collect();
        tab.dialogs.dropped = 0;
        change
    }

    /// Whether `e` opened a beforeunload dialog of the current tab that was
    /// dismissed, so the navigation it held will not happen.
    pub(crate) fn stays(&self, e: &Event) -> bool {
        let asks = e.method == "Page.javascriptDialogOpening"
            && e.params.get("type").and_then(Value::as_str) == Some("beforeunload");
        let Ok(session) = self.tab_session() else { return false };
        // Answered before the event was broadcast: the last dialog is this one.
        asks && self.watch.lock().tab(&session).dialogs.items.back().is_some_and(|d| !d.accepted)
    }

    /// `browser console [--level L] [--clear]`: the messages at `level`
    /// since the last call; `clear` drops them unread.
    pub fn console(&mut self, level: Level, clear: bool) -> Result<Since<ConsoleMessage>> {
        let session = self.tab_session()?;
        let mut logs = self.watch.lock();
        let console = &mut logs.tab(&session).console;
        let (shown, left): (VecDeque<_>, VecDeque<_>) =
            console.items.drain(..).partition(|m: &ConsoleMessage| level.shows(&m.level));
        console.items = left;
        let dropped = std::mem::take(&mut console.dropped);
        let left = console.items.len();
        let entries = if clear { Vec::new() } else { shown.into() };
        Ok(Since { entries, dropped, left })
    }

    /// `browser errors`: uncaught exceptions and failed requests since the last call.
    pub fn errors(&mut self) -> Result<Since<PageError>> {
        let session = self.tab_session()?;
        let mut logs = self.watch.lock();
        let tab = logs.tab(&session);
        tab.unreported = 0;
        let entries = tab.errors.items.drain(..).collect();
        Ok(Since { entries, dropped: std::mem::take(&mut tab.errors.dropped), left: 0 })
    }

    /// `browser dialog accept [TEXT] | dismiss`: the answer for this tab's
    /// next dialog (a dialog is answered as soon as it opens, so one is
    /// never left open to answer later).
    pub fn arm_dialog(&mut self, accept: bool, text: Option<String>) -> Result<()> {
        let session = self.tab_session()?;
        self.watch.lock().tab(&session).armed = Some(Answer { accept, text });
        Ok(())
    }

    /// An action begins on the current tab (see `wait --request`).
    pub(crate) fn mark_action(&self) {
        if let Ok(session) = self.tab_session() {
            self.watch.lock().tab(&session).requests.mark_action();
        }
    }

    /// The requests of the current tab since it opened (each with its
    /// sequence number), and how many older ones were dropped.
    pub(crate) fn tab_requests(&self) -> Result<(Vec<Request>, usize)> {
        let session = self.tab_session()?;
        let mut logs = self.watch.lock();
        let log = &logs.tab(&session).requests;
        Ok((log.all(), log.dropped()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_drops_the_oldest_and_counts_them() {
        let mut log = Bounded::default();
        for i in 0..KEPT + 5 {
            log.push(i);
        }
        assert_eq!(log.items.len(), KEPT);
        assert_eq!(log.dropped, 5);
        assert_eq!(log.items.front(), Some(&5));
    }

    #[test]
    fn long_texts_are_cut_when_kept() {
        let kept_text = kept("é".repeat(TEXT_CHARS + 10));
        assert_eq!(kept_text.chars().count(), TEXT_CHARS + 1);
        assert!(kept_text.ends_with('…'));
        assert_eq!(kept("short".into()), "short");
    }

    #[test]
    fn console_arguments_read_as_text() {
        assert_eq!(remote_text(&json!({"type": "string", "value": "hi"})), "hi");
        assert_eq!(remote_text(&json!({"type": "number", "value": 4})), "4");
        assert_eq!(remote_text(&json!({"type": "number", "unserializableValue": "NaN"})), "NaN");
        assert_eq!(remote_text(&json!({"type": "object", "description": "Array(2)"})), "Array(2)");
        assert_eq!(remote_text(&json!({"type": "undefined"})), "undefined");
    }
}
