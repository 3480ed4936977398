//! The `browser` command's event parts inside `run` (issue 34): console and
//! errors, dialogs, requests and blocking, frames. Real Chromium in real
//! bubblewrap, pages served on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::routing::get;

mod support;
use support::browser::{chromium_installed, fixture, ref_of, run_ok as run};

const PAGE: &str = r#"<!doctype html><title>Shop</title>
<script>console.warn('stock is low')</script>
<img src="/ad.png" alt="ad">
<button onclick="throw new Error('cart exploded')">Add</button>
<button onclick="document.getElementById('out').textContent = 'sure:' + confirm('Buy now?')">Buy</button>
<button onclick="fetch('/api/cart?item=7')">Refresh</button>
<p id="out">-</p>"#;

async fn serve() -> (String, Arc<AtomicUsize>) {
    let ads = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ads);
    let app = Router::new()
        .route("/", get(|| async { axum::response::Html(PAGE) }))
        .route(
            "/ad.png",
            get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async { "png" }
            }),
        )
        .route("/api/cart", get(|| async { (axum::http::StatusCode::SERVICE_UNAVAILABLE, "busy") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/"), ads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_sees_errors_answers_dialogs_and_watches_requests() {
    if !chromium_installed() {
        return;
    }
    let (url, ads) = serve().await;
    let mut f = fixture(clix_browser::BrowserSettings::default(), "browser-events-test").await;

    let help = run(&mut f, "browser --help").await;
    for line in [
        "browser console [--level error|warn|all] [--clear] [--json]",
        "browser errors [--json]",
        "browser dialog accept|dismiss [text]",
        "browser requests [--filter RE]",
        "browser block <pattern>",
        "browser unblock [pattern]",
        "[--request RE]",
        "browser frame [--json]",
    ] {
        assert!(help.text.contains(line), "{line} not in:\n{}", help.text);
    }
    let bare = f.engine.run("browser block", None).await;
    assert_eq!(bare.raw.exit_code, 2, "{}", bare.text);
    assert!(bare.text.contains("usage: browser block <pattern>"), "{}", bare.text);

    let opened = run(&mut f, &format!("browser block ad.png && browser open {url} && browser snapshot -i")).await;
    assert!(opened.text.contains("blocked in every tab"), "{}", opened.text);
    assert_eq!(ads.load(Ordering::SeqCst), 0, "the blocked image was never fetched");

    // A click that throws: its result says so in one line, and errors lists it between markers.
    let add = run(&mut f, &format!("browser click {}", ref_of(&opened.text, "\"Add\""))).await;
    assert!(add.text.contains("1 new error on the page: browser errors"), "{}", add.text);
    let errors = run(&mut f, "browser errors").await;
    assert!(errors.text.contains("[exception] Uncaught Error: cart exploded"), "{}", errors.text);
    assert!(errors.text.contains("<<<page content "), "page words are marked: {}", errors.text);
    let console = run(&mut f, "browser console --level warn").await;
    assert!(console.text.contains("[warn] stock is low"), "{}", console.text);
    assert!(run(&mut f, "browser console").await.text.contains("no console messages since the last look"));

    // Dialogs: dismissed by default, accepted when armed; the page records the answer.
    let buy = ref_of(&opened.text, "\"Buy\"");
    let dismissed = run(&mut f, &format!("browser click {buy}")).await;
    assert!(dismissed.text.contains("a confirm dialog said \"Buy now?\": dismissed"), "{}", dismissed.text);
    assert!(dismissed.text.contains("sure:false"), "{}", dismissed.text);
    let accepted = run(&mut f, &format!("browser dialog accept && browser click {buy}")).await;
    assert!(accepted.text.contains("accepted (as armed)"), "{}", accepted.text);
    assert!(accepted.text.contains("sure:true"), "{}", accepted.text);

    // A request waited for is reported with its status, and is an error of the page.
    let refresh = ref_of(&opened.text, "\"Refresh\"");
    let waited = run(&mut f, &format!("browser click {refresh} && browser wait --request 'api/cart'")).await;
    assert!(waited.text.contains(&format!("GET 503 {url}api/cart?item=7")), "{}", waited.text);
    let listed = run(&mut f, "browser requests --filter 'ad\\.png|cart'").await;
    assert!(listed.text.contains(&format!("GET failed (blocked) {url}ad.png")), "{}", listed.text);
    assert_eq!(listed.text.lines().filter(|l| l.starts_with("GET ")).count(), 2, "{}", listed.text);
    let json = run(&mut f, "browser errors --json").await;
    let parsed: serde_json::Value = serde_json::from_str(json.text.lines().next().unwrap()).unwrap();
    assert!(parsed["entries"][0]["text"].as_str().unwrap().contains("→ 503"), "{parsed}");
    let unblocked = run(&mut f, "browser unblock && browser reload").await;
    assert!(unblocked.text.contains("nothing is blocked now"), "{}", unblocked.text);
    assert_eq!(ads.load(Ordering::SeqCst), 1);
}

/// A page on one port framing a page of another listener through
/// `localhost` (another site, so a process of its own); the framed
/// button's click reaches its server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_clicks_inside_a_cross_site_frame_by_ref() {
    if !chromium_installed() {
        return;
    }
    let clicked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&clicked);
    let inner = Router::new()
        .route(
            "/pay",
            get(|| async {
                axum::response::Html("<title>Pay</title><button onclick=\"fetch('/paid')\">Pay now</button>")
            }),
        )
        .route(
            "/paid",
            get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                async { "paid" }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, inner).await.unwrap() });
    let page = format!(
        "<title>Checkout</title><h1>Checkout</h1><iframe title=\"Payment\" src=\"http://localhost:{port}/pay\"></iframe>"
    );
    let outer = Router::new().route("/", get(move || async move { axum::response::Html(page) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, outer).await.unwrap() });
    let mut f = fixture(clix_browser::BrowserSettings::default(), "browser-events-test").await;

    // The frame's own page is a request of the tab too, waited for by its address.
    let opened = run(&mut f, &format!("browser open {url} && browser wait --request /pay && browser frame")).await;
    assert!(opened.text.contains(&format!("GET 200 http://localhost:{port}/pay")), "{}", opened.text);
    let frame = format!("\"Payment\" http://localhost:{port}/pay (in 1, a process of its own)");
    let mut listed = opened.text.clone();
    for _ in 0..100 {
        if listed.contains(&frame) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        listed = run(&mut f, "browser frame").await.text;
    }
    assert!(listed.contains(&frame), "{listed}");
    let snap = run(&mut f, "browser snapshot -i").await;
    let boundary = format!("- iframe \"Payment\" (http://localhost:{port}/pay)");
    let at = snap.text.find(&boundary).unwrap_or_else(|| panic!("{}", snap.text));
    assert!(snap.text[at..].lines().nth(1).unwrap().starts_with("  - button \"Pay now\" [ref="), "{}", snap.text);
    let pay = ref_of(&snap.text[at..], "\"Pay now\"");
    let paid = run(&mut f, &format!("browser click {pay} && browser wait --request /paid")).await;
    assert!(paid.text.contains(&format!("GET 200 http://localhost:{port}/paid")), "{}", paid.text);
    assert_eq!(clicked.load(Ordering::SeqCst), 1);
}
