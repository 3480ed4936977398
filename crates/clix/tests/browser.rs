//! The `browser` command through the real binary: a screenshot reaches the
//! model as an image (clix ask) and an MCP client as image content; no
//! Chromium outlives clix, however clix ends; without Chromium the error
//! says what to install.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, text};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use support::{openai_calls, openai_text, run_call, start};

/// A workspace with the status page, when a Chromium is installed (else
/// the skip is logged).
fn env() -> Option<Env> {
    let found = clix_browser::find_executable(&Default::default(), std::env::var("PATH").ok().as_deref()).is_ok();
    if !found {
        clix_testkit::skip_missing("browser", "no Chromium installed (apt-get install chromium-headless-shell)");
        return None;
    }
    Some(Env::new().with_file("status.html", PAGE))
}

const PAGE: &str = "<title>Status</title><h1>All systems go</h1><p style='background:#c00;height:300px'>red</p>";

/// How many Chromium processes the clix process `pid` started are alive.
fn chromiums_of(pid: u32) -> usize {
    clix_testkit::chromiums_of(pid).len()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn a_screenshot_is_sent_to_the_model_as_an_image() {
    let Some(env) = env() else { return };
    let server = start(vec![
        openai_calls(&[("run", &run_call("browser open status.html && browser screenshot"))], 10, 5),
        openai_text("The page is red and says all systems go.", 20, 9),
    ])
    .await;
    let mut cmd = env.cmd(&["ask", "what does status.html look like?"]);
    cmd.env("AGENT_BASE_URL", format!("{}/v1", server.url))
        .env("AGENT_MODEL", "scripted")
        .env("CLIX_MEMORY_SUMMARIES", "false");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool_result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    let result = tool_result["content"].as_str().unwrap();
    assert!(result.contains("saved .clix/browser/screenshot-1.png (1280x800 PNG"), "{result}");
    let image = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|part| part["type"] == "image_url")
        .expect("an image part in the next request");
    assert!(image["image_url"]["url"].as_str().unwrap().starts_with("data:image/png;base64,iVBORw0KGgo"));
    assert_eq!(&std::fs::read(env.ws.path().join(".clix/browser/screenshot-1.png")).unwrap()[1..4], b"PNG");
}

#[tokio::test]
async fn a_screenshot_is_image_content_over_mcp() {
    let Some(env) = env() else { return };
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_clix"));
    cmd.arg("mcp")
        .arg("--workspace")
        .arg(env.ws.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CLIX_HOME", env.home.path());
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().unwrap();
    let client = ().serve(transport).await.unwrap();
    let arguments = json!({"command": "browser open status.html >/dev/null && browser screenshot shot.png"});
    let call = CallToolRequestParams::new("run").with_arguments(arguments.as_object().unwrap().clone());
    let result = client.call_tool(call).await.unwrap();
    assert_eq!(result.is_error, Some(false), "{:?}", result.content);
    let image = result.content.iter().find_map(|c| c.as_image()).expect("image content");
    assert_eq!(image.mime_type, "image/png");
    assert!(image.data.starts_with("iVBORw0KGgo"));
    client.cancel().await.unwrap();
}

#[test]
fn no_chromium_outlives_clix_even_when_it_is_killed() {
    let Some(env) = env() else { return };
    // Ended normally: the line finishes, clix exits, its browser goes with it.
    let o = env.cmd(&["run", "browser open status.html && browser get title"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("Status"), "{}", text(&o.stdout));

    // Killed (SIGKILL, no chance to clean up) while its browser waits.
    let mut child = env
        .cmd(&["run", "--timeout", "120", "browser open status.html && browser wait --ms 60000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until("no Chromium started", Duration::from_secs(30), || chromiums_of(pid) > 0);
    child.kill().unwrap();
    child.wait().unwrap();
    // A safety net: the wait ends as soon as the last Chromium is gone; an
    // orphaned one would live on.
    wait_until("Chromium still running after clix was killed", Duration::from_secs(60), || chromiums_of(pid) == 0);
}

#[test]
fn without_chromium_the_error_says_what_to_install() {
    let Some(env) = env() else { return };
    let o = env.cmd(&["run", "browser open status.html"]).env("PATH", "/nonexistent").output().unwrap();
    assert_eq!(o.status.code(), Some(127), "{}", text(&o.stdout));
    let out = text(&o.stdout);
    assert!(out.contains("no Chromium found") && out.contains("apt-get install chromium-headless-shell"), "{out}");
    assert!(out.contains("[browser] executable"), "{out}");
}
