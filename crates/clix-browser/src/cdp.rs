//! A small Chrome DevTools Protocol client over `--remote-debugging-pipe`:
//! JSON messages separated by NUL bytes, Chromium reading fd 3 and writing
//! fd 4. No TCP port exists, so no other local process can take the
//! browser over, and it works the same inside the sandbox.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot};

/// Why a protocol call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CdpError {
    /// The browser answered with an error (a bad node id, a closed target).
    #[error("{0}")]
    Protocol(String),
    /// The browser is gone (crashed, killed, closed).
    #[error("the browser is no longer running")]
    Closed,
    /// No answer in time.
    #[error("the browser did not answer {0} within {1} ms")]
    Timeout(String, u128),
}

/// An event the browser sent, with the session (tab) it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) session: Option<String>,
    pub(crate) method: String,
    pub(crate) params: Value,
}

type Pending = Arc<Mutex<Option<HashMap<u64, oneshot::Sender<Result<Value, CdpError>>>>>>;

/// One connection to one browser process.
pub(crate) struct Cdp {
    outgoing: std::sync::mpsc::Sender<Vec<u8>>,
    pending: Pending,
    events: broadcast::Sender<Event>,
    next_id: AtomicU64,
}

impl Cdp {
    /// Talks over `to_browser` (its fd 3) and `from_browser` (its fd 4).
    /// Two threads carry the bytes; both end when the browser closes its pipe.
    pub(crate) fn new(to_browser: OwnedFd, from_browser: OwnedFd) -> Self {
        let pending: Pending = Arc::new(Mutex::new(Some(HashMap::new())));
        let (events, _) = broadcast::channel(4096);
        let (outgoing, queue) = std::sync::mpsc::channel::<Vec<u8>>();
        let mut writer = std::fs::File::from(to_browser);
        std::thread::spawn(move || {
            for message in queue {
                if writer.write_all(&message).is_err() {
                    return;
                }
            }
        });
        let reader = std::fs::File::from(from_browser);
        let (pending_r, events_r) = (Arc::clone(&pending), events.clone());
        std::thread::spawn(move || read_messages(reader, &pending_r, &events_r));
        Cdp { outgoing, pending, events, next_id: AtomicU64::new(1) }
    }

    /// Events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Calls `method` on the browser (`session` `None`) or a tab's session.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            Some(map) => map.insert(id, tx),
            None => return Err(CdpError::Closed),
        };
        let mut bytes = serde_json::to_vec(&message).map_err(|e| CdpError::Protocol(e.to_string()))?;
        bytes.push(0);
        if self.outgoing.send(bytes).is_err() {
            return Err(CdpError::Closed);
        }
        let answer = tokio::time::timeout(limit, rx).await;
        if answer.is_err()
            && let Some(map) = self.pending.lock().unwrap_or_else(|p| p.into_inner()).as_mut()
        {
            map.remove(&id);
        }
        match answer {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => Err(CdpError::Timeout(method.to_string(), limit.as_millis())),
        }
    }
}

/// Reads NUL-separated messages until the pipe ends, answering calls and
/// broadcasting events; then fails every call still waiting.
fn read_messages(mut reader: std::fs::File, pending: &Pending, events: &broadcast::Sender<Event>) {
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buffer.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(end) = buffer[start..].iter().position(|&b| b == 0) {
            dispatch(&buffer[start..start + end], pending, events);
            start += end + 1;
        }
        buffer.drain(..start);
    }
    // Dropping the senders wakes every waiting call with `Closed`.
    pending.lock().unwrap_or_else(|p| p.into_inner()).take();
}

fn dispatch(bytes: &[u8], pending: &Pending, events: &broadcast::Sender<Event>) {
    let Ok(mut message) = serde_json::from_slice::<Value>(bytes) else {
        tracing::debug!(bytes = bytes.len(), "browser: a message that is not JSON, ignored");
        return;
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let waiter = pending.lock().unwrap_or_else(|p| p.into_inner()).as_mut().and_then(|m| m.remove(&id));
        let Some(waiter) = waiter else { return };
        let result = match message.get_mut("error") {
            Some(error) => {
                let text = error.get("message").and_then(Value::as_str).unwrap_or("unknown error");
                let data = error.get("data").and_then(Value::as_str).map(|d| format!(" ({d})")).unwrap_or_default();
                Err(CdpError::Protocol(format!("{text}{data}")))
            }
            None => Ok(message.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
        };
        let _ = waiter.send(result);
        return;
    }
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let event = Event {
            session: message.get("sessionId").and_then(Value::as_str).map(String::from),
            method: method.to_string(),
            params: message.get_mut("params").map(Value::take).unwrap_or(Value::Null),
        };
        // Nobody listening is fine: events matter only while an action waits.
        let _ = events.send(event);
    }
}
