//! What a page does besides showing itself, in a real Chromium in real
//! bubblewrap against pages served on 127.0.0.1: console messages, errors
//! (exceptions, failed requests), dialogs, requests and blocking, frames.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Path;
use axum::routing::{get, post};
use clix_browser::{Browser, BrowserSettings, Level, Property, SnapshotOptions};
mod support;
use support::{fixture, launch, ref_of};

/// The limit of a step that must succeed: a safety net, generous for a
/// busy machine (a step ends as soon as it is done).
const LIMIT: Duration = Duration::from_secs(60);

const NOISY: &str = r#"<!doctype html><title>Noisy</title>
<script>console.log('hello', 42); console.warn('careful'); console.error('bad thing');</script>
<img src="/missing.png" alt="gone">
<button onclick="console.error('clicked badly'); throw new Error('click failed')">Break</button>
<script>throw new Error('boom at load')</script>"#;

const DIALOGS: &str = r#"<!doctype html><title>Dialogs</title>
<button onclick="document.getElementById('out').textContent = 'confirm:' + confirm('Delete it?')">Delete</button>
<button onclick="document.getElementById('out').textContent = 'prompt:' + prompt('Your name?', 'nobody')">Name</button>
<button onclick="alert('Saved!'); document.getElementById('out').textContent = 'after alert'">Save</button>
<p id="out">nothing yet</p>"#;

const LEAVE: &str = r#"<!doctype html><title>Unsaved</title>
<script>window.onbeforeunload = e => { e.preventDefault(); e.returnValue = ''; };</script>
<input aria-label="Draft"><a href="/dialogs">Leave</a>"#;

const GALLERY: &str = r#"<!doctype html><title>Gallery</title>
<img src="/img/pixel.png" alt="pixel">
<button onclick="setTimeout(() => fetch('/api/save', {method: 'POST', body: 'x'}), 300)">Save later</button>"#;

/// Hits per path, as the server counted them.
type Hits = Arc<Mutex<HashMap<String, usize>>>;

/// A page server that counts the requests it answers, by path.
async fn serve() -> (String, Hits) {
    let hits: Hits = Arc::default();
    let count = |hits: &Hits, path: &str| *hits.lock().unwrap().entry(path.to_string()).or_default() += 1;
    let (h1, h2) = (Arc::clone(&hits), Arc::clone(&hits));
    let app = Router::new()
        .route("/noisy", get(|| async { axum::response::Html(NOISY) }))
        .route("/dialogs", get(|| async { axum::response::Html(DIALOGS) }))
        .route(
            "/load-alert",
            get(|| async { axum::response::Html("<title>Hi</title><script>alert('Welcome')</script><p>in</p>") }),
        )
        .route("/leave", get(|| async { axum::response::Html(LEAVE) }))
        .route("/gallery", get(|| async { axum::response::Html(GALLERY) }))
        .route(
            "/img/{name}",
            get(move |Path(name): Path<String>| {
                let hits = Arc::clone(&h1);
                async move {
                    count(&hits, &format!("/img/{name}"));
                    ([("content-type", "image/png")], PNG.to_vec())
                }
            }),
        )
        .route(
            "/api/save",
            post(move || {
                let hits = Arc::clone(&h2);
                async move {
                    count(&hits, "/api/save");
                    (axum::http::StatusCode::CREATED, "saved")
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), hits)
}

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8,
    6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1,
    0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

async fn refs(b: &mut Browser) -> Vec<String> {
    b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap().lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_messages_and_errors_are_kept_until_read() {
    let (base, _) = serve().await;
    let f = fixture("browser-events-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    let opened = b.open(&format!("{base}/noisy"), &f.ws, LIMIT).await.unwrap();
    // The exception at load and the missing image, at least (the image may still be on its way).
    let mut errors = b.errors().unwrap().entries;
    let end = Instant::now() + Duration::from_secs(10);
    while !errors.iter().any(|e| e.text.contains("missing.png")) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
        errors.extend(b.errors().unwrap().entries);
    }
    assert!(opened.errors >= 1, "the open's result counts the page's errors: {opened:#?}");
    let texts: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.kind, e.text)).collect();
    assert!(texts.iter().any(|t| t.starts_with("exception:") && t.contains("boom at load")), "{texts:#?}");
    assert!(texts.iter().any(|t| t.starts_with("request:") && t.contains("/missing.png → 404")), "{texts:#?}");
    assert!(b.errors().unwrap().entries.is_empty(), "a second look shows only what came since");

    // Errors only, then the rest are still there for the next look.
    let only_errors = b.console(Level::Error, false).unwrap();
    assert_eq!(only_errors.entries.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(), ["bad thing"]);
    assert_eq!(only_errors.left, 2);
    let rest = b.console(Level::All, false).unwrap().entries;
    let rest: Vec<(String, String)> = rest.into_iter().map(|m| (m.level, m.text)).collect();
    assert!(rest.contains(&("info".into(), "hello 42".into())), "{rest:?}");
    assert!(rest.contains(&("warn".into(), "careful".into())), "{rest:?}");
    assert!(b.console(Level::All, false).unwrap().entries.is_empty());

    // An action's own error is counted in its result, and listed once.
    let lines = refs(&mut b).await;
    let clicked = b.click(&ref_of(&lines, "button \"Break\""), LIMIT).await.unwrap();
    assert_eq!(clicked.errors, 1, "{clicked:#?}");
    let after = b.errors().unwrap().entries;
    assert_eq!(after.len(), 1, "{after:#?}");
    assert!(after[0].text.contains("click failed"), "{after:#?}");
    let cleared = b.console(Level::All, true).unwrap();
    assert!(cleared.entries.is_empty() && cleared.left == 0, "{cleared:?}");
    assert!(b.console(Level::All, false).unwrap().entries.is_empty(), "--clear dropped them");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogs_are_answered_at_once_by_default_or_as_armed() {
    let (base, _) = serve().await;
    let f = fixture("browser-events-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;

    // An alert at load does not hold the open.
    let start = Instant::now();
    let opened = b.open(&format!("{base}/load-alert"), &f.ws, LIMIT).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert_eq!(opened.title, "Hi");
    assert!(opened.dialogs.iter().any(|d| d.kind == "alert" && d.message == "Welcome"), "{opened:#?}");

    b.open(&format!("{base}/dialogs"), &f.ws, LIMIT).await.unwrap();
    let lines = refs(&mut b).await;
    let (delete, name, save) = (ref_of(&lines, "\"Delete\""), ref_of(&lines, "\"Name\""), ref_of(&lines, "\"Save\""));

    // The default policy dismisses: confirm() returns false to the page.
    let dismissed = b.click(&delete, LIMIT).await.unwrap();
    let dialog = &dismissed.dialogs[0];
    assert_eq!((dialog.kind.as_str(), dialog.message.as_str(), dialog.accepted), ("confirm", "Delete it?", false));
    assert!(!dialog.armed);
    assert_eq!(b.get(Property::Text, None).await.unwrap().trim_end().lines().last(), Some("confirm:false"));

    // Armed: accepted, and the page sees true; the arming is used once.
    b.arm_dialog(true, None).unwrap();
    let accepted = b.click(&delete, LIMIT).await.unwrap();
    assert!(accepted.dialogs[0].accepted && accepted.dialogs[0].armed, "{accepted:#?}");
    assert!(b.get(Property::Text, None).await.unwrap().contains("confirm:true"));
    b.click(&delete, LIMIT).await.unwrap();
    assert!(b.get(Property::Text, None).await.unwrap().contains("confirm:false"), "the default again");

    // A prompt gets the armed text.
    b.arm_dialog(true, Some("Ada".into())).unwrap();
    let prompted = b.click(&name, LIMIT).await.unwrap();
    assert_eq!(prompted.dialogs[0].text.as_deref(), Some("Ada"));
    assert!(b.get(Property::Text, None).await.unwrap().contains("prompt:Ada"));

    // An alert in a click returns promptly, and the page goes on after it.
    let start = Instant::now();
    let alerted = b.click(&save, LIMIT).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert_eq!(alerted.dialogs[0].message, "Saved!");
    assert!(alerted.added.iter().any(|l| l.contains("after alert")), "{alerted:#?}");

    // Leaving a page that asks first: dismissed, the page stays, promptly; accepted, it goes.
    b.open(&format!("{base}/leave"), &f.ws, LIMIT).await.unwrap();
    let lines = refs(&mut b).await;
    b.fill(&ref_of(&lines, "\"Draft\""), "half a thought", LIMIT).await.unwrap();
    let start = Instant::now();
    let stayed = b.click(&ref_of(&lines, "\"Leave\""), LIMIT).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    assert_eq!(stayed.title, "Unsaved", "{stayed:#?}");
    assert!(stayed.dialogs.iter().any(|d| d.kind == "beforeunload" && !d.accepted), "{stayed:#?}");
    b.arm_dialog(true, None).unwrap();
    let left = b.click(&ref_of(&lines, "\"Leave\""), LIMIT).await.unwrap();
    assert_eq!(left.title, "Dialogs", "{left:#?}");
    assert!(left.dialogs.iter().any(|d| d.kind == "beforeunload" && d.accepted), "{left:#?}");
    b.close().await;

    // With dialog = "accept" a confirm is accepted unarmed.
    let mut b = launch(&f, &BrowserSettings { dialog: "accept".into(), ..BrowserSettings::default() }).await;
    b.open(&format!("{base}/dialogs"), &f.ws, LIMIT).await.unwrap();
    let lines = refs(&mut b).await;
    let accepted = b.click(&ref_of(&lines, "\"Delete\""), LIMIT).await.unwrap();
    assert!(accepted.dialogs[0].accepted && !accepted.dialogs[0].armed, "{accepted:#?}");
    assert!(b.get(Property::Text, None).await.unwrap().contains("confirm:true"));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_listed_waited_for_and_blocked() {
    let (base, hits) = serve().await;
    let f = fixture("browser-events-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;

    // Blocked: the image is never fetched, and that is not the page's error.
    let blocked = b.block("pixel.png").await.unwrap();
    assert_eq!(blocked, ["*pixel.png*"]);
    let opened = b.open(&format!("{base}/gallery"), &f.ws, LIMIT).await.unwrap();
    assert_eq!(opened.errors, 0, "{opened:#?}");
    let listed = b.requests(Some("pixel")).unwrap().requests;
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0].failed.as_deref(), Some("blocked"), "{listed:#?}");
    assert_eq!(hits.lock().unwrap().get("/img/pixel.png"), None, "the server never saw it");

    // Unblocked: the reload fetches it.
    assert!(b.unblock(None).await.unwrap().is_empty());
    b.reload(LIMIT).await.unwrap();
    assert_eq!(hits.lock().unwrap().get("/img/pixel.png"), Some(&1));
    let all = b.requests(None).unwrap().requests;
    let page = all.iter().rfind(|r| r.url.ends_with("/gallery")).unwrap();
    assert_eq!((page.method.as_str(), page.status, page.done), ("GET", Some(200), true), "{all:#?}");
    assert!(page.bytes.unwrap_or(0) > 0, "{page:#?}");

    // A request the click starts later is waited for and reported.
    let lines = refs(&mut b).await;
    b.click(&ref_of(&lines, "Save later"), LIMIT).await.unwrap();
    let saved = b.wait_request("/api/save$", LIMIT).await.unwrap();
    assert_eq!((saved.method.as_str(), saved.status), ("POST", Some(201)), "{saved:#?}");
    assert_eq!(hits.lock().unwrap().get("/api/save"), Some(&1));
    // Waiting again wants a newer one, which never comes.
    let late = b.wait_request("/api/save$", Duration::from_millis(500)).await.unwrap_err();
    assert!(late.to_string().contains("browser requests"), "{late}");
    let filtered = b.requests(Some("api")).unwrap().requests;
    assert_eq!(filtered.len(), 1, "{filtered:#?}");
    assert!(b.requests(Some("(")).is_err());
    b.close().await;
}

/// A frame's page: a field and a button that send the field's value to
/// the frame's own server, which records it with the host it was sent to.
const INNER: &str = r#"<!doctype html><title>Inner</title><p>inside a frame</p>
<input aria-label="Word">
<button onclick="console.log('sent from ' + location.host);
  fetch('/clicked', {method: 'POST', body: document.querySelector('input').value})">Send</button>
<input type="file" aria-label="Attach" onchange="fetch('/clicked', {method: 'POST',
  body: 'file ' + this.files[0].name + ' ' + this.files[0].size})">"#;

/// Two listeners on 127.0.0.1 (two origins); `/framed` on the first holds
/// a same-origin frame, a cross-origin one (the other port) and a
/// cross-site one (`localhost`, a process of its own). Each records the
/// clicks it receives as `host body`.
async fn serve_frames() -> (String, u16, Arc<Mutex<Vec<String>>>) {
    let clicks: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut ports = Vec::new();
    let mut listeners = Vec::new();
    for _ in 0..2 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        ports.push(listener.local_addr().unwrap().port());
        listeners.push(listener);
    }
    let other = ports[1];
    let framed = format!(
        r#"<!doctype html><title>Framed</title><h1>Top</h1>
<iframe title="Same" src="/inner" width="500" height="150"></iframe>
<iframe title="Other port" src="http://127.0.0.1:{other}/inner" width="500" height="150"></iframe>
<div style="height: 900px"></div>
<iframe title="Other site" src="http://localhost:{other}/inner" width="500" height="150"></iframe>"#
    );
    // Two levels: a cross-site frame holding a frame of yet another site.
    let (first, base) = (ports[0], format!("http://127.0.0.1:{}", ports[0]));
    let nested = format!(
        r#"<!doctype html><title>Nested</title><iframe title="Outer" src="http://localhost:{other}/nest" width="600" height="300"></iframe>"#
    );
    let nest = format!(
        r#"<!doctype html><title>Nest</title><p>between</p><iframe title="Deeper" src="http://127.0.0.1:{first}/inner" width="500" height="200"></iframe>"#
    );
    for listener in listeners {
        let (framed, clicks) = (framed.clone(), Arc::clone(&clicks));
        let (nested, nest) = (nested.clone(), nest.clone());
        let app = Router::new()
            .route("/framed", get(move || async move { axum::response::Html(framed) }))
            .route("/nested", get(move || async move { axum::response::Html(nested) }))
            .route("/nest", get(move || async move { axum::response::Html(nest) }))
            .route("/inner", get(|| async { axum::response::Html(INNER) }))
            .route(
                "/clicked",
                post(move |headers: axum::http::HeaderMap, body: String| {
                    let clicks = Arc::clone(&clicks);
                    async move {
                        let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default().to_string();
                        clicks.lock().unwrap().push(format!("{host} {body}"));
                        "ok"
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    }
    (base, other, clicks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_reach_into_same_origin_cross_origin_and_cross_site_frames() {
    let (base, other, clicks) = serve_frames().await;
    let f = fixture("browser-events-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    b.open(&format!("{base}/framed"), &f.ws, LIMIT).await.unwrap();
    // The frames load after the page's own load event: wait for all three.
    let end = Instant::now() + Duration::from_secs(20);
    let mut frames = b.frames().await.unwrap();
    while frames.len() < 4 && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
        frames = b.frames().await.unwrap();
    }
    let listed: Vec<(Option<usize>, &str, &str, bool)> =
        frames.iter().map(|f| (f.parent, f.url.as_str(), f.title.as_str(), f.separate)).collect();
    let cross_site = format!("http://localhost:{other}/inner");
    assert_eq!(listed.len(), 4, "{listed:#?}");
    assert_eq!(listed[0], (None, format!("{base}/framed").as_str(), "Framed", false));
    assert!(listed.contains(&(Some(1), format!("{base}/inner").as_str(), "Same", false)), "{listed:#?}");
    let other_port = format!("http://127.0.0.1:{other}/inner");
    assert!(listed.contains(&(Some(1), other_port.as_str(), "Other port", false)), "{listed:#?}");
    assert!(listed.contains(&(Some(1), cross_site.as_str(), "Other site", true)), "{listed:#?}");

    // The snapshot shows each frame under its line, indented.
    let snap = b.snapshot(SnapshotOptions { compact: true, ..Default::default() }, None).await.unwrap();
    let boundary = format!("- iframe \"Other site\" ({cross_site})");
    let at = snap.lines.iter().position(|l| l.trim_start() == boundary).unwrap_or_else(|| panic!("{:#?}", snap.lines));
    let indent = snap.lines[at].len() - snap.lines[at].trim_start().len();
    assert!(snap.lines[at + 1].starts_with(&" ".repeat(indent + 2)), "{:#?}", snap.lines);
    let inside: Vec<&String> = snap.lines[at + 1..].iter().take(3).collect();
    assert!(inside.iter().any(|l| l.contains("textbox \"Word\" [ref=")), "{inside:#?}");
    assert_eq!(snap.lines.iter().filter(|l| l.contains("button \"Send\" [ref=")).count(), 3, "{:#?}", snap.lines);

    // In the cross-site frame (below the fold): fill, then click by ref; the frame's server sees it.
    let word = ref_of(&snap.lines[at..], "textbox \"Word\"");
    let send = ref_of(&snap.lines[at..], "button \"Send\"");
    b.fill(&word, "far away", LIMIT).await.unwrap();
    assert_eq!(b.get(Property::Value, Some(&word)).await.unwrap(), "far away");
    b.click(&send, LIMIT).await.unwrap();
    b.wait_request("/clicked", LIMIT).await.unwrap();
    assert_eq!(clicks.lock().unwrap().as_slice(), [format!("localhost:{other} far away")]);
    // A file input there takes an upload (its frame's own session and node).
    std::fs::write(f.ws.join("note.txt"), "twelve bytes").unwrap();
    let attach = ref_of(&snap.lines[at..], "\"Attach\"");
    b.upload(&attach, &[f.ws.join("note.txt")], LIMIT).await.unwrap();
    b.wait_request("/clicked", LIMIT).await.unwrap();
    assert_eq!(clicks.lock().unwrap().last().unwrap(), &format!("localhost:{other} file note.txt 12"));
    // Its console reaches the tab's.
    let console = b.console(Level::All, false).unwrap().entries;
    assert!(console.iter().any(|m| m.text == format!("sent from localhost:{other}")), "{console:#?}");

    // And in the same-origin frame.
    let same = snap.lines.iter().position(|l| l.contains("iframe \"Same\"")).unwrap();
    b.fill(&ref_of(&snap.lines[same..], "textbox \"Word\""), "near", LIMIT).await.unwrap();
    b.click(&ref_of(&snap.lines[same..], "button \"Send\""), LIMIT).await.unwrap();
    b.wait_request("/clicked", LIMIT).await.unwrap();
    assert_eq!(clicks.lock().unwrap().last().unwrap(), &format!("{} near", base.trim_start_matches("http://")));
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_inside_a_cross_site_frame_is_reached_too() {
    let (base, other, clicks) = serve_frames().await;
    let f = fixture("browser-events-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    b.open(&format!("{base}/nested"), &f.ws, LIMIT).await.unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let mut frames = b.frames().await.unwrap();
    while frames.len() < 3 && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
        frames = b.frames().await.unwrap();
    }
    let listed: Vec<(usize, Option<usize>, &str)> =
        frames.iter().map(|f| (f.number, f.parent, f.title.as_str())).collect();
    assert_eq!(listed.len(), 3, "{frames:#?}");
    let outer = listed.iter().find(|f| f.2 == "Outer").unwrap().0;
    assert_eq!(frames[outer - 1].url, format!("http://localhost:{other}/nest"));
    assert!(frames[outer - 1].separate, "{frames:#?}");
    let deeper = listed.iter().find(|f| f.2 == "Deeper").unwrap();
    assert_eq!(deeper.1, Some(outer), "the deeper frame is in the outer one: {frames:#?}");

    let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
    let at =
        snap.lines.iter().position(|l| l.contains("iframe \"Deeper\"")).unwrap_or_else(|| panic!("{:#?}", snap.lines));
    assert!(snap.lines[at].starts_with("  - iframe"), "nested one level: {:#?}", snap.lines);
    assert!(snap.lines[at + 1].starts_with("    - "), "{:#?}", snap.lines);
    b.fill(&ref_of(&snap.lines[at..], "textbox \"Word\""), "deep", LIMIT).await.unwrap();
    b.click(&ref_of(&snap.lines[at..], "button \"Send\""), LIMIT).await.unwrap();
    b.wait_request("/clicked", LIMIT).await.unwrap();
    assert_eq!(clicks.lock().unwrap().as_slice(), [format!("{} deep", base.trim_start_matches("http://"))]);
    b.close().await;
}
