//! A tab's requests as the Network domain reports them (`browser
//! requests`, `browser wait --request`), and URL patterns blocked through
//! the Fetch domain (`browser block`): only the blocked patterns are
//! intercepted, and each request paused there is failed as blocked by the
//! client, so a blocked image is never fetched.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::Browser;
use super::watch::KEPT;
use crate::cdp::{CdpError, Outbox};
use crate::error::{BrowserError, Result};

/// One request of a tab.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Request {
    /// Its number in the tab, from 1, in the order requests began.
    pub number: u64,
    /// GET, POST…
    pub method: String,
    /// The address.
    pub url: String,
    /// The HTTP status, once the response came.
    pub status: Option<u16>,
    /// Why it failed (`net::ERR_…`; `blocked` for `browser block`).
    pub failed: Option<String>,
    /// Bytes received over the network, once it finished.
    pub bytes: Option<u64>,
    /// Milliseconds from start to finish, once it finished.
    pub ms: Option<u64>,
    /// It finished (loaded or failed).
    pub done: bool,
    #[serde(skip)]
    started: f64,
}

impl Request {
    /// One line: `GET 200 http://… (1234 bytes, 12 ms)`.
    pub fn line(&self) -> String {
        let status = match (&self.failed, self.status) {
            (Some(why), _) => format!("failed ({why})"),
            (None, Some(s)) => s.to_string(),
            (None, None) => "pending".into(),
        };
        let mut line = format!("{} {status} {}", self.method, self.url);
        if self.done && self.failed.is_none() {
            line.push_str(&format!(" ({} bytes, {} ms)", self.bytes.unwrap_or(0), self.ms.unwrap_or(0)));
        }
        line
    }
}

/// The requests of one tab, oldest dropped past [`KEPT`].
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    items: VecDeque<Request>,
    dropped: usize,
    next: u64,
    /// Request ids still open, and their numbers.
    open: HashMap<String, u64>,
    /// `wait --request` looks at requests numbered above this: those begun
    /// since the last action began, or since the last one waited for.
    pub(crate) mark: u64,
}

impl RequestLog {
    pub(crate) fn all(&self) -> Vec<Request> {
        self.items.iter().cloned().collect()
    }

    /// An action begins: a request waited for after it may be one it started.
    pub(crate) fn mark_action(&mut self) {
        self.mark = self.next;
    }

    pub(crate) fn dropped(&self) -> usize {
        self.dropped
    }

    fn get(&mut self, id: &str) -> Option<&mut Request> {
        let number = *self.open.get(id)?;
        let first = self.items.front()?.number;
        self.items.get_mut(usize::try_from(number.checked_sub(first)?).ok()?)
    }

    fn finish(&mut self, id: &str, at: Option<f64>) -> Option<Request> {
        let request = self.get(id)?;
        request.done = true;
        if let Some(at) = at {
            request.ms = Some(((at - request.started).max(0.0) * 1000.0).round() as u64);
        }
        let done = request.clone();
        self.open.remove(id);
        Some(done)
    }

    /// Records a Network event; returns a line for the errors log when the
    /// request failed (HTTP 400 or more, or a network failure).
    pub(crate) fn note(&mut self, method: &str, p: &Value) -> Option<String> {
        let id = p.get("requestId").and_then(Value::as_str).unwrap_or_default().to_string();
        let at = p.get("timestamp").and_then(Value::as_f64);
        match method {
            "Network.requestWillBeSent" => {
                let url = p.pointer("/request/url").and_then(Value::as_str).unwrap_or_default();
                if url.starts_with("data:") {
                    return None;
                }
                // A redirect reuses the id: the hop before it is done.
                if let Some(status) = p.pointer("/redirectResponse/status").and_then(Value::as_u64)
                    && let Some(hop) = self.get(&id)
                {
                    hop.status = u16::try_from(status).ok();
                    self.finish(&id, at);
                }
                self.next += 1;
                if self.items.len() == KEPT {
                    self.items.pop_front();
                    self.dropped += 1;
                }
                let method = p.pointer("/request/method").and_then(Value::as_str).unwrap_or("GET");
                self.items.push_back(Request {
                    number: self.next,
                    method: method.into(),
                    url: url.into(),
                    status: None,
                    failed: None,
                    bytes: None,
                    ms: None,
                    done: false,
                    started: at.unwrap_or(0.0),
                });
                self.open.insert(id, self.next);
                None
            }
            "Network.responseReceived" => {
                let request = self.get(&id)?;
                let status = p.pointer("/response/status").and_then(Value::as_u64).unwrap_or(0);
                request.status = u16::try_from(status).ok();
                (status >= 400).then(|| {
                    let said = p.pointer("/response/statusText").and_then(Value::as_str).unwrap_or_default();
                    format!("{} {} → {status} {said}", request.method, request.url).trim_end().to_string()
                })
            }
            "Network.loadingFinished" => {
                if let Some(request) = self.get(&id) {
                    request.bytes = p.get("encodedDataLength").and_then(Value::as_f64).map(|b| b as u64);
                }
                self.finish(&id, at);
                None
            }
            "Network.loadingFailed" => {
                let why = p.get("errorText").and_then(Value::as_str).unwrap_or("failed").to_string();
                let blocked = why.contains("ERR_BLOCKED_BY_CLIENT") || p.get("blockedReason").is_some();
                let canceled = p.get("canceled").and_then(Value::as_bool).unwrap_or(false);
                let request = self.get(&id)?;
                request.failed = Some(if blocked { "blocked".into() } else { why.clone() });
                let done = self.finish(&id, at)?;
                // Blocked on purpose, or cancelled by the page (a navigation away): not the page's error.
                (!blocked && !canceled).then(|| format!("{} {} failed: {why}", done.method, done.url))
            }
            _ => None,
        }
    }
}

/// The calls that make a session report its requests and messages, and
/// fail the blocked patterns.
pub(crate) fn enabling(blocked: &[String]) -> Vec<(&'static str, Value)> {
    let mut calls = vec![("Network.enable", json!({})), ("Log.enable", json!({}))];
    if !blocked.is_empty() {
        calls.push(("Fetch.enable", fetch_patterns(blocked)));
    }
    calls
}

/// A frame's session as it attaches: the same domains as its tab, sent
/// without waiting (the reading thread cannot wait for answers).
pub(crate) fn watch_session(outbox: &Outbox, session: &str, blocked: &[String]) {
    for method in ["Runtime.enable", "Page.enable"] {
        outbox.send(Some(session), method, json!({}));
    }
    for (method, params) in enabling(blocked) {
        outbox.send(Some(session), method, params);
    }
    outbox.send(
        Some(session),
        "Target.setAutoAttach",
        json!({"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}),
    );
}

fn fetch_patterns(blocked: &[String]) -> Value {
    json!({"patterns": blocked.iter().map(|p| json!({"urlPattern": p})).collect::<Vec<_>>()})
}

/// A pattern as Fetch takes it: with no `*` or `?`, any URL containing it.
fn glob(pattern: &str) -> String {
    if pattern.contains(['*', '?']) { pattern.to_string() } else { format!("*{pattern}*") }
}

/// A regular expression the agent gave, or what is wrong with it.
fn regex(pattern: &str) -> Result<regex::Regex> {
    regex::Regex::new(pattern).map_err(|e| {
        BrowserError::Usage(format!("{pattern:?} is not a regular expression ({e}); e.g. '/api/' or 'png$'"))
    })
}

/// How long `wait --request` waits for the end of a request already answered.
const ANSWERED_GRACE: Duration = Duration::from_millis(500);

/// How many requests `browser requests` lists; the rest are counted.
pub const SHOWN_REQUESTS: usize = 50;

/// What `browser requests` returns.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Requests {
    /// The latest matching requests, oldest first, at most [`SHOWN_REQUESTS`].
    pub requests: Vec<Request>,
    /// Matching requests before those, not listed.
    pub earlier: usize,
    /// Requests dropped from the tab's log (it keeps the last 1000).
    pub dropped: usize,
}

impl Browser {
    /// `browser requests [--filter RE]`: the tab's requests since it opened.
    pub fn requests(&self, filter: Option<&str>) -> Result<Requests> {
        let filter = filter.map(regex).transpose()?;
        let (all, dropped) = self.tab_requests()?;
        let matching: Vec<Request> =
            all.into_iter().filter(|r| filter.as_ref().is_none_or(|f| f.is_match(&r.url))).collect();
        let earlier = matching.len().saturating_sub(SHOWN_REQUESTS);
        Ok(Requests { requests: matching.into_iter().skip(earlier).collect(), earlier, dropped })
    }

    /// `browser wait --request RE`: waits for a request whose URL matches,
    /// begun since the last action began (or later), to finish, and returns
    /// it. One answered but not seen to finish (its end went to a frame's
    /// session not yet listening) is returned [`ANSWERED_GRACE`] after its answer.
    pub async fn wait_request(&mut self, pattern: &str, limit: Duration) -> Result<Request> {
        let wanted = regex(pattern)?;
        let mut events = self.cdp.subscribe();
        let from = self.request_mark()?;
        let end = Instant::now() + limit;
        let mut answered: Option<Instant> = None;
        loop {
            let (all, _) = self.tab_requests()?;
            let found = all.into_iter().find(|r| r.number > from && wanted.is_match(&r.url));
            if found.as_ref().is_some_and(|r| r.status.is_some()) && answered.is_none() {
                answered = Some(Instant::now());
            }
            // Answered, and its end not seen in time: it is returned as it is.
            let graced = answered.is_some_and(|at| at.elapsed() >= ANSWERED_GRACE || Instant::now() >= end);
            if let Some(request) = found.filter(|r| r.done || graced) {
                let session = self.tab()?.session.clone();
                self.watch.lock().tab(&session).requests.mark = request.number;
                return Ok(request);
            }
            let mut left = end.saturating_duration_since(Instant::now());
            if let Some(at) = answered {
                left = left.min(ANSWERED_GRACE.saturating_sub(at.elapsed()));
            }
            match tokio::time::timeout(left, events.recv()).await {
                Err(_) if answered.is_some() => {}
                Err(_) => {
                    return Err(BrowserError::Timeout {
                        what: format!("waiting for a request like {pattern:?}; the requests so far: browser requests"),
                        ms: limit.as_millis(),
                    });
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return Err(CdpError::Closed.into()),
                Ok(_) => {}
            }
        }
    }

    /// `browser block PATTERN`: requests whose URL matches fail, in every tab.
    pub async fn block(&mut self, pattern: &str) -> Result<Vec<String>> {
        let pattern = glob(pattern);
        let blocked = {
            let mut logs = self.watch.lock();
            if !logs.blocked.contains(&pattern) {
                logs.blocked.push(pattern);
            }
            logs.blocked.clone()
        };
        self.fetch_everywhere(&blocked).await?;
        Ok(blocked)
    }

    /// `browser unblock [PATTERN]`: one pattern, or all, no longer blocked.
    pub async fn unblock(&mut self, pattern: Option<&str>) -> Result<Vec<String>> {
        let blocked = {
            let mut logs = self.watch.lock();
            match pattern {
                Some(p) => {
                    let before = logs.blocked.len();
                    logs.blocked.retain(|b| *b != glob(p) && b != p);
                    if logs.blocked.len() == before {
                        let now = if logs.blocked.is_empty() { "none".into() } else { logs.blocked.join(", ") };
                        return Err(BrowserError::Usage(format!(
                            "{p:?} is not blocked; blocked now: {now} (browser unblock with no pattern lifts all)"
                        )));
                    }
                }
                None => logs.blocked.clear(),
            }
            logs.blocked.clone()
        };
        self.fetch_everywhere(&blocked).await?;
        Ok(blocked)
    }

    /// Sets the Fetch patterns on every tab and frame session.
    async fn fetch_everywhere(&self, blocked: &[String]) -> Result<()> {
        let mut sessions: Vec<String> = self.tabs.iter().map(|t| t.session.clone()).collect();
        sessions.extend(self.watch.lock().frames.keys().cloned());
        for session in sessions {
            let answer = if blocked.is_empty() {
                self.call(Some(&session), "Fetch.disable", json!({})).await
            } else {
                self.call(Some(&session), "Fetch.enable", fetch_patterns(blocked)).await
            };
            // A frame (or worker) gone meanwhile, or one without Fetch, is no failure.
            if let Err(e) = answer {
                tracing::debug!(%session, error = %e, "browser: blocking not set on a session");
            }
        }
        Ok(())
    }

    /// The number of the last request begun before the current action, or
    /// before the last `wait --request` returned.
    fn request_mark(&self) -> Result<u64> {
        let session = self.tab()?.session.clone();
        Ok(self.watch.lock().tab(&session).requests.mark)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_followed_through_redirect_response_and_finish() {
        let mut log = RequestLog::default();
        let sent = |id: &str, url: &str, at: f64| json!({"requestId": id, "timestamp": at, "request": {"url": url, "method": "GET"}});
        assert_eq!(log.note("Network.requestWillBeSent", &sent("1", "http://h/a", 1.0)), None);
        let mut hop = sent("1", "http://h/b", 1.1);
        hop["redirectResponse"] = json!({"status": 302});
        log.note("Network.requestWillBeSent", &hop);
        let missing = log.note(
            "Network.responseReceived",
            &json!({"requestId": "1", "response": {"status": 404, "statusText": "Not Found"}}),
        );
        assert_eq!(missing.as_deref(), Some("GET http://h/b → 404 Not Found"));
        log.note("Network.loadingFinished", &json!({"requestId": "1", "timestamp": 1.3, "encodedDataLength": 99}));
        let all = log.all();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].status, all[0].done), (Some(302), true));
        assert_eq!(all[1].line(), "GET 404 http://h/b (99 bytes, 200 ms)");
        log.note("Network.requestWillBeSent", &sent("2", "http://h/img.png", 2.0));
        let blocked = log.note(
            "Network.loadingFailed",
            &json!({"requestId": "2", "errorText": "net::ERR_BLOCKED_BY_CLIENT", "timestamp": 2.0}),
        );
        assert_eq!(blocked, None, "a blocked request is not the page's error");
        log.note("Network.requestWillBeSent", &sent("3", "http://h/gone", 3.0));
        let refused =
            log.note("Network.loadingFailed", &json!({"requestId": "3", "errorText": "net::ERR_CONNECTION_REFUSED"}));
        assert_eq!(refused.as_deref(), Some("GET http://h/gone failed: net::ERR_CONNECTION_REFUSED"));
        assert_eq!(log.all()[2].line(), "GET failed (blocked) http://h/img.png");
    }

    #[test]
    fn patterns_without_wildcards_match_anywhere() {
        assert_eq!(glob("pixel.png"), "*pixel.png*");
        assert_eq!(glob("*.png"), "*.png");
        assert!(regex("(").unwrap_err().to_string().contains("not a regular expression"));
    }
}
