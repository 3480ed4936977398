//! The races between an action and the navigation it causes, played by a
//! scripted browser at the exact moments a slow machine reaches only now and
//! then: the action's own answer lost to its navigation, a navigation that
//! begins while the page is read, and a tab that closes itself. The real
//! Chromium tests (tests/browser.rs) cover the same actions at real speed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Browser, RefTarget, Tab};
use crate::cdp::Cdp;
use crate::settings::{BrowserSettings, HostRules};

const LIMIT: Duration = Duration::from_secs(10);

/// What the scripted browser sends for one call: events, the answer, events.
struct Reply {
    events: Vec<Value>,
    answer: Result<Value, &'static str>,
    after: Vec<Value>,
}

fn answer(value: Value) -> Reply {
    Reply { events: Vec::new(), answer: Ok(value), after: Vec::new() }
}

fn lost(events: Vec<Value>, message: &'static str) -> Reply {
    Reply { events, answer: Err(message), after: Vec::new() }
}

fn event(session: &str, method: &str, params: Value) -> Value {
    json!({"method": method, "params": params, "sessionId": session})
}

/// The events of a navigation of tab `T` (session `S`) that commits.
fn navigation_events() -> Vec<Value> {
    vec![
        event("S", "Page.frameRequestedNavigation", json!({"frameId": "T", "url": "http://site/done"})),
        event("S", "Page.frameStartedLoading", json!({"frameId": "T"})),
        event("S", "Page.frameNavigated", json!({"frame": {"id": "T", "loaderId": "L2", "url": "http://site/done"}})),
    ]
}

fn load_event() -> Value {
    event("S", "Page.loadEventFired", json!({"timestamp": 1}))
}

/// The page of document `loader` as the calls that read it see it.
fn page_answer(method: &str, params: &Value, loader: &str) -> Option<Reply> {
    let (url, title) = if loader == "L1" { ("http://site/form", "Form") } else { ("http://site/done", "Done") };
    Some(match method {
        "Page.getFrameTree" => answer(json!({"frameTree": {"frame": {"id": "T", "loaderId": loader}}})),
        "Runtime.evaluate" if params["expression"] == "0" => answer(json!({"result": {"value": 0}})),
        "Runtime.evaluate" => answer(json!({"result": {"value": [url, title]}})),
        "Accessibility.getFullAXTree" => answer(json!({"nodes": [
            {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": title}, "childIds": ["2"]},
            {"nodeId": "2", "role": {"value": "heading"}, "name": {"value": format!("{title} page")}, "childIds": []},
        ]})),
        "DOM.scrollIntoViewIfNeeded" | "Page.enable" | "Runtime.enable" | "Accessibility.enable" => answer(json!({})),
        "Network.enable" | "Log.enable" | "Target.setAutoAttach" => answer(json!({})),
        "DOM.getContentQuads" => answer(json!({"quads": [[0, 0, 10, 0, 10, 10, 0, 10]]})),
        "Input.dispatchMouseEvent" => answer(json!({})),
        _ => return None,
    })
}

/// A browser whose other end is `script`, with one tab (target `T`, session
/// `S`) showing document `L1`, and `@e1` a button on it.
fn scripted(mut script: impl FnMut(&str, &Value) -> Reply + Send + 'static) -> Browser {
    let (from_clix, to_browser) = std::io::pipe().unwrap();
    let (from_browser, mut to_clix) = std::io::pipe().unwrap();
    std::thread::spawn(move || {
        let mut reader = from_clix;
        let mut buffer = Vec::new();
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).unwrap_or(0) == 1 {
            if byte[0] != 0 {
                buffer.push(byte[0]);
                continue;
            }
            let call: Value = serde_json::from_slice(&std::mem::take(&mut buffer)).unwrap();
            let reply = script(call["method"].as_str().unwrap(), &call["params"]);
            let mut answer = match reply.answer {
                Ok(result) => json!({"id": call["id"], "result": result}),
                Err(message) => json!({"id": call["id"], "error": {"code": -32000, "message": message}}),
            };
            if let Some(session) = call.get("sessionId") {
                answer["sessionId"] = session.clone();
            }
            for message in reply.events.iter().chain([&answer]).chain(&reply.after) {
                let mut bytes = serde_json::to_vec(message).unwrap();
                bytes.push(0);
                if to_clix.write_all(&bytes).is_err() {
                    return;
                }
            }
        }
    });
    let cdp = Cdp::new(to_browser.into(), from_browser.into());
    let watch = super::watch::Watch::start(&cdp, "dismiss");
    let mut browser = Browser {
        service: None,
        cdp,
        tabs: vec![Tab { target: "T".into(), session: "S".into(), last: vec!["- heading \"Form page\"".into()] }],
        current: 0,
        rules: HostRules { open: false, allow: Vec::new() },
        settings: BrowserSettings::default(),
        next_ref: 2,
        refs: HashMap::new(),
        by_node: HashMap::new(),
        profile: PathBuf::from("/nonexistent/profile"),
        downloads: PathBuf::from("/nonexistent/downloads"),
        host_profile: None,
        started: Instant::now(),
        watch,
        frame_nodes: Default::default(),
    };
    browser.refs.insert("e1".into(), RefTarget { target: "T".into(), document: "L1".into(), backend: 7 });
    browser
}

#[tokio::test]
async fn a_click_whose_answer_is_lost_to_its_navigation_reports_the_navigation() {
    let mut loader = "L1";
    let browser = scripted(move |method, params| {
        if method == "Input.dispatchMouseEvent" && params["type"] == "mouseReleased" {
            // The navigation commits before Chromium answers the click.
            loader = "L2";
            let mut events = navigation_events();
            events.push(load_event());
            return lost(events, "Inspected target navigated or closed");
        }
        page_answer(method, params, loader).unwrap_or_else(|| panic!("unscripted call {method}"))
    });
    let mut browser = browser;
    let change = browser.click("@e1", LIMIT).await.expect("the click's navigation is its result");
    assert!(change.navigated, "{change:?}");
    assert_eq!((change.url.as_str(), change.title.as_str()), ("http://site/done", "Done"));
    assert!(change.added.iter().any(|l| l.contains("Done page")), "{change:?}");
}

#[tokio::test]
async fn a_navigation_that_begins_while_the_page_is_read_is_followed_to_its_load() {
    let mut loader = "L1";
    let browser = scripted(move |method, params| {
        let reading = method == "Runtime.evaluate" && params["expression"] != "0";
        if reading && loader == "L1" {
            // The click started a navigation the page sent only later: it
            // commits while the old page's address is asked for, and the
            // load follows the lost answer.
            loader = "L2";
            let mut events = navigation_events();
            events.push(load_event());
            return lost(events, "Execution context was destroyed.");
        }
        page_answer(method, params, loader).unwrap_or_else(|| panic!("unscripted call {method}"))
    });
    let mut browser = browser;
    let change = browser.click("@e1", LIMIT).await.expect("a read lost to a navigation is read again");
    assert!(change.navigated, "{change:?}");
    assert_eq!(change.url, "http://site/done");
    assert!(change.added.iter().any(|l| l.contains("Done page")), "{change:?}");
}

#[tokio::test]
async fn a_navigation_that_begins_right_after_the_page_was_read_is_read_again() {
    let mut loader = "L1";
    let browser = scripted(move |method, params| {
        if method == "Accessibility.getFullAXTree" && loader == "L1" {
            // The old page's tree is answered, and the navigation's events
            // come right behind it: what was read is already gone.
            let mut reply = page_answer(method, params, loader).unwrap();
            loader = "L2";
            reply.after = navigation_events();
            reply.after.push(load_event());
            return reply;
        }
        page_answer(method, params, loader).unwrap_or_else(|| panic!("unscripted call {method}"))
    });
    let mut browser = browser;
    let change = browser.click("@e1", LIMIT).await.unwrap();
    assert!(change.navigated, "{change:?}");
    assert_eq!((change.url.as_str(), change.title.as_str()), ("http://site/done", "Done"));
}

#[tokio::test]
async fn a_click_that_closes_its_tab_shows_the_tab_left() {
    let mut closed = false;
    let browser = scripted(move |method, params| {
        if method == "Input.dispatchMouseEvent" && params["type"] == "mouseReleased" {
            closed = true;
            let events = vec![
                json!({"method": "Target.detachedFromTarget", "params": {"sessionId": "S", "targetId": "T"}}),
                json!({"method": "Target.targetDestroyed", "params": {"targetId": "T"}}),
            ];
            return lost(events, "Session with given id not found.");
        }
        match method {
            "Target.createTarget" => answer(json!({"targetId": "T2"})),
            "Target.attachToTarget" => answer(json!({"sessionId": "S2"})),
            "Page.getFrameTree" if closed => answer(json!({"frameTree": {"frame": {"id": "T2", "loaderId": "B"}}})),
            "Runtime.evaluate" if closed && params["expression"] != "0" => {
                answer(json!({"result": {"value": ["about:blank", ""]}}))
            }
            "Runtime.evaluate" if closed => lost(Vec::new(), "Session with given id not found."),
            "Accessibility.getFullAXTree" if closed => answer(json!({"nodes": []})),
            _ => page_answer(method, params, "L1").unwrap_or_else(|| panic!("unscripted call {method}")),
        }
    });
    let mut browser = browser;
    let change = browser.click("@e1", LIMIT).await.expect("closing its tab is the click's result");
    assert_eq!(change.closed_tab, Some(1), "{change:?}");
    assert_eq!(change.url, "about:blank");
    assert_eq!(browser.tabs.len(), 1);
    assert_eq!(browser.tabs[0].target, "T2");
    assert!(browser.refs.is_empty(), "the closed tab's refs are forgotten");
}
