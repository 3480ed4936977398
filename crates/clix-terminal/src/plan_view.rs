//! `clix plan run`'s progress: a line per task, redrawn on a terminal,
//! and the table at its end.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Instant;

use clix_agent::stream::StreamEvent;
use clix_plan::{Plan, PlanResult, StatusKind, TaskEnd, TaskStatus};

/// The plan's progress: the merged stream with `--jsonl`; else one line per
/// task on a terminal, redrawn, or one line per change elsewhere.
pub struct LiveView {
    jsonl: bool,
    bars: Option<(indicatif::MultiProgress, BTreeMap<String, indicatif::ProgressBar>)>,
    steps: BTreeMap<String, u32>,
    started: BTreeMap<String, Instant>,
}

impl LiveView {
    /// The view of `plan`'s run.
    pub fn new(jsonl: bool, plan: &Plan) -> LiveView {
        let bars = (!jsonl && std::io::stderr().is_terminal()).then(|| {
            let multi = indicatif::MultiProgress::new();
            let bars = plan
                .tasks
                .iter()
                .map(|t| {
                    let bar = multi.add(indicatif::ProgressBar::new_spinner());
                    bar.set_message(format!("{:<16} waiting", t.id));
                    (t.id.clone(), bar)
                })
                .collect();
            (multi, bars)
        });
        LiveView { jsonl, bars, steps: BTreeMap::new(), started: BTreeMap::new() }
    }

    /// One line of the plan's merged stream.
    pub fn line(&mut self, line: StreamEvent) {
        if self.jsonl {
            crate::render::print_line(&line);
            return;
        }
        let field = |name: &str| line.content.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_string();
        let (task, text) = match line.kind.as_str() {
            "task_start" => {
                let task = field("task");
                self.started.insert(task.clone(), Instant::now());
                (task, "running".to_string())
            }
            "response" => {
                let task = line.metadata.agent_id.clone();
                let steps = self.steps.entry(task.clone()).or_default();
                *steps += 1;
                let text = format!("running, step {steps}");
                (task, text)
            }
            "task_end" => {
                let Ok(end) = serde_json::from_value::<TaskEnd>(line.content.clone()) else { return };
                // A task resumed or never started has no time of its own.
                let took = self.started.get(&end.task).map(|s| format!(" in {:.1}s", s.elapsed().as_secs_f64()));
                let reason = end.reason.map(|r| format!(": {r}")).unwrap_or_default();
                (end.task, format!("{}{}{reason}", end.status.label(), took.unwrap_or_default()))
            }
            _ => return,
        };
        match &self.bars {
            Some((_, bars)) => {
                if let Some(bar) = bars.get(&task) {
                    bar.set_message(format!("{task:<16} {text}"));
                    if line.kind == "task_end" {
                        bar.finish();
                    } else {
                        bar.tick();
                    }
                }
            }
            None if line.kind != "response" => eprintln!("clix: {task}: {text}"),
            None => {}
        }
    }

    /// Every task's line as it ended.
    pub fn finish(&mut self) {
        if let Some((_, bars)) = &self.bars {
            for bar in bars.values() {
                bar.finish();
            }
        }
    }
}

/// The end-of-plan table: each task's status, steps, tokens and time.
pub fn summary_table(result: &PlanResult) -> String {
    let mut out = format!("{:<16} {:<8} {:>5} {:>12} {:>8}  note\n", "task", "status", "steps", "tokens", "time");
    for t in &result.tasks {
        let (steps, tokens, note) = match &t.status {
            TaskStatus::Done { result, resumed, attempts } => (
                result.steps.to_string(),
                (result.usage.input_tokens + result.usage.output_tokens).to_string(),
                if *resumed {
                    "from an earlier run".to_string()
                } else if *attempts > 1 {
                    format!("{attempts} attempts")
                } else {
                    String::new()
                },
            ),
            TaskStatus::Failed { reason, attempts, result } => (
                result.as_ref().map_or("-".into(), |r| r.steps.to_string()),
                result.as_ref().map_or("-".into(), |r| (r.usage.input_tokens + r.usage.output_tokens).to_string()),
                format!("{reason} ({attempts} attempts)"),
            ),
            TaskStatus::Skipped { reason } | TaskStatus::Stopped { reason } => ("-".into(), "-".into(), reason.clone()),
        };
        out.push_str(&format!(
            "{:<16} {:<8} {steps:>5} {tokens:>12} {:>7.1}s  {note}\n",
            t.id,
            t.status.label(),
            t.duration_ms as f64 / 1000.0
        ));
    }
    let counts: Vec<String> = StatusKind::ALL.iter().map(|&k| format!("{} {}", result.count(k), k.label())).collect();
    out.push_str(&format!("{} in {:.1}s\n", counts.join(", "), result.duration_ms as f64 / 1000.0));
    out
}
