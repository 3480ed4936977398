//! Plans and evals across machines on one shared store (`CLIX_STORAGE_URL`
//! on a real PostgreSQL, clix-testkit's): a plan that machine A ran in
//! part, resumed with `--resume` on machine B (its own CLIX_HOME, the
//! workspace at the same path but none of A's files), runs only what had
//! not finished; an eval run on A is compared by name on B exactly as A
//! compares its folders. A "machine" is a CLIX_HOME; the scripted model
//! server decides which task fails.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::path::Path;
use std::process::Output;

use clix_testkit::Postgres;
use common::text;
use serde_json::{Value, json};
use support::{FnServer, Reply, openai_text, start_fn};

/// A migrated database of its own, by `clix storage migrate`; its URL.
fn store(test: &str) -> Option<(&'static Postgres, String)> {
    let pg = Postgres::for_test(test)?;
    let url = pg.database();
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o =
        common::clix(home.path(), ws.path(), &["storage", "migrate"]).env("CLIX_STORAGE_URL", &url).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    Some((pg, url))
}

/// `clix ARGS` on the machine whose home is `home`, in `ws`, asking
/// `server`'s scripted model, on the store at `url` (none when empty).
/// A plan's agents here run no program: no sandbox (an eval's bash design needs it).
async fn clix(home: &Path, ws: &Path, url: &str, server: &FnServer, args: &[&str]) -> Output {
    let mut cmd = common::clix(home, ws, args);
    if args[0] == "plan" {
        cmd.env("CLIX_SANDBOX_MODE", "off");
    }
    cmd.env("CLIX_MEMORY_SUMMARIES", "false")
        .env("CLIX_AGENT_MODEL_CALL_TRIES", "1")
        .env("AGENT_BASE_URL", format!("{}/v1", server.url))
        .env("AGENT_MODEL", "scripted");
    if !url.is_empty() {
        cmd.env("CLIX_STORAGE_URL", url);
    }
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

/// The task an agent of a plan was given (it begins "You are agent `id`").
fn task_of(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let task = messages.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str());
    task.unwrap_or_default().to_string()
}

fn agent_of(body: &Value) -> String {
    task_of(body).split('`').nth(1).unwrap_or_default().to_string()
}

fn requests_of(server: &FnServer, id: &str) -> usize {
    server.requests.lock().unwrap().iter().filter(|r| agent_of(&r.body) == id).count()
}

const PLAN: &str = r#"
[[task]]
id = "a"
prompt = "find the number"
[[task]]
id = "b"
prompt = "add one to it"
depends_on = ["a"]
inputs = ["a"]
[[task]]
id = "c"
prompt = "something else"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_finished_in_part_on_one_machine_resumes_on_another() {
    let Some((pg, url)) = store("a_plan_finished_in_part_on_one_machine_resumes_on_another") else { return };
    let (home_a, home_b, ws) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(ws.path().join("PLAN.toml"), PLAN).unwrap();

    // Machine A: a and c finish, b's model refuses it.
    let on_a = start_fn(|body| match agent_of(body).as_str() {
        "b" => Reply::Status(400, vec![], "{\"error\": {\"message\": \"bad request\"}}".into()),
        id => openai_text(&format!("{id} done: 41"), 5, 2),
    })
    .await;
    let o = clix(home_a.path(), ws.path(), &url, &on_a, &["plan", "run", "PLAN.toml"]).await;
    assert_eq!(o.status.code(), Some(1), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(["a", "b", "c"].iter().all(|id| requests_of(&on_a, id) > 0));
    // The checkpoint went to the store, not to A's state folder.
    assert!(!home_a.path().join("state/plans").exists());
    let db = url.rsplit('/').next().unwrap();
    let saved = pg.psql(db, "SELECT string_agg(t, ',' ORDER BY t) FROM clix_documents, jsonb_object_keys(body->'done') t WHERE kind = 'plan-checkpoint'");
    assert_eq!(saved.trim(), "a,c");

    // Machine B: the workspace at the same path, none of A's files in it.
    std::fs::remove_dir_all(ws.path()).unwrap();
    std::fs::create_dir(ws.path()).unwrap();
    std::fs::write(ws.path().join("PLAN.toml"), PLAN).unwrap();
    let on_b = start_fn(|body| openai_text(&format!("{} done: 42", agent_of(body)), 5, 2)).await;
    // Without the store, B knows nothing of A's run.
    let o = clix(home_b.path(), ws.path(), "", &on_b, &["plan", "run", "PLAN.toml", "--resume"]).await;
    assert!(text(&o.stderr).contains("no earlier run of this plan was saved"), "{}", text(&o.stderr));
    on_b.requests.lock().unwrap().clear();
    std::fs::remove_dir_all(ws.path().join("agents")).unwrap();

    let o = clix(home_b.path(), ws.path(), &url, &on_b, &["plan", "run", "PLAN.toml", "--resume"]).await;
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!((requests_of(&on_b, "a"), requests_of(&on_b, "c")), (0, 0));
    assert!(requests_of(&on_b, "b") > 0);
    // b got a's answer as A's agent gave it.
    let asked = on_b.requests.lock().unwrap().iter().map(|r| task_of(&r.body)).find(|t| t.contains("agent `b`"));
    assert!(asked.as_deref().unwrap_or_default().contains("a done: 41"), "{asked:?}");
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.path().join(".clix/plan-result.json")).unwrap()).unwrap();
    let by_id = |id: &str| result["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap().clone();
    assert_eq!((by_id("a")["resumed"].clone(), by_id("c")["resumed"].clone()), (json!(true), json!(true)));
    assert_eq!((by_id("b")["status"].clone(), by_id("b")["resumed"].clone()), (json!("done"), json!(false)));
    assert_eq!(by_id("b")["result"]["answer"], "b done: 42");
}

/// The comparison's tables, without the lines naming where A and B came from.
fn tables(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    text(&o.stdout).lines().filter(|l| !l.starts_with("A: ") && !l.starts_with("B: ")).collect::<Vec<_>>().join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_runs_on_one_machine_are_compared_by_name_on_another() {
    let Some((_, url)) = store("eval_runs_on_one_machine_are_compared_by_name_on_another") else { return };
    let server = start_fn(common::counting_eval_model).await;
    let (home_a, ws_a) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let task = json!({
        "id": "count_errors", "category": "text", "description": "count errors",
        "prompt": "How many ERROR lines are in app.log? Answer with just the number.",
        "files": {"app.log": "INFO a\nERROR b\nERROR c\n"},
        "expectations": [{"check": "answer_regex:^2$"}],
    });
    std::fs::write(ws_a.path().join("suite.jsonl"), format!("{task}\n")).unwrap();
    for (design, out) in [("run", "nightly"), ("bash", "runs/bash-only")] {
        let args = ["eval", "suite.jsonl", "--tools", design, "--out", out];
        let o = clix(home_a.path(), ws_a.path(), &url, &server, &args).await;
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let name = out.rsplit('/').next().unwrap();
        assert!(text(&o.stderr).contains(&format!("saved as {name} in postgres://")), "{}", text(&o.stderr));
    }
    let on_a = tables(
        &clix(home_a.path(), ws_a.path(), &url, &server, &["eval", "compare", "nightly", "runs/bash-only"]).await,
    );
    assert!(on_a.contains("| run | 1/1 100% (21–100%) | – |"), "{on_a}");
    assert!(on_a.contains("| bash | – | 0/1 0% (0–79%) |"), "{on_a}");

    // Machine B: another home and folder, none of A's files.
    let (home_b, ws_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = clix(home_b.path(), ws_b.path(), &url, &server, &["eval", "runs"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "bash-only\nnightly\n");
    let o = clix(home_b.path(), ws_b.path(), &url, &server, &["eval", "compare", "nightly", "bash-only"]).await;
    assert!(text(&o.stdout).starts_with("A: nightly (saved in postgres://"), "{}", text(&o.stdout));
    assert_eq!(tables(&o), on_a);
    // A local folder and a stored name side by side.
    std::fs::create_dir(ws_b.path().join("local")).unwrap();
    std::fs::copy(ws_a.path().join("nightly/results.json"), ws_b.path().join("local/results.json")).unwrap();
    let o = clix(home_b.path(), ws_b.path(), &url, &server, &["eval", "compare", "local", "bash-only"]).await;
    assert_eq!(tables(&o), on_a);

    // A name the store does not have, and a machine without the store.
    let o = clix(home_b.path(), ws_b.path(), &url, &server, &["eval", "compare", "nightly", "weekly"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("weekly: no such folder, and no run of that name in postgres://"),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stderr).contains("`clix eval runs`"), "{}", text(&o.stderr));
    let o = clix(home_b.path(), ws_b.path(), "", &server, &["eval", "compare", "nightly", "bash-only"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("nightly: no such folder"), "{}", text(&o.stderr));
    let o = clix(home_b.path(), ws_b.path(), "", &server, &["eval", "runs"]).await;
    assert!(text(&o.stderr).contains("no [storage] url"), "{}", text(&o.stderr));
}
