//! Plans of agents: a DAG of tasks, each run by its own agent in its own
//! namespace of one shared workspace.
//!
//! This crate owns the plan file (`[[task]]` entries: reading, and every
//! check before anything runs: unknown fields, unknown ids, cycles,
//! duplicate ids, inputs that are not dependencies, two tasks that may run
//! at once writing one place), the scheduler (each task starts as soon as
//! its dependencies are done, up to `jobs` at a time; retries with backoff;
//! dependents of a failed task skipped; `--on-failure stop`), the
//! namespaces (`agents/<id>/` made here, then enforced by the workspace
//! handle and the sandbox's mounts through `clix_engine::Engine::confined`),
//! checkpoints for `--resume` (a file, or a document in the store every
//! replica shares), `plan-result.json`, the plan files a
//! person names (read and written through the workspace handle when they
//! lie in it), and the coordinator's one tool, `propose_plan`.
//!
//! It must not build engines or providers itself, nor print: the binary
//! gives it an [`AgentRunner`] and renders the stream lines it emits.

/// The variable set (to `1`) for every program a plan's agent runs: the
/// depth limit, since `clix plan run|make` refuses to start under it (the
/// coordinator plans; agents do their own task).
pub const AGENT_VAR: &str = "CLIX_PLAN_AGENT";

mod checkpoint;
mod files;
mod plan;
mod propose;
mod run;

pub use checkpoint::{Checkpoint, DOCUMENT_KIND, checkpoint_key, checkpoint_path};
pub use files::{read_named, write_named};
pub use plan::{Plan, PlanError, RESERVED, Task};
pub use propose::{ProposePlan, plan_toml};
pub use run::{
    AgentRunner, Job, LocalFuture, OnFailure, PlanResult, RunOptions, StatusKind, TaskEnd, TaskReport, TaskStatus,
    prepare_namespace, run_plan, save_result,
};
