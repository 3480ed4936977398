//! `clix eval` with a model, as a person runs it: against the scripted
//! model server over real HTTP, the output folder it leaves (results.json,
//! report.html, a trajectory and a replay page per attempt), `clix replay`
//! of an attempt, and `clix eval compare`. Sharded runs (`--shard i/n`)
//! and `clix eval merge`, with the model and with reference solutions, and
//! the Kubernetes Indexed Job of docs/scale-out.md that runs the shards.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;
use clix_testkit::model_server as support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::text;
use serde_json::{Value, json};
use support::FnServer;

/// A one-task suite: how many ERROR lines app.log has (2).
fn suite(dir: &Path) {
    let task = json!({
        "id": "count_errors", "category": "text", "description": "count errors",
        "prompt": "How many ERROR lines are in app.log? Answer with just the number.",
        "files": {"app.log": "INFO a\nERROR b\nERROR c\n"},
        "expectations": [{"check": "answer_regex:^2$"}, {"check": "stdout_contains:2"}],
    });
    std::fs::write(dir.join("suite.jsonl"), format!("{task}\n")).unwrap();
}

async fn eval(server: &FnServer, home: &Path, ws: &Path, args: &[&str]) -> Output {
    let mut cmd = common::clix(home, ws, args);
    cmd.env("AGENT_BASE_URL", format!("{}/v1", server.url)).env("AGENT_MODEL", "scripted");
    tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_with_a_model_leaves_results_a_report_and_replays() {
    let server = support::start_fn(common::counting_eval_model).await;
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    suite(ws.path());
    let out = ws.path().join("out");
    let o = eval(&server, home.path(), ws.path(), &["eval", "suite.jsonl", "--tools", "run", "--out", "out"]).await;
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    let tables = text(&o.stdout);
    assert!(tables.contains("model: scripted") && tables.contains("| run | 1 | 1/1 | 100% "), "{tables}");
    // Without a terminal, one line per attempt on stderr.
    assert!(text(&o.stderr).contains("PASS count_errors [run] r0: answered"), "{}", text(&o.stderr));

    let results: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!((results["schema_version"].clone(), results["mode"].clone()), (json!(2), json!("model")));
    let attempt = &results["attempts"][0];
    assert_eq!((attempt["input_tokens"].clone(), attempt["output_tokens"].clone()), (json!(100), json!(5)));
    let trajectory = attempt["trajectory"].as_str().unwrap();
    assert!(trajectory.ends_with("out/runs/count_errors-run-r0.jsonl"), "{trajectory}");

    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("href=\"runs/count_errors-run-r0.html\""), "{report}");
    let replay = std::fs::read_to_string(out.join("runs/count_errors-run-r0.html")).unwrap();
    assert!(replay.contains("grep -c ERROR app.log") && replay.contains("path_map"), "{replay}");

    // `clix replay` of an attempt, by its file.
    let o = common::clix(home.path(), ws.path(), &["replay", trajectory]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("▸ run grep -c ERROR app.log"), "{}", text(&o.stdout));

    // The same suite with the bash design: the model guesses, and compare shows the flip.
    let o = eval(&server, home.path(), ws.path(), &["eval", "suite.jsonl", "--tools", "bash", "--out", "bash"]).await;
    assert_eq!(o.status.code(), Some(0), "a failing task is a result, not an error: {}", text(&o.stderr));
    let o = common::clix(home.path(), ws.path(), &["eval", "compare", "out", "bash/results.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let comparison = text(&o.stdout);
    assert!(comparison.contains("| run | 1/1 100% (21–100%) | – |"), "{comparison}");
    assert!(comparison.contains("| bash | – | 0/1 0% (0–79%) |"), "{comparison}");
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_without_a_reachable_model_says_so_and_fails() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    suite(ws.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cmd = common::clix(home.path(), ws.path(), &["eval", "suite.jsonl", "--tools", "run"]);
    cmd.env("AGENT_BASE_URL", format!("http://127.0.0.1:{port}/v1")).env("AGENT_MODEL", "none");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("1 of 1 attempts could not run") && err.contains("127.0.0.1"), "{err}");
    // The results are still written where it says.
    assert!(err.contains("results.json"), "{err}");
}

/// The whole path with the real small model (Qwen2.5-Coder-1.5B on
/// xllamacpp, `clix_testkit::llm`): one task of the shipped suite in the
/// `run` design. Whatever the model does, the run must end with its
/// results and report written and no attempt in error.
#[tokio::test(flavor = "multi_thread")]
async fn eval_with_the_real_model_writes_results_and_a_report() {
    let test = "eval_with_the_real_model_writes_results_and_a_report";
    let Some(server) = tokio::task::spawn_blocking(move || clix_testkit::llm::serve(test)).await.unwrap() else {
        return;
    };
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/core.jsonl");
    let out = ws.path().join("out");
    let args = [
        "eval",
        suite.to_str().unwrap(),
        "--filter",
        "^log_error_count$",
        "--tools",
        "run",
        "--max-steps",
        "4",
        "--out",
        out.to_str().unwrap(),
    ];
    let mut cmd = common::clix(home.path(), ws.path(), &args);
    cmd.env("AGENT_BASE_URL", &server.url)
        .env("AGENT_MODEL", "local")
        // 2 cores: a first call reads ~1,000 prompt tokens at 20–40 a second.
        .env("CLIX_AGENT_MODEL_CALL_SECS", "300")
        .env("CLIX_AGENT_MAX_OUTPUT_TOKENS", "300")
        .env("CLIX_AGENT_CONTEXT_WINDOW", "8192");
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let said = format!("{}{}\nserver log:\n{}", text(&o.stdout), text(&o.stderr), server.log_tail());
    assert_eq!(o.status.code(), Some(0), "{said}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let attempt = &results["attempts"][0];
    assert_eq!(attempt["task"], "log_error_count", "{said}");
    assert!(!attempt["stop_reason"].as_str().unwrap().starts_with("error"), "{said}");
    assert!(attempt["input_tokens"].as_u64().unwrap() > 0, "usage from the server: {attempt}");
    assert!(std::fs::read_to_string(out.join("report.html")).unwrap().contains("log_error_count"));
    let replay = out.join("runs/log_error_count-run-r0.html");
    assert!(replay.is_file(), "{said}");
    eprintln!("real model on log_error_count: passed {} in {} steps", attempt["passed"], attempt["steps"]);
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn succeeded(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
}

fn results_in(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// What must differ between two runs of the same work is gone: the
/// timings, and the tool-result sizes, which hold them (`run`'s footer
/// `[exit:0 | 5ms]`); every other field must agree.
fn timeless(mut results: Value) -> Value {
    const TIMED: [&str; 10] = [
        "wall_ms",
        "duration_ms",
        "finished_unix",
        "wall_ms_p50",
        "tool_result_bytes",
        "tool_result_tokens",
        "result_bytes",
        "estimated_tokens",
        "tool_result_bytes_per_task",
        "tool_result_tokens_per_task",
    ];
    fn strip(v: &mut Value) {
        match v {
            Value::Object(fields) => {
                fields.retain(|k, _| !TIMED.contains(&k.as_str()));
                fields.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut results);
    results
}

/// The tasks of `results`, each once, in the order of its records.
fn task_ids(results: &Value) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for r in results["attempts"].as_array().unwrap().iter().chain(results["skipped"].as_array().unwrap()) {
        let id = r["task"].as_str().unwrap().to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// A second suite of one task, so that a run reads two suite files.
fn extra_suite(dir: &Path) {
    let task = json!({
        "id": "extra_cat", "category": "text", "description": "read a file",
        "prompt": "What does a.txt say?", "files": {"a.txt": "hello shards\n"},
        "expectations": [{"check": "stdout_contains:hello shards"}], "solution": ["cat a.txt"],
    });
    std::fs::write(dir.join("extra.jsonl"), format!("{task}\n")).unwrap();
}

/// The whole path with reference solutions, where nothing but the timings
/// differs from run to run: part of the shipped suite and a second suite,
/// run whole and as three shards (each given the suites in its own order),
/// merged, equal the whole run.
#[test]
fn sharded_solution_runs_merge_into_the_unsharded_run() {
    let bwrap_runs = Command::new("bwrap").args(["--ro-bind", "/", "/", "true"]).status().is_ok_and(|s| s.success());
    if !bwrap_runs {
        clix_testkit::skip_missing(
            "sharded_solution_runs_merge_into_the_unsharded_run",
            "bubblewrap cannot start here",
        );
        return;
    }
    let (home, ws, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    extra_suite(ws.path());
    let core = repo().join("evals/core.jsonl");
    let core = core.to_str().unwrap();
    // Text, data, run-only hub tasks, and the second suite's task.
    let filter = "^(log_|csv_|hub_|extra_)";
    let eval = |suites: [&str; 2], more: &[&str]| {
        let mut args = vec!["eval", suites[0], suites[1], "--solution", "--filter", filter];
        args.extend_from_slice(more);
        let mut cmd = common::clix(home.path(), ws.path(), &args);
        // One after the other in one folder, every attempt's folder is
        // the same `clix-eval-1`, so the paths in the results agree.
        cmd.env("TMPDIR", tmp.path());
        cmd.output().unwrap()
    };
    succeeded(&eval([core, "extra.jsonl"], &["--out", "whole"]));
    for (i, suites) in [(1, [core, "extra.jsonl"]), (2, ["extra.jsonl", core]), (3, [core, "extra.jsonl"])] {
        succeeded(&eval(suites, &["--shard", &format!("{i}/3"), "--out", &format!("s{i}")]));
    }
    let merge = ["eval", "merge", "s3", "s1", "s2/results.json", "--out", "merged"];
    let o = common::clix(home.path(), ws.path(), &merge).output().unwrap();
    succeeded(&o);
    assert!(text(&o.stdout).contains("| category | run | bash | typed |"), "the tables, as the whole run prints them");

    let whole = results_in(&ws.path().join("whole"));
    let merged = results_in(&ws.path().join("merged"));
    let run = task_ids(&whole);
    assert_eq!((run.len(), whole["attempts"].as_array().unwrap().len()), (15, 33), "{run:?}");
    // Each shard ran its own slice; together, every task once.
    let mut dealt = Vec::new();
    for i in 1..=3 {
        let shard = results_in(&ws.path().join(format!("s{i}")));
        assert_eq!((shard["shard"]["index"].clone(), shard["shard"]["count"].clone()), (json!(i), json!(3)));
        let slice: Vec<String> = serde_json::from_value(shard["shard"]["tasks"].clone()).unwrap();
        assert_eq!(task_ids(&shard), slice, "shard {i}");
        assert!((4..=7).contains(&slice.len()), "shard {i}: {slice:?}");
        dealt.extend(slice);
    }
    dealt.sort();
    let mut all = run.clone();
    all.sort();
    assert_eq!(dealt, all);

    assert_eq!(merged["shard"], Value::Null);
    let (merged_timeless, whole_timeless) = (timeless(merged.clone()), timeless(whole.clone()));
    for (key, value) in whole_timeless.as_object().unwrap() {
        assert_eq!(&merged_timeless[key], value, "{key}");
    }
    assert_eq!(merged_timeless, whole_timeless);
    // bash and typed send no timings: their sizes agree to the byte.
    let sizes = |r: &Value| {
        r["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["design"] != "run")
            .map(|a| (a["task"].clone(), a["design"].clone(), a["tool_result_bytes"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(sizes(&merged), sizes(&whole));
    assert!(!sizes(&whole).is_empty());
}

/// Two tasks the scripted model passes with `run`.
fn two_task_suite(dir: &Path) {
    let mut lines = String::new();
    for id in ["count_errors", "count_errors_again"] {
        let task = json!({
            "id": id, "category": "text", "description": "count errors",
            "prompt": "How many ERROR lines are in app.log? Answer with just the number.",
            "files": {"app.log": "INFO a\nERROR b\nERROR c\n"},
            "expectations": [{"check": "answer_regex:^2$"}],
        });
        lines.push_str(&format!("{task}\n"));
    }
    std::fs::write(dir.join("suite.jsonl"), lines).unwrap();
}

/// With a model, a merge also gathers the shards' trajectories and makes
/// the replay pages and the report; and what does not merge is refused,
/// saying which shard.
#[tokio::test(flavor = "multi_thread")]
async fn sharded_model_runs_merge_with_their_replays_and_refuse_what_does_not_fit() {
    let server = support::start_fn(common::counting_eval_model).await;
    let (home, ws, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    two_task_suite(ws.path());
    let run = |args: Vec<String>| {
        let mut cmd = common::clix(home.path(), ws.path(), &args.iter().map(String::as_str).collect::<Vec<_>>());
        cmd.env("AGENT_BASE_URL", format!("{}/v1", server.url))
            .env("AGENT_MODEL", "scripted")
            .env("TMPDIR", tmp.path());
        async move { tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap() }
    };
    let eval = |more: &str| run(format!("eval suite.jsonl --tools run {more}").split(' ').map(String::from).collect());
    succeeded(&eval("--out whole").await);
    succeeded(&eval("--shard 1/2 --out s1").await);
    succeeded(&eval("--shard 2/2 --out s2").await);
    let o = eval("--shard 3/2 --out s3").await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("`3/2`: there is no slice 3 of 2") && err.contains("e.g. `--shard 2/4`"), "{err}");

    let merge = |args: &str| run(format!("eval merge {args}").split(' ').map(String::from).collect());
    let o = merge("s2 s1 --out merged").await;
    succeeded(&o);
    assert!(text(&o.stdout).contains("| run | 2 | 2/2 | 100% "), "{}", text(&o.stdout));
    let (whole, mut merged) = (results_in(&ws.path().join("whole")), results_in(&ws.path().join("merged")));
    for attempt in merged["attempts"].as_array_mut().unwrap() {
        let trajectory = attempt["trajectory"].take();
        let trajectory = trajectory.as_str().unwrap();
        assert!(trajectory.starts_with("merged/runs/"), "{trajectory}");
        let page = ws.path().join(trajectory.replace(".jsonl", ".html"));
        assert!(std::fs::read_to_string(page).unwrap().contains("grep -c ERROR app.log"), "the replay, made afresh");
    }
    let mut whole_untraced = whole.clone();
    for attempt in whole_untraced["attempts"].as_array_mut().unwrap() {
        attempt["trajectory"].take();
    }
    assert_eq!(timeless(merged), timeless(whole_untraced));
    let report = std::fs::read_to_string(ws.path().join("merged/report.html")).unwrap();
    assert!(report.contains("href=\"runs/count_errors_again-run-r0.html\""), "{report}");

    let refusals = [
        ("s1 --out m1", "missing shard 2/2; given s1 (shard 1/2)"),
        ("s1 s2 s1 --out m2", "shard 1/2 is given twice: s1 and s1"),
        ("s1 whole --out m3", "whole: not the results of a shard (that run had no --shard)"),
        ("s1 s2 --out s1", "--out s1 is a shard's own folder"),
        ("s1 nowhere --out m4", "nowhere: no such folder"),
    ];
    for (args, said) in refusals {
        let o = merge(args).await;
        assert_eq!(o.status.code(), Some(1), "{args}");
        assert!(text(&o.stderr).contains(said), "{args}: {}", text(&o.stderr));
        let out = args.rsplit(' ').next().unwrap();
        assert!(out == "s1" || !ws.path().join(out).exists(), "{args}: a refused merge writes nothing");
    }
}

/// Answers kubectl's API discovery for `v1` and `batch/v1` (the groups of
/// the manifest's kinds) and 404 to anything else, as an API server
/// holding none of the objects: enough for `kubectl apply
/// --dry-run=client`, which maps each kind to its resource and looks for
/// the live object before it prints what it would apply. No API server
/// runs on the test machine. Returns its address.
fn kubernetes_discovery() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let resources = |group_version: &str, name: &str, kind: &str| {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": [
            {"name": name, "singularName": "", "namespaced": true, "kind": kind, "verbs": ["create", "get", "patch"]}
        ]})
    };
    let answers = [
        ("/api", json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})),
        (
            "/apis",
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": "batch",
                "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"}}]}),
        ),
        ("/api/v1", resources("v1", "persistentvolumeclaims", "PersistentVolumeClaim")),
        ("/apis/batch/v1", resources("batch/v1", "jobs", "Job")),
    ];
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or("").split('?').next().unwrap_or("");
            let (status, body) = match answers.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => ("200 OK", body.to_string()),
                None => (
                    "404 Not Found",
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "NotFound", "code": 404})
                    .to_string(),
                ),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// docs/scale-out.md's Indexed Job: kubectl takes it (`apply
/// --dry-run=client --validate=false`), and the shards' count, the
/// `--shard` each pod computes and the merge's wait agree.
#[test]
fn the_scale_out_indexed_job_applies() {
    let test = "the_scale_out_indexed_job_applies";
    let doc = std::fs::read_to_string(repo().join("docs/scale-out.md")).unwrap();
    let blocks: Vec<&str> = doc.split("```yaml\n").skip(1).map(|rest| rest.split("```").next().unwrap()).collect();
    assert_eq!(blocks.len(), 1, "one manifest");
    let dir = tempfile::tempdir().unwrap();
    // kubectl keeps its caches under HOME: the test's own folder, not the person's.
    let kubectl = |args: &[&str]| {
        let mut cmd = Command::new("kubectl");
        cmd.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("HOME", dir.path()).args(args);
        cmd.output()
    };
    if kubectl(&["version", "--client"]).is_err() {
        clix_testkit::skip_missing(test, "kubectl is not installed (Debian's kubernetes-client has it)");
        return;
    }
    let manifest = dir.path().join("eval-shards.yaml");
    std::fs::write(&manifest, blocks[0]).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let api = kubernetes_discovery();
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster: {{server: \"{api}\"}}\n\
             contexts:\n- name: test\n  context: {{cluster: test}}\ncurrent-context: test\n"
        ),
    )
    .unwrap();
    let (kubeconfig, manifest) = (kubeconfig.to_str().unwrap(), manifest.to_str().unwrap());
    let apply =
        ["--kubeconfig", kubeconfig, "apply", "--dry-run=client", "--validate=false", "-o", "json", "-f", manifest];
    let o = kubectl(&apply).unwrap();
    succeeded(&o);
    let applied: Value = serde_json::from_slice(&o.stdout).unwrap();
    let items = applied["items"].as_array().unwrap();
    let names: Vec<(&str, &str)> =
        items.iter().map(|i| (i["kind"].as_str().unwrap(), i["metadata"]["name"].as_str().unwrap())).collect();
    assert_eq!(
        names,
        [("PersistentVolumeClaim", "clix-eval-results"), ("Job", "clix-eval-shards"), ("Job", "clix-eval-merge")]
    );
    let (claim, shards, merge) = (&items[0], &items[1]["spec"], &items[2]["spec"]);
    assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteMany"]), "pods on any node share it");
    assert_eq!(shards["completionMode"], "Indexed");
    let n = shards["completions"].as_u64().unwrap();
    assert_eq!(shards["parallelism"].as_u64(), Some(n));
    let pod = |spec: &Value| spec["template"]["spec"].clone();
    let script = |spec: &Value| pod(spec)["containers"][0]["args"][0].as_str().unwrap().to_string();
    let (shard_script, merge_script) = (script(shards), script(merge));
    assert!(shard_script.contains(&format!("--shard \"$((JOB_COMPLETION_INDEX + 1))/{n}\"")), "{shard_script}");
    assert!(shard_script.contains("--out \"/results/$RUN/shard-$((JOB_COMPLETION_INDEX + 1))\""), "{shard_script}");
    assert!(merge_script.contains(&format!("-ge {n} ]")), "{merge_script}");
    assert!(merge_script.contains("clix eval merge \"$dir\"/shard-* --out \"$dir/merged\""), "{merge_script}");
    for spec in [shards, merge] {
        let pod = pod(spec);
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["volumes"][0]["persistentVolumeClaim"]["claimName"], "clix-eval-results");
        let container = &pod["containers"][0];
        assert_eq!(container["volumeMounts"][0]["mountPath"], "/results");
        let run = container["env"].as_array().unwrap().iter().find(|e| e["name"] == "RUN").unwrap();
        assert_eq!(run["value"], "core-2026-12-04", "both jobs name the same run's folder");
    }
}
