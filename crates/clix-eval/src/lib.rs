//! The eval harness: does an agent do better with `run` than with a raw bash
//! tool or a typed tool set?
//!
//! It owns:
//!
//! - the task format (`task`): bashkit-eval's JSON lines read unchanged, plus
//!   our fields (`solution`, `solution_for`, `setup`, `tags`, `timeout_secs`,
//!   `max_steps`, `hub`, `mcp`), validated whole before a suite starts, each
//!   error naming file, line and field. A task's `hub` is copied into the
//!   attempt's workspace as `.clix/hub`, so a suite's tools are a workspace's:
//!   untrusted; its `mcp` is an `[[mcp.server]]` of the attempt's own settings;
//! - the checks (`checks`, eleven kinds), scored as bashkit-eval scores them;
//! - the mapping of a task's absolute paths into the attempt's workspace
//!   (`paths`), recorded with the attempt;
//! - attempts (`attempt`): a fresh workspace and CLIX_HOME each, in the first
//!   free `clix-eval-N` (so prompts are the same run after run), the task's
//!   files and setup, scoring at the end;
//! - the tool designs behind one executor (`designs`): `run` (clix's
//!   `Engine::run`, the engine assembled by `clix-session` as `clix ask`'s
//!   would be, from an isolated session), `bash` (real bash in the same
//!   sandbox, raw output cut at 30,000 characters), `typed` (file tools plus
//!   `shell`) and `mcp-direct` (a task's MCP server's tools offered directly as
//!   typed tools, results whole), with a task's MCP server (`mcp_server`)
//!   started in the sandbox. The last three are not clix's `run` tool, so they
//!   build their sandbox and MCP servers here;
//! - the two ways to drive them: a model through clix's agent loop (`model`:
//!   the designs as `clix_agent::Tools`, so prompts, budgets, retries and
//!   trajectories are `clix ask`'s; attempts in parallel, a trajectory each,
//!   the deadline) and the `--solution` mode (`solution`: reference steps, no
//!   model);
//! - sharded runs (`shard`): the deterministic slice of a run's tasks that
//!   `--shard i/n` runs, what `results.json` records of it, and the merge of
//!   every shard's results into the whole run's, refusing shards of different
//!   runs, overlaps and missing shards;
//! - the per-attempt records, summaries, `results.json` (versioned), the
//!   Markdown tables, the comparison of two runs (`report`), the HTML report
//!   (`report_html`) and their statistics (`stats`: Wilson intervals, pass@k,
//!   pass^k);
//! - a run's results in the store every replica shares, by the name of its
//!   output folder (`shared`), for `clix eval compare` on any machine.
//!
//! It must not print anything or render trajectories (the CLI does), nor call a
//! provider except through `clix-agent`'s loop. Workspace files are read and
//! written only through the `clix-workspace` handle, and every program runs
//! through `clix-engine` or `clix-sandbox`, never directly on the host.

mod attempt;
mod attempt_dir;
mod checks;
mod compare;
mod designs;
mod hub_folder;
mod mcp_server;
mod model;
mod output;
mod paths;
mod report;
mod report_html;
mod shard;
mod shared;
mod solution;
mod stats;
mod task;
mod trace;

pub use attempt::{Attempt, AttemptError, AttemptOptions};
pub use checks::{CHECK_KINDS, Check, CheckKind, CheckResult, CheckSpecError, Score, command_verdict};
pub use compare::{Flip, comparison, flips};
pub use designs::{
    BashTools, Design, Executor, McpDirectTools, OUTPUT_LIMIT_CHARS, RunTools, ToolSpec, TypedTools, definition_bytes,
};
pub use model::{ModelRun, run_model};
pub use output::{Written, default_out, write_model_run};
pub use paths::{DATA_ROOTS, PathMap};
pub use report::{
    AttemptRecord, AttemptStop, Ended, Mode, NothingRecord, Results, ResultsError, SCHEMA_VERSION, Skip, Summary,
    summarize,
};
pub use report_html::html;
pub use shard::{MergeError, Shard, ShardRecord, merge, merge_into, read_run};
pub use shared::{DOCUMENT_KIND, FindError, SharedRuns, SharedRunsError, find_results, run_name, share};
pub use solution::{SolutionRun, problems, run_solutions};
pub use stats::{median, pass_at_k, pass_pow_k, wilson};
pub use task::{
    Expectation, RUN_ONLY, Source, Step, SuiteError, Task, TaskError, load_suites, parse_suite, parse_task,
};
pub use trace::{CallSummary, Trace, TracedCall, estimate_tokens};
