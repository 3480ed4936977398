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

/// Sees every event on the reading thread before it is broadcast, so what
/// it records is there before the answer to any later call; it may send
/// calls whose answers nobody waits for (a dialog answered at once).
pub(crate) type Observer = Box<dyn FnMut(&Event, &Outbox) + Send>;

/// Sends calls without waiting for their answers.
#[derive(Clone)]
pub(crate) struct Outbox {
    outgoing: std::sync::mpsc::Sender<Vec<u8>>,
    next_id: Arc<AtomicU64>,
}

impl Outbox {
    /// Sends `method` to `session`; its answer, when it comes, is dropped.
    pub(crate) fn send(&self, session: Option<&str>, method: &str, params: Value) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.outgoing.send(message(id, session, method, params));
    }
}

fn message(id: u64, session: Option<&str>, method: &str, params: Value) -> Vec<u8> {
    let mut message = json!({"id": id, "method": method, "params": params});
    if let Some(session) = session {
        message["sessionId"] = json!(session);
    }
    let mut bytes = serde_json::to_vec(&message).unwrap_or_default();
    bytes.push(0);
    bytes
}

/// One connection to one browser process.
pub(crate) struct Cdp {
    outbox: Outbox,
    pending: Pending,
    events: broadcast::Sender<Event>,
    observer: Arc<Mutex<Option<Observer>>>,
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
        let outbox = Outbox { outgoing, next_id: Arc::new(AtomicU64::new(1)) };
        let observer: Arc<Mutex<Option<Observer>>> = Arc::default();
        let sink = Sink { pending: Arc::clone(&pending), events: events.clone(), observer: Arc::clone(&observer) };
        let outbox_r = outbox.clone();
        std::thread::spawn(move || read_messages(reader, &sink, &outbox_r));
        Cdp { outbox, pending, events, observer }
    }

    /// Sets the one observer of every event from now on.
    pub(crate) fn observe(&self, observer: Observer) {
        *self.observer.lock().unwrap_or_else(|p| p.into_inner()) = Some(observer);
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
        let id = self.outbox.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match self.pending.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            Some(map) => map.insert(id, tx),
            None => return Err(CdpError::Closed),
        };
        if self.outbox.outgoing.send(message(id, session, method, params)).is_err() {
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

/// Where the reading thread delivers: answers to their callers, events to
/// the observer and then to every subscriber.
struct Sink {
    pending: Pending,
    events: broadcast::Sender<Event>,
    observer: Arc<Mutex<Option<Observer>>>,
}

/// Reads NUL-separated messages until the pipe ends, answering calls and
/// broadcasting events; then fails every call still waiting.
fn read_messages(mut reader: std::fs::File, sink: &Sink, outbox: &Outbox) {
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
            dispatch(&buffer[start..start + end], sink, outbox);
            start += end + 1;
        }
        buffer.drain(..start);
    }
    // Dropping the senders wakes every waiting call with `Closed`.
    sink.pending.lock().unwrap_or_else(|p| p.into_inner()).take();
}

fn dispatch(bytes: &[u8], sink: &Sink, outbox: &Outbox) {
    let Ok(mut message) = serde_json::from_slice::<Value>(bytes) else {
        tracing::debug!(bytes = bytes.len(), "browser: a message that is not JSON, ignored");
        return;
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let waiter = sink.pending.lock().unwrap_or_else(|p| p.into_inner()).as_mut().and_then(|m| m.remove(&id));
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
        if let Some(observer) = sink.observer.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            observer(&event, outbox);
        }
        // Nobody listening is fine: events matter only while an action waits.
        let _ = sink.events.send(event);
    }
}
