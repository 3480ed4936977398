//! Results: one record per attempt, summaries per design and category,
//! `results.json` (versioned) and the Markdown tables.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checks::{CheckResult, Score};
use crate::designs::Design;
use crate::paths::PathMap;
use crate::shard::ShardRecord;
use crate::stats::{mean, median, pass_at_k, pass_pow_k, wilson};
use crate::task::Task;
use crate::trace::{CallSummary, Trace};

/// The version of `results.json`'s shape. Raise it when a field changes
/// meaning or goes away (adding one does not), and teach [`Results::read`]
/// to bring the older shape up to it.
pub const SCHEMA_VERSION: u32 = 2;

/// Why an attempt ended: how its agent run stopped, in the agent's own
/// words, or one of the two ends only the harness sees. Written as one
/// string: `answered`, `max_steps`, `max_tokens`, `wall_time`,
/// `interrupted`, `error: <why>` (as a trajectory's `done`), `solution_done`
/// or `timeout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptStop {
    /// The agent loop stopped by itself, or the attempt could not start
    /// (`Error`, with why: its setup, its tools, its provider).
    Agent(clix_agent::StopReason),
    /// Every reference step ran (`--solution`).
    SolutionDone,
    /// The attempt's deadline passed and the harness stopped it.
    Timeout,
}

/// The words of the harness-only ends.
const SOLUTION_DONE: &str = "solution_done";
const TIMEOUT: &str = "timeout";

impl AttemptStop {
    /// The attempt could not run, or its model kept failing: what went
    /// wrong, when it did.
    pub fn error(&self) -> Option<&str> {
        match self {
            AttemptStop::Agent(clix_agent::StopReason::Error(why)) => Some(why),
            _ => None,
        }
    }
}

impl std::fmt::Display for AttemptStop {
    /// The string `results.json` holds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptStop::Agent(reason) => reason.fmt(f),
            AttemptStop::SolutionDone => f.write_str(SOLUTION_DONE),
            AttemptStop::Timeout => f.write_str(TIMEOUT),
        }
    }
}

impl Serialize for AttemptStop {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AttemptStop {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<AttemptStop, D::Error> {
        let label = String::deserialize(deserializer)?;
        match label.as_str() {
            SOLUTION_DONE => Ok(AttemptStop::SolutionDone),
            TIMEOUT => Ok(AttemptStop::Timeout),
            _ => label.parse().map(AttemptStop::Agent).map_err(serde::de::Error::custom),
        }
    }
}

/// One attempt of one task in one design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// The task's id.
    pub task: String,
    /// The task's category.
    pub category: String,
    /// The tool design.
    pub design: Design,
    /// Which repeat this is, from 0.
    pub repeat: u32,
    /// Every check passed.
    pub passed: bool,
    /// The weighted share of checks passed, 0 to 1.
    pub score: f64,
    /// Each check's outcome.
    pub checks: Vec<CheckResult>,
    /// Model turns (`--solution`: reference steps run).
    pub steps: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tool calls that failed (non-zero exit).
    pub failed_calls: u32,
    /// Input tokens, from the provider's usage (or estimated, see `tokens_estimated`); none without a model.
    pub input_tokens: Option<u64>,
    /// Output tokens, likewise.
    pub output_tokens: Option<u64>,
    /// Of the input tokens, those the provider read from its prompt cache;
    /// none without a model, with estimated tokens, or in older results.
    #[serde(default)]
    pub cache_read_tokens: Option<u64>,
    /// Of the input tokens, those written to the prompt cache (Anthropic's breakpoints), likewise.
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
    /// The token counts are estimates (the provider gave no usage).
    pub tokens_estimated: bool,
    /// Bytes of tool results sent to the model (text; images apart).
    pub tool_result_bytes: u64,
    /// Estimated tokens of those results (characters / 4, images by area).
    pub tool_result_tokens: u64,
    /// Bytes of images sent to the model.
    pub image_bytes: u64,
    /// Bytes of the tool definitions sent with each model call of this
    /// attempt (a task's hub or MCP server shapes them); 0 in older results.
    #[serde(default)]
    pub definition_bytes: u64,
    /// Model calls: the agent loop's, or under `--solution` one per tool
    /// call and one for the answer, as a model doing those steps would
    /// make; 0 in older results.
    #[serde(default)]
    pub model_calls: u32,
    /// Wall time of the attempt, setup and checks included, in milliseconds.
    pub wall_ms: u64,
    /// Why it ended.
    pub stop_reason: AttemptStop,
    /// What the stop reason does not say: a timeout's detail, a solution
    /// past its step budget.
    pub error: Option<String>,
    /// Where the task's absolute paths were in this attempt.
    pub path_map: PathMap,
    /// The tool calls, short.
    pub calls: Vec<CallSummary>,
    /// The attempt's trajectory file, when a model loop wrote one.
    pub trajectory: Option<PathBuf>,
}

impl AttemptRecord {
    /// The record of an attempt that ran: its trace, scored.
    pub fn new(task: &Task, design: Design, repeat: u32, trace: &Trace, score: Score, ended: Ended) -> Self {
        AttemptRecord {
            task: task.id.clone(),
            category: task.category.clone(),
            design,
            repeat,
            passed: score.passed,
            score: score.score,
            checks: score.checks,
            steps: ended.steps,
            tool_calls: trace.calls.len() as u32,
            failed_calls: trace.calls.iter().filter(|c| c.failed()).count() as u32,
            input_tokens: None,
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            tokens_estimated: false,
            tool_result_bytes: trace.result_bytes(),
            tool_result_tokens: trace.estimated_tokens(),
            image_bytes: trace.calls.iter().map(|c| c.image_bytes()).sum(),
            definition_bytes: 0,
            model_calls: 0,
            wall_ms: ended.wall_ms,
            stop_reason: ended.reason,
            error: ended.error,
            path_map: ended.path_map,
            calls: trace.calls.iter().map(|c| c.summary()).collect(),
            trajectory: None,
        }
    }

    /// The record of an attempt that could not run: a fail with the reason.
    pub fn error(task: &Task, design: Design, repeat: u32, error: String, wall_ms: u64) -> Self {
        let reason = AttemptStop::Agent(clix_agent::StopReason::Error(error));
        let ended = Ended { steps: 0, wall_ms, reason, error: None, path_map: PathMap::default() };
        let mut record = AttemptRecord::new(task, design, repeat, &Trace::default(), Score::of(Vec::new()), ended);
        record.passed = false;
        record.score = 0.0;
        record
    }
}

/// How an attempt ended, for its record.
#[derive(Debug, Clone)]
pub struct Ended {
    /// Model turns, or reference steps.
    pub steps: u32,
    /// Wall time, in milliseconds.
    pub wall_ms: u64,
    /// Why it ended.
    pub reason: AttemptStop,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// The attempt's path map.
    pub path_map: PathMap,
}

/// A task's do-nothing run (`--solution`): it must fail, or a check is vacuous.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NothingRecord {
    /// The task's id.
    pub task: String,
    /// Whether the checks passed with nothing done (a problem).
    pub passed: bool,
    /// The score with nothing done.
    pub score: f64,
    /// Each check's outcome.
    pub checks: Vec<CheckResult>,
    /// Set when the attempt could not even be set up.
    pub error: Option<String>,
}

/// A task a design did not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skip {
    /// The task's id.
    pub task: String,
    /// The design, or none when no design ran it.
    pub design: Option<Design>,
    /// Why (`run-only`, no solution).
    pub reason: String,
}

/// The summary of a group of attempts: one design, all categories or one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The design.
    pub design: Design,
    /// The category, or none for all of them.
    pub category: Option<String>,
    /// Distinct tasks.
    pub tasks: u32,
    /// Attempts (tasks × repeats).
    pub attempts: u32,
    /// Attempts that passed.
    pub passed: u32,
    /// passed / attempts.
    pub pass_rate: f64,
    /// The 95% Wilson interval of the pass rate over the attempts.
    pub pass_rate_ci95: (f64, f64),
    /// Mean score.
    pub mean_score: f64,
    /// Mean input + output tokens per attempt; none without a model.
    pub tokens_per_task: Option<f64>,
    /// Mean input tokens read from the provider's prompt cache per attempt,
    /// over the attempts whose provider said; none when none did.
    #[serde(default)]
    pub cache_read_tokens_per_task: Option<f64>,
    /// Mean input tokens written to the prompt cache per attempt, likewise.
    #[serde(default)]
    pub cache_write_tokens_per_task: Option<f64>,
    /// Mean bytes of tool results per attempt.
    pub tool_result_bytes_per_task: f64,
    /// Mean estimated tokens of tool results per attempt.
    pub tool_result_tokens_per_task: f64,
    /// Mean steps per attempt.
    pub steps_per_task: f64,
    /// Median wall time of an attempt, in milliseconds.
    pub wall_ms_p50: f64,
    /// pass@k over the tasks, for k from 1 to the fewest repeats of a task.
    pub pass_at_k: BTreeMap<u32, f64>,
    /// pass^k likewise.
    pub pass_pow_k: BTreeMap<u32, f64>,
}

/// Summaries per design (all categories), then per design and category.
pub fn summarize(records: &[AttemptRecord]) -> Vec<Summary> {
    let designs: BTreeSet<Design> = records.iter().map(|r| r.design).collect();
    let categories: BTreeSet<&str> = records.iter().map(|r| r.category.as_str()).collect();
    let mut out = Vec::new();
    for &design in &designs {
        let of_design: Vec<&AttemptRecord> = records.iter().filter(|r| r.design == design).collect();
        out.extend(summary(design, None, &of_design));
    }
    for &design in &designs {
        for &category in &categories {
            let group: Vec<&AttemptRecord> =
                records.iter().filter(|r| r.design == design && r.category == category).collect();
            out.extend(summary(design, Some(category.to_string()), &group));
        }
    }
    out
}

fn summary(design: Design, category: Option<String>, records: &[&AttemptRecord]) -> Option<Summary> {
    if records.is_empty() {
        return None;
    }
    let attempts = records.len() as u64;
    let passed = records.iter().filter(|r| r.passed).count() as u64;
    let mut per_task: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for r in records {
        let entry = per_task.entry(r.task.as_str()).or_default();
        entry.0 += 1;
        entry.1 += u64::from(r.passed);
    }
    let fewest = per_task.values().map(|(n, _)| *n).min().unwrap_or(0);
    let over_tasks = |f: fn(u64, u64, u64) -> Option<f64>| -> BTreeMap<u32, f64> {
        (1..=fewest).map(|k| (k as u32, mean(per_task.values().filter_map(|&(n, c)| f(n, c, k))))).collect()
    };
    let tokens: Vec<f64> =
        records.iter().filter_map(|r| Some((r.input_tokens? + r.output_tokens.unwrap_or(0)) as f64)).collect();
    let mean_of = |tokens: fn(&AttemptRecord) -> Option<u64>| -> Option<f64> {
        let known: Vec<f64> = records.iter().filter_map(|r| tokens(r)).map(|t| t as f64).collect();
        (!known.is_empty()).then(|| mean(known.iter().copied()))
    };
    let walls: Vec<f64> = records.iter().map(|r| r.wall_ms as f64).collect();
    Some(Summary {
        design,
        category,
        tasks: per_task.len() as u32,
        attempts: attempts as u32,
        passed: passed as u32,
        pass_rate: passed as f64 / attempts as f64,
        pass_rate_ci95: wilson(passed, attempts).unwrap_or((0.0, 1.0)),
        mean_score: mean(records.iter().map(|r| r.score)),
        tokens_per_task: (!tokens.is_empty()).then(|| mean(tokens.iter().copied())),
        cache_read_tokens_per_task: mean_of(|r| r.cache_read_tokens),
        cache_write_tokens_per_task: mean_of(|r| r.cache_write_tokens),
        tool_result_bytes_per_task: mean(records.iter().map(|r| r.tool_result_bytes as f64)),
        tool_result_tokens_per_task: mean(records.iter().map(|r| r.tool_result_tokens as f64)),
        steps_per_task: mean(records.iter().map(|r| f64::from(r.steps))),
        wall_ms_p50: median(&walls).unwrap_or(0.0),
        pass_at_k: over_tasks(pass_at_k),
        pass_pow_k: over_tasks(pass_pow_k),
    })
}

/// Notes that an attempt of `design` sent `bytes` of tool definitions in
/// `sizes` ([`Results::definition_bytes`]), which keeps the fewest.
pub(crate) fn note_definitions(sizes: &mut BTreeMap<Design, u64>, design: Design, bytes: u64) {
    sizes.entry(design).and_modify(|kept| *kept = (*kept).min(bytes)).or_insert(bytes);
}

/// How the attempts were driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Reference solutions, no model.
    Solution,
    /// A model through the agent loop.
    Model,
}

/// Everything a run produced: what `results.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// [`SCHEMA_VERSION`] when written.
    pub schema_version: u32,
    /// How the attempts were driven.
    pub mode: Mode,
    /// The model, when one ran.
    pub model: Option<String>,
    /// The sampling temperature sent (`agent.temperature`); none when the
    /// provider's default held, which is sampled for llama.cpp (0.8), so
    /// two runs differ by chance and are not comparable attempt by attempt.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Which slice of a sharded run these are (`--shard i/n`) and what
    /// every slice of that run must share; none for a whole run, a merged
    /// one, and in files written before sharding.
    #[serde(default)]
    pub shard: Option<ShardRecord>,
    /// When the run ended, in seconds since 1970.
    pub finished_unix: u64,
    /// The suites given.
    pub suites: Vec<PathBuf>,
    /// The designs run.
    pub designs: Vec<Design>,
    /// Bytes of each design's tool definitions, sent with every model call:
    /// the fewest any of its attempts sent (a task's hub adds its tools to
    /// `run`'s), so the figure is the design's own whatever order the tasks
    /// ran in, and the same for a sharded run merged.
    pub definition_bytes: BTreeMap<Design, u64>,
    /// Every attempt.
    pub attempts: Vec<AttemptRecord>,
    /// The do-nothing runs (`--solution`).
    pub do_nothing: Vec<NothingRecord>,
    /// What was not run, and why.
    pub skipped: Vec<Skip>,
    /// Per design, then per design and category.
    pub summary: Vec<Summary>,
}

/// Why a run's results cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// No such folder or file.
    #[error("{}: no such folder; give a run's output folder (its --out) or its results.json", .0.display())]
    NoSuchRun(PathBuf),
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The `results.json`.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON, or not results of this schema.
    #[error("{origin}: {source}")]
    Damaged {
        /// The file, or the stored run, read.
        origin: String,
        /// What is wrong.
        source: serde_json::Error,
    },
    /// Results of a schema this build does not read.
    #[error("{origin}: schema_version {found:?}, this clix reads {SCHEMA_VERSION}; use the clix that wrote it")]
    Schema {
        /// The file, or the stored run, read.
        origin: String,
        /// The version it says it is, if any.
        found: Option<u64>,
    },
}

impl Results {
    /// Writes `results.json` into `dir` (made if missing); returns its path.
    /// The file appears whole or not at all (written beside, then renamed):
    /// a merge waiting for the shards on a shared volume never reads half of one.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("results.json");
        let partial = dir.join(".results.json.partial");
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&partial, json)?;
        std::fs::rename(&partial, &path)?;
        Ok(path)
    }

    /// Reads a `results.json` of this schema or an older one (brought up to
    /// this one), refusing a schema this build does not know.
    pub fn read(path: &Path) -> Result<Results, ResultsError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ResultsError::Unreadable { path: path.to_path_buf(), source })?;
        Results::parse(&text, &path.display().to_string())
    }

    /// [`Results::read`] of `text`, read from `origin` (named in errors).
    pub(crate) fn parse(text: &str, origin: &str) -> Result<Results, ResultsError> {
        let damaged = |source| ResultsError::Damaged { origin: origin.to_string(), source };
        let mut value: serde_json::Value = serde_json::from_str(text).map_err(damaged)?;
        match value.get("schema_version").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(1) => upgrade_from_1(&mut value),
            found => return Err(ResultsError::Schema { origin: origin.to_string(), found }),
        }
        serde_json::from_value(value).map_err(damaged)
    }

    /// The summary tables in Markdown: per design, then the pass rates per
    /// category and design.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| design | tasks | passed | pass rate (95% CI) | mean score | tokens/task | tool-result bytes/task | \
             est. result tokens/task | steps/task | wall p50 |\n|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for s in self.summary.iter().filter(|s| s.category.is_none()) {
            let tokens = s.tokens_per_task.map_or("–".to_string(), |t| format!("{t:.0}"));
            out.push_str(&format!(
                "| {} | {} | {}/{} | {:.0}% ({:.0}–{:.0}%) | {:.2} | {tokens} | {:.0} | {:.0} | {:.1} | {:.0} ms |\n",
                s.design,
                s.tasks,
                s.passed,
                s.attempts,
                s.pass_rate * 100.0,
                s.pass_rate_ci95.0 * 100.0,
                s.pass_rate_ci95.1 * 100.0,
                s.mean_score,
                s.tool_result_bytes_per_task,
                s.tool_result_tokens_per_task,
                s.steps_per_task,
                s.wall_ms_p50,
            ));
        }
        let repeats = self.summary.iter().filter(|s| s.category.is_none()).any(|s| s.pass_at_k.len() > 1);
        if repeats {
            out.push_str("\n| design | k | pass@k | pass^k |\n|---|---|---|---|\n");
            for s in self.summary.iter().filter(|s| s.category.is_none()) {
                for (k, at) in &s.pass_at_k {
                    let pow = s.pass_pow_k.get(k).copied().unwrap_or(0.0);
                    out.push_str(&format!("| {} | {k} | {at:.3} | {pow:.3} |\n", s.design));
                }
            }
        }
        let designs: Vec<Design> = self.designs.clone();
        out.push_str(&format!(
            "\n| category | {} |\n|---|{}\n",
            designs.iter().map(|d| d.name()).collect::<Vec<_>>().join(" | "),
            "---|".repeat(designs.len())
        ));
        let categories: BTreeSet<&str> = self.summary.iter().filter_map(|s| s.category.as_deref()).collect();
        for category in categories {
            let cells: Vec<String> = designs
                .iter()
                .map(|d| {
                    self.summary
                        .iter()
                        .find(|s| s.design == *d && s.category.as_deref() == Some(category))
                        .map_or("–".to_string(), |s| format!("{}/{}", s.passed, s.attempts))
                })
                .collect();
            out.push_str(&format!("| {category} | {} |\n", cells.join(" | ")));
        }
        out
    }

    /// What each design sent to the model over the tasks every design ran
    /// (first repeats), so the designs are compared on the same work: tasks,
    /// total and mean tool-result bytes and estimated tokens, tool calls and
    /// model calls, the definitions' bytes, and what the definitions cost
    /// over those model calls (each call sends them again) added to the
    /// results.
    pub fn comparison_markdown(&self) -> String {
        let designs = &self.designs;
        let first = |task: &str, design: Design| {
            self.attempts.iter().find(|r| r.task == task && r.design == design && r.repeat == 0)
        };
        let mut common: Vec<&str> = Vec::new();
        for r in &self.attempts {
            if !common.contains(&r.task.as_str()) && designs.iter().all(|d| first(&r.task, *d).is_some()) {
                common.push(&r.task);
            }
        }
        let mut out = String::from(
            "| design | tasks | tool calls | tool-result bytes | est. tokens | bytes/task | tokens/task | definitions (bytes) \
             | model calls | definitions sent (bytes) | results + definitions (bytes) |\n\
             |---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for &design in designs {
            let records: Vec<&AttemptRecord> = common.iter().filter_map(|t| first(t, design)).collect();
            let bytes: u64 = records.iter().map(|r| r.tool_result_bytes).sum();
            let tokens: u64 = records.iter().map(|r| r.tool_result_tokens).sum();
            let calls: u32 = records.iter().map(|r| r.tool_calls).sum();
            let model_calls: u32 = records.iter().map(|r| r.model_calls).sum();
            let sent: u64 = records.iter().map(|r| r.definition_bytes * u64::from(r.model_calls)).sum();
            let n = records.len().max(1) as f64;
            let definitions = self.definition_bytes.get(&design).map_or("–".to_string(), u64::to_string);
            out.push_str(&format!(
                "| {design} | {} | {calls} | {bytes} | {tokens} | {:.0} | {:.0} | {definitions} | {model_calls} | {sent} \
                 | {} |\n",
                records.len(),
                bytes as f64 / n,
                tokens as f64 / n,
                bytes + sent
            ));
        }
        out
    }

    /// Per task: tool-result bytes and estimated tokens of each design (the
    /// first repeat), the table `docs/eval.md` keeps for `--solution`.
    pub fn per_task_markdown(&self) -> String {
        let designs = &self.designs;
        let mut out = format!(
            "| task | category | {} |\n|---|---|{}\n",
            designs.iter().map(|d| format!("{d} bytes (tokens)")).collect::<Vec<_>>().join(" | "),
            "---|".repeat(designs.len())
        );
        let mut tasks: Vec<(&str, &str)> = Vec::new();
        for r in &self.attempts {
            if !tasks.iter().any(|(t, _)| *t == r.task) {
                tasks.push((&r.task, &r.category));
            }
        }
        for (task, category) in tasks {
            let cells: Vec<String> = designs
                .iter()
                .map(|d| {
                    self.attempts.iter().find(|r| r.task == task && r.design == *d && r.repeat == 0).map_or(
                        "–".to_string(),
                        |r| {
                            let mark = if r.passed { "" } else { " FAIL" };
                            format!("{} ({}){mark}", r.tool_result_bytes, r.tool_result_tokens)
                        },
                    )
                })
                .collect();
            out.push_str(&format!("| {task} | {category} | {} |\n", cells.join(" | ")));
        }
        out
    }
}

/// Schema 1 to 2: stop reasons in the agent's words. `token_budget` was the
/// agent's `max_tokens`; `error` kept its message in `error`, which the
/// reason now holds (`error: <why>`).
fn upgrade_from_1(results: &mut serde_json::Value) {
    use serde_json::Value;
    results["schema_version"] = Value::from(SCHEMA_VERSION);
    let Some(attempts) = results.get_mut("attempts").and_then(Value::as_array_mut) else {
        return;
    };
    for attempt in attempts {
        let reason = match attempt.get("stop_reason").and_then(Value::as_str) {
            Some("token_budget") => clix_agent::StopReason::MaxTokens,
            Some("error") => {
                let why = attempt.get_mut("error").map(Value::take);
                clix_agent::StopReason::Error(why.as_ref().and_then(Value::as_str).unwrap_or_default().to_string())
            }
            _ => continue,
        };
        attempt["stop_reason"] = Value::from(reason.to_string());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Results of `records` (model mode, designs in the order first seen).
    pub(crate) fn results(records: Vec<AttemptRecord>) -> Results {
        let mut designs: Vec<Design> = Vec::new();
        for r in &records {
            if !designs.contains(&r.design) {
                designs.push(r.design);
            }
        }
        Results {
            schema_version: SCHEMA_VERSION,
            mode: Mode::Model,
            model: Some("m".into()),
            temperature: None,
            shard: None,
            finished_unix: 1,
            suites: vec![PathBuf::from("evals/core.jsonl")],
            designs,
            definition_bytes: BTreeMap::new(),
            summary: summarize(&records),
            attempts: records,
            do_nothing: Vec::new(),
            skipped: Vec::new(),
        }
    }

    pub(crate) fn record(
        task: &str,
        category: &str,
        design: Design,
        repeat: u32,
        passed: bool,
        bytes: u64,
    ) -> AttemptRecord {
        AttemptRecord {
            task: task.into(),
            category: category.into(),
            design,
            repeat,
            passed,
            score: if passed { 1.0 } else { 0.5 },
            checks: Vec::new(),
            steps: 2,
            tool_calls: 2,
            failed_calls: 0,
            input_tokens: None,
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            tokens_estimated: false,
            tool_result_bytes: bytes,
            tool_result_tokens: bytes / 4,
            image_bytes: 0,
            definition_bytes: 0,
            model_calls: 0,
            wall_ms: 10 * u64::from(repeat + 1),
            stop_reason: AttemptStop::SolutionDone,
            error: None,
            path_map: PathMap::default(),
            calls: Vec::new(),
            trajectory: None,
        }
    }

    #[test]
    fn summaries_per_design_and_category_with_pass_at_k() {
        // Task a passes 2 of 3 repeats, task b 0 of 3, in design run.
        let mut records = Vec::new();
        for repeat in 0..3 {
            records.push(record("a", "text", Design::Run, repeat, repeat < 2, 100));
            records.push(record("b", "json", Design::Run, repeat, false, 300));
            records.push(record("a", "text", Design::Bash, repeat, true, 1000));
        }
        // Cached tokens are averaged over the attempts whose provider told them.
        records[0].cache_read_tokens = Some(900);
        records[3].cache_read_tokens = Some(300);
        records[3].cache_write_tokens = Some(50);
        let summary = summarize(&records);
        let run = summary.iter().find(|s| s.design == Design::Run && s.category.is_none()).unwrap();
        assert_eq!((run.tasks, run.attempts, run.passed), (2, 6, 2));
        assert!((run.pass_rate - 2.0 / 6.0).abs() < 1e-9);
        assert_eq!(run.pass_rate_ci95, wilson(2, 6).unwrap());
        assert_eq!(run.tool_result_bytes_per_task, 200.0);
        assert_eq!(run.wall_ms_p50, 20.0);
        assert_eq!((run.cache_read_tokens_per_task, run.cache_write_tokens_per_task), (Some(600.0), Some(50.0)));
        let bash = summary.iter().find(|s| s.design == Design::Bash && s.category.is_none()).unwrap();
        assert_eq!(bash.cache_read_tokens_per_task, None);
        // pass@k and pass^k are means over tasks: a (n=3, c=2), b (n=3, c=0).
        assert!((run.pass_at_k[&1] - (2.0 / 3.0) / 2.0).abs() < 1e-9);
        assert!((run.pass_at_k[&2] - 1.0 / 2.0).abs() < 1e-9, "a: 1 - C(1,2)/C(3,2) = 1");
        assert!((run.pass_pow_k[&2] - (1.0 / 3.0) / 2.0).abs() < 1e-9, "a: C(2,2)/C(3,2) = 1/3");
        assert_eq!(run.pass_at_k.len(), 3);
        let text = summary.iter().find(|s| s.design == Design::Run && s.category.as_deref() == Some("text")).unwrap();
        assert_eq!((text.attempts, text.passed), (3, 2));
        assert!(summary.iter().all(|s| !(s.design == Design::Bash && s.category.as_deref() == Some("json"))));
    }

    /// Each model call sends the definitions again: the comparison adds
    /// them, per attempt, to the tool results.
    #[test]
    fn the_comparison_adds_the_definitions_each_model_call_sends() {
        let mut records = vec![
            record("a", "mcp", Design::Run, 0, true, 100),
            record("a", "mcp", Design::McpDirect, 0, true, 5000),
            record("b", "mcp", Design::Run, 0, true, 50),
        ];
        for (r, (defs, calls)) in records.iter_mut().zip([(2000, 4), (1500, 2), (2000, 3)]) {
            r.definition_bytes = defs;
            r.model_calls = calls;
        }
        let comparison = results(records).comparison_markdown();
        // Only task a ran in both designs: 100 + 2000 × 4, and 5000 + 1500 × 2.
        assert!(comparison.contains("| run | 1 | 2 | 100 | 25 | 100 | 25 | – | 4 | 8000 | 8100 |"), "{comparison}");
        assert!(
            comparison.contains("| mcp-direct | 1 | 2 | 5000 | 1250 | 5000 | 1250 | – | 2 | 3000 | 8000 |"),
            "{comparison}"
        );
    }

    #[test]
    fn results_round_trip_and_refuse_other_schemas() {
        let records =
            vec![record("a", "text", Design::Run, 0, true, 120), record("a", "text", Design::Bash, 0, false, 900)];
        let results = Results {
            schema_version: SCHEMA_VERSION,
            mode: Mode::Solution,
            model: None,
            temperature: None,
            shard: None,
            finished_unix: 1,
            suites: vec![PathBuf::from("evals/core.jsonl")],
            designs: vec![Design::Run, Design::Bash],
            definition_bytes: BTreeMap::new(),
            summary: summarize(&records),
            attempts: records,
            do_nothing: Vec::new(),
            skipped: Vec::new(),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = results.write(dir.path()).unwrap();
        assert_eq!(Results::read(&path).unwrap(), results);
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["schema_version"], 2);
        assert_eq!(json["attempts"][0]["stop_reason"], "solution_done");

        // Schema 1, as an older clix wrote it: its own words for two stop
        // reasons, read as the agent's.
        let mut v1 = json.clone();
        v1["schema_version"] = 1.into();
        let stops = [
            ("token_budget", None, AttemptStop::Agent(clix_agent::StopReason::MaxTokens), None),
            ("error", Some("HTTP 401"), AttemptStop::Agent(clix_agent::StopReason::Error("HTTP 401".into())), None),
            ("timeout", Some("the attempt's 60s ran out"), AttemptStop::Timeout, Some("the attempt's 60s ran out")),
            ("max_steps", None, AttemptStop::Agent(clix_agent::StopReason::MaxSteps), None),
            ("answered", None, AttemptStop::Agent(clix_agent::StopReason::Answered), None),
            ("solution_done", None, AttemptStop::SolutionDone, None),
        ];
        for (old, error, stop, kept) in stops {
            v1["attempts"][0]["stop_reason"] = old.into();
            v1["attempts"][0]["error"] = error.into();
            std::fs::write(&path, v1.to_string()).unwrap();
            let read = Results::read(&path).unwrap();
            assert_eq!(read.schema_version, SCHEMA_VERSION);
            assert_eq!((&read.attempts[0].stop_reason, read.attempts[0].error.as_deref()), (&stop, kept), "{old}");
        }
        v1["attempts"][0]["stop_reason"] = "token_budget".into();
        v1["schema_version"] = 2.into();
        std::fs::write(&path, v1.to_string()).unwrap();
        let err = Results::read(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Damaged { .. }), "{err}");
        assert!(err.to_string().contains("unknown stop reason `token_budget`"), "only schema 1's");

        // Schema 2 from before the cached tokens and sharding: read, the fields unknown.
        let mut older = json.clone();
        older.as_object_mut().unwrap().remove("shard");
        for attempt in older["attempts"].as_array_mut().unwrap() {
            attempt.as_object_mut().unwrap().retain(|k, _| !k.starts_with("cache_"));
        }
        for summary in older["summary"].as_array_mut().unwrap() {
            summary.as_object_mut().unwrap().retain(|k, _| !k.starts_with("cache_"));
        }
        std::fs::write(&path, older.to_string()).unwrap();
        let read = Results::read(&path).unwrap();
        assert_eq!((read.attempts[0].cache_read_tokens, read.summary[0].cache_read_tokens_per_task), (None, None));
        assert_eq!(read.shard, None);

        std::fs::write(&path, r#"{"schema_version": 99}"#).unwrap();
        let err = Results::read(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Schema { found: Some(99), .. }), "{err}");
        assert!(err.to_string().contains("schema_version Some(99)"));

        let table = results.markdown();
        assert!(table.contains("| run | 1 | 1/1 | 100% (21–100%) |"), "{table}");
        assert!(table.contains("| text | 1/1 | 0/1 |"), "{table}");
        let per_task = results.per_task_markdown();
        assert!(per_task.contains("| a | text | 120 (30) | 900 (225) FAIL |"), "{per_task}");
        let comparison = results.comparison_markdown();
        assert!(comparison.contains("| run | 1 | 2 | 120 | 30 | 120 | 30 | – | 0 | 0 | 120 |"), "{comparison}");
        assert!(comparison.contains("| bash | 1 | 2 | 900 | 225 | 900 | 225 | – | 0 | 0 | 900 |"), "{comparison}");
    }
}
