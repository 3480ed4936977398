//! A real Chromium in real bubblewrap against pages served on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use clix_browser::{BrowserError, BrowserSettings, Property, SnapshotOptions, WaitFor};
mod support;
use support::{fixture, launch, ref_of};

/// The limit of a step that must succeed: a safety net, generous for a
/// busy machine (a step ends as soon as it is done).
const LIMIT: Duration = Duration::from_secs(60);

const FORM: &str = r#"<!doctype html><title>Sign up</title><h1>Sign up</h1>
<form method="post" action="/submit">
<label>Name <input name="name"></label>
<label>Email <input name="email" type="email"></label>
<label>Colour <select name="colour"><option value="r">Red</option><option value="g">Green</option></select></label>
<label><input type="checkbox" name="news" value="yes"> Newsletter</label>
<button type="submit">Send</button>
</form><a href="/other">Other page</a> <a href="/other" target="_blank">Other in a tab</a>"#;

/// A page server: the form, what it received, a second page, one that never loads.
async fn serve() -> (String, Arc<Mutex<Vec<String>>>) {
    let received: Arc<Mutex<Vec<String>>> = Arc::default();
    let store = Arc::clone(&received);
    let app = Router::new()
        .route("/form", get(|| async { axum::response::Html(FORM) }))
        .route(
            "/submit",
            post(move |body: String| {
                let store = Arc::clone(&store);
                async move {
                    store.lock().unwrap().push(body.clone());
                    axum::response::Html(format!("<title>Done</title><p>Thanks, received {body}</p>"))
                }
            }),
        )
        .route("/other", get(|| async { axum::response::Html("<title>Other</title><h2>The other page</h2>") }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                "never"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_a_form_submit_it_and_read_the_result() {
    let (base, received) = serve().await;
    let f = fixture("browser-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    let opened = b.open(&format!("{base}/form"), &f.ws, LIMIT).await.unwrap();
    assert!(opened.navigated);
    assert_eq!(opened.title, "Sign up");
    let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
    assert!(snap.lines.iter().all(|l| l.contains("[ref=e")), "{:#?}", snap.lines);
    let name = ref_of(&snap.lines, "textbox \"Name\"");
    let email = ref_of(&snap.lines, "textbox \"Email\"");
    let colour = ref_of(&snap.lines, "combobox \"Colour\"");
    let news = ref_of(&snap.lines, "checkbox \"Newsletter\"");
    let send = ref_of(&snap.lines, "button \"Send\"");

    let filled = b.fill(&name, "Ada Lovelace", LIMIT).await.unwrap();
    assert!(!filled.navigated);
    assert!(filled.added.iter().any(|l| l.contains("Ada Lovelace")), "{filled:#?}");
    b.fill(&email, "ada@example.org", LIMIT).await.unwrap();
    b.select(&colour, "Green", LIMIT).await.unwrap();
    let checked = b.check(&news, true, LIMIT).await.unwrap();
    assert!(checked.added.iter().any(|l| l.contains("Newsletter") && l.contains("[checked]")), "{checked:#?}");
    assert_eq!(b.get(Property::Value, Some(&name)).await.unwrap(), "Ada Lovelace");

    let sent = b.click(&send, LIMIT).await.unwrap();
    assert!(sent.navigated, "{sent:#?}");
    assert_eq!(sent.title, "Done");
    b.wait(&WaitFor::Text("Thanks".into()), LIMIT).await.unwrap();
    let text = b.get(Property::Text, None).await.unwrap();
    assert!(text.contains("Thanks"), "{text}");
    assert_eq!(received.lock().unwrap().as_slice(), ["name=Ada+Lovelace&email=ada%40example.org&colour=g&news=yes"]);

    // The old form's refs are stale now, and say so.
    let stale = b.click(&send, LIMIT).await.unwrap_err();
    assert!(stale.to_string().contains("stale"), "{stale}");
    let unknown = b.click("@e999", LIMIT).await.unwrap_err();
    assert!(unknown.to_string().contains("browser snapshot"), "{unknown}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_history_tabs_and_errors() {
    let (base, _) = serve().await;
    let f = fixture("browser-test");
    // The default load time-out: the pages that must load get it (the one
    // that never loads is given a short limit of its own below).
    let mut b = launch(&f, &BrowserSettings::default()).await;
    b.open(&format!("{base}/form"), &f.ws, LIMIT).await.unwrap();
    let snap = b.snapshot(SnapshotOptions::default(), None).await.unwrap();
    let other = ref_of(&snap.lines, "link \"Other page\"");
    let went = b.click(&other, LIMIT).await.unwrap();
    assert!(went.navigated && went.url.ends_with("/other"), "{went:#?}");
    let back = b.history(-1, LIMIT).await.unwrap();
    assert!(back.url.ends_with("/form"), "{back:#?}");
    let forward = b.history(1, LIMIT).await.unwrap();
    assert!(forward.url.ends_with("/other"), "{forward:#?}");
    assert!(b.history(1, LIMIT).await.unwrap_err().to_string().contains("no page to go forward"));

    // A link that opens a second tab.
    b.history(-1, LIMIT).await.unwrap();
    let snap = b.snapshot(SnapshotOptions::default(), None).await.unwrap();
    let in_tab = ref_of(&snap.lines, "link \"Other in a tab\"");
    let opened = b.click(&in_tab, LIMIT).await.unwrap();
    assert_eq!(opened.new_tabs, [2], "{opened:#?}");
    b.switch_tab(2).await.unwrap();
    b.wait(&WaitFor::Text("The other page".into()), LIMIT).await.unwrap();
    let tabs = b.tabs().await.unwrap();
    assert_eq!(tabs.len(), 2);
    assert!(tabs[1].current && tabs[1].url.ends_with("/other"), "{tabs:#?}");
    // A ref of tab 1 used on tab 2 names its tab.
    let wrong = b.click(&in_tab, LIMIT).await.unwrap_err();
    assert!(wrong.to_string().contains("tabs switch 1"), "{wrong}");
    b.open(&format!("{base}/form"), &f.ws, LIMIT).await.unwrap();
    let on_two = b.snapshot(SnapshotOptions::default(), None).await.unwrap();
    let send = ref_of(&on_two.lines, "button \"Send\"");
    b.close_tab(2).await.unwrap();
    assert_eq!(b.tabs().await.unwrap().len(), 1);
    // A ref of the closed tab says its tab's refs are gone, never that
    // the browser took no snapshot.
    let gone = b.hover(&send, LIMIT).await.unwrap_err().to_string();
    assert!(gone.contains("a closed tab's are gone") && !gone.contains("no snapshot yet"), "{gone}");

    // A missing element, a page that never loads, a host not allowed, nothing listening.
    let missing = b.snapshot(SnapshotOptions::default(), Some("#nope")).await.unwrap_err();
    assert!(missing.to_string().contains("nothing on the page matches"), "{missing}");
    let slow = b.open(&format!("{base}/slow"), &f.ws, Duration::from_secs(2)).await.unwrap_err();
    assert!(matches!(slow, BrowserError::Timeout { .. }), "{slow}");
    assert_eq!(slow.exit_code(), 124);
    let blocked = b.open("http://example.com/", &f.ws, LIMIT).await.unwrap_err();
    assert!(blocked.to_string().contains("[browser] allow"), "{blocked}");
    // An IP literal is refused by Chromium itself, not only by our check.
    let literal = b.open("http://127.0.0.2:9/", &f.ws, LIMIT).await.unwrap_err();
    assert!(literal.to_string().contains("not allowed"), "{literal}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_pages_screenshots_and_no_browser_left_behind() {
    let f = fixture("browser-test");
    std::fs::write(f.ws.join("page.html"), "<title>Local</title><h1>From the workspace</h1>").unwrap();
    let mut b = launch(&f, &BrowserSettings { window: "640x480".into(), ..BrowserSettings::default() }).await;
    let opened = b.open("page.html", &f.ws, LIMIT).await.unwrap();
    assert_eq!(opened.title, "Local");
    let png = b.screenshot(false).await.unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let (w, h) =
        (u32::from_be_bytes(png[16..20].try_into().unwrap()), u32::from_be_bytes(png[20..24].try_into().unwrap()));
    assert_eq!((w, h), (640, 480));
    let profile = b.profile().display().to_string();
    assert!(!chromium_processes(&profile).is_empty());
    b.close().await;
    assert_eq!(wait_for_none(&profile), Vec::<u32>::new(), "still running");

    // Dropped without closing (the session ended): gone too.
    let b = launch(&f, &BrowserSettings::default()).await;
    let profile = b.profile().display().to_string();
    assert!(!chromium_processes(&profile).is_empty());
    drop(b);
    assert_eq!(wait_for_none(&profile), Vec::<u32>::new(), "still running after drop");
}

/// The Chromium processes of `profile` once none is left, or those still
/// running after 60 s (a safety net: the wait ends when the last is gone).
fn wait_for_none(profile: &str) -> Vec<u32> {
    let started = std::time::Instant::now();
    loop {
        let left = chromium_processes(profile);
        if left.is_empty() || started.elapsed() > Duration::from_secs(60) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Pids of Chromium processes started with this profile.
fn chromium_processes(profile: &str) -> Vec<u32> {
    clix_testkit::pids_with_cmdline(&format!("--user-data-dir={profile}\0"))
}

/// Pages whose actions navigate at a given moment: a button that goes to
/// `/landed` `ms` after the click, a drop-down that submits on change, and
/// a field whose Enter submits.
async fn serve_late() -> String {
    let late = |ms: u64| {
        format!(
            r##"<!doctype html><title>Late {ms}</title>
<button onclick="setTimeout(() => location.href = '/landed', {ms})">Go</button>
<button onclick="location.href = location.href.replace('127.0.0.1', 'localhost').replace(/late.*/, 'landed'); const t = Date.now(); while (Date.now() - t < 1500) {{}}">Away</button>
<form action="/landed"><select name="pick" onchange="this.form.submit()"><option>a</option><option>b</option></select>
<input name="q" aria-label="Query"></form><a href="#below">Below</a><h2 id="below">Below</h2>"##
        )
    };
    let app = Router::new()
        .route(
            "/late/{ms}",
            get(move |axum::extract::Path(ms): axum::extract::Path<u64>| async move { axum::response::Html(late(ms)) }),
        )
        .route("/landed", get(|| async { axum::response::Html("<title>Landed</title><h1>Landed here</h1>") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Issue 27: a submit click failed with "Inspected target navigated or
/// closed" when its navigation won the race with the click's answer. Every
/// action that may navigate, at every moment the navigation may come,
/// either reports it or finishes before it: never an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_whose_page_navigates_at_any_moment_never_fail_for_it() {
    let base = serve_late().await;
    let f = fixture("browser-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    let landed = WaitFor::Url("*/landed*".into());
    for ms in [0, 1, 2, 3, 5, 8, 12, 20, 30, 50, 80, 120, 200] {
        b.open(&format!("{base}/late/{ms}"), &f.ws, LIMIT).await.unwrap();
        let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
        let go = ref_of(&snap.lines, "button \"Go\"");
        let change = b.click(&go, LIMIT).await.unwrap_or_else(|e| panic!("a click navigating {ms} ms later: {e}"));
        if change.navigated {
            assert_eq!(change.title, "Landed", "{ms} ms: {change:#?}");
        }
        b.wait(&landed, LIMIT).await.unwrap();
    }

    // To another site: the new page commits in a new renderer while the old
    // one is still busy in the click's handler, so the click's own answer
    // is lost to the navigation every time.
    for _ in 0..3 {
        b.open(&format!("{base}/late/0"), &f.ws, LIMIT).await.unwrap();
        let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
        let away = ref_of(&snap.lines, "button \"Away\"");
        let change = b.click(&away, LIMIT).await.unwrap_or_else(|e| panic!("a click navigating to another site: {e}"));
        assert!(change.navigated && change.url.contains("localhost"), "{change:#?}");
    }

    // Issue 28, finding 7: a javascript: address ran a script in the page
    // (read its cookie) with browser eval off.
    b.open(&format!("{base}/late/0"), &f.ws, LIMIT).await.unwrap();
    for script in ["javascript://x%0Avoid(document.title='pwned')", " JavaScript://x%0Avoid(document.title='pwned')"] {
        let refused = b.open(script, &f.ws, LIMIT).await.unwrap_err();
        assert_eq!(refused.exit_code(), 2, "{refused}");
        assert!(refused.to_string().contains("[browser] eval = true"), "{refused}");
    }
    assert_eq!(b.get(Property::Title, None).await.unwrap(), "Late 0");

    // Security round 4, finding 11: a page the agent wrote into the
    // workspace ran its scripts (a POST to a loopback listener) with eval
    // off. Its scripts do not run; the page is read as ever.
    let page = f.ws.join("mine.html");
    let script = format!("<script>document.title = 'ran'; fetch('{base}/late/9')</script>");
    std::fs::write(&page, format!("<title>Mine</title><p>hello</p>{script}")).unwrap();
    b.open(&format!("file://{}", page.display()), &f.ws, LIMIT).await.unwrap();
    assert_eq!(b.get(Property::Title, None).await.unwrap(), "Mine", "the page's script did not run");
    assert!(b.get(Property::Text, None).await.unwrap().contains("hello"));
    // A served page's own scripts run as before.
    b.open(&format!("{base}/late/0"), &f.ws, LIMIT).await.unwrap();
    assert_eq!(b.get(Property::Title, None).await.unwrap(), "Late 0");

    let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
    let pick = ref_of(&snap.lines, "combobox");
    let picked = b.select(&pick, "b", LIMIT).await.unwrap();
    assert!(picked.navigated && picked.url.contains("/landed?pick=b"), "{picked:#?}");

    b.open(&format!("{base}/late/0"), &f.ws, LIMIT).await.unwrap();
    let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
    let query = ref_of(&snap.lines, "textbox \"Query\"");
    b.fill(&query, "cats", LIMIT).await.unwrap();
    let entered = b.press("Enter", LIMIT).await.unwrap();
    assert!(entered.navigated && entered.url.contains("q=cats"), "{entered:#?}");

    // A link within the page navigates with no load to wait for.
    b.open(&format!("{base}/late/0"), &f.ws, LIMIT).await.unwrap();
    let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
    let below = ref_of(&snap.lines, "link \"Below\"");
    let moved = b.click(&below, Duration::from_secs(5)).await.unwrap();
    assert!(moved.url.ends_with("#below"), "{moved:#?}");
    b.history(1, LIMIT).await.unwrap_err();
    b.history(-1, LIMIT).await.unwrap();
    b.history(1, LIMIT).await.unwrap();

    let reloaded = b.reload(LIMIT).await.unwrap();
    assert!(reloaded.navigated && reloaded.url.ends_with("/late/0#below"), "{reloaded:#?}");
    let back = b.history(-1, LIMIT).await.unwrap();
    assert!(back.url.ends_with("/late/0"), "{back:#?}");
    let forward = b.history(1, LIMIT).await.unwrap();
    assert!(forward.url.ends_with("#below"), "{forward:#?}");
    b.close().await;
}
