//! The page parts of the browser (issue 34) at the library's level: a
//! real Chromium in real bubblewrap against pages served on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use clix_browser::{BrowserSettings, Item, OriginStorage, SavedState, SnapshotOptions, StorageKind};
mod support;
use support::{fixture, launch};

const LIMIT: Duration = Duration::from_secs(60);

/// Shows what the origin's storage holds; counts the requests for it.
const SHOW: &str = r#"<!doctype html><title>Show</title><p id="o">?</p><button>Nothing</button>
<script>document.getElementById('o').textContent = 'local ' + localStorage.getItem('k') + ', session ' + sessionStorage.getItem('s');</script>"#;

async fn serve(hits: Arc<AtomicUsize>) -> String {
    let app = Router::new().route(
        "/show",
        get(move || {
            hits.fetch_add(1, Ordering::SeqCst);
            async { Html(SHOW) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Loading a state writes each origin's storage without the site seeing a
/// request; the site, opened afterwards, finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_load_writes_storage_without_asking_the_site() {
    let hits = Arc::new(AtomicUsize::new(0));
    let base = serve(Arc::clone(&hits)).await;
    let f = fixture("browser-page-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    let item = |name: &str, value: &str| Item { name: name.into(), value: value.into() };
    let state = SavedState {
        cookies: Vec::new(),
        origins: vec![OriginStorage {
            origin: base.clone(),
            local: vec![item("k", "v1")],
            session: vec![item("s", "t2")],
        }],
    };
    // A new browser's blank tab takes the storage itself: no tab is added.
    assert_eq!(b.load_state(&state, LIMIT).await.unwrap(), None);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the site was asked during the load");
    assert_eq!(b.tabs().await.unwrap().len(), 1);
    let shown = b.open(&format!("{base}/show"), &f.ws, LIMIT).await.unwrap();
    assert!(shown.added.iter().any(|l| l.contains("local v1, session t2")), "{shown:#?}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let (origin, items) = b.storage_items(StorageKind::Session, None).await.unwrap();
    assert_eq!((origin, items), (base.clone(), vec![item("s", "t2")]));

    // What a state save keeps is what a load gives back.
    let saved = b.save_state().await.unwrap();
    assert_eq!(saved.origins, state.origins);
    b.close().await;
}

/// Each misuse says what to do instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misuse_says_what_to_do() {
    let hits = Arc::new(AtomicUsize::new(0));
    let base = serve(hits).await;
    let f = fixture("browser-page-test");
    let mut b = launch(&f, &BrowserSettings::default()).await;
    let cookie = b.set_cookie("a", "b", None).await.unwrap_err();
    assert!(cookie.to_string().contains("--url"), "{cookie}");
    let storage = b.storage_items(StorageKind::Local, None).await.unwrap_err();
    assert!(storage.to_string().contains("open a site first"), "{storage}");
    b.open(&format!("{base}/show"), &f.ws, LIMIT).await.unwrap();
    let missing = b.storage_items(StorageKind::Local, Some("nope")).await.unwrap_err();
    assert!(missing.to_string().contains("browser storage local get"), "{missing}");
    let snap = b.snapshot(SnapshotOptions { interactive: true, ..Default::default() }, None).await.unwrap();
    let button = snap.lines.iter().find(|l| l.contains("Nothing")).unwrap();
    let at = button.find("[ref=").unwrap() + 5;
    let button = format!("@{}", &button[at..at + button[at..].find(']').unwrap()]);
    let upload = b.upload(&button, &[f.ws.join("x")], LIMIT).await.unwrap_err();
    assert!(upload.to_string().contains("not a file input"), "{upload}");
    b.close().await;
}
