//! `clix plan`: a DAG of agents against a scripted model server that
//! answers each agent by the id in its task. Scheduling, failures,
//! retries, `--resume` after a kill, namespaces, validation, the
//! coordinator, and ten agents at once sharing one memory store and audit log.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::text;
use serde_json::{Value, json};
use support::{FnServer, Reply, openai_calls, openai_text, run_call, start_fn};

struct Home {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

impl Home {
    fn new(plan: &str) -> Self {
        let h = Home { home: tempfile::tempdir().unwrap(), ws: tempfile::tempdir().unwrap() };
        std::fs::write(h.ws.path().join("PLAN.toml"), plan).unwrap();
        h
    }

    fn clix(&self, server: &FnServer, args: &[&str]) -> Command {
        let mut cmd = common::clix(self.home.path(), self.ws.path(), args);
        cmd.env("CLIX_SANDBOX_MODE", "off")
            .env("CLIX_MEMORY_SUMMARIES", "false")
            .env("CLIX_AGENT_MODEL_CALL_TRIES", "1")
            .env("AGENT_BASE_URL", format!("{}/v1", server.url))
            .env("AGENT_MODEL", "scripted");
        cmd
    }

    async fn output(&self, server: &FnServer, args: &[&str]) -> Output {
        let mut cmd = self.clix(server, args);
        tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
    }

    fn result(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.ws.path().join(".clix/plan-result.json")).unwrap()).unwrap()
    }
}

/// The agent a request is from (its task begins "You are agent `id`"),
/// and how many tool results it has had.
fn who(body: &Value) -> (String, usize) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let task = messages.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or_default();
    let id = task.split('`').nth(1).unwrap_or_default().to_string();
    (id, messages.iter().filter(|m| m["role"] == "tool").count())
}

fn task_of(body: &Value) -> String {
    body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Each agent runs `command` (if any) then answers `answer`, after `delay`.
fn agent(command: Option<&str>, answer: &str, results: usize, delay: Duration) -> Reply {
    let reply = match command {
        Some(c) if results == 0 => openai_calls(&[("run", &run_call(c))], 5, 2),
        _ => openai_text(answer, 5, 2),
    };
    if delay.is_zero() { reply } else { Reply::Delay(delay, Box::new(reply)) }
}

fn requests_of(server: &FnServer, id: &str) -> usize {
    server.requests.lock().unwrap().iter().filter(|r| who(&r.body).0 == id).count()
}

fn schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.schema.json");
    jsonschema::validator_for(&serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()).unwrap()
}

const DIAMOND: &str = r#"
[[task]]
id = "a"
prompt = "collect the data"
[[task]]
id = "b"
prompt = "left half"
depends_on = ["a"]
inputs = ["a"]
[[task]]
id = "c"
prompt = "right half"
depends_on = ["a"]
[[task]]
id = "d"
prompt = "join"
depends_on = ["b", "c"]
inputs = ["b", "c"]
"#;

#[tokio::test]
async fn a_diamond_runs_its_middle_at_once_and_joins_the_results() {
    let called: Arc<Mutex<Vec<String>>> = Arc::default();
    let server = start_fn(move |body| {
        let (id, results) = who(body);
        called.lock().unwrap().push(id.clone());
        let reply = match id.as_str() {
            "a" => agent(Some("echo A-data > a.txt"), "A done: data in a.txt", results, Duration::ZERO),
            "b" => agent(Some("cat ../a/a.txt > b.txt"), "B done", results, Duration::ZERO),
            "c" => agent(Some("echo C > c.txt"), "C done", results, Duration::ZERO),
            _ => agent(Some("cat ../b/b.txt ../c/c.txt"), "D done", results, Duration::ZERO),
        };
        if id != "b" && id != "c" {
            return reply;
        }
        // b and c are answered only once both have called: run at once,
        // they overlap however fast the machine is (a fixed delay only
        // made it likely).
        let called = Arc::clone(&called);
        support::when(
            move || {
                let called = called.lock().unwrap();
                ["b", "c"].iter().all(|want| called.iter().any(|c| c.as_str() == *want))
            },
            reply,
        )
    })
    .await;
    let h = Home::new(DIAMOND);
    let o = h.output(&server, &["plan", "run", "PLAN.toml", "--jsonl"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(server.most_at_once() >= 2, "b and c never overlapped");
    // d got both results and their files.
    let d_task =
        server.requests.lock().unwrap().iter().find(|r| who(&r.body).0 == "d").map(|r| task_of(&r.body)).unwrap();
    assert!(d_task.contains("B done") && d_task.contains("C done"), "{d_task}");
    assert!(d_task.contains("- agents/c/c.txt (created, 2 bytes)") && d_task.ends_with("Your task:\njoin"), "{d_task}");
    assert_eq!(std::fs::read_to_string(h.ws.path().join("agents/b/b.txt")).unwrap(), "A-data\n");
    // The merged stream: valid lines, each agent under the plan, in order.
    let schema = schema();
    let lines: Vec<Value> = text(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let plan_id = lines[0]["metadata"]["agent_id"].as_str().unwrap().to_string();
    assert_eq!(lines[0]["type"], "plan_start");
    let mut last_seq: std::collections::BTreeMap<String, u64> = Default::default();
    for line in &lines {
        assert!(schema.is_valid(line), "{line}");
        let agent = line["metadata"]["agent_id"].as_str().unwrap().to_string();
        let seq = line["metadata"]["seq"].as_u64().unwrap();
        assert!(seq > last_seq.get(&agent).copied().unwrap_or(0), "{line}");
        last_seq.insert(agent.clone(), seq);
        if agent != plan_id {
            assert_eq!(line["metadata"]["parent_id"], plan_id.as_str(), "{line}");
        }
    }
    let results = lines.iter().filter(|l| l["type"] == "result").count();
    assert_eq!(results, 4);
    assert_eq!(lines.last().unwrap()["type"], "plan_end");
    // The summary and plan-result.json.
    let result = h.result();
    let statuses: Vec<&str> =
        result["tasks"].as_array().unwrap().iter().map(|t| t["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["done"; 4]);
    assert_eq!(result["tasks"][3]["result"]["answer"], "D done");
    // b and c started before either finished: their time ranges overlap.
    let ends: Vec<&Value> = lines.iter().filter(|l| l["type"] == "task_end").collect();
    let starts: Vec<&Value> = lines.iter().filter(|l| l["type"] == "task_start").collect();
    let at = |ls: &[&Value], id: &str| ls.iter().position(|l| l["content"]["task"] == id).unwrap();
    let order: Vec<(&str, usize)> = vec![("b", at(&starts, "b")), ("c", at(&starts, "c"))];
    assert!(order.iter().all(|(_, i)| *i < 3), "{order:?}");
    let first_end = lines
        .iter()
        .position(|l| l["type"] == "task_end" && (l["content"]["task"] == "b" || l["content"]["task"] == "c"))
        .unwrap();
    let c_start = lines.iter().position(|l| l["type"] == "task_start" && l["content"]["task"] == "c").unwrap();
    let b_start = lines.iter().position(|l| l["type"] == "task_start" && l["content"]["task"] == "b").unwrap();
    assert!(b_start < first_end && c_start < first_end, "b and c did not run at the same time");
    assert_eq!(ends.len(), 4);
    // The plan as one replay page, a lane per agent with its commands.
    let page = h.ws.path().join("plan.html");
    let o = h.output(&server, &["replay", ".clix/plan-result.json", "--html", page.to_str().unwrap()]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<section class=lane>").count(), 4, "{html}");
    assert!(html.contains("$ cat ../a/a.txt &gt; b.txt") && html.contains("D done"), "{html}");
    // Without --jsonl: a summary table and where the result is.
    let o = h.output(&server, &["plan", "run", "PLAN.toml"]).await;
    let out = text(&o.stdout);
    assert!(out.contains("4 done, 0 failed, 0 skipped") && out.contains("result: "), "{out}");
}

const FAILING: &str = r#"
[[task]]
id = "a"
prompt = "fails"
retries = 1
[[task]]
id = "b"
prompt = "needs a"
depends_on = ["a"]
[[task]]
id = "c"
prompt = "independent"
[[task]]
id = "slow"
prompt = "takes long"
[[task]]
id = "after"
prompt = "after slow"
depends_on = ["slow"]
"#;

/// `slow` answers after `slow_for`.
fn failing_server(slow_for: Duration) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |body| {
        let (id, results) = who(body);
        match id.as_str() {
            "a" => Reply::Status(400, vec![], "{\"error\": {\"message\": \"bad request\"}}".into()),
            "slow" => agent(None, "slow done", results, slow_for),
            _ => agent(None, &format!("{id} done"), results, Duration::ZERO),
        }
    }
}

#[tokio::test]
async fn a_failed_task_skips_its_dependents_and_its_siblings_finish() {
    let server = start_fn(failing_server(Duration::from_secs(4))).await;
    let h = Home::new(FAILING);
    let o = h.output(&server, &["plan", "run", "PLAN.toml", "--retry-backoff-ms", "10"]).await;
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let result = h.result();
    let status = |i: usize| result["tasks"][i]["status"].as_str().unwrap().to_string();
    assert_eq!(
        (status(0), status(1), status(2), status(3), status(4)),
        ("failed".into(), "skipped".into(), "done".into(), "done".into(), "done".into())
    );
    assert_eq!(result["tasks"][0]["attempts"], 2, "the retry ran");
    assert_eq!(requests_of(&server, "a"), 2);
    assert_eq!(result["tasks"][1]["reason"], "`a` failed");
    assert_eq!(requests_of(&server, "b"), 0);
    let out = text(&o.stdout);
    assert!(out.contains("2 attempts") && out.contains("3 done, 1 failed, 1 skipped"), "{out}");
}

#[tokio::test]
async fn on_failure_stop_ends_running_agents_and_starts_nothing() {
    // The slow agent's model would answer after 120 s (its 60 s call limit
    // ends it before): ending well before either, the plan stopped it.
    let server = start_fn(failing_server(Duration::from_secs(120))).await;
    let h = Home::new(FAILING);
    let started = Instant::now();
    let o = h.output(&server, &["plan", "run", "PLAN.toml", "--on-failure", "stop", "--retry-backoff-ms", "10"]).await;
    assert!(started.elapsed() < Duration::from_secs(30), "the slow agent was not stopped: {:?}", started.elapsed());
    assert_eq!(o.status.code(), Some(1));
    let result = h.result();
    let by_id = |id: &str| result["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id).unwrap().clone();
    assert_eq!(by_id("a")["status"], "failed");
    assert_eq!(by_id("slow")["status"], "stopped");
    assert!(by_id("slow")["reason"].as_str().unwrap().contains("--on-failure stop"), "{}", by_id("slow"));
    assert_eq!(by_id("after")["status"], "stopped");
    assert_eq!(requests_of(&server, "after"), 0);
}

#[tokio::test]
async fn resume_after_a_kill_reruns_only_what_had_not_finished() {
    let plan =
        "[[task]]\nid = \"a\"\nprompt = \"quick\"\n[[task]]\nid = \"b\"\nprompt = \"slow\"\ndepends_on = [\"a\"]\n";
    let server = start_fn(|body| {
        let (id, results) = who(body);
        let wait = if id == "b" && std::env::var("NEVER").is_err() { Duration::from_secs(30) } else { Duration::ZERO };
        agent(
            Some("echo made > out.txt"),
            &format!("{id} done"),
            results,
            if results == 0 { wait } else { Duration::ZERO },
        )
    })
    .await;
    let h = Home::new(plan);
    let mut child = h
        .clix(&server, &["plan", "run", "PLAN.toml", "--jsonl"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let pid = child.id();
    // Kill it once a is done and b's agent is waiting for its model.
    tokio::task::spawn_blocking(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line.contains("\"task_start\"") && line.contains("\"task\":\"b\"") {
                // SAFETY: killing our own child.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                return;
            }
        }
    })
    .await
    .unwrap();
    let _ = child.wait();
    assert_eq!(requests_of(&server, "a"), 2);
    // The second run: a from the checkpoint, b run again (its model answers at once now).
    let server2 = start_fn(|body| {
        let (id, results) = who(body);
        agent(Some("echo made > out.txt"), &format!("{id} done"), results, Duration::ZERO)
    })
    .await;
    let o = h.output(&server2, &["plan", "run", "PLAN.toml", "--resume"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!((requests_of(&server2, "a"), requests_of(&server2, "b")), (0, 2));
    let result = h.result();
    assert_eq!(result["tasks"][0]["resumed"], true);
    assert_eq!(result["tasks"][1]["status"], "done");
    assert!(text(&o.stdout).contains("from an earlier run"), "{}", text(&o.stdout));
    // Edited since: the task left alone is kept, the edited one runs again, and the person is told which.
    std::fs::write(h.ws.path().join("PLAN.toml"), plan.replace("\"slow\"", "\"slow, again\"")).unwrap();
    let o = h.output(&server2, &["plan", "run", "PLAN.toml", "--resume"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("clix: PLAN.toml: the plan changed since its checkpoint of "), "{err}");
    assert!(err.contains(" UTC: 1 finished task runs again: `b` (changed); kept: `a`\n"), "{err}");
    assert_eq!((requests_of(&server2, "a"), requests_of(&server2, "b")), (0, 4));
}

#[tokio::test]
async fn an_agent_cannot_write_outside_its_namespace_and_the_plan_goes_on() {
    let plan = "[[task]]\nid = \"a\"\nprompt = \"try to escape\"\n[[task]]\nid = \"b\"\nprompt = \"next\"\ndepends_on = [\"a\"]\n";
    let h = Home::new(plan);
    std::fs::create_dir_all(h.ws.path().join("shared")).unwrap();
    std::fs::create_dir_all(h.ws.path().join("agents/other")).unwrap();
    std::os::unix::fs::symlink("../agents/other", h.ws.path().join("shared/to-other")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let escape = format!(
        "echo x > ../other/evil.txt; echo x > ../../evil.txt; echo x > {}/evil.txt; echo x > ../../shared/to-other/evil.txt; echo ok > mine.txt",
        outside.path().display()
    );
    let server = start_fn(move |body| {
        let (id, results) = who(body);
        if id == "a" {
            agent(Some(&escape), "a done", results, Duration::ZERO)
        } else {
            agent(None, "b done", results, Duration::ZERO)
        }
    })
    .await;
    let o = h.output(&server, &["plan", "run", "PLAN.toml", "--jsonl"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stream = text(&o.stdout);
    let result_line: Value =
        stream.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|l| l["type"] == "tool_result").unwrap();
    let shown = result_line["content"]["text"].as_str().unwrap();
    assert!(shown.matches("read-only").count() >= 3, "{shown}");
    for path in ["agents/other/evil.txt", "evil.txt"] {
        assert!(!h.ws.path().join(path).exists(), "{path} was written");
    }
    assert!(!outside.path().join("evil.txt").exists());
    assert_eq!(std::fs::read_to_string(h.ws.path().join("agents/a/mine.txt")).unwrap(), "ok\n");
    assert_eq!(h.result()["tasks"][1]["status"], "done");
}

#[tokio::test]
async fn plan_check_lists_every_problem_with_its_fix() {
    let server = start_fn(|_| openai_text("unused", 1, 1)).await;
    let bad = "[[task]]\nid = \"a\"\nprompt = \"x\"\ndepends_on = [\"c\"]\n[[task]]\nid = \"c\"\nprompt = \"y\"\ndepends_on = [\"a\"]\n";
    let h = Home::new(bad);
    let o = h.output(&server, &["plan", "check", "PLAN.toml"]).await;
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("PLAN.toml: the dependencies form a cycle: a → c → a"), "{}", text(&o.stderr));
    std::fs::write(h.ws.path().join("PLAN.toml"), "[[task]]\nid = \"a\"\nprompt = \"x\"\nwrites = [\"src\"]\nfoo = 1\n[[task]]\nid = \"b\"\nprompt = \"y\"\nwrites = [\"src\"]\ndepends_on = [\"ghost\"]\n").unwrap();
    let o = h.output(&server, &["plan", "run", "PLAN.toml"]).await;
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("unknown field `foo`") && err.contains("names `ghost`, which is not a task"), "{err}");
    assert!(server.requests.lock().unwrap().is_empty(), "a model was called for an invalid plan");
    std::fs::write(h.ws.path().join("PLAN.toml"), DIAMOND).unwrap();
    // The depth limit: a plan's agent (its programs run with CLIX_PLAN_AGENT) starts no plan.
    let mut nested = h.clix(&server, &["plan", "run", "PLAN.toml"]);
    nested.env("CLIX_PLAN_AGENT", "1");
    let o = tokio::task::spawn_blocking(move || nested.output().unwrap()).await.unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("agents inside a plan cannot start plans"), "{}", text(&o.stderr));
    assert!(server.requests.lock().unwrap().is_empty());
    let o = h.output(&server, &["plan", "check", "PLAN.toml"]).await;
    assert_eq!(text(&o.stdout), "PLAN.toml: 4 tasks in 3 layers\n1 a\n2 b ← a\n2 c ← a\n3 d ← b, c\n");
    let o = h.output(&server, &["plan", "check", "PLAN.toml", "--dot"]).await;
    assert!(text(&o.stdout).starts_with("digraph plan {") && text(&o.stdout).contains("\"c\" -> \"d\";"));
}

#[tokio::test]
async fn the_coordinator_only_schedules_and_fixes_its_plan_from_the_errors() {
    let server = start_fn(|body| {
        let coordinating = body["tools"][0]["function"]["name"] == "propose_plan";
        if !coordinating {
            let (id, results) = who(body);
            return agent(Some("echo hi > x.txt"), &format!("{id} done"), results, Duration::ZERO);
        }
        let results = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        let cycle = json!({"tasks": [
            {"id": "a", "prompt": "x", "depends_on": ["b"]}, {"id": "b", "prompt": "y", "depends_on": ["a"]}
        ]});
        let good = json!({"tasks": [
            {"id": "fetch", "prompt": "get it"}, {"id": "report", "prompt": "write it", "depends_on": ["fetch"], "inputs": ["fetch"]}
        ]});
        match results {
            0 => openai_calls(&[("run", &run_call("ls"))], 1, 1),
            1 => openai_calls(&[("propose_plan", &cycle.to_string())], 1, 1),
            2 => openai_calls(&[("propose_plan", &good.to_string())], 1, 1),
            _ => openai_text("fetch, then report", 1, 1),
        }
    })
    .await;
    let h = Home::new("");
    let o = h.output(&server, &["plan", "run", "--goal", "make a report", "-j", "2"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let coordinator: Vec<Value> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.body["tools"][0]["function"]["name"] == "propose_plan")
        .map(|r| r.body.clone())
        .collect();
    assert_eq!(coordinator.len(), 4);
    let tools: Vec<&str> =
        coordinator[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["propose_plan"], "the coordinator is offered nothing else");
    let answer = |i: usize| {
        coordinator[i]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string()
    };
    assert!(answer(1).contains("unknown tool `run`"), "{}", answer(1));
    assert!(answer(2).contains("a cycle: a → b → a"), "{}", answer(2));
    assert!(answer(3).contains("The plan is valid: 2 tasks"), "{}", answer(3));
    let written = std::fs::read_to_string(h.ws.path().join("PLAN.toml")).unwrap();
    assert!(written.contains("id = \"report\"") && written.starts_with("# Written by `clix plan make`"), "{written}");
    assert_eq!(h.result()["tasks"][1]["result"]["answer"], "report done");
}

#[tokio::test]
async fn ten_agents_at_once_share_one_memory_store_and_audit_log_without_losing_anything() {
    let mut plan = String::new();
    for i in 0..10 {
        plan.push_str(&format!("[[task]]\nid = \"t{i}\"\nprompt = \"remember\"\n"));
    }
    let server = start_fn(|body| {
        let (id, results) = who(body);
        // A store, then a command the policy denies: one audit line each.
        agent(Some(&format!("memory store 'fact from {id}' && rm -rf /")), "stored", results, Duration::ZERO)
    })
    .await;
    let h = Home::new(&plan);
    let o = h.output(&server, &["plan", "run", "PLAN.toml", "-j", "10", "--jsonl"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stream = text(&o.stdout);
    assert!(!stream.contains("locked"), "{stream}");
    let results: Vec<Value> = stream
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 10);
    assert!(results.iter().all(|r| r["content"]["exit_code"] == 126), "{results:?}");
    // Ten appends to one audit log, none lost or torn.
    let audit = std::fs::read_to_string(h.home.path().join("state/audit.jsonl")).unwrap();
    let denials: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["kind"] == "policy" && l["decision"] == "deny")
        .collect();
    assert_eq!(denials.len(), 10, "{audit}");
    let mut cmd = common::clix(h.home.path(), h.ws.path(), &["memory", "recent", "-n", "50", "--json"]);
    let listed = text(&cmd.output().unwrap().stdout);
    for i in 0..10 {
        assert!(listed.contains(&format!("fact from t{i}")), "t{i} lost: {listed}");
    }
}

#[tokio::test]
async fn ten_agents_at_once_share_one_hub_rate_limit() {
    let bwrap_runs = Command::new("bwrap").args(["--ro-bind", "/", "/", "true"]).status().is_ok_and(|s| s.success());
    if !bwrap_runs {
        clix_testkit::skip_missing("plan: hub rate limits across agents", "bubblewrap cannot start here");
        return;
    }
    let mut plan = String::new();
    for i in 0..10 {
        plan.push_str(&format!("[[task]]\nid = \"t{i}\"\nprompt = \"call the tool\"\n"));
    }
    let h = Home::new(&plan);
    // A user hub tool allowing 5 calls a minute, for the whole user, across processes and agents.
    let hub = h.home.path().join("tools");
    let tool = hub.join("limited");
    std::fs::create_dir_all(&tool).unwrap();
    let manifest = json!({"name": "limited", "version": "1.0.0", "description": "a limited tool", "command": "./run",
                          "self_test": false, "version_args": false, "rate_limit": 5});
    std::fs::write(tool.join("manifest.json"), manifest.to_string()).unwrap();
    // It says whether it runs for a plan's agent (the plan runner sets the variable for its programs).
    std::fs::write(tool.join("run"), "#!/bin/sh\necho \"{\\\"plan_agent\\\": \\\"$CLIX_PLAN_AGENT\\\"}\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tool.join("run"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Each agent is told to call only once all ten have asked: the ten calls
    // then fall within seconds of each other, inside the limit's minute,
    // however slowly a busy machine starts the agents.
    let asked = Arc::new(AtomicUsize::new(0));
    let server = start_fn(move |body| {
        let (_, results) = who(body);
        let reply = agent(Some("limited"), "called", results, Duration::ZERO);
        if results > 0 {
            return reply;
        }
        asked.fetch_add(1, Ordering::SeqCst);
        let asked = Arc::clone(&asked);
        support::when(move || asked.load(Ordering::SeqCst) >= 10, reply)
    })
    .await;
    let mut cmd = h.clix(&server, &["plan", "run", "PLAN.toml", "-j", "10", "--jsonl"]);
    cmd.env("CLIX_SANDBOX_MODE", "bwrap").env("CLIX_HUB_PATH", &hub);
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stream = text(&o.stdout);
    assert!(!stream.contains("locked"), "{stream}");
    let results: Vec<Value> = stream
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "tool_result")
        .collect();
    let codes: Vec<i64> = results.iter().map(|l| l["content"]["exit_code"].as_i64().unwrap()).collect();
    assert_eq!(codes.len(), 10);
    for ran in results.iter().filter(|l| l["content"]["exit_code"] == 0) {
        let said = ran["content"]["text"].as_str().unwrap();
        assert!(said.contains(r#""plan_agent": "1""#), "the agent's programs know they run in a plan: {said}");
    }
    assert_eq!(codes.iter().filter(|c| **c == 0).count(), 5, "{codes:?}: five calls allowed");
    assert_eq!(codes.iter().filter(|c| **c == 75).count(), 5, "{codes:?}: five refused as rate-limited");
}
