//! The shipped suite and the public one: `evals/core.jsonl` proves itself in
//! every design, and every line of bashkit-eval's file reads unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clix_eval::{
    AttemptStop, CHECK_KINDS, Design, PathMap, SolutionRun, Step, Task, load_suites, problems, run_solutions,
};
use common::sandbox_ready;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn core_suite() -> PathBuf {
    repo().join("evals/core.jsonl")
}

/// bashkit-eval's 58 tasks (MIT), copied unchanged into `evals/bashkit-eval/`.
fn bashkit_eval() -> PathBuf {
    repo().join("evals/bashkit-eval/tasks.jsonl")
}

/// The first word of each command line of `task`'s `design` solution.
fn programs(task: &Task, design: Design) -> BTreeSet<String> {
    task.solution(design)
        .unwrap_or_default()
        .iter()
        .filter_map(|step| match step {
            Step::Line(line) => line.split_whitespace().next().map(String::from),
            _ => None,
        })
        .collect()
}

#[test]
fn the_core_suite_covers_what_the_issue_lists() {
    let tasks = load_suites(&[core_suite()]).unwrap();
    assert!(tasks.len() >= 60, "{} tasks", tasks.len());
    let categories: BTreeSet<&str> = tasks.iter().map(|t| t.category.as_str()).collect();
    let want = ["binary", "edits", "hub", "json_csv", "memory", "programs", "recovery", "text"];
    assert_eq!(categories, want.into_iter().collect());
    let tagged = |tag: &str| tasks.iter().filter(|t| t.tags.iter().any(|x| x == tag)).count();
    assert!(tagged("spill") >= 2 && tagged("big-file") >= 1 && tagged("git") >= 3 && tagged("python3") >= 5);
    for task in &tasks {
        assert!(task.solution(Design::Run).is_some(), "{}: no solution", task.id);
        // A task needs run exactly when it needs clix's own commands or the hub.
        let own = |design| programs(task, design).iter().any(|p| ["memory", "see", "hub"].contains(&p.as_str()));
        let needs_run =
            task.hub.is_some() || own(Design::Bash) || (own(Design::Run) && task.solution(Design::Bash).is_none());
        assert_eq!(task.run_only(), needs_run, "{}: run-only tag", task.id);
        for design in [Design::Bash, Design::Typed] {
            let used = programs(task, design);
            assert!(
                task.run_only() || !used.iter().any(|p| ["memory", "see", "hub"].contains(&p.as_str())),
                "{}: {design} uses clix's own commands",
                task.id
            );
        }
    }
}

/// The `--solution` run CI makes: every solution passes in every design it
/// is for, doing nothing fails every task.
#[tokio::test]
async fn every_core_solution_passes_and_doing_nothing_fails() {
    if !sandbox_ready("every_core_solution_passes_and_doing_nothing_fails") {
        return;
    }
    let tasks = load_suites(&[core_suite()]).unwrap();
    let results = run_solutions(&tasks, &[core_suite()], &SolutionRun::default()).await;
    let found = problems(&results);
    assert!(found.is_empty(), "{}", found.join("\n"));

    for task in &tasks {
        let designs: Vec<Design> = results.attempts.iter().filter(|r| r.task == task.id).map(|r| r.design).collect();
        let want = if task.run_only() { vec![Design::Run] } else { Design::ALL.to_vec() };
        assert_eq!(designs, want, "{}", task.id);
    }
    assert!(results.attempts.iter().all(|r| r.stop_reason == AttemptStop::SolutionDone && r.passed));
    assert_eq!(results.do_nothing.len(), tasks.len());
    assert!(results.do_nothing.iter().all(|n| !n.passed && n.error.is_none()));

    // The point of the spill tasks: run shows a preview, bash cuts 30,000
    // characters, for the same first look at the test output.
    let first_call = |design| {
        let record = results.attempts.iter().find(|r| r.task == "spill_failed_tests" && r.design == design).unwrap();
        record.calls[0].result_bytes
    };
    assert!(first_call(Design::Run) < 20_000, "{}", first_call(Design::Run));
    assert!(first_call(Design::Bash) > 30_000, "{}", first_call(Design::Bash));
}

#[test]
fn every_bashkit_eval_line_reads_with_known_check_kinds() {
    let path = bashkit_eval();
    let tasks = load_suites(std::slice::from_ref(&path)).unwrap();
    assert_eq!(tasks.len(), 58);
    let mut kinds = BTreeSet::new();
    for task in &tasks {
        for e in &task.expectations {
            let kind = e.check.spec().split(':').next().unwrap().to_string();
            assert!(CHECK_KINDS.contains(&kind.as_str()), "{}: {}", task.id, e.check.spec());
            kinds.insert(kind);
        }
        // Every absolute file and file check lands inside the workspace.
        let map = PathMap::for_task(task, Path::new("/ws"));
        for file in task.files.keys() {
            assert!(map.apply(file).starts_with("/ws/"), "{}: {file}", task.id);
        }
        for path in task.expectations.iter().filter_map(|e| e.check.path()) {
            assert!(map.apply(path).starts_with("/ws/"), "{}: {path}", task.id);
        }
        assert!(task.solution.is_none(), "bashkit-eval ships no solutions");
    }
    let used = [
        "dir_exists",
        "exit_code",
        "file_contains",
        "file_exists",
        "file_line_regex",
        "stdout_contains",
        "stdout_regex",
    ];
    assert_eq!(kinds, used.iter().map(|k| k.to_string()).collect());
}

/// Two of bashkit-eval's tasks, unchanged, with solutions written against
/// their absolute paths: the map makes them run in every design.
#[tokio::test]
async fn bashkit_eval_tasks_run_unchanged_through_the_path_map() {
    if !sandbox_ready("bashkit_eval_tasks_run_unchanged_through_the_path_map") {
        return;
    }
    let path = bashkit_eval();
    let all = load_suites(std::slice::from_ref(&path)).unwrap();
    let solutions = [
        (
            "file_ops_backup_rename",
            "cp /data/config.yaml /data/config.yaml.bak && echo 'updated: true' >> /data/config.yaml",
        ),
        ("text_log_error_count", "grep ERROR /var/log/app.log | wc -l"),
        (
            "file_ops_project_scaffold",
            "mkdir -p /home/eval/myproject/src /home/eval/myproject/tests /home/eval/myproject/docs && \
             touch /home/eval/myproject/src/__init__.py /home/eval/myproject/tests/__init__.py && \
             echo '# My Project' > /home/eval/myproject/README.md",
        ),
    ];
    let tasks: Vec<Task> = solutions
        .iter()
        .map(|(id, line)| {
            let mut task = all.iter().find(|t| t.id == *id).unwrap().clone();
            task.solution = Some(vec![Step::Line(line.to_string())]);
            task
        })
        .collect();
    let results = run_solutions(&tasks, &[path], &SolutionRun::default()).await;
    let found = problems(&results);
    assert!(found.is_empty(), "{}", found.join("\n"));
    assert_eq!(results.attempts.len(), 9);
    for record in &results.attempts {
        let roots: Vec<&str> = record.path_map.roots.keys().map(String::as_str).collect();
        let want: &[&str] = match record.task.as_str() {
            "file_ops_backup_rename" => &["/data"],
            "text_log_error_count" => &["/var"],
            _ => &["/home"],
        };
        assert_eq!(roots, want, "{}", record.task);
        assert!(record.path_map.roots.values().all(|p| !p.starts_with(want[0])), "mapped into a temporary folder");
    }
}
