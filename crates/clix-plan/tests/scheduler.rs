//! The scheduler in-process: `run_plan` with a scripted [`AgentRunner`]
//! on tokio's paused clock, so every start time, wait and limit is exact
//! to the millisecond and a plan of seconds runs at once. No model, no
//! subprocess; the workspace and the checkpoint are real files in
//! temporary folders.
//!
//! Each case states how every task ends, when each of its attempts
//! started and its time; every case is also held to the rules that hold
//! for any plan (a task starts after its dependencies, gets its inputs'
//! answers, never more than `-j` at once, one `task_end` line per task,
//! finished tasks checkpointed).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::Duration;

use clix_agent::stream::{RunResult, StreamEvent};
use clix_agent::{StopReason, Usage};
use clix_plan::{
    AgentRunner, Checkpoint, Job, LocalFuture, OnFailure, Plan, PlanResult, RunOptions, StatusKind, TaskEnd, TaskStatus,
};
use tokio::time::Instant;

/// How an attempt ends when its time is up.
#[derive(Debug, Clone, Copy)]
enum Ends {
    /// Its agent answers.
    Answer,
    /// Its agent ends without an answer (`max_steps`).
    NoAnswer,
    /// The runner cannot start it.
    Error,
}

/// A task's agent: each attempt takes `ms`; the first `fail_first`
/// attempts end without an answer, later ones as `then`. An attempt that
/// sees the plan stop ends at once, interrupted.
#[derive(Debug, Clone, Copy)]
struct Script {
    ms: u64,
    fail_first: u32,
    then: Ends,
}

const QUICK: Script = Script { ms: 100, fail_first: 0, then: Ends::Answer };

const fn takes(ms: u64) -> Script {
    Script { ms, ..QUICK }
}

const fn fails_first(n: u32) -> Script {
    Script { fail_first: n, ..QUICK }
}

const fn ends(then: Ends) -> Script {
    Script { then, ..QUICK }
}

/// One call the runner got: what it was given and what it saw.
#[derive(Debug, Clone)]
struct Call {
    task: String,
    attempt: u32,
    prompt: String,
    /// Milliseconds since the plan started.
    start: u64,
    end: u64,
    saw_stop: bool,
}

struct Scripted {
    t0: Instant,
    scripts: BTreeMap<String, Script>,
    calls: RefCell<Vec<Call>>,
    running: Cell<usize>,
    most: Cell<usize>,
}

fn result(answer: Option<String>, stop_reason: StopReason) -> RunResult {
    RunResult {
        is_error: answer.is_none(),
        stop_reason,
        answer: answer.unwrap_or_default(),
        steps: 1,
        usage: Usage { input_tokens: 10, output_tokens: 5, ..Usage::default() },
        cost: None,
        duration_ms: 0,
        artifacts: vec![],
        run_id: None,
    }
}

impl AgentRunner for Scripted {
    fn run<'a>(&'a self, job: Job, emit: &'a dyn Fn(StreamEvent)) -> LocalFuture<'a, Result<RunResult, String>> {
        Box::pin(async move {
            let id = job.task.id.clone();
            let script = self.scripts.get(&id).copied().unwrap_or(QUICK);
            let start = self.t0.elapsed().as_millis() as u64;
            self.running.set(self.running.get() + 1);
            self.most.set(self.most.get().max(self.running.get()));
            let mut stop = job.stop.clone();
            let saw_stop = tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(script.ms)) => false,
                _ = stop.wait_for(|s| *s) => true,
            };
            self.running.set(self.running.get() - 1);
            let end = self.t0.elapsed().as_millis() as u64;
            let attempt = job.attempt;
            self.calls.borrow_mut().push(Call { task: id.clone(), attempt, prompt: job.prompt, start, end, saw_stop });
            let outcome = match (saw_stop, attempt <= script.fail_first, script.then) {
                (true, _, _) => result(None, StopReason::Interrupted),
                (false, true, _) | (false, false, Ends::NoAnswer) => result(None, StopReason::MaxSteps),
                (false, false, Ends::Error) => return Err(format!("cannot start `{id}`: scripted")),
                (false, false, Ends::Answer) => {
                    result(Some(format!("{id} answered in attempt {attempt}")), StopReason::Answered)
                }
            };
            let mut stream = job.stream;
            emit(stream.result(&outcome));
            Ok(outcome)
        })
    }
}

/// Backoff of every case: retries wait 1 s, 2 s, 4 s, ...
const BACKOFF_MS: u64 = 1000;

struct Case {
    name: &'static str,
    plan: &'static str,
    scripts: &'static [(&'static str, Script)],
    jobs: usize,
    on_failure: OnFailure,
    /// The plan is stopped from outside (Ctrl-C) at this time.
    stop_at: Option<u64>,
    /// Tasks an earlier run finished, in the checkpoint `--resume` opens.
    earlier: &'static [&'static str],
    /// The most agents that ran at once.
    most: usize,
    /// Every task: how it ended, when each attempt started, its time, and
    /// words of its reason (none when done).
    expect: &'static [(&'static str, StatusKind, &'static [u64], u64, &'static str)],
}

const DIAMOND: &str = r#"
[[task]]
id = "a"
prompt = "collect"
[[task]]
id = "b"
prompt = "left"
depends_on = ["a"]
inputs = ["a"]
[[task]]
id = "c"
prompt = "right"
depends_on = ["a"]
[[task]]
id = "d"
prompt = "join"
depends_on = ["b", "c"]
inputs = ["a", "b", "c"]
"#;

const WIDE: &str = "[[task]]\nid = \"t1\"\nprompt = \"x\"\n[[task]]\nid = \"t2\"\nprompt = \"x\"\n[[task]]\nid = \"t3\"\nprompt = \"x\"\n[[task]]\nid = \"t4\"\nprompt = \"x\"\n[[task]]\nid = \"t5\"\nprompt = \"x\"\n";

/// Two independent branches: a → b → c, and x (slow) → y.
const BRANCHES: &str = r#"
[[task]]
id = "a"
prompt = "x"
retries = 2
[[task]]
id = "b"
prompt = "x"
depends_on = ["a"]
[[task]]
id = "c"
prompt = "x"
depends_on = ["b"]
inputs = ["b"]
[[task]]
id = "x"
prompt = "x"
[[task]]
id = "y"
prompt = "x"
depends_on = ["x"]
inputs = ["x"]
"#;

/// a fails at once, x takes a while beside it.
const FAIL_BESIDE: &str = r#"
[[task]]
id = "a"
prompt = "x"
[[task]]
id = "b"
prompt = "x"
depends_on = ["a"]
[[task]]
id = "x"
prompt = "x"
[[task]]
id = "y"
prompt = "x"
depends_on = ["x"]
"#;

const RETRIED: &str = "[[task]]\nid = \"a\"\nprompt = \"x\"\nretries = 3\n[[task]]\nid = \"b\"\nprompt = \"y\"\ndepends_on = [\"a\"]\ninputs = [\"a\"]\n";

use StatusKind::{Done, Failed, Skipped, Stopped};

/// What a case leaves as it is: every plan's default `-j`, no scripted
/// outcome, no earlier run, `--on-failure continue`, no Ctrl-C.
const BASE: Case = Case {
    name: "",
    plan: "",
    scripts: &[],
    jobs: 4,
    on_failure: OnFailure::Continue,
    stop_at: None,
    earlier: &[],
    most: 1,
    expect: &[],
};

const CASES: &[Case] = &[
    Case {
        name: "a diamond runs its middle at once and joins after the slower half",
        plan: DIAMOND,
        scripts: &[("c", takes(300))],
        most: 2,
        expect: &[
            ("a", Done, &[0], 100, ""),
            ("b", Done, &[100], 100, ""),
            ("c", Done, &[100], 300, ""),
            ("d", Done, &[400], 100, ""),
        ],
        ..BASE
    },
    Case {
        name: "-j 1 runs one agent at a time, in plan order",
        plan: DIAMOND,
        jobs: 1,
        most: 1,
        expect: &[
            ("a", Done, &[0], 100, ""),
            ("b", Done, &[100], 100, ""),
            ("c", Done, &[200], 100, ""),
            ("d", Done, &[300], 100, ""),
        ],
        ..BASE
    },
    Case {
        name: "-j 2 keeps two running and fills a free slot at once (no barrier)",
        plan: WIDE,
        scripts: &[("t1", takes(250))],
        jobs: 2,
        most: 2,
        expect: &[
            ("t1", Done, &[0], 250, ""),
            ("t2", Done, &[0], 100, ""),
            ("t3", Done, &[100], 100, ""),
            ("t4", Done, &[200], 100, ""),
            ("t5", Done, &[250], 100, ""),
        ],
        ..BASE
    },
    Case {
        name: "-j larger than the plan runs everything ready at once",
        plan: WIDE,
        jobs: 8,
        most: 5,
        expect: &[
            ("t1", Done, &[0], 100, ""),
            ("t2", Done, &[0], 100, ""),
            ("t3", Done, &[0], 100, ""),
            ("t4", Done, &[0], 100, ""),
            ("t5", Done, &[0], 100, ""),
        ],
        ..BASE
    },
    Case {
        name: "a retry waits the backoff, each next one twice as long",
        plan: RETRIED,
        scripts: &[("a", fails_first(2))],
        most: 1,
        // 0-100 fails, waits 1000; 1100-1200 fails, waits 2000; 3200-3300 answers.
        expect: &[("a", Done, &[0, 1100, 3200], 3300, ""), ("b", Done, &[3300], 100, "")],
        ..BASE
    },
    Case {
        name: "retries used up: the task fails, its dependents are skipped, the other branch finishes",
        plan: BRANCHES,
        scripts: &[("a", ends(Ends::NoAnswer)), ("x", takes(5000))],
        most: 2,
        expect: &[
            ("a", Failed, &[0, 1100, 3200], 3300, "max_steps"),
            ("b", Skipped, &[], 0, "`a` failed"),
            ("c", Skipped, &[], 0, "`b` skipped"),
            ("x", Done, &[0], 5000, ""),
            ("y", Done, &[5000], 100, ""),
        ],
        ..BASE
    },
    Case {
        name: "an agent that cannot start is a failed attempt, retried",
        plan: RETRIED,
        scripts: &[("a", ends(Ends::Error))],
        most: 1,
        expect: &[
            ("a", Failed, &[0, 1100, 3200, 7300], 7400, "cannot start `a`"),
            ("b", Skipped, &[], 0, "`a` failed"),
        ],
        ..BASE
    },
    Case {
        name: "--on-failure continue: the independent branch finishes",
        plan: FAIL_BESIDE,
        scripts: &[("a", ends(Ends::NoAnswer)), ("x", takes(500))],
        most: 2,
        expect: &[
            ("a", Failed, &[0], 100, "max_steps"),
            ("b", Skipped, &[], 0, "`a` failed"),
            ("x", Done, &[0], 500, ""),
            ("y", Done, &[500], 100, ""),
        ],
        ..BASE
    },
    Case {
        name: "--on-failure stop: the running agent stops at once and nothing more starts",
        plan: FAIL_BESIDE,
        scripts: &[("a", ends(Ends::NoAnswer)), ("x", takes(500))],
        on_failure: OnFailure::Stop,
        most: 2,
        expect: &[
            ("a", Failed, &[0], 100, "max_steps"),
            ("b", Skipped, &[], 0, "`a` failed"),
            ("x", Stopped, &[0], 100, "task `a` failed and the plan runs with --on-failure stop"),
            ("y", Stopped, &[], 0, "task `a` failed and the plan runs with --on-failure stop"),
        ],
        ..BASE
    },
    Case {
        name: "stopped from outside mid-run: the running agents see it, the rest never start",
        plan: DIAMOND,
        scripts: &[("b", takes(500)), ("c", takes(500))],
        stop_at: Some(300),
        most: 2,
        expect: &[
            ("a", Done, &[0], 100, ""),
            ("b", Stopped, &[100], 200, "the plan was interrupted"),
            ("c", Stopped, &[100], 200, "the plan was interrupted"),
            ("d", Stopped, &[], 0, "the plan was interrupted"),
        ],
        ..BASE
    },
    Case {
        name: "stopped while a task waits to retry: no next attempt",
        plan: RETRIED,
        scripts: &[("a", fails_first(3))],
        stop_at: Some(500),
        most: 1,
        expect: &[
            ("a", Stopped, &[0], 500, "the plan was interrupted"),
            ("b", Stopped, &[], 0, "the plan was interrupted"),
        ],
        ..BASE
    },
    Case {
        name: "resume: finished tasks are not run again, and their answers still reach their dependents",
        plan: DIAMOND,
        earlier: &["a", "b"],
        most: 1,
        expect: &[
            ("a", Done, &[], 0, ""),
            ("b", Done, &[], 0, ""),
            ("c", Done, &[0], 100, ""),
            ("d", Done, &[100], 100, ""),
        ],
        ..BASE
    },
];

/// What a run of a case left: its result, the runner's calls, the most
/// agents at once, the stream, and what its checkpoint holds after.
struct Ran {
    result: PlanResult,
    calls: Vec<Call>,
    most: usize,
    lines: Vec<StreamEvent>,
    checkpointed: Vec<String>,
}

fn run(case: &Case, plan: &Plan) -> Ran {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let path = state.path().join("plans/p.json");
    let resume = !case.earlier.is_empty();
    if resume {
        let mut earlier = Checkpoint::open(&path, plan, false).unwrap();
        for id in case.earlier {
            earlier.record(
                plan.task(id).unwrap(),
                &result(Some(format!("{id} answered in an earlier run")), StopReason::Answered),
            );
        }
    }
    let mut checkpoint = Checkpoint::open(&path, plan, resume).unwrap();
    assert_eq!(checkpoint.note, None, "{}", case.name);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    let (result, calls, most, lines) = runtime.block_on(async {
        let runner = Scripted {
            t0: Instant::now(),
            scripts: case.scripts.iter().map(|(id, s)| (id.to_string(), *s)).collect(),
            calls: RefCell::default(),
            running: Cell::new(0),
            most: Cell::new(0),
        };
        let options = RunOptions {
            jobs: case.jobs,
            on_failure: case.on_failure,
            retry_backoff: Duration::from_millis(BACKOFF_MS),
            plan_id: "plan-test".into(),
        };
        let (ctrl_c, stop) = tokio::sync::watch::channel(false);
        let lines = RefCell::new(Vec::new());
        let emit = |line: StreamEvent| lines.borrow_mut().push(line);
        let press = async {
            if let Some(at) = case.stop_at {
                tokio::time::sleep(Duration::from_millis(at)).await;
                let _ = ctrl_c.send(true);
            }
        };
        let (result, ()) = tokio::join!(
            clix_plan::run_plan(plan, "p.toml", ws.path(), &runner, &options, &mut checkpoint, stop, &emit),
            press
        );
        (result.unwrap(), runner.calls.into_inner(), runner.most.get(), lines.into_inner())
    });
    let after = Checkpoint::open(&path, plan, true).unwrap();
    let checkpointed = after.done().into_iter().map(|(id, _)| id).collect();
    Ran { result, calls, most, lines, checkpointed }
}

#[test]
fn the_scheduler_orders_limits_retries_stops_and_resumes_as_each_case_says() {
    for case in CASES {
        let name = case.name;
        let plan = Plan::parse(case.plan, name).unwrap();
        let ran = run(case, &plan);
        let report = |id: &str| ran.result.tasks.iter().find(|t| t.id == id).unwrap();
        let calls_of = |id: &str| ran.calls.iter().filter(|c| c.task == id).collect::<Vec<_>>();

        // As the case says.
        assert_eq!(ran.result.tasks.len(), case.expect.len(), "{name}: every task is expected");
        for (id, kind, starts, ms, reason) in case.expect {
            let (report, calls) = (report(id), calls_of(id));
            let at = format!("{name}: task {id}: {:?}; calls {calls:?}", report.status);
            assert_eq!(report.status.kind(), *kind, "{at}");
            assert_eq!(calls.iter().map(|c| c.start).collect::<Vec<_>>(), *starts, "{at}");
            assert_eq!(report.duration_ms, *ms, "{at}");
            assert_eq!(
                calls.iter().map(|c| c.attempt).collect::<Vec<_>>(),
                (1..=calls.len() as u32).collect::<Vec<_>>()
            );
            let resumed = case.earlier.contains(id);
            match &report.status {
                TaskStatus::Done { attempts, resumed: was, .. } => {
                    assert_eq!((*attempts as usize, *was), (calls.len(), resumed), "{at}");
                }
                TaskStatus::Failed { reason: why, attempts, .. } => {
                    assert_eq!(*attempts as usize, calls.len(), "{at}");
                    assert!(why.contains(reason), "{at}");
                }
                TaskStatus::Skipped { reason: why } | TaskStatus::Stopped { reason: why } => {
                    assert!(why.contains(reason), "{at}");
                }
            }
            // Stopped while its agent ran (not while it waited to retry): the agent saw `job.stop`.
            if let (Stopped, Some(first), Some(last)) = (kind, calls.first(), calls.last())
                && first.start + report.duration_ms == last.end
            {
                assert!(last.saw_stop, "{at}");
            }
            // plan-result.json says the status as the enum labels it.
            assert_eq!(serde_json::to_value(report).unwrap()["status"], kind.label(), "{at}");
        }
        assert_eq!(ran.most, case.most, "{name}: most agents at once");
        assert!(ran.most <= case.jobs, "{name}: more than -j {} at once", case.jobs);

        let done = |id: &str| match &report(id).status {
            TaskStatus::Done { result, .. } => Some(result.clone()),
            _ => None,
        };
        for call in &ran.calls {
            let task = plan.task(&call.task).unwrap();
            // A task starts only after everything it depends on is done...
            for dep in &task.depends_on {
                assert!(done(dep).is_some(), "{name}: {} ran though {dep} is not done", call.task);
                let dep_end = calls_of(dep).last().map_or(0, |c| c.end);
                assert!(
                    dep_end <= call.start,
                    "{name}: {} started at {} before {dep} ended at {dep_end}",
                    call.task,
                    call.start
                );
            }
            // ...and is handed its inputs' answers (an earlier run's too), and no other task's.
            for other in &plan.tasks {
                let handed = call.prompt.contains(&format!("Task `{}` finished before you", other.id));
                assert_eq!(
                    handed,
                    task.inputs.contains(&other.id),
                    "{name}: {} got {}? {}",
                    call.task,
                    other.id,
                    call.prompt
                );
                if handed {
                    assert!(call.prompt.contains(&done(&other.id).unwrap().answer), "{name}: {}", call.prompt);
                }
            }
            // An agent told to stop ended its task as stopped, at once.
            if call.saw_stop {
                assert_eq!(report(&call.task).status.kind(), Stopped, "{name}: {call:?}");
                assert!(
                    call.end - call.start < case.scripts.iter().find(|s| s.0 == call.task).map_or(QUICK, |s| s.1).ms
                );
            }
        }

        // The stream: one `task_start` per task begun, one `task_end` per
        // task saying how it ended, and counts that add up.
        for t in &ran.result.tasks {
            let starts =
                ran.lines.iter().filter(|l| l.kind == "task_start" && l.content["task"] == t.id.as_str()).count();
            assert_eq!(starts, usize::from(!calls_of(&t.id).is_empty()), "{name}: task_start of {}", t.id);
            let ends: Vec<TaskEnd> = ran
                .lines
                .iter()
                .filter(|l| l.kind == "task_end" && l.content["task"] == t.id.as_str())
                .map(|l| serde_json::from_value(l.content.clone()).unwrap())
                .collect();
            assert_eq!(ends.len(), 1, "{name}: task_end of {}: {ends:?}", t.id);
            assert_eq!(ends[0].status, t.status.kind(), "{name}: {}", t.id);
            assert_eq!(serde_json::to_value(&ends[0]).unwrap()["status"], t.status.label(), "{name}: {}", t.id);
        }
        let end = ran.lines.last().unwrap();
        assert_eq!(end.kind, "plan_end", "{name}");
        for kind in StatusKind::ALL {
            assert_eq!(end.content[kind.label()], ran.result.count(kind), "{name}: {}", kind.label());
        }
        assert_eq!(ran.result.succeeded(), ran.result.count(Done) == plan.tasks.len(), "{name}");

        // Every finished task is in the checkpoint, and nothing else.
        let finished: Vec<String> =
            ran.result.tasks.iter().filter(|t| t.status.kind() == Done).map(|t| t.id.clone()).collect();
        assert_eq!(ran.checkpointed, finished, "{name}: the checkpoint");
    }
}
