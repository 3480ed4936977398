//! Issue 15: what the plan runner costs. A plan of 20 independent tasks
//! whose "agent" answers at once: each task still gets its namespace made,
//! a confined engine started (workspace handle, OS tier, shell) and its
//! artifacts listed, so the per-task start cost is the runner's and the
//! engine's, with no model in it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clix_agent::stream::{ArtifactWatch, RunResult, StreamEvent};
use clix_plan::{AgentRunner, Checkpoint, Job, LocalFuture, Plan, RunOptions};
use clix_session::Parts;

/// Starts each task's confined engine and answers at once.
struct AnswersAtOnce {
    workspace: PathBuf,
    /// The sessions' CLIX_HOME.
    home: PathBuf,
    starts: std::cell::RefCell<Vec<Duration>>,
}

impl AgentRunner for AnswersAtOnce {
    fn run<'a>(&'a self, job: Job, emit: &'a dyn Fn(StreamEvent)) -> LocalFuture<'a, Result<RunResult, String>> {
        Box::pin(async move {
            let started = Instant::now();
            let session =
                crate::session(&self.workspace, &self.home, Parts::SHELL).label(&format!("bench-{}", job.task.id));
            let engine = session.confined_engine(job.namespace.clone()).await.map_err(|e| e.to_string())?;
            let watch = ArtifactWatch::start(engine.shell().folder(), &job.namespace.writable);
            self.starts.borrow_mut().push(started.elapsed());
            let result = RunResult {
                is_error: false,
                stop_reason: clix_agent::StopReason::Answered,
                answer: "done".into(),
                steps: 1,
                usage: clix_agent::Usage::default(),
                cost: None,
                duration_ms: started.elapsed().as_millis() as u64,
                artifacts: watch.finish(),
                run_id: None,
            };
            let mut stream = job.stream;
            emit(stream.result(&result));
            Ok(result)
        })
    }
}

pub(crate) fn plan(rounds: usize) {
    let mut text = String::new();
    for i in 0..20 {
        text.push_str(&format!("[[task]]\nid = \"t{i}\"\nprompt = \"nothing\"\n"));
    }
    let plan = Plan::parse(&text, "bench").expect("plan");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut walls = Vec::new();
    let mut sums = Vec::new();
    let mut starts = Vec::new();
    for _ in 0..rounds {
        let ws = tempfile::tempdir().expect("ws");
        let state = tempfile::tempdir().expect("state");
        let runner = AnswersAtOnce {
            workspace: ws.path().to_path_buf(),
            home: state.path().to_path_buf(),
            starts: Default::default(),
        };
        let options = RunOptions { jobs: 8, ..RunOptions::default() };
        let mut checkpoint = Checkpoint::open(&state.path().join("cp.json"), &plan, false).expect("checkpoint");
        let (_tx, stop) = tokio::sync::watch::channel(false);
        let started = Instant::now();
        let result = runtime
            .block_on(clix_plan::run_plan(
                &plan,
                "bench",
                Path::new(ws.path()),
                &runner,
                &options,
                &mut checkpoint,
                stop,
                &|_| {},
            ))
            .expect("plan");
        walls.push(started.elapsed());
        assert!(result.succeeded());
        sums.push(Duration::from_millis(result.tasks.iter().map(|t| t.duration_ms).sum()));
        starts.extend(runner.starts.into_inner());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (wall, sum) = (median(&mut walls), median(&mut sums));
    let mut sorted = starts.clone();
    sorted.sort();
    let p95 = sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)];
    println!("plan runner: 20 independent tasks answering at once, -j 8 ({rounds} rounds, medians)\n");
    println!("| plan wall | sum of task times | per-task start p50 | per-task start p95 |");
    println!("|---|---|---|---|");
    println!("| {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |\n", ms(wall), ms(sum), ms(median(&mut starts)), ms(p95));
}
