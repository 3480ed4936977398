//! The MCP suite (`evals/mcp`): a real MCP server on the official Python
//! SDK, its tools as commands under `run` and as typed tools under
//! `mcp-direct`, every reference solution through both, and what each
//! design sends recorded per attempt.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::path::{Path, PathBuf};

use clix_eval::{AttemptOptions, AttemptStop, Design, SolutionRun, load_suites, problems, run_solutions};

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/mcp/tasks.jsonl")
}

/// Every task has its server and a solution in both designs; bash and
/// typed skip it (they cannot reach the server), and mcp-direct skips a
/// task without one.
#[test]
fn the_mcp_suite_runs_in_run_and_mcp_direct_only() {
    let tasks = load_suites(&[suite()]).unwrap();
    assert!(tasks.len() >= 5, "{} tasks", tasks.len());
    for task in &tasks {
        let entry = task.mcp.as_ref().unwrap_or_else(|| panic!("{}: no MCP server", task.id));
        assert!(Path::new(&entry.args[0]).is_absolute(), "{}: the script is found beside the suite", task.id);
        assert!(task.solution_for.contains_key(&Design::Run) && task.solution_for.contains_key(&Design::McpDirect));
        let runs: Vec<Design> = Design::EVERY.into_iter().filter(|d| task.runs_in(*d)).collect();
        assert_eq!(runs, [Design::Run, Design::McpDirect], "{}", task.id);
        assert!(task.skip_reason(Design::Bash).unwrap().contains("MCP server"));
    }
    let core = load_suites(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("../../evals/core.jsonl")]).unwrap();
    for task in &core {
        let reason = task.skip_reason(Design::McpDirect).unwrap();
        assert!(task.run_only() || reason.contains("no MCP server"), "{}: {reason}", task.id);
    }
}

/// The `--solution` run docs/eval.md reports: every solution passes in
/// both designs, doing nothing fails, and each attempt records its
/// tool-result bytes, its definitions' bytes and its model calls.
#[tokio::test]
async fn every_mcp_solution_passes_in_run_and_mcp_direct() {
    if !clix_testkit::mcp_ready("every_mcp_solution_passes_in_run_and_mcp_direct") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    // SAFETY: set before any sandbox of this test binary reads it.
    unsafe { std::env::set_var("CLIX_HOME", home.path()) };
    let tasks = load_suites(&[suite()]).unwrap();
    let run = SolutionRun {
        designs: vec![Design::Run, Design::McpDirect],
        options: AttemptOptions::default(),
        do_nothing: true,
    };
    let results = run_solutions(&tasks, &[suite()], &run).await;
    let found = problems(&results);
    assert!(found.is_empty(), "{}", found.join("\n"));
    assert_eq!(results.attempts.len(), tasks.len() * 2);
    assert!(results.do_nothing.iter().all(|n| !n.passed && n.error.is_none()));

    for record in &results.attempts {
        let what = format!("{} [{}]", record.task, record.design);
        assert!(record.passed && record.stop_reason == AttemptStop::SolutionDone, "{what}");
        assert!(record.tool_result_bytes > 0 && record.definition_bytes > 0, "{what}");
        assert_eq!(record.model_calls, record.tool_calls + 1, "{what}: one model call per tool call, one to answer");
        let direct = record.design == Design::McpDirect;
        let tools: Vec<&str> = record.calls.iter().map(|c| c.tool.as_str()).collect();
        assert!(tools.iter().all(|t| (*t == "run") != direct), "{what}: {tools:?}");
    }
    let definitions = |design| results.definition_bytes[&design];
    // mcp-direct's definitions are the server's own schemas plus read_file;
    // run's one tool lists the server's tools as they are called.
    assert!(definitions(Design::McpDirect) > 0 && definitions(Design::Run) > 0);

    // The point of the design: the same work, the whole records sent
    // under mcp-direct, only what the pipe kept under run.
    for task in &tasks {
        let bytes = |design| {
            let r = results.attempts.iter().find(|r| r.task == task.id && r.design == design).unwrap();
            r.tool_result_bytes + r.definition_bytes * u64::from(r.model_calls)
        };
        assert!(bytes(Design::Run) < bytes(Design::McpDirect), "{}: run sends more", task.id);
    }
    // Issue 33's goal, over the suite: run sends at least 80% fewer
    // tool-result plus definition bytes. The run tool's description is
    // most of what run sends, so a description that grows fails here.
    let sent = |design| {
        let r = results.attempts.iter().filter(|r| r.design == design);
        r.map(|r| r.tool_result_bytes + r.definition_bytes * u64::from(r.model_calls)).sum::<u64>()
    };
    let (run, direct) = (sent(Design::Run), sent(Design::McpDirect));
    assert!(run * 5 <= direct, "run sends {run} bytes, mcp-direct {direct}: not 80% fewer");
    eprintln!("{}\n{}", results.comparison_markdown(), results.per_task_markdown());
}
