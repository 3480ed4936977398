//! `browser` as a command inside `run`: real Chromium in real bubblewrap,
//! pages served on 127.0.0.1 and from the workspace, results through Layer 2.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use clix_engine::RunOutput;

mod support;
use support::Fixture;
use support::browser::{chromium_installed, fixture, ref_of};

const FORM: &str = r#"<!doctype html><title>Order</title><h1>Order</h1>
<form method="post" action="/order">
<label>Item <input name="item"></label>
<label>Count <input name="count"></label>
<label>Size <select name="size"><option>S</option><option>M</option><option>L</option></select></label>
<label><input type="checkbox" name="gift" value="on"> Gift wrap</label>
<button>Order it</button></form><a href="/report.csv">Report</a>"#;

async fn serve() -> (String, Arc<Mutex<Vec<String>>>) {
    let received: Arc<Mutex<Vec<String>>> = Arc::default();
    let store = Arc::clone(&received);
    let report = || async { ([("content-disposition", "attachment; filename=\"report.csv\"")], "a,b\n1,2\n") };
    let app =
        Router::new().route("/", get(|| async { axum::response::Html(FORM) })).route("/report.csv", get(report)).route(
            "/order",
            post(move |body: String| {
                let store = Arc::clone(&store);
                async move {
                    store.lock().unwrap().push(body);
                    axum::response::Html("<title>Ordered</title><p>Order accepted</p>")
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/"), received)
}

async fn run(f: &mut Fixture, line: &str) -> RunOutput {
    f.engine.run(line, None).await
}

/// Chromium processes this test process started (their profile names it).
fn our_chromiums() -> usize {
    clix_testkit::chromiums_of(std::process::id()).len()
}

/// Waits until `done`, or fails saying `what` after 60 s (a safety net: the
/// wait ends as soon as it holds, however slow the machine).
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(60), "{what} after 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// One test, in order: the browsers of the process are counted, so no other
// test of this file may run one at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_orders_through_a_form_and_nothing_is_left_running() {
    if !chromium_installed() {
        return;
    }
    let (url, received) = serve().await;
    // The default idle time: a slow step between two browser commands
    // must not close the browser under the test (idle is tested below).
    let mut f = fixture(clix_browser::BrowserSettings::default(), "browser-test").await;

    // Progressive help.
    let bare = run(&mut f, "browser").await;
    assert_eq!(bare.raw.exit_code, 2);
    assert!(bare.text.contains("usage: browser open|snapshot|click"), "{}", bare.text);
    let click = run(&mut f, "browser click").await;
    assert!(click.text.contains("usage: browser click @eN"), "{}", click.text);
    let help = run(&mut f, "browser --help").await;
    assert!(help.text.contains("browser wait [--text T | --url PATTERN | --load | --ms N]"), "{}", help.text);

    // A ref before any snapshot (one read in another `clix run`) says a
    // browser lives for one session and shows the one-line form.
    let early = run(&mut f, "browser click @e1").await;
    assert_eq!(early.raw.exit_code, 1, "{}", early.text);
    assert!(
        early.text.contains("no snapshot yet") && early.text.contains("one session") && early.text.contains("&&"),
        "{}",
        early.text
    );

    // Open and snapshot in one call; then fill, select, check, submit and read in another.
    let first = run(&mut f, &format!("browser open {url} && browser snapshot -i")).await;
    assert_eq!(first.raw.exit_code, 0, "{}", first.text);
    assert!(first.text.contains("navigated to"), "{}", first.text);
    let (item, count) = (ref_of(&first.text, "textbox \"Item\""), ref_of(&first.text, "textbox \"Count\""));
    let (size, gift) = (ref_of(&first.text, "combobox \"Size\""), ref_of(&first.text, "checkbox \"Gift wrap\""));
    let order = ref_of(&first.text, "button \"Order it\"");
    let line = format!(
        "browser fill {item} 'blue mug' && browser fill {count} 3 && browser select {size} M && browser check {gift} \
         && browser click {order} && browser wait --text accepted && browser get text"
    );
    let second = run(&mut f, &line).await;
    assert_eq!(second.raw.exit_code, 0, "{}", second.text);
    assert!(second.text.contains("navigated to") && second.text.contains("\"Ordered\""), "{}", second.text);
    assert!(second.text.trim_end().contains("Order accepted"), "{}", second.text);
    assert_eq!(received.lock().unwrap().as_slice(), ["item=blue+mug&count=3&size=M&gift=on"]);

    // A stale ref says what to do; --json is JSON.
    let stale = run(&mut f, &format!("browser click {order}")).await;
    assert_eq!(stale.raw.exit_code, 1);
    assert!(stale.text.contains("stale") && stale.text.contains("browser snapshot -i"), "{}", stale.text);
    let json = run(&mut f, "browser get title --json | jq -r .title").await;
    assert_eq!(String::from_utf8_lossy(&json.raw.stdout), "Ordered\n");
    let eval = run(&mut f, "browser eval 6*7").await;
    assert_eq!(eval.raw.exit_code, 2);
    assert!(eval.text.contains("[browser] eval = true"), "{}", eval.text);

    // A download lands in .clix/downloads/.
    let back = run(&mut f, "browser back && browser snapshot").await;
    let report = ref_of(&back.text, "link \"Report\"");
    let clicked = run(&mut f, &format!("browser click {report}")).await;
    assert_eq!(clicked.raw.exit_code, 0, "{}", clicked.text);
    assert!(clicked.text.contains("downloaded ") && clicked.text.contains("report.csv (8 bytes)"), "{}", clicked.text);
    let downloaded = f.ws.path().join(".clix/downloads/report.csv");
    wait_until("no complete download", || std::fs::read(&downloaded).is_ok_and(|b| b == b"a,b\n1,2\n")).await;

    // A screenshot is a PNG in the workspace, attached like `see`.
    let shot = run(&mut f, "browser screenshot shots/page.png").await;
    assert_eq!(shot.raw.exit_code, 0, "{}", shot.text);
    assert_eq!(shot.images.len(), 1);
    assert_eq!((shot.images[0].width, shot.images[0].height), (1280, 800));
    assert_eq!(&std::fs::read(f.ws.path().join("shots/page.png")).unwrap()[1..4], b"PNG");

    // A 500-row table overflows to a spill file the next call can grep.
    let rows: String = (1..=500).map(|i| format!("<tr><td>row {i}</td><td>{}</td></tr>", i * 7)).collect();
    std::fs::write(
        f.ws.path().join("table.html"),
        format!("<title>T</title><table><tr><th>name</th><th>value</th></tr>{rows}</table>"),
    )
    .unwrap();
    let table = run(&mut f, "browser open table.html >/dev/null && browser snapshot").await;
    assert!(table.truncated, "{}", table.text);
    let spill = table.spill_path.clone().expect("a spill file");
    let grep = run(&mut f, &format!("grep -c 'cell \"row 49[0-9]\"' {spill}")).await;
    assert_eq!(String::from_utf8_lossy(&grep.raw.stdout), "10\n", "{}\n{}", grep.text, table.text);

    // A host outside the allowance names the setting.
    let blocked = run(&mut f, "browser open https://example.com/").await;
    assert_eq!(blocked.raw.exit_code, 1);
    assert!(blocked.text.contains("[browser] allow"), "{}", blocked.text);

    // `browser close` ends it; the next command starts a new one.
    assert!(our_chromiums() > 0);
    let closed = run(&mut f, "browser close").await;
    assert!(closed.text.contains("browser closed"));
    wait_until("running after browser close", || our_chromiums() == 0).await;
    let reopened = run(&mut f, "browser open table.html").await;
    assert_eq!(reopened.raw.exit_code, 0, "{}", reopened.text);
    assert!(our_chromiums() > 0);

    // The session ends: the engine is dropped with a browser open.
    drop(f);
    wait_until("running after the session ended", || our_chromiums() == 0).await;

    // Idle ends a browser: a session of its own with a short idle time
    // (long enough that the browser is still seen right after the open).
    let mut idle = fixture(clix_browser::BrowserSettings { idle_secs: 5, ..Default::default() }, "browser-test").await;
    let opened = run(&mut idle, &format!("browser open {url}")).await;
    assert_eq!(opened.raw.exit_code, 0, "{}", opened.text);
    assert!(our_chromiums() > 0);
    wait_until("running after the idle time", || our_chromiums() == 0).await;
    drop(idle);
}
